#!/usr/bin/env python3
"""Black-box mutation fuzzing of the whole sketchc tool, emitter included.

test/fuzz/run.sh (libFuzzer) covers the front end and the passes in-process; this
drives the built `sketchc` binary end to end (completion, planning and CUDA emission
for every architecture) on mutants of the repository's sketches: numbers swapped for
edge values, element types, identifiers, statement words and lines deleted, doubled
or swapped; directives added; each run with a random --arch, --emit and sometimes
--tile / --warps / --stages / -D.

A finding is a run that ends other than with status 0 (output written) or 1 (a
located `file:line:col: error:` message, or `sketchc: error:` naming the command-line
option at fault), or that takes longer than --timeout.
Findings are written to OUT (default build-fuzz/mutate-findings/): the mutant, the
command and its stderr.

Usage: test/fuzz/mutate_sketchc.py SKETCHC [--seconds 600] [--seed 1] [--out DIR]
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUMBERS = ["0", "1", "2", "3", "5", "7", "8", "15", "16", "17", "31", "32", "48", "63", "64", "80",
           "96", "100", "127", "128", "129", "192", "255", "256", "320", "512", "1000", "1024",
           "4096", "65535", "65536", "2147483647", "2147483648", "4294967296",
           "9223372036854775807", "99999999999999999999", "-1", "-64", "0.5", "1e3"]
TYPES = ["f16", "bf16", "f32", "f64", "i8", "i32", "fp8", "u8"]
WORDS = ["GEMM", "Conv2d", "Softmax", "ReLU", "Bias", "GELU", "SiLU", "Add", "Scale", "Mask",
         "Copy", "Compute", "Allocate", "Reshape", "for", "in", "from", "to", "and", "accumulate",
         "get", "global", "shared", "register", "causal", "^T", "^", ",", ":", "(", ")", "[", "]",
         "=", "+", "*", "-", "/", "max", "exp", "relu", "0:K", "0:L", "k", "j"]
DIRECTIVES = ["tile BM = {a}, BN = {b}, BK = {c}", "warps {a}", "stages {a}", "split_k {a}",
              "split_k auto", "tile BM = {a}, BN = {b}", "stride {a}", "pad {a}", "dilation {a}"]
ARCHES = ["sm_80", "sm_90", "sm_90a", "sm_90a", "sm_80,sm_90a", "sm_90a,sm_80"]
EMITS = ["cuda", "cuda", "cuda", "sketch", "mlir", "api"]
LOCATED = re.compile(r"^[^\n]*:\d+:\d+: error: ", re.M)
# a command-line option's error names the option instead of a place in the file
OPTION_ERROR = re.compile(r"^sketchc: error: [^\n]*(--arch|--tile|--warps|--stages|-D)", re.M)


def seeds():
    out = []
    for base in ("examples", "test", "bench"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            if "fuzz-" in dirpath:
                continue
            out += [os.path.join(dirpath, f) for f in files if f.endswith(".sketch")]
    return sorted(out)


def one_kernel(text, rng):
    """One kernel of a file (with the file's lines before its first kernel), so that a
    mutant's error is not in another kernel more often than not."""
    parts = re.split(r"(?m)^(?=kernel )", text)
    if len(parts) <= 2:
        return text
    return parts[0] + rng.choice(parts[1:])


def mutate(text, rng):
    text = one_kernel(text, rng) if rng.random() < 0.8 else text
    lines = text.split("\n")
    for _ in range(rng.choice([1, 1, 1, 1, 2, 3])):
        kind = rng.randrange(8)
        if kind == 0 or kind == 1:  # a number
            spots = [(i, m) for i, line in enumerate(lines) for m in re.finditer(r"\b\d+\b", line)]
            if spots:
                i, m = rng.choice(spots)
                lines[i] = lines[i][:m.start()] + rng.choice(NUMBERS) + lines[i][m.end():]
        elif kind == 2:  # an element type
            spots = [(i, m) for i, line in enumerate(lines) for m in re.finditer(r"\b(f16|bf16|f32)\b", line)]
            if spots:
                i, m = rng.choice(spots)
                lines[i] = lines[i][:m.start()] + rng.choice(TYPES) + lines[i][m.end():]
        elif kind == 3:  # an identifier for another of the file
            names = sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text)))
            spots = [(i, m) for i, line in enumerate(lines) for m in re.finditer(r"\b[A-Za-z_]\w*\b", line)]
            if spots and names:
                i, m = rng.choice(spots)
                lines[i] = lines[i][:m.start()] + rng.choice(names + WORDS) + lines[i][m.end():]
        elif kind == 4 and len(lines) > 1:  # a line deleted or doubled
            i = rng.randrange(len(lines))
            if rng.random() < 0.5:
                del lines[i]
            else:
                lines.insert(i, lines[i])
        elif kind == 5 and len(lines) > 2:  # two lines swapped
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 6:  # a directive after a kernel header
            heads = [i for i, line in enumerate(lines) if line.startswith("kernel ")]
            if heads:
                d = rng.choice(DIRECTIVES).format(a=rng.choice(NUMBERS), b=rng.choice(NUMBERS),
                                                  c=rng.choice(NUMBERS))
                lines.insert(rng.choice(heads) + 1, "    " + d)
        else:  # a token inserted or a character cut
            i = rng.randrange(len(lines))
            line = lines[i]
            p = rng.randrange(len(line) + 1)
            if rng.random() < 0.5 or not line:
                lines[i] = line[:p] + " " + rng.choice(WORDS) + " " + line[p:]
            else:
                lines[i] = line[:p] + line[p + 1:]
    return "\n".join(lines)


def options(rng, cu):
    args = ["--arch", rng.choice(ARCHES), "--emit", rng.choice(EMITS)]
    if rng.random() < 0.03:
        args[1] = rng.choice(["sm_70", "sm_100", "sm_90a,sm_90a", ""])
    if rng.random() < 0.15:
        args += ["--tile", "x".join(rng.choice(NUMBERS[:30]) for _ in range(rng.choice([2, 3, 3])))]
    if rng.random() < 0.1:
        args += ["--warps", rng.choice(["1", "2", "4", "8", "12", "16", "32"])]
    if rng.random() < 0.1:
        args += ["--stages", rng.choice(["1", "2", "3", "4", "6", "8"])]
    if rng.random() < 0.1:
        args += ["-D", rng.choice(["N0", "M", "K", "D", "L", "H"]) + "=" + rng.choice(NUMBERS)]
    if args[3] == "cuda":
        args += ["-o", cu]
    return args


def fuzz_parser(doc, seconds, findings):
    """The options of this fuzzer and of compile_mutants.py: the binary, how long, the seed,
    sketchc's time a run, and where findings go (build-fuzz/FINDINGS)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("sketchc")
    parser.add_argument("--seconds", type=float, default=seconds)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20, help="sketchc's, a run")
    parser.add_argument("--out", default=os.path.join(ROOT, "build-fuzz", findings))
    return parser


def mutants(rng, seconds):
    """Mutants of the repository's sketches, until `seconds` have passed."""
    corpus = [open(f).read() for f in seeds()]
    end = time.time() + seconds
    while time.time() < end:
        yield mutate(rng.choice(corpus), rng)


def save_finding(a, runs, findings, text, bad, report):
    """OUT/finding-SEED-RUN.sketch (the mutant) and .txt (what went wrong, then `report`)."""
    name = os.path.join(a.out, f"finding-{a.seed}-{runs}")
    with open(name + ".sketch", "w") as f:
        f.write(text)
    with open(name + ".txt", "w") as f:
        f.write(f"{bad}\n{report}\n")
    print(f"finding {findings}: {bad}: {name}.sketch", flush=True)


def main():
    a = fuzz_parser(__doc__, 600, "mutate-findings").parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="sketchc-mutate-")
    src, cu = os.path.join(work, "fuzz.sketch"), os.path.join(work, "fuzz.cu")
    runs = findings = 0
    for text in mutants(rng, a.seconds):
        with open(src, "w") as f:
            f.write(text)
        cmd = [a.sketchc, src] + options(rng, cu)
        runs += 1
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, errors="replace")
            rc, err = p.returncode, p.stderr
            bad = None
            if rc == 1 and not LOCATED.search(err) and not OPTION_ERROR.search(err):
                bad = "status 1 without a located error"
            elif rc not in (0, 1):
                bad = f"status {rc}"
        except subprocess.TimeoutExpired:
            bad, err = f"over {a.timeout} s", ""
        except OSError:  # the binary is being rebuilt: try again shortly
            time.sleep(1)
            continue
        if bad:
            findings += 1
            save_finding(a, runs, findings, text, bad, f"{' '.join(cmd)}\n{err[-4000:]}")
    print(f"mutate_sketchc: {runs} runs, {findings} findings, seed {a.seed}, {a.seconds:.0f} s, "
          f"{len(seeds())} seeds")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
