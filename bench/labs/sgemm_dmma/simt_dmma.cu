// Lab: the SIMT kernel as sketchc generates it (loaders, shared tiles, pipeline, epilogue,
// store) with its FFMA micro-tile swapped for sketch/dmma.cuh's DmmaTile (the f64 tensor
// cores), over tiles and warp grids, against cuBLAS SGEMM and the generated default
// (bg_f32_default from bench/gemm/bench_f32_gemm_1.sketch) in the same process.
#include "../sgemm_lab.cuh"
#include "sketch/copy.cuh"
#include "sketch/host.h"
#include "sketch/mma.cuh"
#include "sketch/simt.cuh"

using namespace sgemm_labs;

extern "C" cudaError_t bg_f32_default(const float *A, const float *B, float *D, int64_t M, int64_t K, int64_t N,
                                      cudaStream_t stream);

template <bool kVec, bool kVecA, int ROWS, int COLS, int DEPTH, int WM, int WN, int ASYNC_STAGES, int MIN_BLOCKS>
__global__ void __launch_bounds__(WM *WN * 32, MIN_BLOCKS)
    dmma_simt(const float *__restrict__ A, const float *__restrict__ B, float *D, int64_t M, int64_t K, int64_t N) {
  constexpr int THREADS = WM * WN * 32;
  constexpr int STAGES = kVecA ? 2 : ASYNC_STAGES;
  const int size_m = static_cast<int>(M), size_n = static_cast<int>(N), size_k = static_cast<int>(K);
  const int m0 = blockIdx.y * ROWS, n0 = blockIdx.x * COLS;
  using Tile = sketch::simt::DmmaTile<ROWS, COLS, WM, WN>;
  const Tile micro;
  float acc[Tile::kRows][Tile::kCols];
  {
    sketch::simt::KContiguousLoader<ROWS, DEPTH, THREADS, kVecA> load_a(A, size_k, m0, size_m, size_k);
    sketch::simt::RowContiguousLoader<COLS, DEPTH, THREADS, kVec> load_b(B, size_n, n0, size_n, size_k);
    sketch::simt::mainloop<ROWS, COLS, DEPTH, STAGES>(load_a, load_b, (size_k + DEPTH - 1) / DEPTH, micro, acc);
  }
  float *d_dst = D;
#pragma unroll
  for (int i = 0; i < Tile::kRows; ++i) {
    const int64_t row = m0 + micro.row(i);
    if (row >= size_m)
      continue;
    float out[Tile::kCols];
#pragma unroll
    for (int j = 0; j < Tile::kCols; ++j)
      out[j] = acc[i][j];
    sketch::simt::store_row<kVec>(d_dst + row * size_n, micro, n0, size_n, out);
  }
}

/// force_async: A's copies by 4-byte cp.async (the ASYNC_STAGES pipeline) on any size.
template <int ROWS, int COLS, int DEPTH, int WM, int WN, int ASYNC_STAGES, int MIN_BLOCKS, bool force_async = false>
Variant variant(const char *name) {
  return {name, [](const float *a, const float *b, float *d, int m, int n, int k) {
            const bool vec = n % 4 == 0 && sketch::aligned_to(b, 16) && sketch::aligned_to(d, 16);
            const bool vec_a = !force_async && k % 4 == 0 && sketch::aligned_to(a, 16);
            auto kernel = vec ? (vec_a ? dmma_simt<true, true, ROWS, COLS, DEPTH, WM, WN, ASYNC_STAGES, MIN_BLOCKS>
                                       : dmma_simt<true, false, ROWS, COLS, DEPTH, WM, WN, ASYNC_STAGES, MIN_BLOCKS>)
                              : (vec_a ? dmma_simt<false, true, ROWS, COLS, DEPTH, WM, WN, ASYNC_STAGES, MIN_BLOCKS>
                                       : dmma_simt<false, false, ROWS, COLS, DEPTH, WM, WN, ASYNC_STAGES, MIN_BLOCKS>);
            const int stages = vec_a ? 2 : ASYNC_STAGES;
            const int bytes = stages * DEPTH * (sketch::simt::padded(ROWS) + sketch::simt::padded(COLS)) * 4;
            const int dyn = bytes > sketch::simt::kStaticSharedBytes ? bytes : 0;
            sketch::allow_dynamic_smem(kernel, dyn);
            const dim3 grid((n + COLS - 1) / COLS, (m + ROWS - 1) / ROWS);
            kernel<<<grid, WM * WN * 32, dyn>>>(a, b, d, m, k, n);
          }};
}

int main() {
  std::vector<Variant> vs = {
      cublas_variant(),
      {"generated", [](const float *a, const float *b, float *d, int m, int n, int k) {
         bg_f32_default(a, b, d, m, k, n, 0);
       }},
      variant<128, 128, 16, 2, 4, 3, 1>("d128x128x16_2x4"),
      variant<128, 128, 16, 4, 2, 3, 1>("d128x128x16_4x2"),
      variant<128, 128, 32, 2, 4, 3, 1>("d128x128x32_2x4"),
      variant<64, 128, 16, 1, 4, 3, 2>("d64x128x16_1x4"),
      variant<128, 64, 16, 2, 2, 3, 2>("d128x64x16_2x2"),
      variant<64, 128, 32, 1, 4, 3, 2>("d64x128x32_1x4"),
      variant<64, 64, 16, 1, 2, 3, 4>("d64x64x16_1x2"),
      variant<128, 128, 16, 2, 4, 3, 1, true>("d128x128x16_as3"),
      variant<128, 128, 16, 2, 4, 4, 1, true>("d128x128x16_as4"),
      variant<64, 128, 16, 1, 4, 3, 2, true>("d64x128x16_as3"),
      variant<64, 128, 16, 1, 4, 4, 2, true>("d64x128x16_as4"),
      variant<128, 64, 16, 2, 2, 4, 2, true>("d128x64x16_as4"),
  };
  const int shapes[][3] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4095, 4095, 4095}, {4000, 3000, 2000},
                           {1024, 50260, 768}};
  for (auto &s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    Problem p = make_problem(m, n, k);
    auto errs = check_variants(vs, p.a, p.b, p.ref, p.out, m, n, k);
    printf("\n%d x %d x %d, max error against cuBLAS:", m, n, k);
    for (size_t v = 1; v < vs.size(); ++v)
      printf(" %s %.1e", vs[v].name.c_str(), errs[v]);
    printf("\n");
    time_and_print(vs, p, m, n, k);
    cudaFree(p.a), cudaFree(p.b), cudaFree(p.ref), cudaFree(p.out);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
