"""Reading `cuobjdump -sass` listings: the kernels and their loops.

Shared by test/Attention/Inputs/sass_overlap.py (the softmax beside P V) and
bench/labs/sass_bank_conflicts/bank_conflicts.py (FFMA register-bank conflicts).
"""
import re

INSTRUCTION = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH = re.compile(r"BRA (0x[0-9a-f]+)")


def kernels(text):
    """(name, [(address, instruction)]) for each function of a listing."""
    for chunk in text.split("Function : ")[1:]:
        name, body = chunk.split("\n", 1)
        code = [(int(m.group(1), 16), m.group(2).strip())
                for m in map(INSTRUCTION.match, body.split("\n")) if m]
        yield name.strip(), code


def loops(code):
    """(start, end) addresses of each backward branch's body."""
    found = []
    for address, text in code:
        branch = BRANCH.search(text)
        if branch and int(branch.group(1), 16) <= address:
            found.append((int(branch.group(1), 16), address))
    return found


def body(code, loop):
    start, end = loop
    return [ins for ins in code if start <= ins[0] <= end]


def opcode(text):
    """The instruction's opcode, its predicate (`@P0`, `@!UPT`) left out."""
    return re.sub(r"^@!?U?P\w+\s+", "", text).split(" ", 1)[0]
