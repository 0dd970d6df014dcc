#!/usr/bin/env python3
"""Mutants that sketchc accepts must compile: nvcc on the CUDA it writes for them.

mutate_sketchc.py checks that sketchc exits cleanly; this takes the mutants it accepts
(`--emit cuda` for sm_80, sm_90, sm_90a or sm_80,sm_90a, the last with its dispatch;
sometimes a --tile, --warps or --stages), keeps one of each distinct output, and compiles that with nvcc
(-O3, -Xptxas -v). A finding is an nvcc error or a compiler warning (the generated code
compiles without either), or nvcc past --nvcc-timeout; spills are counted and listed, the
mutant kept as OUT/spills-SEED-RUN.sketch, but are not findings (an unusual --tile may need
more registers than a thread has). Findings
go to OUT with the mutant, the command and nvcc's output.

Usage: test/fuzz/compile_mutants.py SKETCHC [--seconds 1800] [--seed 1] [--out DIR]
         [--nvcc /usr/local/cuda/bin/nvcc] [--count N]
test/Robustness/compile-mutants.test runs a fixed dozen (--count 12) in the lit suite.
"""
import hashlib
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutate_sketchc import NUMBERS, ROOT, fuzz_parser, mutants, save_finding  # noqa: E402

ARCHES = ["sm_80", "sm_90", "sm_90a", "sm_90a", "sm_80,sm_90a"]
WARNING = re.compile(r"warning #\d+-D|: warning:")
SPILLS = re.compile(r" [1-9]\d* bytes spill (stores|loads)")


def options(rng):
    arch = rng.choice(ARCHES)
    args = ["--arch", arch]
    if rng.random() < 0.1:
        args += ["--tile", "x".join(rng.choice(NUMBERS[:30]) for _ in range(rng.choice([2, 3, 3])))]
    if rng.random() < 0.05:
        args += ["--warps", rng.choice(["1", "2", "4", "8", "12", "16"])]
    if rng.random() < 0.05:
        args += ["--stages", rng.choice(["1", "2", "3", "4", "6"])]
    return arch, args


def accepted(sketchc, text, args, work, timeout):
    """The CUDA sketchc writes for `text`, or None where it rejects it (or fails)."""
    src, cu = os.path.join(work, "mutant.sketch"), os.path.join(work, "mutant.cu")
    with open(src, "w") as f:
        f.write(text)
    try:
        p = subprocess.run([sketchc, src, "--emit", "cuda", "-o", cu] + args,
                           capture_output=True, text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0 or not os.path.exists(cu):
        return None
    with open(cu) as f:
        return f.read()


def compile_cuda(nvcc, cu, arch, timeout):
    """nvcc's status and output for one generated file (None: past the timeout)."""
    gencodes = [x for a in arch.split(",") for x in ("-gencode", f"arch=compute_{a[3:]},code={a}")]
    cmd = [nvcc, "-std=c++17", "-O3", "-I", os.path.join(ROOT, "runtime", "include")] + gencodes + [
        "-Xptxas", "-v", "-c", cu, "-o", cu + ".o"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return None, " ".join(cmd), ""
    return p.returncode, " ".join(cmd), p.stdout + p.stderr


def main():
    parser = fuzz_parser(__doc__, 1800, "compile-findings")
    parser.add_argument("--nvcc-timeout", type=float, default=600)
    parser.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    parser.add_argument("--count", type=int, default=0,
                        help="stop after compiling this many (0: when --seconds are over)")
    a = parser.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="sketchc-compile-")
    seen, runs, compiled, findings, spilled = set(), 0, 0, 0, []
    for text in mutants(rng, a.seconds):
        if a.count and compiled >= a.count:
            break
        arch, args = options(rng)
        runs += 1
        cuda = accepted(a.sketchc, text, args, work, a.timeout)
        if cuda is None:
            continue
        digest = hashlib.sha256((arch + cuda).encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        cu = os.path.join(work, f"{digest[:16]}.cu")
        with open(cu, "w") as f:
            f.write(cuda)
        status, cmd, output = compile_cuda(a.nvcc, cu, arch, a.nvcc_timeout)
        compiled += 1
        bad = (f"nvcc over {a.nvcc_timeout:.0f} s" if status is None
               else f"nvcc status {status}" if status != 0
               else "a compiler warning" if WARNING.search(output) else None)
        if SPILLS.search(output):  # kept to look at, not a finding
            spilled.append(f"{digest[:16]} {' '.join(args)}")
            with open(os.path.join(a.out, f"spills-{a.seed}-{runs}.sketch"), "w") as f:
                f.write(f"# sketchc --emit cuda {' '.join(args)}\n{text}")
        print(f"compiled {compiled} ({runs} mutants): {arch} {' '.join(args[2:])} "
              f"{bad or 'ok'}", flush=True)
        if bad:
            findings += 1
            save_finding(a, runs, findings, text, bad,
                         f"sketchc mutant.sketch --emit cuda {' '.join(args)}\n{cmd}\n{output[-6000:]}")
        os.remove(cu)
        if os.path.exists(cu + ".o"):
            os.remove(cu + ".o")
    print(f"compile_mutants: {runs} mutants, {compiled} distinct accepted ones compiled, "
          f"{findings} findings, {len(spilled)} with spills, seed {a.seed}, {a.seconds:.0f} s")
    for line in spilled:
        print(f"spills: {line}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
