"""The L2-prefetch lab (README.md): rewrites the generated warp-specialized kernels of the
stride-2 layers (`bc_{f16,bf16}_s2p1_default_ws`, `_ws_tall`, `_ws_narrow`) in .gen/ab/new.cu:
a kernel parameter `pf_start`; in the whole tiles' producer loop, after k-tile kt's loads, the
next tile's (tile + gridDim.x, when it is a whole tile) im2col boxes are prefetched to L2
(prefetch.cuh), spread over k-tiles pf_start .. k_tiles - 1. Nothing else changes."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, S2P1_WS_KERNELS, add_launch_argument, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
HELPER = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "prefetch.cuh")).read()


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
    return add_launch_argument(part, name, "lab_pf::start(depth, 64)")


rewrite(path, S2P1_WS_KERNELS, kernel, S2P1_HOSTS, host, HELPER, "launches")
