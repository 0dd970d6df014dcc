"""Writes the load-limits lab's new.cu from .gen/ab/new.cu (README.md): the stride-2 layers'
tall kernels (`bc_{f16,bf16}_s2p1_default_ws_tall`) take their operand loads from a device
variable that `lab_set_mode` (modes.py) sets (timing only: modes 1-4 compute wrong outputs):
  0 as generated; 1 no A (im2col) loads; 2 A as a tiled box of the same bytes (rows m0 ..
  of the output matrix, through y_map); 3 A by im2col with every k-tile at tap (1, 1), so
  the input bytes are a ninth; 4 no filter loads; 5 no loads at all (the tensor cores and the
  epilogue alone)."""
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()
EXPECT = "          sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);\n"
A_LOAD = ("          sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, "
          "(uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);\n")
B_LOAD = "          sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);\n"
NEW_EXPECT = "          sketch::mbarrier_arrive_expect_tx(full, (lab_m == 1 || lab_m == 5 ? 0 : A_STAGE_BYTES) + (lab_m >= 4 ? 0 : B_STAGE_BYTES));\n"
NEW_A = ("          if (lab_m == 0) " + A_LOAD.strip() + "\n"
         "          else if (lab_m == 2) sketch::tma_load_2d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &y_map, c0, (int)m0, full);\n"
         "          else if (lab_m == 3) sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, "
         "(uint16_t)shape.dil_w, (uint16_t)shape.dil_h, full);\n")
NEW_B = "          if (lab_m < 4) " + B_LOAD.strip() + "\n"
kernels = 0
out = []
for part in re.split(r"(?=^__global__ )", src, flags=re.M):
    if re.match(r"__global__ void __launch_bounds__\(512, 1\) bc_(f16|bf16)_s2p1_default_ws_tall\(", part):
        assert part.count(EXPECT) == 2 and part.count(A_LOAD) == 2 and part.count(B_LOAD) == 2
        part = part.replace(EXPECT, NEW_EXPECT).replace(A_LOAD, NEW_A).replace(B_LOAD, NEW_B)
        part = part.replace("    if (threadIdx.x == 0) {\n      int k_step = 0;\n",
                            "    if (threadIdx.x == 0) {\n      const int lab_m = lab_mode;  // lab\n      int k_step = 0;\n", 1)
        assert "lab_m = lab_mode" in part
        kernels += 1
    out.append(part)
src = "".join(out)
launches = 0
first = src.index("\n", src.index('#include "sketch/tma.cuh"')) + 1
src = (src[:first] + "__device__ int lab_mode;  // lab: conv_load_limits\n"
       "extern \"C\" int lab_set_mode(int m) { return (int)cudaMemcpyToSymbol(lab_mode, &m, sizeof m); }\n" + src[first:])
assert kernels >= 1
open(path, "w").write(src)
print(f"{path}: {kernels} kernels")
