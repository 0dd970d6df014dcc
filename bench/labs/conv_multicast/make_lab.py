"""Writes the multicast lab's new.cu from .gen/ab/new.cu (README.md): the persistent 128 x 128
kernel of bc_f16_s2p1_default (the `_ws` kernel) rewritten by hand-made substitutions into
`_ws_mc<CS>`, whose blocks, in clusters of CS along M, share each filter box (each block asks
for 1 / CS of its rows, multicast to the cluster), and a host branch that launches it
(SKETCH_LAB_CS=2 or 4; 0 keeps the generated host path)."""
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()
name = "bc_f16_s2p1_default"
start = src.index(f"__global__ void __launch_bounds__(384, 1) {name}_ws(")
end = src.index(f"// Kernel {name}: Y", start)
k = src[start:end]


def sub(old, new, count=None):
    global k
    n = k.count(old)
    assert n > 0 and (count is None or n == count), (old, n)
    k = k.replace(old, new)


sub(f"{name}_ws(", f"{name}_ws_mc(", 1)
k = "template <int CS>\n" + k
sub("for (int tile = blockIdx.x; tile < whole_tiles; tile += gridDim.x) {",
    "const int rank = (int)sketch::cluster_rank();\n"
    "  const int groups = (int)sketch::ceil_div(sketch::ceil_div(size_m, BM), CS) * tiles_n;  // CS pixel tiles of one channel tile\n"
    "  for (int group = (int)blockIdx.x / CS; group < groups; group += (int)gridDim.x / CS) {", 2)
sub("const int64_t m0 = (int64_t)(tile / tiles_n) * BM, n0 = (int64_t)(tile % tiles_n) * BN;",
    "const int64_t m0 = ((int64_t)(group / tiles_n) * CS + rank) * BM, n0 = (int64_t)(group % tiles_n) * BN;", 2)
sub("const bool splits = slices > 1 && split_tile < tile_count;", "const bool splits = false;", 2)
sub("sketch::mbarrier_init(bars + 8 * (STAGES + s), THREADS / 32);",
    "sketch::mbarrier_init(bars + 8 * (STAGES + s), THREADS / 32 * CS);  // every consumer warp of the cluster", 1)
sub("__syncthreads();  // the last barrier the producer joins",
    "sketch::cluster_sync();  // every block's barriers are initialised before any remote arrival", 1)
sub("sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);",
    "lab_tma_load_2d_multicast(b_smem + (k_step % STAGES) * B_STAGE_BYTES + rank * (B_STAGE_BYTES / CS), &w_map, k, (int)n0 + rank * (BN / CS), full, (uint16_t)((1 << CS) - 1));")
sub("sketch::mbarrier_arrive_by_warp(", "lab_arrive_cluster_by_warp<CS>(")
sub("if (tid == 0) {\n        #pragma unroll\n        for (int b = 0; b < 2; ++b) {\n          sketch::tma_store_2d(",
    "if (tid == 0 && m0 < size_m) {\n        #pragma unroll\n        for (int b = 0; b < 2; ++b) {\n          sketch::tma_store_2d(", 1)
# the end: no block leaves while a peer may still arrive on its barriers
tail = k.rstrip()
assert tail.endswith("}")
k = tail[:-1] + "  sketch::cluster_sync();  // no block leaves while a peer may still arrive on its barriers\n}\n\n"

helpers = r'''
#include "sketch/split.cuh"
// lab helpers: a 2-D box multicast to the blocks of `mask` (each at the same shared offset,
// completing on the barrier at the same offset in each), and one arrival per warp on the
// barrier at `bar` in every block of a cluster of CS
__device__ __forceinline__ void lab_tma_load_2d_multicast(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t bar, uint16_t mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
               : "memory");
}
template <int CS>
__device__ __forceinline__ void lab_arrive_cluster_by_warp(uint32_t bar) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0) {
    #pragma unroll
    for (int q = 0; q < CS; ++q)
      asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(sketch::cluster_shared_addr(bar, q)) : "memory");
  }
}
'''
host_start = src.index(f'extern "C" cudaError_t {name}(')
branch = f'''  if (const int cs = lab_cluster(); cs > 0 && vec_store && shape.c % 64 == 0) {{
    CUtensorMap x_map{{}}, w_map{{}}, y_map{{}};
    const int64_t depth = (int64_t)shape.c * shape.r * shape.s;
    if (depth < INT32_MAX &&
        sketch::encode_tensor_map_im2col(&x_map, X, 2, shape.n, shape.h, shape.w, shape.c, shape.pad_h, shape.pad_w, (shape.r - 1) * shape.dil_h, (shape.s - 1) * shape.dil_w, shape.stride_h, shape.stride_w, 64, 128) &&
        sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, 128 / cs, 2) &&
        sketch::encode_tensor_map_2d(&y_map, Y, shape.k, pixels, shape.k * 2, 64, 128, 2)) {{
      const int smem_bytes = 166976;
      auto kernel = cs == 4 ? {name}_ws_mc<4> : {name}_ws_mc<2>;
      cudaError_t err = sketch::allow_dynamic_smem(kernel, smem_bytes);
      if (err != cudaSuccess)
        return err;
      static sketch::PerDevice resident2, resident4;
      const int64_t groups = sketch::ceil_div(sketch::ceil_div(pixels, 128), cs) * sketch::ceil_div(K, 128);
      const int resident = sketch::cluster_resident_blocks(kernel, 384, smem_bytes, cs, cs == 4 ? resident4 : resident2);
      const int64_t grid = std::min<int64_t>(resident / cs, groups) * cs;
      if (grid > 0)
        return sketch::launch_kernel(kernel, dim3(unsigned(grid)), 384, smem_bytes, cs, false, stream, X, Wt, Y, N, H, W, C, K, shape, x_map, w_map, y_map);
    }}
  }}
'''
anchor = "  // few output channels: the 128 x 64 tile"
hs = src.index(anchor, host_start)
lab_cluster = '''#include <cstdlib>
static int lab_cluster() {  // SKETCH_LAB_CS: 2 or 4 (the multicast kernel), else 0
  static const int cs = [] { const char *v = std::getenv("SKETCH_LAB_CS"); return v ? std::atoi(v) : 2; }();
  return cs == 2 || cs == 4 ? cs : 0;
}
'''
out = src[:hs] + branch + src[hs:]
out = out[:end] + helpers + k + out[end:]
out = out.replace(f'extern "C" cudaError_t {name}(', lab_cluster + f'extern "C" cudaError_t {name}(', 1)
open(path, "w").write(out)
print("wrote", path)
