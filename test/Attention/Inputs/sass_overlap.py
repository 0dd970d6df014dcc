#!/usr/bin/env python3
"""Whether each sm_90a attention kernel's softmax runs beside its P V GEMM, read off the SASS.

For every innermost loop holding wgmma (HGMMA) and ex2 (MUFU.EX2) instructions, counts the
ex2s between the loop's last HGMMA (P V of tile j, issued) and the first wait for every
group after it (WARPGROUP.DEPBAR.LE gsb0, 0x0): the softmax of tile j + 1 overlaps P V only
there. Prints one line a loop, `overlapped: N of M ex2`, and `loops without overlap: K`.

Usage: sass_overlap.py FILE.sass   (cuobjdump -sass output)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
from sass_listing import body, kernels, loops  # noqa: E402


def innermost(found):
    return [loop for loop in found
            if not any(other != loop and loop[0] <= other[0] and other[1] <= loop[1] for other in found)]


def overlapped(instructions):
    issues = [i for i, (_, t) in enumerate(instructions) if "HGMMA" in t]
    waits = [i for i, (_, t) in enumerate(instructions)
             if i > issues[-1] and "WARPGROUP.DEPBAR" in t and t.endswith("gsb0, 0x0")]
    end = waits[0] if waits else len(instructions)
    return (sum("MUFU.EX2" in t for _, t in instructions[issues[-1]:end]),
            sum("MUFU.EX2" in t for _, t in instructions))


def main(path):
    with open(path) as f:
        text = f.read()
    without = 0
    for name, code in kernels(text):
        for loop in innermost(loops(code)):
            instructions = body(code, loop)
            texts = [t for _, t in instructions]
            if not any("HGMMA" in t for t in texts) or not any("MUFU.EX2" in t for t in texts):
                continue
            between, total = overlapped(instructions)
            without += between == 0
            print(f"{name}: overlapped: {between} of {total} ex2")
    print(f"loops without overlap: {without}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
