"""Copies what the package needs from the repository into it when it is built:
runtime/include (the headers the generated CUDA includes) as sketch/include,
and a sketchc binary as sketch/bin/sketchc when $SKETCH_BUNDLE_SKETCHC names
one (e.g. build/compiler/sketchc, which links MLIR and LLVM statically)."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.join(HERE, "..", "runtime", "include")


class BuildWithRuntime(build_py):
    def run(self):
        super().run()
        package = os.path.join(self.build_lib, "sketch")
        include = os.path.join(package, "include")
        shutil.rmtree(include, ignore_errors=True)
        shutil.copytree(RUNTIME, include)
        sketchc = os.environ.get("SKETCH_BUNDLE_SKETCHC")
        if sketchc:
            os.makedirs(os.path.join(package, "bin"), exist_ok=True)
            shutil.copy2(sketchc, os.path.join(package, "bin", "sketchc"))


setup(cmdclass={"build_py": BuildWithRuntime})
