// Lab: the f32 SIMT GEMM's scalar path (sizes whose rows are not 16-byte chunks: 4095^3 ran
// 0.81x cuBLAS against 0.93x at 4096^3). Its loaders (sketch/simt.cuh, Vec = false) deal
// 4-float chunks and copy them a float at a time by 4-byte cp.async, so a warp's copy
// touches 16 sectors for 128 bytes (4 floats a 16-byte stride) and the next three re-read
// them from L1. The variants deal single floats instead, consecutive threads on consecutive
// elements (A: along k, B: along the columns), the same 8 copies a thread:
//   generated  the bench's default kernel as sketchc writes it (.gen/sgl, run.sh)
//   ctrl       its 128 x 128 x 16 kernel rebuilt here from the runtime's pieces (16-byte
//              instance where the sizes allow), with a 32-bit row in the epilogue
//   ctrl_e64   the same with the generated epilogue's 64-bit row
//   ctrl_i32   ctrl with its sizes passed as int instead of int64_t
//   a_elem / b_elem / ab_elem  A's, B's or both loaders dealing single floats
//   ctrl_again ctrl once more, last in the list (a variant's place in the order is not its time)
//   mixed      ctrl with each operand's copies as wide as its own rows allow (A 16-byte
//              where K % 4 == 0, B and the stores where N % 4 == 0)
// Each output is checked against cuBLAS's (pedantic math: no TF32); times are medians of 20
// CUDA-event timings in three alternating rounds.
#include "sketch/simt.cuh"
#include "../sgemm_lab.cuh"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cublas_v2.h>
#include <functional>
#include <string>
#include <vector>

using namespace sketch::simt;

namespace {
constexpr int ROWS = 128, COLS = 128, DEPTH = 16, THREADS = 256;

/// Lines of Width floats dealt a float at a time: the runtime's deal of single floats
/// (which KContiguousLoader's scalar instance has taken since this lab's first call).
template <int Lines, int Width, int Threads>
using ElementDeal = ChunkDeal<Lines, Width, Threads, 1>;

/// A [row][k] by 4-byte cp.async into tile[k][row], consecutive threads on consecutive k.
template <int Rows, int BK, int Threads>
struct KElementLoader {
  using Deal = ElementDeal<Rows, BK, Threads>;
  static constexpr bool kAsync = true;
  const float *ptr;
  int ld, row, koff, rows_left, depth;
  __device__ KElementLoader(const float *base, int ld_, int row0, int extent, int depth_)
      : ld(ld_), depth(depth_) {
    row = Deal::line(threadIdx.x);
    koff = Deal::offset(threadIdx.x);
    rows_left = extent - row0 - row;
    ptr = base + int64_t(row0 + row) * ld_ + koff;
  }
  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Rows)]) {
#pragma unroll
    for (int c = 0; c < Deal::kChunks; ++c) {
      const int dr = Deal::line_step(c), dk = Deal::offset_step(c);
      const bool in = dr < rows_left && kt * BK + koff + dk < depth;
      sketch::cp_async_4(sketch::smem_addr(&tile[koff + dk][row + dr]),
                         in ? ptr + int64_t(dr) * ld + kt * BK + dk : ptr, in);
    }
  }
  __device__ __forceinline__ void stash(float (*)[padded(Rows)]) const {}
};

/// B [k][col] by 4-byte cp.async into tile[k][col], consecutive threads on consecutive columns.
template <int Cols, int BK, int Threads>
struct RowElementLoader {
  using Deal = ElementDeal<BK, Cols, Threads>;
  static constexpr bool kAsync = true;
  const float *ptr;
  int ld, krow, col, cols_left, depth;
  __device__ RowElementLoader(const float *base, int ld_, int col0, int extent, int depth_)
      : ld(ld_), depth(depth_) {
    krow = Deal::line(threadIdx.x);
    col = Deal::offset(threadIdx.x);
    cols_left = extent - col0 - col;
    ptr = base + int64_t(krow) * ld_ + col0 + col;
  }
  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Cols)]) {
#pragma unroll
    for (int c = 0; c < Deal::kChunks; ++c) {
      const int dk = Deal::line_step(c), dc = Deal::offset_step(c);
      const bool in = kt * BK + krow + dk < depth && dc < cols_left;
      sketch::cp_async_4(sketch::smem_addr(&tile[krow + dk][col + dc]),
                         in ? ptr + int64_t(kt * BK + dk) * ld + dc : ptr, in);
    }
  }
  __device__ __forceinline__ void stash(float (*)[padded(Cols)]) const {}
};

/// Vec: the 16-byte loaders and stores (the host's choice, as the generated code's).
/// Epi64: the generated epilogue's form (64-bit row, `continue` past the matrix) instead
/// of a 32-bit row (the host checks that M * N fits 32 bits).
/// Size: the sizes' parameter type (int64_t as the generated kernels', or int).
template <bool AElem, bool BElem, bool Vec, bool Epi64, typename Size = int64_t, bool VecA = Vec>
__global__ void __launch_bounds__(THREADS, 2)
    sgemm_scalar(const float *__restrict__ A, const float *__restrict__ B, float *D, Size M_,
                 Size N_, Size K_) {
  const int M = static_cast<int>(M_), N = static_cast<int>(N_), K = static_cast<int>(K_);
  const int m0 = blockIdx.y * ROWS, n0 = blockIdx.x * COLS;
  const MicroTile<ROWS, COLS, 8, 8> micro;
  float acc[8][8];
  {
    using LoadA = std::conditional_t<AElem, KElementLoader<ROWS, DEPTH, THREADS>,
                                     KContiguousLoader<ROWS, DEPTH, THREADS, VecA>>;
    using LoadB = std::conditional_t<BElem, RowElementLoader<COLS, DEPTH, THREADS>,
                                     RowContiguousLoader<COLS, DEPTH, THREADS, Vec>>;
    LoadA load_a(A, K, m0, M, K);
    LoadB load_b(B, N, n0, N, K);
    mainloop<ROWS, COLS, DEPTH, 2>(load_a, load_b, (K + DEPTH - 1) / DEPTH, micro, acc);
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    if constexpr (Epi64) {
      const int64_t row = m0 + micro.row(i);
      if (row >= M)
        continue;
      store_row<Vec>(D + row * N, micro, n0, N, acc[i]);
    } else {
      const int row = m0 + micro.row(i);
      if (row < M)
        store_row<Vec>(D + int64_t(row) * N, micro, n0, N, acc[i]);
    }
  }
}

using sgemm_labs::Variant;
using sgemm_labs::median_ms;

template <bool AElem, bool BElem, bool Epi64 = false, typename Size = int64_t>
Variant variant(const char *name) {
  return {name, [](const float *a, const float *b, float *d, int m, int n, int k) {
            dim3 grid((n + COLS - 1) / COLS, (m + ROWS - 1) / ROWS);
            const bool vec = !AElem && !BElem && k % 4 == 0 && n % 4 == 0;  // cudaMalloc: aligned
            if (vec)
              sgemm_scalar<AElem, BElem, true, Epi64, Size><<<grid, THREADS>>>(a, b, d, m, n, k);
            else
              sgemm_scalar<AElem, BElem, false, Epi64, Size><<<grid, THREADS>>>(a, b, d, m, n, k);
          }};
}

/// Each operand's copies as wide as its own rows allow: A's 16-byte where K % 4 == 0, B's and
/// the stores where N % 4 == 0 (what the generated kernels do since 66604b7; before, one flag
/// for both, as `ctrl`).
Variant mixed_variant(const char *name) {
  return {name, [](const float *a, const float *b, float *d, int m, int n, int k) {
            dim3 grid((n + COLS - 1) / COLS, (m + ROWS - 1) / ROWS);
            const bool vec_a = k % 4 == 0, vec_b = n % 4 == 0;
            // Size named: left out, it is deduced from the int arguments (int, not int64_t)
            if (vec_a && vec_b)
              sgemm_scalar<false, false, true, false, int64_t><<<grid, THREADS>>>(a, b, d, m, n, k);
            else if (vec_a)
              sgemm_scalar<false, false, false, false, int64_t, true><<<grid, THREADS>>>(a, b, d, m, n, k);
            else if (vec_b)
              sgemm_scalar<false, false, true, false, int64_t, false><<<grid, THREADS>>>(a, b, d, m, n, k);
            else
              sgemm_scalar<false, false, false, false, int64_t><<<grid, THREADS>>>(a, b, d, m, n, k);
          }};
}

} // namespace

#ifndef SGEMM_SCALAR_NO_MAIN  // carveout.cu includes the kernels alone
#ifdef SGL_OLD  // the same sketch compiled against another runtime (run.sh: .gen/sgl/old)
extern "C" cudaError_t bo_f32_sgemm(const float *A, const float *B, float *D, int64_t M, int64_t K,
                                    int64_t N, cudaStream_t stream);
#endif
extern "C" cudaError_t bg_f32_sgemm(const float *A, const float *B, float *D, int64_t M, int64_t K,
                                    int64_t N, cudaStream_t stream);

int main() {
  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);  // no TF32
  const float one = 1.f, zero = 0.f;
  std::vector<Variant> vs = {
      {"cublas", [&](const float *a, const float *b, float *d, int m, int n, int k) {
         cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, d, n);
       }},
      {"generated", [](const float *a, const float *b, float *d, int m, int n, int k) {
         bg_f32_sgemm(a, b, d, m, k, n, 0);
       }},
#ifdef SGL_OLD
      {"gen_old", [](const float *a, const float *b, float *d, int m, int n, int k) {
         bo_f32_sgemm(a, b, d, m, k, n, 0);
       }},
#endif
      variant<false, false>("ctrl"), variant<false, false, true>("ctrl_e64"),
      variant<false, false, false, int>("ctrl_i32"), variant<true, false>("a_elem"), variant<false, true>("b_elem"),
      variant<true, true>("ab_elem"), mixed_variant("mixed"), variant<false, false>("ctrl_again")};
  const int shapes[][3] = {{4096, 4096, 4096}, {4095, 4095, 4095}, {4001, 3001, 2001}, {4096, 4096, 4095}, {4095, 4095, 4096}};
  for (const auto &shape : shapes) {
    const int m = shape[0], n = shape[1], k = shape[2];
    std::vector<float> ha(size_t(m) * k), hb(size_t(k) * n);
    uint32_t seed = 12345;
    for (auto *h : {&ha, &hb})
      sgemm_labs::fill_random(*h, seed);
    float *a, *b, *ref, *out;
    cudaMalloc(&a, ha.size() * 4);
    cudaMalloc(&b, hb.size() * 4);
    cudaMalloc(&ref, size_t(m) * n * 4);
    cudaMalloc(&out, size_t(m) * n * 4);
    cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice);
    const std::vector<double> errors = sgemm_labs::check_variants(vs, a, b, ref, out, m, n, k);
    printf("== %d x %d x %d\n", m, n, k);
    for (size_t v = 1; v < vs.size(); ++v) {
      const double worst = errors[v];
      printf("%-10s max rel err %.2e %s\n", vs[v].name.c_str(), worst, worst < 1e-4 ? "ok" : "WRONG");
    }
    std::vector<std::vector<float>> times(vs.size());
    // Round r starts r * 3 variants further on, so no variant keeps its place in the order.
    for (int round = 0; round < 3; ++round)
      for (size_t i = 0; i < vs.size(); ++i) {
        const size_t v = (i + 3 * round) % vs.size();
        auto f = [&] { vs[v].run(a, b, out, m, n, k); };
        f(), f();
        times[v].push_back(median_ms(f, 20));
      }
    const float lib = *std::min_element(times[0].begin(), times[0].end());
    for (size_t v = 0; v < vs.size(); ++v) {
      auto t = times[v];
      std::sort(t.begin(), t.end());
      printf("%-10s %8.3f %8.3f %8.3f ms  cuBLAS/x %.3f\n", vs[v].name.c_str(), times[v][0],
             times[v][1], times[v][2], lib / t[1]);
    }
    cudaFree(a), cudaFree(b), cudaFree(ref), cudaFree(out);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
#endif  // SGEMM_SCALAR_NO_MAIN
