"""The parity-view lab (README.md): beside each generated warp-specialized kernel of the
stride-2 layers (`bc_{f16,bf16}_s2p1_default_ws`, `_ws_tall`, `_ws_narrow`) in .gen/ab/new.cu,
a `_parity` copy whose producer reads X's im2col boxes through the parity view (parity.cuh:
every traversal stride 1); the host launches the copy where lab_parity_map applies (3x3,
stride 2, pad 1, even H and W; LAB_PARITY=0 turns it off)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, S2P1_WS_KERNELS, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
LOAD = ("sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, "
        "(uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);")
PARITY_LOAD = ("lab_load_parity(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, shape.c, x_w, x_h, x_n, "
               "r, s, full);  // lab: the parity view")


def kernel(part):
    name = re.match(r"__global__ void __launch_bounds__\(\d+, 1\) (\w+)\(", part).group(1)
    end = part.index("\n}\n") + 3  # the kernel alone, before what leads into the next one
    twin = sub_exact(part[:end], LOAD, PARITY_LOAD, 2).replace(f" {name}(", f" {name}_parity(", 1)
    return part[:end] + "\n" + twin + part[end:]


def host(part, name):
    launches = re.findall(rf"( *)return (sketch::launch_kernel\(({name}_ws(?:_tall|_narrow)?), [^;]*x_map, w_map, y_map\);)",
                          part)
    for indent, call, kern in launches:
        pixels = 192 if kern.endswith("_tall") else 128
        branch = (f"{indent}if (lab_parity_map(&x_map, X, 2, shape, {pixels})) {{  // lab: the parity view\n"
                  f"{indent}  cudaError_t e = sketch::allow_dynamic_smem({kern}_parity, smem_bytes);\n"
                  f"{indent}  if (e != cudaSuccess)\n{indent}    return e;\n"
                  f"{indent}  return {call.replace(kern + ', ', kern + '_parity, ', 1)}\n"
                  f"{indent}}}\n")
        part = part.replace(f"{indent}return {call}", branch + f"{indent}return {call}", 1)
    return part, len(launches)


HEADER = "#include <cstdio>\n#include <cstdlib>\n" + open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "parity.cuh")).read()
rewrite(path, S2P1_WS_KERNELS, kernel, S2P1_HOSTS, host, HEADER, "launches")
