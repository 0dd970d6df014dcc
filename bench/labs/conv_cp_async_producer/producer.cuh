// Lab (bench/labs/conv_cp_async_producer/README.md): the persistent nhwc convolution whose
// producer warpgroup gathers the im2col operand with cp.async (16-byte chunks, each thread's
// copies arriving on the stage's full barrier when they land) instead of one TMA im2col box;
// the filter still comes by TMA. BM / 64 consumer warpgroups of 64 rows, as generated.
// Whole tiles only (no split tail).
namespace lab_cp {

__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

/// A lab kernel's shared memory (A and B stages, 1024-byte aligned, then the staging tile
/// and the mbarriers: full[s] at bars + 8 s, empty[s] at bars + 8 (STAGES + s)) and tiles,
/// with its barriers initialized (`full_count` arrivals fill a stage) before every thread
/// goes on.
template <int BM, int STAGES>
struct Plan {
  static constexpr int BN = 128, BK = 64, THREADS = BM * 2;  // consumers
  static constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2;
  uint32_t smem_base, a_smem, b_smem, staged_smem, bars;
  int tiles_n, tile_count, k_tiles;
  __device__ __forceinline__ Plan(unsigned char *smem, const sketch::ConvShape &shape, int full_count) {
    smem_base = sketch::smem_addr(smem);
    a_smem = (smem_base + 1023) & ~1023u;
    b_smem = a_smem + STAGES * A_STAGE_BYTES;
    staged_smem = b_smem + STAGES * B_STAGE_BYTES;
    bars = staged_smem + BM * BN * 2;
    const int64_t size_m = (int64_t)shape.n * shape.p * shape.q, size_k = (int64_t)shape.c * shape.r * shape.s;
    tiles_n = (int)sketch::ceil_div(shape.k, BN);
    tile_count = (int)sketch::ceil_div(size_m, BM) * tiles_n;
    k_tiles = (int)sketch::ceil_div(size_k, BK);
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        sketch::mbarrier_init(bars + 8 * s, full_count);
        sketch::mbarrier_init(bars + 8 * (STAGES + s), THREADS / 32);  // every consumer warp
      }
      sketch::fence_mbarrier_init();
    }
    __syncthreads();
  }
};

/// The consumer warpgroups of the lab kernels (threads 128 ..): wgmma on each landed stage
/// (after a proxy fence where `kFence`: the stage holds cp.async writes), then the tile's
/// epilogue through a swizzled staging tile and two TMA stores of 64 columns.
template <typename T, int BM, int STAGES, bool kFence>
__device__ __forceinline__ void consume(unsigned char *smem, const Plan<BM, STAGES> &plan, const CUtensorMap &y_map) {
  using P = Plan<BM, STAGES>;
  constexpr int BN = P::BN, NI = BN / 8, KI = P::BK / 16, THREADS = P::THREADS;
  constexpr int A_STAGE_BYTES = P::A_STAGE_BYTES, B_STAGE_BYTES = P::B_STAGE_BYTES;
  const uint32_t a_smem = plan.a_smem, b_smem = plan.b_smem, staged_smem = plan.staged_smem, bars = plan.bars;
  const int tile_count = plan.tile_count, tiles_n = plan.tiles_n, k_tiles = plan.k_tiles;
  const int tid = (int)threadIdx.x - 128, lane = tid % 32, warp = tid / 32, wg = warp / 4;
  const int g = lane / 4, t = lane % 4;
  T *staged = reinterpret_cast<T *>(smem + (staged_smem - plan.smem_base));
  float acc[1][NI][4];
  int k_step = 0;
  for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
    const int64_t m0 = (int64_t)(tile / tiles_n) * BM, n0 = (int64_t)(tile % tiles_n) * BN;
    #pragma unroll
    for (int ni = 0; ni < NI; ++ni)
      #pragma unroll
      for (int e = 0; e < 4; ++e) acc[0][ni][e] = 0.0f;
    for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
      sketch::mbarrier_wait(bars + 8 * (k_step % STAGES), (k_step / STAGES) & 1);
      if constexpr (kFence) sketch::fence_async_shared();  // the producer's cp.async writes, for the tensor cores
      const uint32_t a_stage = a_smem + (k_step % STAGES) * A_STAGE_BYTES;
      const uint32_t b_stage = b_smem + (k_step % STAGES) * B_STAGE_BYTES;
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_fence();
      #pragma unroll
      for (int kk = 0; kk < KI; ++kk) {
        const uint64_t desc_a = sketch::wgmma_desc_sw128(a_stage + wg * 64 * 128 + kk * 32, 16, 1024);
        const uint64_t desc_b = sketch::wgmma_desc_sw128(b_stage + kk * 32, 16, 1024);
        sketch::wgmma_m64n128k16<T, 0, 0>(acc[0], desc_a, desc_b);
      }
      sketch::wgmma_commit();
      sketch::wgmma_fence_operands(acc[0]);
      sketch::wgmma_wait<1>();
      sketch::wgmma_fence_operands(acc[0]);
      if (kt > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    }
    sketch::wgmma_wait<0>();
    sketch::wgmma_fence_operands(acc[0]);
    if (k_tiles > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    if (tid == 0) sketch::tma_store_wait_read();
    sketch::named_barrier_sync(1, THREADS);
    #pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp * 16 + g + h * 8, c = ni * 8 + 2 * t;
        *reinterpret_cast<uint32_t *>(staged + sketch::Swizzle128<BM, T>::offset(r, c)) =
            sketch::pack2<T>(acc[0][ni][2 * h], acc[0][ni][2 * h + 1]);
      }
    }
    sketch::fence_async_shared();
    sketch::named_barrier_sync(1, THREADS);
    if (tid == 0) {
      #pragma unroll
      for (int b = 0; b < 2; ++b) sketch::tma_store_2d(&y_map, staged_smem + b * BM * 128, (int)n0 + b * 64, (int)m0);
      sketch::tma_store_commit();
    }
  }
  if (tid == 0) sketch::tma_store_wait_read();
}

template <typename T, int BM, int STAGES>
__global__ void __launch_bounds__(128 + BM * 2, 1) conv(const T *__restrict__ X, const T *__restrict__ Wt, T *Y, int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, const __grid_constant__ sketch::ConvShape shape, const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap y_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  sketch::grid_dependency_wait();
  using P = Plan<BM, STAGES>;
  const P plan(smem, shape, 128 + 1);  // every producer thread's copies, the filter's bytes
  constexpr int BN = P::BN, BK = P::BK, A_STAGE_BYTES = P::A_STAGE_BYTES, B_STAGE_BYTES = P::B_STAGE_BYTES, ROWS = BM / 16;
  if (threadIdx.x < 128) {
    const int pt = threadIdx.x, chunk = pt % 8;
    int k_step = 0;
    for (int tile = blockIdx.x; tile < plan.tile_count; tile += gridDim.x) {
      const int64_t m0 = (int64_t)(tile / plan.tiles_n) * BM, n0 = (int64_t)(tile % plan.tiles_n) * BN;
      sketch::WindowNhwc win[ROWS];
      #pragma unroll
      for (int i = 0; i < ROWS; ++i) win[i] = sketch::window_nhwc(shape, m0 + pt / 8 + 16 * i);
      for (int kt = 0; kt < plan.k_tiles; ++kt, ++k_step) {
        const uint32_t full = plan.bars + 8 * (k_step % STAGES);
        if (k_step >= STAGES)
          sketch::mbarrier_wait(plan.bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
        if (pt == 0) {
          sketch::mbarrier_arrive_expect_tx(full, B_STAGE_BYTES);
          sketch::tma_load_2d(plan.b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, kt * BK, (int)n0, full);
        }
        const int k = kt * BK + chunk * 8;
        const sketch::ReductionNhwc red = sketch::reduction_nhwc(shape, k);
        const uint32_t dst = plan.a_smem + (k_step % STAGES) * A_STAGE_BYTES;
        #pragma unroll
        for (int i = 0; i < ROWS; ++i) {
          const int r = pt / 8 + 16 * i;
          sketch::load_im2col_nhwc_16<true>(dst + r * 128 + ((chunk ^ (r & 7)) << 4), X, shape, win[i], red, k);
        }
        cp_async_arrive(full);
      }
    }
    return;
  }
  consume<T, BM, STAGES, true>(smem, plan, y_map);
}

inline int stages128() {
  static const int s = getenv("LAB_STAGES") ? atoi(getenv("LAB_STAGES")) : 4;
  return s == 6 ? 6 : s == 5 ? 5 : 4;
}

template <int BM>
inline int smem_bytes(int stages) { return 1024 + stages * (BM + 128) * 128 + BM * 256 + 16 * stages; }

template <typename T, int BM, typename... Args>
cudaError_t launch(int64_t blocks, cudaStream_t stream, Args... args) {
  const int s = BM == 128 ? stages128() : 4;
  auto kernel = BM != 128 || s == 4 ? conv<T, BM, 4> : s == 5 ? conv<T, BM, 5> : conv<T, BM, 6>;
  const int smem = smem_bytes<BM>(s);
  cudaError_t err = sketch::allow_dynamic_smem(kernel, smem);
  if (err != cudaSuccess) return err;
  const int64_t sms = std::max(sketch::sm_count(), 1);
  const int64_t grid = std::min(blocks, sms);
  return sketch::launch_kernel(kernel, dim3(unsigned(grid)), 128 + BM * 2, smem, 1, blocks <= grid, stream, args...);
}

}  // namespace lab_cp
