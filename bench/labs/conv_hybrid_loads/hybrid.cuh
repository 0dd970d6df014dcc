// Lab (bench/labs/conv_hybrid_loads/README.md): the persistent nhwc convolution whose im2col
// operand comes from two engines at once: the tile's first TMA_ROWS rows as one TMA im2col
// box (thread 0, with the filter's box), the other BM - TMA_ROWS rows by cp.async from the
// producer warpgroup's 128 threads (16-byte chunks, arriving on the stage's full barrier
// when they land). The consumers are the cp.async-producer lab's (lab_cp::consume in
// ../conv_cp_async_producer/producer.cuh, pasted before this file). Whole tiles only.
namespace lab_hy {

template <typename T, int BM, int TMA_ROWS, int STAGES>
__global__ void __launch_bounds__(128 + BM * 2, 1) conv(const T *__restrict__ X, const T *__restrict__ Wt, T *Y, int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, const __grid_constant__ sketch::ConvShape shape, const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap y_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  sketch::grid_dependency_wait();
  constexpr int CP_ROWS = (BM - TMA_ROWS) / 16;  // a producer thread's rows (one chunk each)
  static_assert((BM - TMA_ROWS) % 16 == 0 && TMA_ROWS % 8 == 0, "rows in whole passes");
  using P = lab_cp::Plan<BM, STAGES>;
  const P plan(smem, shape, CP_ROWS > 0 ? 128 + 1 : 1);  // the copies, thread 0's bytes
  constexpr int BN = P::BN, BK = P::BK, A_STAGE_BYTES = P::A_STAGE_BYTES, B_STAGE_BYTES = P::B_STAGE_BYTES;
  if (threadIdx.x < 128) {
    const int pt = threadIdx.x, chunk = pt % 8;
    int k_step = 0;
    for (int tile = blockIdx.x; tile < plan.tile_count; tile += gridDim.x) {
      const int64_t m0 = (int64_t)(tile / plan.tiles_n) * BM, n0 = (int64_t)(tile % plan.tiles_n) * BN;
      const int pq = shape.p * shape.q;
      const int x_n = (int)(m0 / pq), x_pq = (int)(m0 % pq);
      const int x_h = x_pq / shape.q * shape.stride_h - shape.pad_h;
      const int x_w = x_pq % shape.q * shape.stride_w - shape.pad_w;
      sketch::WindowNhwc win[CP_ROWS > 0 ? CP_ROWS : 1];
      #pragma unroll
      for (int i = 0; i < CP_ROWS; ++i) win[i] = sketch::window_nhwc(shape, m0 + TMA_ROWS + pt / 8 + 16 * i);
      sketch::ReductionIndex at{chunk * 8, 0, 0};  // this thread's chunk of k-tile 0; BK divides C
      int c0 = 0, r = 0, s = 0;                    // the k-tile's tap and first channel
      for (int kt = 0; kt < plan.k_tiles; ++kt, ++k_step) {
        const uint32_t full = plan.bars + 8 * (k_step % STAGES);
        if (k_step >= STAGES)
          sketch::mbarrier_wait(plan.bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
        const uint32_t dst = plan.a_smem + (k_step % STAGES) * A_STAGE_BYTES;
        if (pt == 0) {
          sketch::mbarrier_arrive_expect_tx(full, TMA_ROWS * BK * 2 + B_STAGE_BYTES);
          sketch::tma_load_im2col_4d(dst, &x_map, c0, x_w, x_h, x_n, (uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);
          sketch::tma_load_2d(plan.b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, kt * BK, (int)n0, full);
        }
        if constexpr (CP_ROWS > 0) {
          const int k = kt * BK + chunk * 8;
          const sketch::ReductionNhwc red = sketch::reduction_offsets(shape, at, k);
          #pragma unroll
          for (int i = 0; i < CP_ROWS; ++i) {
            const int row = TMA_ROWS + pt / 8 + 16 * i;
            sketch::load_im2col_nhwc_16<true>(dst + row * 128 + ((chunk ^ (row & 7)) << 4), X, shape, win[i], red, k);
          }
          lab_cp::cp_async_arrive(full);
        }
        at.c += BK;  // the next k-tile's tap and channels
        if ((c0 += BK) == shape.c) {
          c0 = 0, at.c = chunk * 8;
          if (++s == shape.s) s = 0, ++r;
          at.s = s, at.r = r;
        }
      }
    }
    return;
  }
  lab_cp::consume<T, BM, STAGES, (CP_ROWS > 0)>(smem, plan, y_map);
}

// LAB_TMA_ROWS: the rows of a tile the TMA box brings (the rest by cp.async); LAB_BM128=1:
// the 128 x 128 tile at every N (no tall variant).
inline int tma_rows(int bm) {
  const char *v = getenv("LAB_TMA_ROWS");
  const int rows = v ? atoi(v) : bm;
  return rows < bm ? rows : bm;
}

template <int BM>
inline int smem_bytes(int stages) { return 1024 + stages * (BM + 128) * 128 + BM * 256 + 16 * stages; }

template <typename T, int BM, int ROWS>
cudaError_t launch_rows(int64_t blocks, cudaStream_t stream, const T *X, const T *Wt, T *Y, int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, const sketch::ConvShape &shape, const CUtensorMap &w_map, const CUtensorMap &y_map) {
  CUtensorMap x_part;  // the im2col box of ROWS pixels
  if (!sketch::encode_tensor_map_im2col(&x_part, X, 2, shape.n, shape.h, shape.w, shape.c, shape.pad_h, shape.pad_w, (shape.r - 1) * shape.dil_h, (shape.s - 1) * shape.dil_w, shape.stride_h, shape.stride_w, 64, ROWS))
    return cudaErrorInvalidValue;
  auto kernel = conv<T, BM, ROWS, 4>;
  const int smem = smem_bytes<BM>(4);
  cudaError_t err = sketch::allow_dynamic_smem(kernel, smem);
  if (err != cudaSuccess) return err;
  const int64_t sms = std::max(sketch::sm_count(), 1);
  const int64_t grid = std::min(blocks, sms);
  return sketch::launch_kernel(kernel, dim3(unsigned(grid)), 128 + BM * 2, smem, 1, blocks <= grid, stream, X, Wt, Y, N, H, W, C, K, shape, x_part, w_map, y_map);
}

template <typename T, int BM>
cudaError_t launch(int64_t blocks, cudaStream_t stream, const T *X, const T *Wt, T *Y, int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, const sketch::ConvShape &shape, const CUtensorMap &, const CUtensorMap &w_map, const CUtensorMap &y_map) {
  const int rows = tma_rows(BM);
#define LAB_HY_ROWS(R) \
  if (rows == R) return launch_rows<T, BM, R>(blocks, stream, X, Wt, Y, N, H, W, C, K, shape, w_map, y_map);
  if constexpr (BM == 192) {
    LAB_HY_ROWS(160) LAB_HY_ROWS(128) LAB_HY_ROWS(96) LAB_HY_ROWS(64)
  } else {
    LAB_HY_ROWS(96) LAB_HY_ROWS(64) LAB_HY_ROWS(32)
  }
#undef LAB_HY_ROWS
  return launch_rows<T, BM, BM>(blocks, stream, X, Wt, Y, N, H, W, C, K, shape, w_map, y_map);
}

}  // namespace lab_hy
