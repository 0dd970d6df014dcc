#!/usr/bin/env python3
"""Adds a prefetch of every TMA descriptor (prefetch.tensormap, as CUTLASS and FlashAttention-3
do) at the start of each kernel of a generated file that takes tensor maps, by thread 0: the
descriptors' fetch then overlaps the block's set-up (mbarriers, coordinates) instead of delaying
its first TMA load. For a same-run A/B with one compiler: bench/ab.sh with SKETCHC_AB=SKETCHC,
then this on the file of the kernels without the suffix (new.cu).

Usage: patch.py FILE.cu   (rewritten in place; prints how many kernels it changed)
"""
import re
import sys

HELPER = """
namespace {
__device__ __forceinline__ void lab_prefetch_descriptor(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
} // namespace
"""
KERNEL = re.compile(r"(\w+)\(([^)]*CUtensorMap[^)]*)\) \{\n")


def main(path):
    text = open(path).read()
    # after the first include that declares CUtensorMap
    first = re.search(r'^#include "sketch/(tma|flash_hopper)\.cuh"[^\n]*\n', text, re.M).end()
    text = text[:first] + HELPER + text[first:]
    out, count, pos = [], 0, 0
    for m in KERNEL.finditer(text):
        maps = re.findall(r"CUtensorMap (\w+)", m.group(2))
        calls = " ".join(f"lab_prefetch_descriptor(&{name});" for name in maps)
        out.append(text[pos:m.end()] + f"  if (threadIdx.x == 0) {{ {calls} }}\n")
        pos, count = m.end(), count + 1
    out.append(text[pos:])
    open(path, "w").write("".join(out))
    print(f"{path}: {count} kernels prefetch their descriptors")
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
