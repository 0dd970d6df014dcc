"""The B-request lab (README.md): timing-only variants (wrong results; bench_ab.py --time-wrong)
of the generated warp-specialized kernels of the stride-2 layers in .gen/ab/new.cu, a kernel
parameter `b_mode` from LAB_B: 0 as generated; 1 the filter box only on even k-steps (half
the B requests and bytes); 2 the filter box of 64 rows instead of 128 on every k-step (the
same request count, half the rows and bytes). Asks whether the copy engine's work on the
filter sets part of the kernel's pace, i.e. whether a multicast of B over a cluster of two
would pay."""
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()


def sub_exact(text, old, new, count):
    assert text.count(old) == count, (old[:90], text.count(old))
    return text.replace(old, new)


def kernel(part):
    part = sub_exact(part, "const __grid_constant__ CUtensorMap y_map) {",
                     "const __grid_constant__ CUtensorMap y_map, int b_mode) {", 1)
    part = sub_exact(part, "sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);",
                     "sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + (b_mode == 0 ? B_STAGE_BYTES : b_mode == 2 ? B_STAGE_BYTES / 2 : (kt & 1) ? 0 : B_STAGE_BYTES));", 2)
    part = sub_exact(part, "          sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);",
                     "          if (b_mode != 1 || !(kt & 1)) sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);", 2)
    return part


def host(part, name):
    n = part.count("sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, 128, 2)")
    part = part.replace("sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, 128, 2)",
                        "sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, getenv(\"LAB_B\") && atoi(getenv(\"LAB_B\")) == 2 ? 64 : 128, 2)")
    launches = re.findall(rf"launch_kernel\({name}_ws(?:_tall|_narrow)?, [^;]*x_map, w_map, y_map\);", part)
    for l in launches:
        part = part.replace(l, l.replace("x_map, w_map, y_map)", "x_map, w_map, y_map, getenv(\"LAB_B\") ? atoi(getenv(\"LAB_B\")) : 0)"))
    return part, len(launches)


out, kernels, branches = [], 0, 0
for part in re.split(r'(?=^__global__ |^extern "C" cudaError_t )', src, flags=re.M):
    m = re.match(r"__global__ void __launch_bounds__\(\d+, 1\) bc_(f16|bf16)_s2p1_default_ws(_tall|_narrow)?\(", part)
    h = re.match(r'extern "C" cudaError_t (bc_(f16|bf16)_s2p1_default)\(', part)
    if m:
        part = kernel(part)
        kernels += 1
    elif h:
        part, n = host(part, h.group(1))
        branches += n
    out.append(part)
src = "".join(out)
assert kernels == branches > 0, (kernels, branches)
open(path, "w").write(src)
print(f"{path}: {kernels} kernels, {branches} launches")
