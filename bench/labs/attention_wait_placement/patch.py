#!/usr/bin/env python3
"""Rewrites generated sm_90a attention kernels back to the wait placement before 74c222f:
P V of tile j waited for before the branch on the rescaling vote (which ptxas scheduled
above the softmax) instead of in each arm of it. For a same-run A/B without a second
compiler build: bench/ab.sh with SKETCHC_AB=SKETCHC, then this on the `_ab` twins' file.

Usage: patch.py FILE.cu   (rewritten in place; prints how many loops it changed)
"""
import re
import sys

NEW = re.compile(
    r"(?P<i>[ ]*)// Wait for P V of tile j in each arm of the rescaling branch[^\n]*\n"
    r"(?P=i)if \(warp_rescales\(P_correction\)\) \{\n"
    r"(?P<wait>(?:(?P=i)  [^\n]*\n){4})"
    r"(?P=i)  (?P<scale>scale_rows\([^\n]*)\n"
    r"(?P=i)\} else \{ // (?P<why>[^\n]*)\n"
    r"(?P=wait)"
    r"(?P=i)\}\n")


def old_form(m):
    indent = m.group("i")
    wait = "".join(indent + line[len(indent) + 2:] + "\n" for line in m.group("wait").splitlines())
    return (wait + f"{indent}if (warp_rescales(P_correction)) // {m.group('why')}\n"
            f"{indent}  {m.group('scale')}\n")


def main(path):
    with open(path) as f:
        text = f.read()
    text, count = NEW.subn(old_form, text)
    with open(path, "w") as f:
        f.write(text)
    print(f"{path}: {count} loops back to the wait before the branch")
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
