"""The phase-map lab (README.md): rewrites the generated warp-specialized kernels of the stride-2
layers (`bc_{f16,bf16}_s2p1_default_ws`, `_ws_tall`, `_ws_narrow`) in .gen/ab/new.cu so that
tap (r, s)'s A box comes from the im2col map of its stride phase (phase.cuh), traversed at
stride 1; the tile's first position is its output pixel plus the maps' lower corner. Nothing
else changes (tiles, schedule, split tail, store). The host encodes the maps where it encodes
the im2col map and takes the generated path where they cannot be encoded (or LAB_OFF)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, S2P1_WS_KERNELS, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
HELPER = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "phase.cuh")).read()


def kernel(part):
    part = sub_exact(part, "const __grid_constant__ CUtensorMap x_map,", "const __grid_constant__ lab_phase::Maps x_maps,", 1)
    part = sub_exact(part, "const int x_h = x_pq / shape.q * shape.stride_h - shape.pad_h;",
                     "const int x_h = x_pq / shape.q + x_maps.lo_h;  // lab: phase coordinates", 2)
    part = sub_exact(part, "const int x_w = x_pq % shape.q * shape.stride_w - shape.pad_w;",
                     "const int x_w = x_pq % shape.q + x_maps.lo_w;", 2)
    part = sub_exact(part, "sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, "
                           "(uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);",
                     "uint16_t off_w, off_h;\n"
                     "          const CUtensorMap *x_map = lab_phase::tap(x_maps, shape, r, s, off_w, off_h);\n"
                     "          sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, x_map, c0, x_w, x_h, x_n, "
                     "off_w, off_h, full);", 2)
    assert "x_map" not in part.replace("x_maps", "").replace("*x_map =", "").replace(", x_map, c0", ""), "another x_map use"
    return part


def host(part, name):
    n = 0
    for pix in ("128", "192"):
        old = f"if (tma && vec_store && sketch::encode_tensor_map_2d(&y_map, Y, shape.k, pixels, shape.k * 2, 64, {pix}, 2)) {{"
        new = (f"lab_phase::Maps x_maps;  // lab\n"
               f"    if (tma && vec_store && sketch::encode_tensor_map_2d(&y_map, Y, shape.k, pixels, shape.k * 2, 64, {pix}, 2) && "
               f"lab_phase::encode(&x_maps, X, shape, {pix})) {{")
        n += part.count(old)
        part = part.replace(old, new)
    launches = re.findall(rf"launch_kernel\({name}_ws(?:_tall|_narrow)?, [^;]*x_map, w_map, y_map\);", part)
    assert len(launches) == n, (len(launches), n)
    for l in launches:
        part = part.replace(l, l.replace("x_map, w_map, y_map", "x_maps, w_map, y_map"))
    return part, n


rewrite(path, S2P1_WS_KERNELS, kernel, S2P1_HOSTS, host, HELPER, "host branches")
