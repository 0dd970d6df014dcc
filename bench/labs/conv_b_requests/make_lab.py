"""The B-request lab (README.md): timing-only variants (wrong results; bench_ab.py --time-wrong)
of the generated warp-specialized kernels of the stride-2 layers in .gen/ab/new.cu, a kernel
parameter `b_mode` from LAB_B: 0 as generated; 1 the filter box only on even k-steps (half
the B requests and bytes); 2 the filter box of 64 rows instead of 128 on every k-step (the
same request count, half the rows and bytes). Asks whether the copy engine's work on the
filter sets part of the kernel's pace, i.e. whether a multicast of B over a cluster of two
would pay."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import S2P1_HOSTS, S2P1_WS_KERNELS, add_launch_argument, rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"


def kernel(part):
    part = sub_exact(part, "const __grid_constant__ CUtensorMap y_map) {",
                     "const __grid_constant__ CUtensorMap y_map, int b_mode) {", 1)
    part = sub_exact(part, "sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);",
                     "sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + (b_mode == 0 ? B_STAGE_BYTES : b_mode == 2 ? B_STAGE_BYTES / 2 : (kt & 1) ? 0 : B_STAGE_BYTES));", 2)
    part = sub_exact(part, "          sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);",
                     "          if (b_mode != 1 || !(kt & 1)) sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);", 2)
    return part


def host(part, name):
    part = part.replace("sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, 128, 2)",
                        "sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, getenv(\"LAB_B\") && atoi(getenv(\"LAB_B\")) == 2 ? 64 : 128, 2)")
    return add_launch_argument(part, name, "getenv(\"LAB_B\") ? atoi(getenv(\"LAB_B\")) : 0")


rewrite(path, S2P1_WS_KERNELS, kernel, S2P1_HOSTS, host, what="launches")
