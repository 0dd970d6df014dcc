// Lab (bench/labs/gemm_pingpong/README.md): the persistent wgmma GEMM with a ping-pong
// schedule. Each consumer warpgroup owns a whole 128 x 128 tile (two m64n128 wgmmas a k16
// step, 128 accumulators a thread); the block's tiles alternate between the two warpgroups;
// an ordered pair of named barriers lets one warpgroup issue its main loop while the other
// runs its epilogue. Whole tiles only (M, N multiples of 128, K of 64); no split tail.
#include "sketch/copy.cuh"
#include "sketch/epilogue.cuh"
#include "sketch/host.h"
#include "sketch/mma.cuh"
#include "sketch/tma.cuh"
#include "sketch/wgmma.cuh"

namespace lab_pp {

enum Epilogue { kPlain = 0, kBiasRelu = 1, kBiasGelu = 2 };

template <typename T, int STAGES, int EPI>
__global__ void __launch_bounds__(384, 1) gemm(const T *bias, int64_t M, int64_t N, int64_t K, const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map, const __grid_constant__ CUtensorMap d_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int BM = 128, BN = 128, BK = 64, NI = BN / 8, KI = BK / 16;
  constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2, STAGED_BYTES = BM * BN * 2;
  const uint32_t smem_base = sketch::smem_addr(smem);
  const uint32_t a_smem = (smem_base + 1023) & ~1023u;
  const uint32_t b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const uint32_t staged_base = b_smem + STAGES * B_STAGE_BYTES;
  const uint32_t bars = staged_base + 2 * STAGED_BYTES;
  const int tiles_m = (int)(M / BM), tiles_n = (int)(N / BN), tile_count = tiles_m * tiles_n;
  const int k_tiles = (int)(K / BK);
  const int my_tiles = tile_count > (int)blockIdx.x ? (tile_count - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  // tile -> (m0, n0): groups of 16 tile rows, column by column inside a group (as the generated kernel)
  auto origin = [&](int tile, int64_t &m0, int64_t &n0) {
    const int group = 16 * tiles_n, first = tile / group * 16, rows = min(tiles_m - first, 16);
    m0 = (int64_t)(first + tile % group % rows) * BM;
    n0 = (int64_t)(tile % group / rows) * BN;
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sketch::mbarrier_init(bars + 8 * s, 1);
      sketch::mbarrier_init(bars + 8 * (STAGES + s), 4);  // the consuming warpgroup's warps
    }
    sketch::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    sketch::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int k_step = 0;
      for (int i = 0; i < my_tiles; ++i) {
        int64_t m0, n0;
        origin((int)blockIdx.x + i * (int)gridDim.x, m0, n0);
        for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
          const uint32_t full = bars + 8 * (k_step % STAGES);
          if (k_step >= STAGES)
            sketch::mbarrier_wait(bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
          sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);
          const uint32_t a_dst = a_smem + (k_step % STAGES) * A_STAGE_BYTES, b_dst = b_smem + (k_step % STAGES) * B_STAGE_BYTES;
          sketch::tma_load_2d(a_dst, &a_map, kt * BK, (int)m0, full);
          sketch::tma_load_2d(b_dst, &b_map, (int)n0, kt * BK, full);
          sketch::tma_load_2d(b_dst + 8192, &b_map, (int)n0 + 64, kt * BK, full);
        }
      }
    }
    return;
  }
  sketch::setmaxnreg_inc<232>();
  const int tid = (int)threadIdx.x - 128, wg = tid / 128, wtid = tid % 128;
  const int lane = tid % 32, wi = wtid / 32, g = lane / 4, t = lane % 4;  // rows g, g + 8; columns 2t, 2t + 1
  const uint32_t staged_smem = staged_base + wg * STAGED_BYTES;
  T *staged = reinterpret_cast<T *>(smem + (staged_smem - smem_base));
  float acc[2][NI][4];
  for (int i = wg; i < my_tiles; i += 2) {
    int64_t m0, n0;
    origin((int)blockIdx.x + i * (int)gridDim.x, m0, n0);
    // the accumulators start from the bias (zero without one), as in the generated kernel
    #pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const float2 b = EPI == kPlain ? make_float2(0.f, 0.f) : sketch::unpack2<T>(sketch::load_word(bias + n0 + ni * 8 + 2 * t));
      #pragma unroll
      for (int mb = 0; mb < 2; ++mb)
        acc[mb][ni][0] = b.x, acc[mb][ni][1] = b.y, acc[mb][ni][2] = b.x, acc[mb][ni][3] = b.y;
    }
    if (i > 0) sketch::named_barrier_sync(2 + wg, 256);  // the other warpgroup's main loop is issued
    int k_step = i * k_tiles;
    for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
      sketch::mbarrier_wait(bars + 8 * (k_step % STAGES), (k_step / STAGES) & 1);
      const uint32_t a_stage = a_smem + (k_step % STAGES) * A_STAGE_BYTES;
      const uint32_t b_stage = b_smem + (k_step % STAGES) * B_STAGE_BYTES;
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_fence_operands(acc[1]);
      sketch::wgmma_fence();
      #pragma unroll
      for (int kk = 0; kk < KI; ++kk) {
        const uint64_t desc_b = sketch::wgmma_desc_sw128(b_stage + kk * 2048, BK * 128, 1024);
        #pragma unroll
        for (int mb = 0; mb < 2; ++mb) {
          const uint64_t desc_a = sketch::wgmma_desc_sw128(a_stage + mb * 64 * 128 + kk * 32, 16, 1024);
          sketch::wgmma_m64n128k16<T, 0, 1>(acc[mb], desc_a, desc_b);
        }
      }
      sketch::wgmma_commit();
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_fence_operands(acc[1]);
      sketch::wgmma_wait<1>();
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_fence_operands(acc[1]);
      if (kt > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    }
    // the last k-tile is issued: the other warpgroup may issue its main loop
    if (i + 1 < my_tiles) sketch::named_barrier_arrive(2 + (1 - wg), 256);
    sketch::wgmma_wait<0>();
    sketch::wgmma_fence_operands(acc[0]);
    sketch::wgmma_fence_operands(acc[1]);
    if (k_tiles > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    // epilogue: the function, this warpgroup's staging tile, stored by TMA
    if (wtid == 0) sketch::tma_store_wait_read();
    sketch::named_barrier_sync(4 + wg, 128);
    #pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
      #pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v0 = acc[mb][ni][2 * h], v1 = acc[mb][ni][2 * h + 1];
          if (EPI == kBiasRelu) v0 = sketch::relu(v0), v1 = sketch::relu(v1);
          if (EPI == kBiasGelu) v0 = sketch::gelu(v0), v1 = sketch::gelu(v1);
          const int r = mb * 64 + wi * 16 + g + h * 8, c = ni * 8 + 2 * t;
          *reinterpret_cast<uint32_t *>(staged + sketch::Swizzle128<128, T>::offset(r, c)) = sketch::pack2<T>(v0, v1);
        }
      }
    }
    sketch::fence_async_shared();
    sketch::named_barrier_sync(4 + wg, 128);
    if (wtid == 0) {
      #pragma unroll
      for (int p = 0; p < 2; ++p) sketch::tma_store_2d(&d_map, staged_smem + p * 16384, (int)n0 + p * 64, (int)m0);
      sketch::tma_store_commit();
    }
  }
  if (wtid == 0) sketch::tma_store_wait_read();
}

/// The cooperative 256 x 128 tile: both consumer warpgroups on one tile, 128 rows each as
/// two m64n128 blocks (rows 128 wg + 64 mb + ...), B shared; the epilogue stages each
/// warpgroup's 64-row blocks in turn in its own 16 KB slot, stored by TMA (64 x 64 boxes).
template <typename T, int STAGES, int EPI>
__global__ void __launch_bounds__(384, 1) coop(const T *bias, int64_t M, int64_t N, int64_t K, const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map, const __grid_constant__ CUtensorMap d_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int BM = 256, BN = 128, BK = 64, NI = BN / 8, KI = BK / 16;
  constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2, SLOT_BYTES = 64 * BN * 2;
  const uint32_t smem_base = sketch::smem_addr(smem);
  const uint32_t a_smem = (smem_base + 1023) & ~1023u;
  const uint32_t b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const uint32_t staged_base = b_smem + STAGES * B_STAGE_BYTES;
  const uint32_t bars = staged_base + 2 * SLOT_BYTES;
  const int tiles_m = (int)(M / BM), tiles_n = (int)(N / BN), tile_count = tiles_m * tiles_n;
  const int k_tiles = (int)(K / BK);
  auto origin = [&](int tile, int64_t &m0, int64_t &n0) {
    const int group = 8 * tiles_n, first = tile / group * 8, rows = min(tiles_m - first, 8);
    m0 = (int64_t)(first + tile % group % rows) * BM;
    n0 = (int64_t)(tile % group / rows) * BN;
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sketch::mbarrier_init(bars + 8 * s, 1);
      sketch::mbarrier_init(bars + 8 * (STAGES + s), 8);  // every consumer warp
    }
    sketch::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    sketch::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int k_step = 0;
      for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
        int64_t m0, n0;
        origin(tile, m0, n0);
        for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
          const uint32_t full = bars + 8 * (k_step % STAGES);
          if (k_step >= STAGES)
            sketch::mbarrier_wait(bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
          sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);
          const uint32_t a_dst = a_smem + (k_step % STAGES) * A_STAGE_BYTES, b_dst = b_smem + (k_step % STAGES) * B_STAGE_BYTES;
          sketch::tma_load_2d(a_dst, &a_map, kt * BK, (int)m0, full);
          sketch::tma_load_2d(a_dst + 16384, &a_map, kt * BK, (int)m0 + 128, full);
          sketch::tma_load_2d(b_dst, &b_map, (int)n0, kt * BK, full);
          sketch::tma_load_2d(b_dst + 8192, &b_map, (int)n0 + 64, kt * BK, full);
        }
      }
    }
    return;
  }
  sketch::setmaxnreg_inc<232>();
  const int tid = (int)threadIdx.x - 128, wg = tid / 128, wtid = tid % 128;
  const int lane = tid % 32, wi = wtid / 32, g = lane / 4, t = lane % 4;
  const uint32_t slot = staged_base + wg * SLOT_BYTES;
  T *staged = reinterpret_cast<T *>(smem + (slot - smem_base));
  float acc[2][NI][4];
  int k_step = 0;
  for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
    int64_t m0, n0;
    origin(tile, m0, n0);
    #pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const float2 b = EPI == kPlain ? make_float2(0.f, 0.f) : sketch::unpack2<T>(sketch::load_word(bias + n0 + ni * 8 + 2 * t));
      #pragma unroll
      for (int mb = 0; mb < 2; ++mb)
        acc[mb][ni][0] = b.x, acc[mb][ni][1] = b.y, acc[mb][ni][2] = b.x, acc[mb][ni][3] = b.y;
    }
    for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
      sketch::mbarrier_wait(bars + 8 * (k_step % STAGES), (k_step / STAGES) & 1);
      const uint32_t a_stage = a_smem + (k_step % STAGES) * A_STAGE_BYTES;
      const uint32_t b_stage = b_smem + (k_step % STAGES) * B_STAGE_BYTES;
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_fence_operands(acc[1]);
      sketch::wgmma_fence();
      #pragma unroll
      for (int kk = 0; kk < KI; ++kk) {
        const uint64_t desc_b = sketch::wgmma_desc_sw128(b_stage + kk * 2048, BK * 128, 1024);
        #pragma unroll
        for (int mb = 0; mb < 2; ++mb) {
          const uint64_t desc_a = sketch::wgmma_desc_sw128(a_stage + (wg * 128 + mb * 64) * 128 + kk * 32, 16, 1024);
          sketch::wgmma_m64n128k16<T, 0, 1>(acc[mb], desc_a, desc_b);
        }
      }
      sketch::wgmma_commit();
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_fence_operands(acc[1]);
      sketch::wgmma_wait<1>();
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_fence_operands(acc[1]);
      if (kt > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    }
    sketch::wgmma_wait<0>();
    sketch::wgmma_fence_operands(acc[0]);
    sketch::wgmma_fence_operands(acc[1]);
    if (k_tiles > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    #pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
      if (wtid == 0) sketch::tma_store_wait_read();  // the slot's last box has been read
      sketch::named_barrier_sync(2 + wg, 128);
      #pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v0 = acc[mb][ni][2 * h], v1 = acc[mb][ni][2 * h + 1];
          if (EPI == kBiasRelu) v0 = sketch::relu(v0), v1 = sketch::relu(v1);
          if (EPI == kBiasGelu) v0 = sketch::gelu(v0), v1 = sketch::gelu(v1);
          const int r = wi * 16 + g + h * 8, c = ni * 8 + 2 * t;
          *reinterpret_cast<uint32_t *>(staged + sketch::Swizzle128<64, T>::offset(r, c)) = sketch::pack2<T>(v0, v1);
        }
      }
      sketch::fence_async_shared();
      sketch::named_barrier_sync(2 + wg, 128);
      if (wtid == 0) {
        #pragma unroll
        for (int p = 0; p < 2; ++p) sketch::tma_store_2d(&d_map, slot + p * 8192, (int)n0 + p * 64, (int)m0 + wg * 128 + mb * 64);
        sketch::tma_store_commit();
      }
    }
  }
  if (wtid == 0) sketch::tma_store_wait_read();
}

inline int coop_smem_bytes(int stages) { return 1024 + stages * 49152 + 2 * 16384 + 16 * stages; }

/// D = epi(A B + bias) by the cooperative 256 x 128 kernel, whole tiles only.
template <typename T, int STAGES, int EPI>
cudaError_t run_coop(const T *A, const T *B, const T *bias, T *D, int64_t M, int64_t N, int64_t K, cudaStream_t stream = 0) {
  if (M % 256 || N % 128 || K % 64 || M == 0 || N == 0 || K == 0) return cudaErrorInvalidValue;
  CUtensorMap a_map{}, b_map{}, d_map{};
  if (!sketch::encode_tensor_map_2d(&a_map, A, K, M, K * 2, 64, 128, 2) ||
      !sketch::encode_tensor_map_2d(&b_map, B, N, K, N * 2, 64, 64, 2) ||
      !sketch::encode_tensor_map_2d(&d_map, D, N, M, N * 2, 64, 64, 2))
    return cudaErrorInvalidValue;
  auto kernel = coop<T, STAGES, EPI>;
  const int smem = coop_smem_bytes(STAGES);
  cudaError_t err = sketch::allow_dynamic_smem(kernel, smem);
  if (err != cudaSuccess) return err;
  const int64_t tiles = (M / 256) * (N / 128);
  const int64_t grid = std::min<int64_t>(tiles, std::max(sketch::sm_count(), 1));
  return sketch::launch_kernel(kernel, dim3(unsigned(grid)), 384, smem, 1, false, stream, bias, M, N, K, a_map, b_map, d_map);
}

inline int smem_bytes(int stages) { return 1024 + stages * 32768 + 2 * 32768 + 16 * stages; }

/// D = epi(A B + bias) for whole tiles; cudaErrorInvalidValue otherwise.
template <typename T, int STAGES, int EPI>
cudaError_t run(const T *A, const T *B, const T *bias, T *D, int64_t M, int64_t N, int64_t K, cudaStream_t stream = 0) {
  if (M % 128 || N % 128 || K % 64 || M == 0 || N == 0 || K == 0) return cudaErrorInvalidValue;
  CUtensorMap a_map{}, b_map{}, d_map{};
  if (!sketch::encode_tensor_map_2d(&a_map, A, K, M, K * 2, 64, 128, 2) ||
      !sketch::encode_tensor_map_2d(&b_map, B, N, K, N * 2, 64, 64, 2) ||
      !sketch::encode_tensor_map_2d(&d_map, D, N, M, N * 2, 64, 128, 2))
    return cudaErrorInvalidValue;
  auto kernel = gemm<T, STAGES, EPI>;
  const int smem = smem_bytes(STAGES);
  cudaError_t err = sketch::allow_dynamic_smem(kernel, smem);
  if (err != cudaSuccess) return err;
  const int64_t tiles = (M / 128) * (N / 128);
  const int64_t grid = std::min<int64_t>(tiles, std::max(sketch::sm_count(), 1));
  return sketch::launch_kernel(kernel, dim3(unsigned(grid)), 384, smem, 1, false, stream, bias, M, N, K, a_map, b_map, d_map);
}

}  // namespace lab_pp
