"""The L2-prefetch lab's second form (README.md, "Retry"): as make_lab.py, but without
arithmetic a prefetch in the producer thread. The next tile's window start is computed once
a tile (before its k-loop, like the tile's own), its taps are stepped like the loads' (since
671488f), and each k-tile from `pf_start` on prefetches `per` of them (per = ceil(k_tiles /
(k_tiles - pf_start)), once a kernel). Rewrites the generated warp-specialized kernels of
the stride-2 layers in .gen/ab/new.cu; LAB_PF as before."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, S2P1_WS_KERNELS, add_launch_argument, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
HELPER = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "prefetch.cuh")).read()


START = "        // k-tile 0's filter tap (r, s) and channel c0, stepped from there\n        int c0 = 0, r = 0, s = 0;\n        for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {\n"
STEP = ("          // the next k-tile's tap and channel (BK divides C): c0, then s, then r\n"
        "          if ((c0 += BK) == shape.c) {\n            c0 = 0;\n            if (++s == shape.s) {\n"
        "              s = 0;\n              ++r;\n            }\n          }\n        }\n")


def kernel(part):
    part = sub_exact(part, "const __grid_constant__ CUtensorMap y_map) {",
                     "const __grid_constant__ CUtensorMap y_map, int pf_start) {", 1)
    part = sub_exact(part, "const int k_tiles = (int)sketch::ceil_div(size_k, BK);\n",
                     "const int k_tiles = (int)sketch::ceil_div(size_k, BK);\n"
                     "  const int pf_per = pf_start < 0 ? 0 : (2 * k_tiles - pf_start - 1) / (k_tiles - pf_start);  // lab\n", 1)
    start = part.index(START)
    part = (part[:start] +
            "        // lab: the next tile's window start, once a tile, and its taps stepped\n"
            "        const bool pf_next = pf_per > 0 && tile + (int)gridDim.x < whole_tiles;\n"
            "        int pf_n = 0, pf_h = 0, pf_w = 0, pf_c0 = 0, pf_r = 0, pf_s = 0, pf_done = 0;\n"
            "        if (pf_next) {\n"
            "          const int64_t pm = (int64_t)((tile + (int)gridDim.x) / tiles_n) * BM;\n"
            "          pf_n = (int)(pm / pq);\n"
            "          const int ppq = (int)(pm % pq);\n"
            "          pf_h = ppq / shape.q * shape.stride_h - shape.pad_h;\n"
            "          pf_w = ppq % shape.q * shape.stride_w - shape.pad_w;\n"
            "        }\n" + part[start:])
    step = part.index(STEP, start)
    part = (part[:step] +
            "          if (pf_next && kt >= pf_start)  // lab: pf_per of the next tile's k-tiles to L2\n"
            "            for (int j = 0; j < pf_per && pf_done < k_tiles; ++j, ++pf_done) {\n"
            "              lab_pf::prefetch_im2col_4d(&x_map, pf_c0, pf_w, pf_h, pf_n, (uint16_t)(pf_s * shape.dil_w), (uint16_t)(pf_r * shape.dil_h));\n"
            "              if ((pf_c0 += BK) == shape.c) {\n"
            "                pf_c0 = 0;\n"
            "                if (++pf_s == shape.s) {\n"
            "                  pf_s = 0;\n"
            "                  ++pf_r;\n"
            "                }\n"
            "              }\n"
            "            }\n" + part[step:])
    return part


def host(part, name):
    return add_launch_argument(part, name, "lab_pf::start(depth, 64)")


rewrite(path, S2P1_WS_KERNELS, kernel, S2P1_HOSTS, host, HELPER, "launches")
