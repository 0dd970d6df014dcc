// Lab: a 3x3, stride-1, pad-1 nhwc convolution whose activations come into shared
// memory once a tile (the input rows of two output rows and their halo), the nine
// filter taps' A operands being the same patch at shifted wgmma descriptors.
// Fixed shape: H = W = 56 (output rows padded to 64 slots), C = K = 64, f16.
#include "sketch/copy.cuh"
#include "sketch/mma.cuh"
#include "sketch/tma.cuh"
#include "sketch/wgmma.cuh"
#include <cuda_fp16.h>

namespace {
constexpr int SLOTS = 64;                  // an output row's pixels, padded (W <= SLOTS - 2)
constexpr int ROWS = 2;                    // output rows a tile: one a consumer warpgroup
constexpr int PATCH_ROWS = ROWS + 2;       // input rows a tile reads (3x3: one above, one below)
constexpr int PATCH_BYTES = PATCH_ROWS * SLOTS * 128;
constexpr int TAP_BYTES = 64 * 128;        // one filter tap: 64 output channels x 64 channels
constexpr int FILTER_BYTES = 9 * TAP_BYTES;
constexpr int PSTAGES = 4;
constexpr int STAGING_BYTES = ROWS * SLOTS * 128;
constexpr int PATCH_OFF = FILTER_BYTES;
constexpr int STAGING_OFF = PATCH_OFF + PSTAGES * PATCH_BYTES;
constexpr int BARS_OFF = STAGING_OFF + STAGING_BYTES;
constexpr int SMEM_BYTES = BARS_OFF + 8 * (2 * PSTAGES + 1) + 1024;

template <int kBaseOffset>
__global__ void __launch_bounds__(384, 1)
    halo_conv(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
              const __grid_constant__ CUtensorMap y_map, int images, int P) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = (sketch::smem_addr(smem) + 1023) & ~1023u;
  const uint32_t filt = base, patch = base + PATCH_OFF, staging = base + STAGING_OFF;
  const uint32_t bars = base + BARS_OFF, filter_bar = bars + 16 * PSTAGES;
  auto full = [&](int s) { return bars + 8 * s; };
  auto empty = [&](int s) { return bars + 8 * (PSTAGES + s); };
  const int row_tiles = (P + ROWS - 1) / ROWS, tiles = images * row_tiles;
  if (threadIdx.x == 0) {
    for (int s = 0; s < PSTAGES; ++s) {
      sketch::mbarrier_init(full(s), 1);
      sketch::mbarrier_init(empty(s), 8);
    }
    sketch::mbarrier_init(filter_bar, 1);
    sketch::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    sketch::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      sketch::mbarrier_arrive_expect_tx(filter_bar, FILTER_BYTES);
      for (int t = 0; t < 9; ++t)
        sketch::tma_load_2d(filt + t * TAP_BYTES, &w_map, t * 64, 0, filter_bar);
      int step = 0;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++step) {
        const int n = tile / row_tiles, oh0 = tile % row_tiles * ROWS, st = step % PSTAGES;
        if (step >= PSTAGES)
          sketch::mbarrier_wait(empty(st), (step / PSTAGES - 1) & 1);
        sketch::mbarrier_arrive_expect_tx(full(st), PATCH_BYTES);
        sketch::tma_load_4d(patch + st * PATCH_BYTES, &x_map, 0, -1, oh0 - 1, n, full(st));
      }
    }
    return;
  }
  sketch::setmaxnreg_inc<232>();
  const int tid = (int)threadIdx.x - 128, warp = tid / 32, lane = tid % 32, wg = warp / 4;
  float acc[8][4];
  sketch::mbarrier_wait(filter_bar, 0);
  int step = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++step) {
    const int n = tile / row_tiles, oh0 = tile % row_tiles * ROWS, st = step % PSTAGES;
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][e] = 0.0f;
    sketch::mbarrier_wait(full(st), (step / PSTAGES) & 1);
    const uint32_t p = patch + st * PATCH_BYTES;
    sketch::wgmma_fence_operands(acc);
    sketch::wgmma_fence();
#pragma unroll
    for (int tap = 0; tap < 9; ++tap) {
      const int r = tap / 3, s = tap % 3;
      const uint32_t a_addr = p + ((wg + r) * SLOTS + s) * 128;
      uint64_t desc_a = sketch::wgmma_desc_sw128(a_addr, 16, 1024);
      if (kBaseOffset) desc_a |= (uint64_t)((a_addr >> 7) & 7) << 49;
      const uint64_t desc_b = sketch::wgmma_desc_sw128(filt + tap * TAP_BYTES, 16, 1024);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        sketch::wgmma_m64n64k16<__half, 0, 0>(acc, desc_a + 2 * kk, desc_b + 2 * kk);
    }
    sketch::wgmma_commit();
    sketch::wgmma_wait<0>();
    sketch::wgmma_fence_operands(acc);
    sketch::mbarrier_arrive_by_warp(empty(st));
    if (tid == 0) sketch::tma_store_wait_read();
    sketch::named_barrier_sync(1, 256);
    __half *staged = reinterpret_cast<__half *>(smem + (staging - sketch::smem_addr(smem)));
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int ni = 0; ni < 8; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = warp * 16 + g + h * 8, col = ni * 8 + 2 * t;
        *reinterpret_cast<uint32_t *>(staged + sketch::Swizzle128<128, __half>::offset(row, col)) =
            sketch::pack2<__half>(acc[ni][2 * h], acc[ni][2 * h + 1]);
      }
    sketch::fence_async_shared();
    sketch::named_barrier_sync(1, 256);
    if (tid == 0) {
      sketch::tma_store_4d(&y_map, staging, 0, 0, oh0, n);
      sketch::tma_store_commit();
    }
  }
  if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

} // namespace

/// Y = conv3x3(X, Wt), pad 1, stride 1; X [N, H, W, 64], Wt [64, 3, 3, 64], Y [N, H, W, 64].
extern "C" int halo_conv_run(const __half *X, const __half *Wt, __half *Y, int N, int H, int W,
                             int base_offset, int blocks, cudaStream_t stream) {
  if (W > SLOTS - 2 || N <= 0 || H <= 0) return (int)cudaErrorInvalidValue;
  CUtensorMap x_map, w_map, y_map;
  if (!sketch::encode_tensor_map_nhwc(&x_map, X, 2, N, H, W, 64, 64, SLOTS, PATCH_ROWS) ||
      !sketch::encode_tensor_map_2d(&w_map, Wt, 576, 64, 576 * 2, 64, 64, 2) ||
      !sketch::encode_tensor_map_nhwc(&y_map, Y, 2, N, H, W, 64, 64, SLOTS, ROWS))
    return 1000;
  static int sms = 0;
  if (sms == 0) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int tiles = N * ((H + ROWS - 1) / ROWS);
  const int grid = blocks > 0 ? blocks : (tiles < sms ? tiles : sms);
  auto kernel = base_offset ? halo_conv<1> : halo_conv<0>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
  kernel<<<grid, 384, SMEM_BYTES, stream>>>(x_map, w_map, y_map, N, H);
  return (int)cudaGetLastError();
}
