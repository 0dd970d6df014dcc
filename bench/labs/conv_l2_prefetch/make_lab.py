"""The L2-prefetch lab (README.md): rewrites the generated warp-specialized kernels of the
stride-2 layers (`bc_{f16,bf16}_s2p1_default_ws`, `_ws_tall`, `_ws_narrow`) in .gen/ab/new.cu:
a kernel parameter `pf_start`; in the whole tiles' producer loop, after k-tile kt's loads, the
next tile's (tile + gridDim.x, when it is a whole tile) im2col boxes are prefetched to L2
(prefetch.cuh), spread over k-tiles pf_start .. k_tiles - 1. Nothing else changes."""
import os
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()
HELPER = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "prefetch.cuh")).read()


def sub_exact(text, old, new, count):
    assert text.count(old) == count, (old[:90], text.count(old))
    return text.replace(old, new)


def kernel(part):
    part = sub_exact(part, "const __grid_constant__ CUtensorMap y_map) {",
                     "const __grid_constant__ CUtensorMap y_map, int pf_start) {", 1)
    load_b = "sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);\n"
    first = part.index(load_b) + len(load_b)
    part = (part[:first] +
            "          if (tile + (int)gridDim.x < whole_tiles)  // lab: the next tile's boxes to L2\n"
            "            lab_pf::next_tile(&x_map, shape, (int64_t)((tile + (int)gridDim.x) / tiles_n) * BM, kt, k_tiles, pf_start, BK);\n"
            + part[first:])
    return part


def host(part, name):
    launches = re.findall(rf"launch_kernel\({name}_ws(?:_tall|_narrow)?, [^;]*x_map, w_map, y_map\);", part)
    for l in launches:
        part = part.replace(l, l.replace("x_map, w_map, y_map)", "x_map, w_map, y_map, lab_pf::start(depth, 64))"))
    return part, len(launches)


out, kernels, branches = [], 0, 0
for part in re.split(r'(?=^__global__ |^extern "C" cudaError_t )', src, flags=re.M):
    m = re.match(r"__global__ void __launch_bounds__\(\d+, 1\) bc_(f16|bf16)_s2p1_default_ws(_tall|_narrow)?\(", part)
    h = re.match(r'extern "C" cudaError_t (bc_(f16|bf16)_s2p1_default)\(', part)
    if m:
        part = kernel(part)
        kernels += 1
    elif h:
        part, n = host(part, h.group(1))
        branches += n
    out.append(part)
src = "".join(out)
first = src.index("\n", src.index('#include "sketch/tma.cuh"')) + 1
src = src[:first] + HELPER + src[first:]
assert kernels == branches > 0, (kernels, branches)
open(path, "w").write(src)
print(f"{path}: {kernels} kernels, {branches} launches")
