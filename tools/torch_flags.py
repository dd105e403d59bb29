"""Prints make variables for compiling against the installed torch."""
import os
import sysconfig

import torch
from torch.utils import cpp_extension

includes = cpp_extension.include_paths() + [sysconfig.get_paths()["include"]]
abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
print("TORCH_CXXFLAGS := " + " ".join(f"-isystem {p}" for p in includes) +
      f" -D_GLIBCXX_USE_CXX11_ABI={abi}")
print(f"TORCH_LDFLAGS := -L{lib} -Wl,-rpath,{lib} -lc10 -ltorch -ltorch_cpu -ltorch_python")
