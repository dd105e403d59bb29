"""Makes the checkout importable from the venv (an editable install without pip)."""
import os
import site

with open(os.path.join(site.getsitepackages()[0], "torch_tpu_dev.pth"), "w") as f:
    f.write(os.getcwd() + "\n")
