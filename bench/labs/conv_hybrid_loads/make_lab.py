"""Writes the hybrid-loads lab's new.cu from .gen/ab/new.cu (README.md): lab_hy::conv
(hybrid.cuh) goes before the first convolution host function, and every host function's
launch of its persistent TMA kernels (`NAME_ws`, 128 x 128, and `NAME_ws_tall`, 192 x 128)
launches lab_hy::conv of the same tile instead (LAB_TMA_ROWS at run time: the rows the TMA
box brings); LAB_NO_TALL=1 turns the tall variant off."""
import os
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()
kernel = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hybrid.cuh")).read()
pattern = re.compile(r"return sketch::launch_kernel\(bc_(f16|bf16)_\w+?_ws(_tall)?, dim3\(unsigned\(grid\)\), (384|512), smem_bytes, "
                     r"split\.slices, [^,]+, stream, (X, Wt, Y, N, H, W, C, K, shape, x_map, w_map, y_map)\);")
launches = 0


def repl(m):
    global launches
    launches += 1
    elem = "__half" if m.group(1) == "f16" else "__nv_bfloat16"
    bm = 192 if m.group(2) else 128
    return f"return lab_hy::launch<{elem}, {bm}>(blocks, stream, {m.group(4)});  // lab: hybrid loads"


src = pattern.sub(repl, src)
src = src.replace("if (sketch::wave_rows(", "if (!getenv(\"LAB_NO_TALL\") && sketch::wave_rows(")
first_host = src.index('extern "C" cudaError_t bc_')
src = src[:first_host] + kernel + "\n" + src[first_host:]
assert launches > 0
open(path, "w").write(src)
print(f"{path}: {launches} launches")
