"""Builds torch_tpu's C core and its PyTorch extension (torch_tpu._C) for
`pip install .` and `python -m build --wheel`: the core's C sources
(csrc/{core,pjrt,shlo,ops,graph,cache}) compiled as C11 in parallel into a
static library, then csrc/torch/*.cpp against the installed torch, linked
with it. The wheel carries no PJRT plugin (plugins come from their own
packages: xla-cpu-pjrt, libtpu). `make build` remains the development
build; with TT_BUILD_EXTENSION=0 (the Makefile's editable metadata
install) no extension is built here."""
import glob
import os
import sysconfig
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE_DIRS = ("core", "pjrt", "shlo", "ops", "graph", "cache")
CFLAGS = ["-std=c11", "-O2", "-g0", "-fPIC", "-Wall", "-Wextra", "-D_GNU_SOURCE"]


class BuildCoreAndExtension(build_ext):
    def build_extension(self, ext):
        import torch
        from torch.utils import cpp_extension

        here = os.path.dirname(os.path.abspath(__file__))
        # one compiler call per source, in parallel (setuptools compiles a
        # list one file at a time): the core's C files, then the extension's
        serial = self.compiler.compile
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2

        def parallel(sources, *args, **kwargs):
            with ThreadPoolExecutor(max_workers=workers) as pool:
                return [o for objs in pool.map(lambda s: serial([s], *args, **kwargs), sources)
                        for o in objs]
        self.compiler.compile = parallel
        srcs = sorted(s for d in CORE_DIRS for s in glob.glob(os.path.join("csrc", d, "*.c")))
        tmp = os.path.join(self.build_temp, "core")
        objs = self.compiler.compile(srcs, output_dir=tmp, include_dirs=[os.path.join(here, "csrc")],
                                     extra_postargs=CFLAGS)
        self.compiler.create_static_lib(objs, "tt_core", output_dir=tmp)
        abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
        ext.include_dirs += [os.path.join(here, "csrc")]
        # torch's headers as system headers: their warnings are not ours
        system = cpp_extension.include_paths() + [sysconfig.get_paths()["include"]]
        ext.extra_compile_args += [a for p in system for a in ("-isystem", p)]
        ext.library_dirs += [os.path.join(os.path.dirname(torch.__file__), "lib")]
        ext.libraries += ["c10", "torch", "torch_cpu", "torch_python", "dl", "pthread"]
        ext.extra_objects += [self.compiler.library_filename("tt_core", output_dir=tmp)]
        ext.extra_compile_args += ["-std=c++17", "-O2", "-g0", "-Wno-unused-parameter",
                                   f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
                                   "-DTORCH_EXTENSION_NAME=_C", "-DTORCH_API_INCLUDE_EXTENSION_H"]
        # torch's libraries sit beside torch_tpu in site-packages
        ext.extra_link_args += ["-Wl,-rpath,$ORIGIN/../torch/lib"]
        super().build_extension(ext)


ext_modules = []
if os.environ.get("TT_BUILD_EXTENSION", "1") != "0":
    ext_modules.append(Extension("torch_tpu._C", sorted(glob.glob("csrc/torch/*.cpp")),
                                 language="c++"))

setup(ext_modules=ext_modules, cmdclass={"build_ext": BuildCoreAndExtension})
