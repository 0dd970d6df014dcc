"""Writes the strided-box lab's new.cu from .gen/ab/new.cu (README.md): lab_sb (strided.cuh)
goes with the row tiles of rows.cuh before the first convolution host function, and the 3x3 host functions
(`bc_*_s1p1_default`, `bc_*_s2p1_default`) launch lab_sb::conv where it applies (16-byte rows,
C % 64 == 0; at stride 1 only for K > 64, where the generated code has no halo form) before
anything else; LAB_OFF=1 at run time keeps the generated path."""
import os
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()
here = os.path.dirname(os.path.abspath(__file__))
kernel = open(os.path.join(here, "rows.cuh")).read() + open(os.path.join(here, "strided.cuh")).read()
VEC_STORE = "  const bool vec_store = vec && K % 8 == 0 && sketch::aligned_to(Y, 16);\n"
CALL = ("  if (vec_store && (shape.stride_h > 1 || shape.k > 64)) {  // lab: the strided-box kernel\n"
        "    cudaError_t lab_status = cudaSuccess;\n"
        "    if (lab_sb::launch(X, Wt, Y, shape, stream, &lab_status)) return lab_status;\n"
        "  }\n")
out, hosts = [], 0
for part in re.split(r'(?=^extern "C" cudaError_t )', src, flags=re.M):
    if re.match(r'extern "C" cudaError_t bc_(f16|bf16)_s[12]p1_default\(', part):
        assert part.count(VEC_STORE) == 1
        part = part.replace(VEC_STORE, VEC_STORE + CALL)
        hosts += 1
    out.append(part)
src = "".join(out)
first_host = src.index('extern "C" cudaError_t bc_')
src = src[:first_host] + kernel + "\n" + src[first_host:]
assert hosts > 0
open(path, "w").write(src)
print(f"{path}: {hosts} host functions")
