"""The tall stride-2 kernel with its tile stored from registers and a fifth stage (README.md).
Rewrites `bc_{f16,bf16}_s2p1_default_ws_tall` in .gen/ab/new.cu: STAGES = LAB_STAGES (5), the
mbarriers right past the stages, the TMA-stored staging tile replaced by 4-byte stores of each
thread's accumulator pairs (rows past size_m skipped), and the host's shared-memory bytes."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
STAGES = int(os.environ.get("LAB_STAGES", "5"))
BARS = 1024 + STAGES * (192 * 64 * 2 + 128 * 64 * 2)  # alignment slack, then the stages
SMEM = BARS + 16 * STAGES
TALL = r"__global__ void __launch_bounds__\(512, 1\) bc_(f16|bf16)_s2p1_default_ws_tall\("

DIRECT = """    if constexpr (kVecStore) {
      // lab: each thread's accumulator pairs straight to global memory (no staging tile)
      #pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = warp_m * WM + g + h * 8, c = warp_n * WN + ni * 8 + 2 * t;
          const int64_t row = m0 + r;
          if (row < size_m)
            *reinterpret_cast<uint32_t *>(Y + row * size_n + n0 + c) = sketch::pack2<ELEM>(acc[0][ni][2 * h], acc[0][ni][2 * h + 1]);
        }
      }
    }
    else {"""


def kernel(part):
    elem = "__half" if "const __half *__restrict__ X" in part else "__nv_bfloat16"
    part = sub_exact(part, "constexpr int STAGES = 4;", f"constexpr int STAGES = {STAGES};", 1)
    part = sub_exact(part, "smem_base + 217088;", f"smem_base + {BARS};", 1)
    # the epilogue: no wait for the last tile's TMA stores, no staging barrier
    part = sub_exact(part, "    if (kVecStore && tid == 0) sketch::tma_store_wait_read();  // the last tile's stores have read the staging tile\n"
                     "    sketch::named_barrier_sync(1, THREADS);  // the pipeline buffers (or the last tile's staging) become the staging tile\n", "", 1)
    start = part.index("    if constexpr (kVecStore) {\n      // the tile stored by TMA")
    end = part.index("    else {\n", start) + len("    else {\n")
    part = part[:start] + DIRECT.replace("ELEM", elem) + "\n" + part[end:]
    # the one-element path's padded staging tile would overlap the stages (never taken: kVecStore)
    part = sub_exact(part, "(smem + 164864)", f"(smem + {BARS - 52224 if BARS > 52224 else 0})", 1)
    return part


def host(part, name):
    count = part.count("const int smem_bytes = 217152;")
    part = part.replace("const int smem_bytes = 217152;", f"const int smem_bytes = {SMEM};")
    return part, count


rewrite(path, TALL, kernel, S2P1_HOSTS, host, what="tall launches")
