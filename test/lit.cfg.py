# lit configuration for the sketch compiler's tests.
import os
import sys
import lit.formats

config.name = "sketch"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".sketch", ".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "lit.site.cfg.py.in", "gpu", "Inputs", "CMakeLists.txt"]

# `--param tools=DIR` runs the suite with the sketchc and sketch-opt in DIR, such
# as another build's.
config.sketch_tools_dir = os.path.abspath(lit_config.params.get("tools", config.sketch_tools_dir))
config.environment["PATH"] = os.pathsep.join(
    [config.sketch_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# In a sanitized build (SKETCH_SANITIZE) a report aborts the tool, so that `not`
# and exit-status checks see a crash rather than an ordinary exit status 1.
for sanitizer in ["ASAN_OPTIONS", "UBSAN_OPTIONS"]:
    config.environment[sanitizer] = "abort_on_error=1:print_stacktrace=1:" + os.environ.get(sanitizer, "")
config.substitutions.append(("%examples", os.path.join(config.sketch_src_root, "examples")))
config.substitutions.append(("%runtime", os.path.join(config.sketch_src_root, "runtime", "include")))
config.substitutions.append(("%srcroot", config.sketch_src_root))
# The interpreter running lit, not a launcher such as a pyenv shim.
config.substitutions.append(("%python", sys.executable))
# `--param nvcc=0` leaves out the tests that compile generated code with nvcc
# (scripts/test-asan.sh: sanitizers do not change what nvcc does).
if config.nvcc and os.path.exists(config.nvcc) and lit_config.params.get("nvcc") != "0":
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", config.nvcc))
# cuobjdump (not in every toolkit; PyPI's nvidia-cuda-cuobjdump wheel holds one): next to
# nvcc, on PATH, or named by SKETCH_CUOBJDUMP. Tests that read SASS require it.
import shutil
cuobjdump = os.environ.get("SKETCH_CUOBJDUMP") or shutil.which("cuobjdump") or (
    os.path.join(os.path.dirname(config.nvcc), "cuobjdump") if config.nvcc else "")
if "nvcc" in config.available_features and cuobjdump and os.access(cuobjdump, os.X_OK):
    config.available_features.add("cuobjdump")
    config.substitutions.append(("%cuobjdump", cuobjdump))
