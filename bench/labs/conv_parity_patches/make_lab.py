"""The parity-patch lab (README.md): beside each generated 128 x 128 warp-specialized kernel
of the stride-2 layers (`bc_{f16,bf16}_s2p1_default_ws`) in .gen/ab/new.cu, a `_patch` copy
whose tiles are patches of output pixels (patch_q x patch_p x patch_n, kernel parameters),
whose A operand is one tiled box of X's parity view a k-tile (patch.cuh) and whose output
goes by rank-4 boxes; the host launches it (no split tail) where lab_patch::choose applies,
before its own tile choice."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
KERNELS = r"__global__ void __launch_bounds__\(384, 1\) bc_(f16|bf16)_s2p1_default_ws\("
LOAD = ("sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, "
        "(uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);")
PATCH_LOAD = ("lab_load_patch(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, shape.c, q0, p0, i0, r, s, "
              "full);  // lab: a tiled box of the parity view")


def origin(t):
    old = f"const int64_t m0 = (int64_t)({t} / tiles_n) * BM, n0 = (int64_t)({t} % tiles_n) * BN;"
    new = old + (f"  // lab: the patch\n        const int q0 = {t} / tiles_n % tq * patch_q, p0 = {t} / tiles_n / tq % tp * patch_p,"
                 f" i0 = {t} / tiles_n / tq / tp * patch_n;")
    return old, new


def twin(part):
    name = re.match(r"__global__ void __launch_bounds__\(\d+, 1\) (\w+)\(", part).group(1)
    t = part.replace(f" {name}(", f" {name}_patch(", 1)
    t = sub_exact(t, "const __grid_constant__ CUtensorMap y_map) {",
                  "const __grid_constant__ CUtensorMap y_map, int patch_q, int patch_p, int patch_n) {", 1)
    t = sub_exact(t, "  const int tile_count = (int)sketch::ceil_div(size_m, BM) * tiles_n;  // channel tiles fastest\n",
                  "  const int tq = (shape.q + patch_q - 1) / patch_q, tp = (shape.p + patch_p - 1) / patch_p;  // lab\n"
                  "  const int tile_count = tq * tp * ((shape.n + patch_n - 1) / patch_n) * tiles_n;  // channel tiles fastest\n", 1)
    for tile in ("tile", "split_tile"):
        old, new = origin(tile)
        assert t.count(old) == 2, (tile, t.count(old))
        t = t.replace(old, new)
    t = sub_exact(t, "sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);",
                  "sketch::mbarrier_arrive_expect_tx(full, patch_q * patch_p * patch_n * 128 + B_STAGE_BYTES);", 2)
    t = sub_exact(t, LOAD, PATCH_LOAD, 2)
    t = sub_exact(t, "sketch::tma_store_2d(&y_map, staged_smem + b * 16384, (int)n0 + b * 64, (int)m0);",
                  "sketch::tma_store_4d(&y_map, staged_smem + b * 16384, (int)n0 + b * 64, q0, p0, i0);  // lab", 1)
    return t


def kernel(part):
    end = part.index("\n}\n") + 3  # the kernel alone, before what leads into the next one
    return part[:end] + "\n" + twin(part[:end]) + part[end:]


def host(part, name):
    anchor = "  // a stride above 1: tiles of 192 x 128"
    branch = f"""  // lab: parity patches (patch.cuh), one wave of blocks or persistent, no split tail
  if (const lab_patch::Patch pa = lab_patch::choose(shape); pa.q && vec_store) {{
    CUtensorMap x_map{{}}, w_map{{}}, y_map{{}};
    const int64_t depth = (int64_t)shape.c * shape.r * shape.s;
    const int64_t blocks = pa.tiles(shape) * sketch::ceil_div(K, 128);
    if (blocks <= INT32_MAX && depth < INT32_MAX && lab_patch::encode_x(&x_map, X, 2, shape, pa) &&
        sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, 128, 2) &&
        lab_patch::encode_y(&y_map, Y, 2, shape, pa)) {{
      const int smem_bytes = 166976;
      cudaError_t err = sketch::allow_dynamic_smem({name}_ws_patch, smem_bytes);
      if (err != cudaSuccess)
        return err;
      const int64_t grid = std::min<int64_t>(blocks, std::max(sketch::sm_count(), 1));
      return sketch::launch_kernel({name}_ws_patch, dim3(unsigned(grid)), 384, smem_bytes, 1, blocks <= grid, stream,
                                   X, Wt, Y, N, H, W, C, K, shape, x_map, w_map, y_map, pa.q, pa.p, pa.n);
    }}
  }}
"""
    part = sub_exact(part, anchor, branch + anchor, 1)
    return part, 1


HEADER = "#include <cstdio>\n#include <cstdlib>\n" + open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "patch.cuh")).read()
rewrite(path, KERNELS, kernel, S2P1_HOSTS, host, HEADER, "host branches")
