#!/usr/bin/env python3
"""Lab (bench/labs/gelu): makes .gen/ab/new.cu call lab_gelu (candidate.cuh) where the
generated code calls sketch::gelu; old.cu keeps the runtime's. See README.md."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", ".gen", "ab", "new.cu")
text = open(path).read()
calls = text.count("sketch::gelu(")
text = text.replace("sketch::gelu(", "lab_gelu(")
# relative to the .cu, so that the include holds on the GPU machine's copy of the tree too
candidate = os.path.relpath(os.path.join(HERE, "candidate.cuh"), os.path.dirname(os.path.abspath(path)))
text = text.replace('#include "sketch/epilogue.cuh"\n', f'#include "sketch/epilogue.cuh"\n#include "{candidate}"\n', 1)
open(path, "w").write(text)
print(f"{path}: {calls} calls of sketch::gelu now lab_gelu")
