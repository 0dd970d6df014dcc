#!/usr/bin/env python3
"""Static register-bank conflicts of the FFMAs in each kernel's hottest loop (SASS).

Model (two register banks, bank = register number % 2; an operand slot whose register the
previous instruction marked `.reuse` in that slot comes from the reuse cache): an FFMA whose
three sources all come from the register file and all sit in one bank is a three-way
conflict (`m3`); `m2` counts each source beyond the first in a bank among the ones read
from the register file. The hottest loop is the backward branch holding the most FFMAs.
README.md beside this file says how these numbers compared with measured times.

Usage: bank_conflicts.py FILE.sass [...]   (cuobjdump -sass output; several kernels each)
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
from sass_listing import body, kernels, loops, opcode  # noqa: E402

ALU = ("FFMA", "FADD", "FMUL", "IMAD", "IADD3", "LOP3", "ISETP", "FSETP", "MOV", "SHF", "LEA",
       "IMNMX", "SEL")
REGISTER = re.compile(r"-?\|?(R\d+)(\.reuse)?")


def hottest_loop(code):
    """The backward branch's body holding the most FFMAs."""
    bodies = [body(code, loop) for loop in loops(code)]
    return max(bodies, key=lambda b: sum("FFMA" in t for _, t in b), default=[])


def conflicts(loop):
    reuse, ffma, m3, m2 = {}, 0, 0, 0
    for _, text in loop:
        name = opcode(text)
        if not name.startswith(ALU):
            continue
        operands = text.split(name, 1)[1]
        sources = [o.strip() for o in operands.split(",")][1:4]
        cached, from_file = {}, []
        for slot, operand in enumerate(sources):
            m = REGISTER.match(operand)
            if not m or m.group(1) == "RZ":
                continue
            if m.group(2):
                cached[slot] = m.group(1)
            if reuse.get(slot) != m.group(1):
                from_file.append(int(m.group(1)[1:]) % 2)
        reuse = cached
        if name.startswith("FFMA"):
            ffma += 1
            m3 += len(from_file) == 3 and len(set(from_file)) == 1
            m2 += sum(max(0, from_file.count(bank) - 1) for bank in (0, 1))
    return ffma, m3, m2


def main(paths):
    for path in paths:
        with open(path) as f:
            for name, code in kernels(f.read()):
                ffma, m3, m2 = conflicts(hottest_loop(code))
                if ffma:
                    print(f"{name[:72]:72} FFMA {ffma:5} m3 {m3:4} m2 {m2:4}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
