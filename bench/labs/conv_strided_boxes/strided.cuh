// Lab (bench/labs/conv_strided_boxes/README.md): the persistent nhwc convolution with its A
// operand loaded as *tiled* TMA boxes instead of im2col boxes. A tile is R = BM / Q whole
// output rows of one image (R Q of its BM accumulator rows are pixels; the rest are computed
// and never stored); tap (r, s)'s rows are the rank-4 box {64 channels, Q, R, 1} of X from
// (c0, s dil - pad, p0 stride + r dil - pad, n), traversed at the convolution's strides
// (element strides {1, stride_w, stride_h, 1}), zero outside the image. The output goes
// out by rank-4 boxes {64, Q, R, 1} of Y, which the copy engine clips at P. C % 64 == 0.
namespace lab_sb {

template <typename T, int BM, int STAGES>
__global__ void __launch_bounds__(128 + BM * 2, 1) conv(const T *__restrict__ X, const T *__restrict__ Wt, T *Y, const __grid_constant__ sketch::ConvShape shape, int rows_per_tile, const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap y_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  sketch::grid_dependency_wait();
  constexpr int BN = 128, BK = 64, NI = BN / 8, KI = BK / 16, THREADS = BM * 2;  // consumers
  constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2;
  const uint32_t smem_base = sketch::smem_addr(smem);
  const uint32_t a_smem = (smem_base + 1023) & ~1023u;
  const uint32_t b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const uint32_t staged_smem = b_smem + STAGES * B_STAGE_BYTES;
  const uint32_t bars = staged_smem + BM * BN * 2;
  const int R = rows_per_tile, box_bytes = R * shape.q * 128;  // the A box's rows: R Q pixels
  const int tiles_image = (shape.p + R - 1) / R, tiles_n = (shape.k + BN - 1) / BN;
  const int tile_count = shape.n * tiles_image * tiles_n;
  const int k_tiles = (int)sketch::ceil_div((int64_t)shape.c * shape.r * shape.s, BK);
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sketch::mbarrier_init(bars + 8 * s, 1);
      sketch::mbarrier_init(bars + 8 * (STAGES + s), THREADS / 32);
    }
    sketch::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    sketch::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int k_step = 0;
      for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
        const int pixel_tile = tile / tiles_n, n0 = tile % tiles_n * BN;
        const int img = pixel_tile / tiles_image, p0 = pixel_tile % tiles_image * R;
        for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
          const uint32_t full = bars + 8 * (k_step % STAGES);
          if (k_step >= STAGES)
            sketch::mbarrier_wait(bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
          sketch::mbarrier_arrive_expect_tx(full, box_bytes + B_STAGE_BYTES);
          const int k = kt * BK, tap = k / shape.c, c0 = k - tap * shape.c;
          const int r = tap / shape.s, s = tap - r * shape.s;
          sketch::tma_load_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, s * shape.dil_w - shape.pad_w,
                              p0 * shape.stride_h + r * shape.dil_h - shape.pad_h, img, full);
          sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &w_map, k, n0, full);
        }
      }
    }
    return;
  }
  sketch::setmaxnreg_inc<BM == 128 ? 232 : 152>();
  const int tid = (int)threadIdx.x - 128, lane = tid % 32, warp = tid / 32, wg = warp / 4;
  const int g = lane / 4, t = lane % 4;
  T *staged = reinterpret_cast<T *>(smem + (staged_smem - smem_base));
  float acc[1][NI][4];
  int k_step = 0;
  for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
    const int pixel_tile = tile / tiles_n, n0 = tile % tiles_n * BN;
    const int img = pixel_tile / tiles_image, p0 = pixel_tile % tiles_image * R;
    #pragma unroll
    for (int ni = 0; ni < NI; ++ni)
      #pragma unroll
      for (int e = 0; e < 4; ++e) acc[0][ni][e] = 0.0f;
    for (int kt = 0; kt < k_tiles; ++kt, ++k_step) {
      sketch::mbarrier_wait(bars + 8 * (k_step % STAGES), (k_step / STAGES) & 1);
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
      for (int b = 0; b < 2; ++b)
        if (n0 + b * 64 < shape.k) sketch::tma_store_4d(&y_map, staged_smem + b * BM * 128, n0 + b * 64, 0, p0, img);
      sketch::tma_store_commit();
    }
  }
  if (tid == 0) sketch::tma_store_wait_read();
}

/// Launches the lab kernel for this call; false where it does not apply (the caller goes on
/// with the generated path): LAB_BM = 128 or 192 (default 192), LAB_STAGES = 4 or 6 (BM 128),
/// LAB_ROWS and LAB_OFF as lab_rows::rows reads them.
template <typename T>
bool launch(const T *X, const T *Wt, T *Y, const sketch::ConvShape &shape, cudaStream_t stream,
            cudaError_t *status) {
  const int bm = lab_rows::env_int("LAB_BM", 192) == 128 ? 128 : 192;
  const int rows = lab_rows::rows(shape, bm);  // 0: the generated kernels
  if (rows == 0 || shape.c % 64 != 0 || shape.k % 8 != 0)
    return false;
  const int64_t depth = (int64_t)shape.c * shape.r * shape.s;
  CUtensorMap x_map{}, y_map{}, w_map{};
  if (!sketch::encode_tensor_map_2d(&w_map, Wt, depth, shape.k, depth * 2, 64, 128, 2) ||
      !lab_rows::encode_x(&x_map, X, shape, rows) ||
      !sketch::encode_tensor_map_nhwc(&y_map, Y, 2, shape.n, shape.p, shape.q, shape.k, 64, shape.q, rows))
    return false;
  const int stages = bm == 192 ? 4 : lab_rows::env_int("LAB_STAGES", 4) == 6 ? 6 : 4;
  auto kernel = bm == 192 ? conv<T, 192, 4> : stages == 6 ? conv<T, 128, 6> : conv<T, 128, 4>;
  const int smem = 1024 + stages * (bm + 128) * 128 + bm * 256 + 16 * stages;
  *status = sketch::allow_dynamic_smem(kernel, smem);
  if (*status != cudaSuccess) return true;
  const int64_t tiles = (int64_t)shape.n * ((shape.p + rows - 1) / rows) * ((shape.k + 127) / 128);
  const int64_t grid = std::min<int64_t>(tiles, std::max(sketch::sm_count(), 1));
  *status = sketch::launch_kernel(kernel, dim3(unsigned(grid)), 128 + bm * 2, smem, 1, tiles <= grid, stream, X, Wt, Y,
                                  shape, rows, x_map, w_map, y_map);
  return true;
}

}  // namespace lab_sb
