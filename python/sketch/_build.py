"""Runs sketchc and nvcc, and caches what they build.

A build is keyed by a hash of the sketch's text, the options (arch, defines),
the sketchc binary's bytes, the runtime headers and nvcc's version: any of them
changing makes a new build. A cache entry is a folder holding kernels.cu,
kernels.h, api.json and libkernels.so, written under a temporary name and then
renamed, so a half-written entry is never used.
"""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


class CompileError(RuntimeError):
    """sketchc or nvcc rejected the sketch; the message holds their output."""


def find_sketchc():
    """$SKETCHC, then sketchc next to this package (sketch/bin), then PATH, then the
    source tree's build (build/compiler/)."""
    candidates = [os.environ.get("SKETCHC"), os.path.join(HERE, "bin", "sketchc"),
                  shutil.which("sketchc"),
                  os.path.join(REPO, "build", "compiler", "sketchc")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise CompileError("sketchc not found: set SKETCHC, put it on PATH, or build it "
                       "(scripts/setup.sh)")


def find_runtime_include():
    """The runtime headers the generated CUDA includes: $SKETCH_RUNTIME_INCLUDE, the copy
    installed with the package (sketch/include), or the source tree's runtime/include."""
    for path in [os.environ.get("SKETCH_RUNTIME_INCLUDE"), os.path.join(HERE, "include"),
                 os.path.join(REPO, "runtime", "include")]:
        if path and os.path.isfile(os.path.join(path, "sketch", "host.h")):
            return path
    raise CompileError("sketch's runtime headers not found (sketch/include or runtime/include); "
                       "set SKETCH_RUNTIME_INCLUDE")


def find_nvcc():
    for path in [os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]:
        if path and os.path.isfile(path):
            return path
    raise CompileError("nvcc not found: put the CUDA toolkit's bin on PATH or set NVCC")


def default_cache_dir():
    root = os.environ.get("SKETCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sketch")
    return root


_file_hashes = {}


def _hash_file(path, digest):
    """Feeds a file's bytes to `digest` (memoized by path, size and mtime)."""
    stat = os.stat(path)
    key = (path, stat.st_size, stat.st_mtime_ns)
    if key not in _file_hashes:
        with open(path, "rb") as f:
            _file_hashes[key] = hashlib.sha256(f.read()).hexdigest()
    digest.update(_file_hashes[key].encode())


def _hash_tree(root, digest):
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, root).encode())
            _hash_file(path, digest)


_nvcc_versions = {}


def _nvcc_version(nvcc):
    if nvcc not in _nvcc_versions:
        _nvcc_versions[nvcc] = subprocess.run([nvcc, "--version"], capture_output=True,
                                              text=True).stdout
    return _nvcc_versions[nvcc]


def nvcc_targets(arch):
    """nvcc's -gencode flags for a sketchc --arch (one architecture or a comma-separated
    list, every variant of the .cu): each one's machine code, and for sm_80 also PTX so
    that later GPUs without their own sketchc target can run it."""
    flags = []
    for name in arch.split(","):
        flags.append(f"-gencode=arch=compute_{name[3:]},code={name}")
        if name == "sm_80":
            flags.append("-gencode=arch=compute_80,code=compute_80")
    return flags


class Build:
    """The inputs of one build and where its outputs go."""

    def __init__(self, source, arch, defines, cache_dir=None, path=None):
        self.source = source
        self.path = path  # the user's file, so that sketchc's errors name it
        self.arch = arch
        self.defines = dict(sorted((str(k), int(v)) for k, v in dict(defines or {}).items()))
        self.sketchc = find_sketchc()
        self.include = find_runtime_include()
        self.nvcc = find_nvcc()
        self.cache_dir = cache_dir or default_cache_dir()

    def key(self):
        digest = hashlib.sha256()
        digest.update(json.dumps({"source": self.source, "arch": self.arch,
                                  "defines": self.defines}, sort_keys=True).encode())
        _hash_file(self.sketchc, digest)
        _hash_tree(self.include, digest)
        digest.update(_nvcc_version(self.nvcc).encode())
        return digest.hexdigest()[:24]

    def sketchc_args(self):
        args = ["--arch", self.arch]
        for name, value in self.defines.items():
            args += ["-D", f"{name}={value}"]
        return args

    def run(self, verbose=False):
        """The cache folder of this build, building it first when it is not there."""
        entry = os.path.join(self.cache_dir, self.key())
        if os.path.isfile(os.path.join(entry, "libkernels.so")):
            return entry
        os.makedirs(self.cache_dir, exist_ok=True)
        work = tempfile.mkdtemp(prefix=".build-", dir=self.cache_dir)
        try:
            self._build_in(work, verbose)
            try:
                os.rename(work, entry)
            except OSError:  # another process made the same entry first
                if not os.path.isfile(os.path.join(entry, "libkernels.so")):
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return entry

    def _build_in(self, work, verbose):
        sketch_path = self.path
        if sketch_path is None:
            sketch_path = os.path.join(work, "source.sketch")
            with open(sketch_path, "w") as f:
                f.write(self.source)
        common = [self.sketchc, sketch_path] + self.sketchc_args()
        _run(common + ["-o", os.path.join(work, "kernels.cu")], "sketchc", verbose)
        _run(common + ["--emit=api", "-o", os.path.join(work, "api.json")], "sketchc", verbose)
        # --split-compile=0: nvcc's optimizer over every core (a generated file holds
        # many kernels; the llama layer's built 1.2x faster on 2 cores, registers unchanged)
        _run([self.nvcc, "-std=c++17", "-O3", "--split-compile=0", "-shared", "-Xcompiler",
              "-fPIC", "-I", self.include, "-I", work] + nvcc_targets(self.arch) +
             [os.path.join(work, "kernels.cu"), "-o", os.path.join(work, "libkernels.so")],
             "nvcc", verbose)


def _run(command, tool, verbose):
    if verbose:
        print("sketch:", " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(f"{tool} failed (exit status {result.returncode}):\n"
                           f"{result.stderr.strip() or result.stdout.strip()}")
    if verbose and result.stderr:
        print(result.stderr, end="")
