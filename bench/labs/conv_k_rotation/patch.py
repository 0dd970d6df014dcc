#!/usr/bin/env python3
"""Lab: rotate the k-tile order of each whole tile in the persistent nhwc convolution kernels
(NAME_ws, NAME_ws_narrow) of a generated .cu, in place: the producer asks for k-tiles
rot, rot + 1, .., k_tiles - 1, 0, .., rot - 1 of tile `tile`, rot = tile % k_tiles.
The consumers only sum the k-tiles, so the result is the same up to the order of the f32
sums. The split tail's slices keep their order.
    python3 bench/labs/conv_k_rotation/patch.py .gen/ab/new.cu
"""
import re
import sys

K_LINE = "const int k = kt * BK, tap = k / shape.c, c0 = k - tap * shape.c;  // (r, s, c)"
TILE_LOOP = "for (int tile = blockIdx.x; tile < whole_tiles; tile += gridDim.x) {"
KT_LOOP = "for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {"


def patch(lines):
    """The lines with each whole-tile producer loop rotated; how many were."""
    out, patched, in_producer = [], 0, False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("if (threadIdx.x == 0) {"):
            in_producer = True  # the producer thread's loops follow
        if stripped.startswith("// consumer warpgroups"):
            in_producer = False
        if in_producer and stripped == KT_LOOP and any(TILE_LOOP in l for l in lines[i - 8:i]):
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}const int k_rot = k_tiles > 0 ? tile % k_tiles : 0;  "
                       "// lab: this tile's first k-tile\n")
            out.append(line)
            continue
        if in_producer and stripped == K_LINE and any("k_rot" in l for l in out[-8:]):
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}const int kr = kt + k_rot < k_tiles ? kt + k_rot : "
                       "kt + k_rot - k_tiles;  // lab: rotated\n")
            out.append(line.replace("const int k = kt * BK,", "const int k = kr * BK,"))
            patched += 1
            continue
        out.append(line)
    return out, patched


def main():
    path = sys.argv[1]
    lines = open(path).readlines()
    out, patched = patch(lines)
    kernels = len(re.findall(r"__global__ void __launch_bounds__\([^)]*\) \w+_ws(?:_narrow)?\(",
                             "".join(lines)))
    open(path, "w").writelines(out)
    print(f"{path}: rotated the whole-tile loops of {patched} of {kernels} persistent kernels")
    if patched != kernels:
        sys.exit(1)


if __name__ == "__main__":
    main()
