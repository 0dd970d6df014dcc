"""Writes the ping-pong lab's new.cu from .gen/ab/new.cu (README.md): lab_pp::conv (pingpong.cuh)
goes before the first convolution host function, and every host function's launch of its
128 x 128 persistent kernel (`NAME_ws`) launches lab_pp::conv instead; the tall variant's
branch is switched off so that the 128 x 128 path is taken."""
import os
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()
kernel = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pingpong.cuh")).read()
pattern = re.compile(r"return sketch::launch_kernel\((bc_(f16|bf16)_\w+?)_ws, dim3\(unsigned\(grid\)\), 384, smem_bytes, "
                     r"split\.slices, [^,]+, stream, (X, Wt, Y, N, H, W, C, K, shape, x_map, w_map, y_map)\);")
launches = 0


def repl(m):
    global launches
    launches += 1
    elem = "__half" if m.group(2) == "f16" else "__nv_bfloat16"
    return f"return lab_pp::launch<{elem}>(blocks, stream, {m.group(3)});  // lab: the ping-pong kernel"


src = pattern.sub(repl, src)
tall = src.count("if (sketch::wave_rows(")
src = src.replace("if (sketch::wave_rows(", "if (false && sketch::wave_rows(")
first_host = src.index('extern "C" cudaError_t bc_')
src = src[:first_host] + kernel + "\n" + src[first_host:]
assert launches > 0
open(path, "w").write(src)
print(f"{path}: {launches} launches, {tall} tall branches off")
