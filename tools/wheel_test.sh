#!/bin/sh
# Builds torch_tpu's wheel from a clean clone of this checkout's HEAD and
# tests it as a user installs it: a fresh venv with torch 2.13.0 (CPU
# wheel, pinned by constraints.txt) and the CPU plugin package, then the
# wheel; imports torch_tpu from outside the checkout and runs a training
# step on tpu, compared with CPU. `--build-only` stops after the build.
# WORK (default build/wheel) holds the clone, the venvs and dist/.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$ROOT/build/wheel}
PYTHON=${PYTHON:-python3}
rm -rf "$WORK/src" "$WORK/dist" "$WORK/test-venv"
mkdir -p "$WORK"
git clone -q --no-local "$ROOT" "$WORK/src"
git -C "$WORK/src" log --oneline -1
t0=$(date +%s)
test -x "$WORK/build-venv/bin/python" || "$PYTHON" -m venv "$WORK/build-venv"
"$WORK/build-venv/bin/pip" install -q --disable-pip-version-check build
# isolated build: setuptools and torch==2.13.0 come into a throwaway env
(cd "$WORK/src" && "$WORK/build-venv/bin/python" -m build --wheel --outdir "$WORK/dist" .)
t1=$(date +%s)
WHEEL=$(ls "$WORK"/dist/torch_tpu-*.whl)
echo "built $WHEEL ($(du -k "$WHEEL" | cut -f1) KiB) in $((t1 - t0)) s"
# no plugin binary inside: the only shared object is the extension
"$WORK/build-venv/bin/python" - "$WHEEL" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
sos = [n for n in names if ".so" in n]
assert sos == ["torch_tpu/_C" + n[len("torch_tpu/_C"):] for n in sos] and len(sos) == 1, sos
assert not any("pjrt" in n.lower() or "libtpu" in n.lower() for n in names), names
print(f"wheel: {len(names)} files, one shared object: {sos[0]}")
PY
[ "${1:-}" = "--build-only" ] && exit 0
"$PYTHON" -m venv "$WORK/test-venv"
"$WORK/test-venv/bin/pip" install -q --disable-pip-version-check -c "$ROOT/constraints.txt" \
  torch==2.13.0 xla-cpu-pjrt==0.0.1 "$WHEEL"
t2=$(date +%s)
echo "installed into a fresh venv in $((t2 - t1)) s"
cd /tmp
env -u PYTHONPATH TORCH_TPU_CACHE=0 "$WORK/test-venv/bin/python" - <<'PY'
import os, torch, torch_tpu
assert "test-venv" in torch_tpu.__file__, torch_tpu.__file__
torch.manual_seed(0)
ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
dev = {"cpu": ref, "tpu": __import__("copy").deepcopy(ref).to("tpu")}
x, y = torch.randn(32, 8), torch.randn(32, 1)
losses = {}
for name, m in dev.items():
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    out = []
    for _ in range(3):
        loss = torch.nn.functional.mse_loss(m(x.to(name)), y.to(name))
        opt.zero_grad(); loss.backward(); opt.step()
        out.append(loss.item())
    losses[name] = out
print("losses cpu", losses["cpu"], "tpu", losses["tpu"])
assert all(abs(a - b) < 1e-4 for a, b in zip(losses["cpu"], losses["tpu"])), losses
print(f"OK: torch_tpu from {os.path.dirname(torch_tpu.__file__)}, torch {torch.__version__}, "
      f"device {torch.tpu.get_device_name()}")
PY
echo "wheel test passed ($(( $(date +%s) - t0 )) s in all)"
