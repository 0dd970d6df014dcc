// Lab (bench/labs/conv_hybrid_loads/README.md): the persistent nhwc convolution whose im2col
// operand comes from two engines at once: the tile's first TMA_ROWS rows as one TMA im2col
// box (thread 0, with the filter's box), the other BM - TMA_ROWS rows by cp.async from the
// producer warpgroup's 128 threads (16-byte chunks, arriving on the stage's full barrier
// when they land). BM / 64 consumer warpgroups of 64 rows, as generated. Whole tiles only.
namespace lab_hy {

__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

template <typename T, int BM, int TMA_ROWS, int STAGES>
__global__ void __launch_bounds__(128 + BM * 2, 1) conv(const T *__restrict__ X, const T *__restrict__ Wt, T *Y, int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, const __grid_constant__ sketch::ConvShape shape, const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap y_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  sketch::grid_dependency_wait();
  constexpr int BN = 128, BK = 64, NI = BN / 8, KI = BK / 16, THREADS = BM * 2;  // consumers
  constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2;
  constexpr int CP_ROWS = (BM - TMA_ROWS) / 16;  // a producer thread's rows (one chunk each)
  static_assert((BM - TMA_ROWS) % 16 == 0 && TMA_ROWS % 8 == 0, "rows in whole passes");
  const uint32_t smem_base = sketch::smem_addr(smem);
  const uint32_t a_smem = (smem_base + 1023) & ~1023u;
  const uint32_t b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const uint32_t staged_smem = b_smem + STAGES * B_STAGE_BYTES;
  const uint32_t bars = staged_smem + BM * BN * 2;
  const int64_t size_m = (int64_t)shape.n * shape.p * shape.q, size_n = shape.k, size_k = (int64_t)shape.c * shape.r * shape.s;
  const int tiles_n = (int)sketch::ceil_div(size_n, BN);
  const int tile_count = (int)sketch::ceil_div(size_m, BM) * tiles_n;
  const int k_tiles = (int)sketch::ceil_div(size_k, BK);
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sketch::mbarrier_init(bars + 8 * s, CP_ROWS > 0 ? 128 + 1 : 1);  // the copies, thread 0's bytes
      sketch::mbarrier_init(bars + 8 * (STAGES + s), THREADS / 32);
    }
    sketch::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    const int pt = threadIdx.x, chunk = pt % 8;
    int k_step = 0;
    for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
      const int64_t m0 = (int64_t)(tile / tiles_n) * BM, n0 = (int64_t)(tile % tiles_n) * BN;
      const int pq = shape.p * shape.q;
      const int x_n = (int)(m0 / pq), x_pq = (int)(m0 % pq);
      const int x_h = x_pq / shape.q * shape.stride_h - shape.pad_h;
      const int x_w = x_pq % shape.q * shape.stride_w - shape.pad_w;
      sketch::WindowNhwc win[CP_ROWS > 0 ? CP_ROWS : 1];
      #pragma unroll
      for (int i = 0; i < CP_ROWS; ++i) win[i] = sketch::window_nhwc(shape, m0 + TMA_ROWS + pt / 8 + 16 * i);
      sketch::ReductionIndex at{chunk * 8, 0, 0};  // this thread's chunk of k-tile 0; BK divides C
      int c0 = 0, r = 0, s = 0;                    // the k-tile's tap and first channel
      for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
        const uint32_t full = bars + 8 * (k_step % STAGES);
        if (k_step >= STAGES)
          sketch::mbarrier_wait(bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
        const uint32_t dst = a_smem + (k_step % STAGES) * A_STAGE_BYTES;
        if (pt == 0) {
          sketch::mbarrier_arrive_expect_tx(full, TMA_ROWS * BK * 2 + B_STAGE_BYTES);
          sketch::tma_load_im2col_4d(dst, &x_map, c0, x_w, x_h, x_n, (uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);
          sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, kt * BK, (int)n0, full);
        }
        if constexpr (CP_ROWS > 0) {
          const int k = kt * BK + chunk * 8;
          const sketch::ReductionNhwc red = sketch::reduction_offsets(shape, at, k);
          #pragma unroll
          for (int i = 0; i < CP_ROWS; ++i) {
            const int row = TMA_ROWS + pt / 8 + 16 * i;
            sketch::load_im2col_nhwc_16<true>(dst + row * 128 + ((chunk ^ (row & 7)) << 4), X, shape, win[i], red, k);
          }
          cp_async_arrive(full);
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
  const int tid = (int)threadIdx.x - 128, lane = tid % 32, warp = tid / 32, wg = warp / 4;
  const int g = lane / 4, t = lane % 4;
  T *staged = reinterpret_cast<T *>(smem + (staged_smem - smem_base));
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
      if constexpr (CP_ROWS > 0) sketch::fence_async_shared();  // the cp.async rows, for the tensor cores
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
