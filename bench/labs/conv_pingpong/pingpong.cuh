// Lab (bench/labs/conv_pingpong/README.md): the persistent nhwc convolution with a ping-pong
// schedule. Each consumer warpgroup owns a whole 128 x 128 tile (two m64 wgmmas a k16 step);
// the block's tiles alternate between the two; an ordered pair of named barriers runs one
// warpgroup's main loop while the other runs its epilogue. Whole tiles only (no split tail).
namespace lab_pp {

template <typename T, int STAGES>
__global__ void __launch_bounds__(384, 1) conv(const T *__restrict__ X, const T *__restrict__ Wt, T *Y, int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, const __grid_constant__ sketch::ConvShape shape, const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap y_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  sketch::grid_dependency_wait();
  constexpr int BM = 128, BN = 128, BK = 64, NI = BN / 8, KI = BK / 16;
  constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2, STAGED_BYTES = BM * BN * 2;
  const uint32_t smem_base = sketch::smem_addr(smem);
  const uint32_t a_smem = (smem_base + 1023) & ~1023u;
  const uint32_t b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const uint32_t staged_base = b_smem + STAGES * B_STAGE_BYTES;
  const uint32_t bars = staged_base + 2 * STAGED_BYTES;
  const int64_t size_m = (int64_t)shape.n * shape.p * shape.q, size_n = shape.k, size_k = (int64_t)shape.c * shape.r * shape.s;
  const int tiles_n = (int)sketch::ceil_div(size_n, BN);
  const int tile_count = (int)sketch::ceil_div(size_m, BM) * tiles_n;
  const int k_tiles = (int)sketch::ceil_div(size_k, BK);
  const int my_tiles = tile_count > (int)blockIdx.x ? (tile_count - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
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
        const int tile = (int)blockIdx.x + i * (int)gridDim.x;
        const int64_t m0 = (int64_t)(tile / tiles_n) * BM, n0 = (int64_t)(tile % tiles_n) * BN;
        const int pq = shape.p * shape.q;
        const int x_n = (int)(m0 / pq), x_pq = (int)(m0 % pq);
        const int x_h = x_pq / shape.q * shape.stride_h - shape.pad_h;
        const int x_w = x_pq % shape.q * shape.stride_w - shape.pad_w;
        for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
          const uint32_t full = bars + 8 * (k_step % STAGES);
          if (k_step >= STAGES)
            sketch::mbarrier_wait(bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
          sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);
          const int k = kt * BK, tap = k / shape.c, c0 = k - tap * shape.c;
          const int r = tap / shape.s, s = tap - r * shape.s;
          sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, (uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);
          sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, (int)n0, full);
        }
      }
    }
    return;
  }
  sketch::setmaxnreg_inc<232>();
  const int tid = (int)threadIdx.x - 128, wg = tid / 128, wtid = tid % 128;
  const int lane = tid % 32, wi = wtid / 32, g = lane / 4, t = lane % 4;
  const uint32_t staged_smem = staged_base + wg * STAGED_BYTES;
  T *staged = reinterpret_cast<T *>(smem + (staged_smem - smem_base));
  float acc[2][NI][4];
  for (int i = wg; i < my_tiles; i += 2) {
    const int tile = (int)blockIdx.x + i * (int)gridDim.x;
    const int64_t m0 = (int64_t)(tile / tiles_n) * BM, n0 = (int64_t)(tile % tiles_n) * BN;
    #pragma unroll
    for (int mb = 0; mb < 2; ++mb)
      #pragma unroll
      for (int ni = 0; ni < NI; ++ni)
        #pragma unroll
        for (int e = 0; e < 4; ++e) acc[mb][ni][e] = 0.0f;
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
        const uint64_t desc_b = sketch::wgmma_desc_sw128(b_stage + kk * 32, 16, 1024);
        #pragma unroll
        for (int mb = 0; mb < 2; ++mb) {
          const uint64_t desc_a = sketch::wgmma_desc_sw128(a_stage + mb * 64 * 128 + kk * 32, 16, 1024);
          sketch::wgmma_m64n128k16<T, 0, 0>(acc[mb], desc_a, desc_b);
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
    // the last k-tile is issued: the other warpgroup may issue its main loop (an arrive between
    // the commit and the wait serialized the wgmmas, ptxas C7515)
    if (i + 1 < my_tiles) sketch::named_barrier_arrive(2 + (1 - wg), 256);
    sketch::wgmma_wait<0>();
    sketch::wgmma_fence_operands(acc[0]);
    sketch::wgmma_fence_operands(acc[1]);
    if (k_tiles > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    // epilogue: this warpgroup's staging tile, stored by TMA
    if (wtid == 0) sketch::tma_store_wait_read();
    sketch::named_barrier_sync(4 + wg, 128);
    #pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
      #pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = mb * 64 + wi * 16 + g + h * 8, c = ni * 8 + 2 * t;
          *reinterpret_cast<uint32_t *>(staged + sketch::Swizzle128<128, T>::offset(r, c)) =
              sketch::pack2<T>(acc[mb][ni][2 * h], acc[mb][ni][2 * h + 1]);
        }
      }
    }
    sketch::fence_async_shared();
    sketch::named_barrier_sync(4 + wg, 128);
    if (wtid == 0) {
      #pragma unroll
      for (int b = 0; b < 2; ++b) sketch::tma_store_2d(&y_map, staged_smem + b * 16384, (int)n0 + b * 64, (int)m0);
      sketch::tma_store_commit();
    }
  }
  if (wtid == 0) sketch::tma_store_wait_read();
}

inline int stages() {
  static const int s = getenv("LAB_PP_STAGES") && atoi(getenv("LAB_PP_STAGES")) == 5 ? 5 : 4;
  return s;
}

inline int smem_bytes(int stages) { return 1024 + stages * 32768 + 2 * 32768 + 16 * stages; }

template <typename T, typename... Args>
cudaError_t launch(int64_t blocks, cudaStream_t stream, Args... args) {
  const int s = stages();
  auto kernel = s == 5 ? conv<T, 5> : conv<T, 4>;
  const int smem = smem_bytes(s);
  cudaError_t err = sketch::allow_dynamic_smem(kernel, smem);
  if (err != cudaSuccess) return err;
  const int64_t sms = std::max(sketch::sm_count(), 1);
  const int64_t grid = std::min(blocks, sms);
  return sketch::launch_kernel(kernel, dim3(unsigned(grid)), 384, smem, 1, blocks <= grid, stream, args...);
}

}  // namespace lab_pp
