#!/usr/bin/env python3
"""Feeds sketchc mutated and garbage inputs; every run must exit 0 or 1.

Deterministic for a given --seed: mutates the .sketch files found under the
given paths (random byte edits, insertions, deletions, truncations, line
swaps, indentation changes, deep nesting, pure garbage) and runs
`sketchc FILE ARGS...` on each. A run fails when sketchc dies of a signal,
exits with another status, runs past --timeout, or exits 1 without printing
an `error:`. Failing inputs are saved under --save for reproduction.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

PUNCTUATION = b"()[]:,=^+-*/#\n\t \r"
WORDS = [b"kernel", b"for", b"in", b"Copy", b"Compute", b"Allocate", b"Reshape", b"GEMM",
         b"from", b"to", b"global", b"shared", b"register", b"tile", b"warps", b"stages",
         b"with", b"offset", b"coordinate", b"L", b"and", b"get", b"accumulate", b"^T",
         b"relu", b"max", b"f16", b"f32", b"i32", b"nchw", b"0", b"1e-3", b"0.5",
         b"99999999999999999999", b"1e999", b"12abc", b"\x00", b"\xff", b"\xc3\xa9"]


def collect_inputs(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in sorted(os.walk(path)):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".sketch")]
        else:
            files.append(path)
    return [open(f, "rb").read() for f in files]


def random_bytes(rng, size):
    return bytes(rng.randrange(256) for _ in range(size))


def mutate(rng, data, corpus):
    """One random edit of `data`; returns the new bytes and a description."""
    kind = rng.randrange(12)
    pos = rng.randrange(len(data) + 1)
    end = min(len(data), pos + rng.randrange(1, 40))
    if kind == 0 and data:
        pos = min(pos, len(data) - 1)
        return data[:pos] + bytes([rng.randrange(256)]) + data[pos + 1:], "flip byte %d" % pos
    if kind == 1:
        return data[:pos] + bytes([rng.choice(PUNCTUATION)]) + data[pos:], "insert punct %d" % pos
    if kind == 2:
        return data[:pos] + rng.choice(WORDS) + data[pos:], "insert word %d" % pos
    if kind == 3:
        return data[:pos] + data[end:], "delete %d:%d" % (pos, end)
    if kind == 4:
        return data[:end] + data[pos:end] + data[end:], "duplicate %d:%d" % (pos, end)
    if kind == 5:
        return data[:pos], "truncate %d" % pos
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if kind == 6:
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines), "swap lines %d %d" % (i, j)
    if kind == 7:
        lines[i] = rng.choice([b" ", b"  ", b"\t", b"        "]) + lines[i]
        return b"\n".join(lines), "indent line %d" % i
    if kind == 8:
        lines[i] = lines[i].lstrip(b" ")
        return b"\n".join(lines), "dedent line %d" % i
    if kind == 9:
        depth = rng.choice([50, 300, 5000, 100000])
        opener = rng.choice([b"(", b"[", b"-", b"(-"])
        return data[:pos] + opener * depth + data[pos:], "nest %d at %d" % (depth, pos)
    if kind == 10:
        other = rng.choice(corpus).split(b"\n")
        lines[i] = rng.choice(other)
        return b"\n".join(lines), "splice line %d" % i
    return random_bytes(rng, rng.randrange(1, 400)), "garbage"


def run_one(sketchc, args, data, timeout, workdir):
    path = os.path.join(workdir, "input.sketch")
    with open(path, "wb") as f:
        f.write(data)
    try:
        proc = subprocess.run([sketchc, path] + args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %ss" % timeout
    if proc.returncode not in (0, 1):
        return proc.returncode, "exit status %d" % proc.returncode
    if proc.returncode == 1 and b"error:" not in proc.stderr:
        return 1, "exit status 1 without an error message"
    return proc.returncode, None


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sketchc", default="sketchc")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("--save", default=None, help="folder for failing inputs")
    parser.add_argument("--arg", action="append", default=None,
                        help="sketchc argument (repeat); default --emit=mlir --parse-only")
    parser.add_argument("paths", nargs="+")
    opts = parser.parse_args()
    args = opts.arg or ["--emit=mlir", "--parse-only"]
    corpus = collect_inputs(opts.paths)
    if not corpus:
        sys.exit("mutate.py: no .sketch inputs found")
    rng = random.Random(opts.seed)
    failures = 0
    accepted = 0
    with tempfile.TemporaryDirectory() as workdir:
        for n in range(opts.count):
            data = rng.choice(corpus)
            steps = []
            for _ in range(rng.randrange(1, 4)):
                data, what = mutate(rng, data, corpus)
                steps.append(what)
            status, problem = run_one(opts.sketchc, args, data, opts.timeout, workdir)
            accepted += status == 0
            if problem is None:
                continue
            failures += 1
            print("FAIL #%d (%s): %s" % (n, ", ".join(steps), problem))
            if opts.save:
                os.makedirs(opts.save, exist_ok=True)
                with open(os.path.join(opts.save, "fail-%d.sketch" % n), "wb") as f:
                    f.write(data)
    print("%d inputs (%d accepted, %d rejected), %d failures" %
          (opts.count, accepted, opts.count - accepted - failures, failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
