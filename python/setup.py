"""The vramcalc package's build step (pyproject.toml has the metadata):

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation ./python

The build compiles libvramcalc.so from this repository's C sources with CMake (target
vramcalc_shared; needs cmake, a C compiler and libcjson-dev), or copies a library
already built when VRAMCALC_LIB names it, and puts it in the package with a copy of
tools/torch2vramcalc.py (the nn.Module exporter).  No dependency beyond the standard
library; torch is needed only to pass an nn.Module.
"""

import os
import shutil
import subprocess
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _build_library(tmp):
    build = os.path.join(tmp, "build")
    subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                           "-DBUILD_TESTING=OFF"])
    subprocess.check_call(["cmake", "--build", build, "--target", "vramcalc_shared", "-j2"])
    return os.path.join(build, "libvramcalc.so")


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "vramcalc")
        lib = os.environ.get("VRAMCALC_LIB")
        with tempfile.TemporaryDirectory() as tmp:
            if not lib:
                lib = _build_library(tmp)
            shutil.copyfile(lib, os.path.join(dest, "libvramcalc.so"))
        shutil.copyfile(os.path.join(ROOT, "tools", "torch2vramcalc.py"), os.path.join(dest, "_t2v.py"))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it carries a shared library
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
