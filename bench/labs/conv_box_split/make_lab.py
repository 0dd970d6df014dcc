"""The box-split lab (README.md): the generated warp-specialized kernels of the stride-2 layers
(`bc_{f16,bf16}_s2p1_default_ws`, `_ws_tall`, `_ws_narrow`) in .gen/ab/new.cu ask for each
k-tile's A operand as `parts` im2col boxes of BM / parts pixels (LAB_PARTS = 1, 2, 3 or 4;
the host encodes the map's box for it), each from its own first pixel, into consecutive rows
of the stage. The same bytes in more copy-engine operations: does the engine's cost go with
operations or with pixels?"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, S2P1_WS_KERNELS, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"


def kernel(part):
    part = sub_exact(part, "const __grid_constant__ CUtensorMap y_map) {",
                     "const __grid_constant__ CUtensorMap y_map, int parts) {", 1)
    part = sub_exact(part, "sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, "
                           "(uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);",
                     "const int np = BM % parts ? 1 : parts;\n"
                     "          for (int part = 0; part < np; ++part) {  // lab: BM / np pixels a box\n"
                     "            const int64_t mp = m0 + part * (BM / np);\n"
                     "            const int pn = (int)(mp / pq), ppq = (int)(mp % pq);\n"
                     "            sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES + part * (BM / np) * 128, &x_map, c0, "
                     "ppq % shape.q * shape.stride_w - shape.pad_w, ppq / shape.q * shape.stride_h - shape.pad_h, pn, "
                     "(uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);\n"
                     "          }", 2)
    return part


def host(part, name):
    n = 0
    for pix in ("128", "192"):
        old = f"shape.stride_h, shape.stride_w, 64, {pix})"
        n += part.count(old)
        part = part.replace(old, f"shape.stride_h, shape.stride_w, 64, {pix} / lab_parts({pix}))")
    launches = re.findall(rf"launch_kernel\({name}_ws(?:_tall|_narrow)?, [^;]*x_map, w_map, y_map\);", part)
    for l in launches:
        part = part.replace(l, l.replace("x_map, w_map, y_map)", "x_map, w_map, y_map, lab_parts(0))"))
    return part, len(launches)


HELPER = """// lab: A boxes a k-tile (LAB_PARTS; 1, 2, 3 or 4)
// (1 where they do not divide bm; bm 0: as asked, the kernel checks)
static inline int lab_parts(int bm) {
  const char *v = getenv("LAB_PARTS");
  const int parts = v ? atoi(v) : 1;
  return bm && bm % parts ? 1 : parts;
}
"""
rewrite(path, S2P1_WS_KERNELS, kernel, S2P1_HOSTS, host, HELPER, "launches")
