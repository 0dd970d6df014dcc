// Lab: the f32 SIMT GEMM's mainloop (sketch/simt.cuh) against cuBLAS SGEMM at 4096^3,
// A [M, K] and B [K, N] row-major (README.md has the results). Variants of the mainloop:
//   default, t128, t256  lab.sketch's kernels as sketchc writes them (README.md): the
//              compiler's default (with its large-grid tile), 128 x 128 x 16 and 256 x 128 x 16
//   regs2      its mainloop: A through registers (16-byte loads, transposed stores), B by
//              16-byte cp.async, two shared stages, one barrier a k tile (tiles dynamic here)
//   asyncS     A by 4-byte cp.async straight to its transposed place, S stages
//              (first call; no longer timed)
//   kfrag_bkBK_sS  A k-contiguous in shared memory (no transposition), both operands by
//              16-byte cp.async, S stages; 4 k values of a row in one 16-byte read
//   mbar[w]_bkBK_sS[_staticX]  the default's loaders and FMAs over S stages synchronised by
//              a full and an empty mbarrier a stage instead of __syncthreads (README.md)
//   [snake_]cross/plain_RxCxBK_tTMxTN  other block and thread tiles, the fragments of the
//              next tile read before the last FMAs of this one (cross), FMA order (snake)
//   xm_RxCxBK_tTMxTN_sS_bB  cuBLAS's structure: every copy by cp.async (A 4-byte, transposed),
//              S stages, cross-tile fragment prefetch, B blocks an SM
// main() times cuBLAS and lab.sketch's three kernels (with -DSGEMM_XM two or three xm
// variants too; the others' results are in README.md). Each output is checked against cuBLAS's (max relative error); times are medians of
// CUDA-event timings of 20 runs, in alternating rounds.
//   nvcc -std=c++17 -O3 -I runtime/include -gencode arch=compute_90a,code=sm_90a sgemm.cu -lcublas
#include "sketch/simt.cuh"
#include "sketch/tma.cuh"
#include "../sgemm_lab.cuh"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <functional>
#include <string>
#include <vector>

using namespace sketch::simt;

namespace {
constexpr int ROWS = 128, COLS = 128, THREADS = 256;

template <int TM, int TN>
__device__ __forceinline__ void zero_accumulators(float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
      acc[i][j] = 0.f;
}

/// The block's output rows that lie inside D (16-byte stores).
template <bool Vec = true, int Rows, int Cols, int TM, int TN>
__device__ __forceinline__ void store_tile(const MicroTile<Rows, Cols, TM, TN> &micro, const float (&acc)[TM][TN],
                                           float *D, int m0, int n0, int M, int N) {
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = m0 + micro.row(i);
    if (row < M)
      store_row<Vec>(D + int64_t(row) * N, micro, n0, N, acc[i]);
  }
}

/// Stages >= 3: every tile by cp.async, Stages - 1 tiles in flight ahead of the math.
template <int BK, int Stages, typename LoadA, typename LoadB, typename Micro>
__device__ __forceinline__ void mainloop_stages(LoadA &load_a, LoadB &load_b, int ktiles,
                                                const Micro &t, float (&acc)[8][8],
                                                float (*a_tile)[BK][padded(ROWS)],
                                                float (*b_tile)[BK][padded(COLS)]) {
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < ktiles) {
      load_a.fetch(s, a_tile[s]);
      load_b.fetch(s, b_tile[s]);
    }
    sketch::cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    sketch::cp_async_wait<Stages - 2>();
    __syncthreads();  // tile kt is in; every warp is done with tile kt - 1's buffer
    const int next = kt + Stages - 1;
    if (next < ktiles) {
      load_a.fetch(next, a_tile[next % Stages]);
      load_b.fetch(next, b_tile[next % Stages]);
    }
    sketch::cp_async_commit();
    multiply_tile<ROWS, COLS, BK>(a_tile[kt % Stages], b_tile[kt % Stages], t, acc);
  }
}

template <int BK, int Stages, bool AAsync>
__global__ void __launch_bounds__(THREADS, 2)
    sgemm_lab(const float *__restrict__ A, const float *__restrict__ B, float *D, int M, int N, int K) {
  extern __shared__ __align__(16) float smem[];
  auto *a_tile = reinterpret_cast<float(*)[BK][padded(ROWS)]>(smem);
  auto *b_tile = reinterpret_cast<float(*)[BK][padded(COLS)]>(smem + Stages * BK * padded(ROWS));
  const int m0 = blockIdx.y * ROWS, n0 = blockIdx.x * COLS;
  const MicroTile<ROWS, COLS, 8, 8> micro;
  float acc[8][8];
  zero_accumulators(acc);
  {
    KContiguousLoader<ROWS, BK, THREADS, !AAsync> load_a(A, K, m0, M, K);
    RowContiguousLoader<COLS, BK, THREADS, true> load_b(B, N, n0, N, K);
    const int ktiles = (K + BK - 1) / BK;
    if constexpr (Stages == 2)
      mainloop_double_buffered<ROWS, COLS, BK>(load_a, load_b, ktiles, micro, acc, a_tile, b_tile, 0);
    else
      mainloop_stages<BK, Stages>(load_a, load_b, ktiles, micro, acc, a_tile, b_tile);
  }
  store_tile(micro, acc, D, m0, n0, M, N);
}

/// Stages 2, A through registers, with the fragments of the next tile's k = 0 loaded
/// before the current tile's last FMAs: the barrier that publishes tile kt + 1 comes one
/// k step earlier (Cross), so no warp waits for shared memory right after it.
/// acc += x y^T, Snake: each odd row's columns in reverse (consecutive FFMAs share an operand
/// at every step, the row changes included).
template <bool Snake, int TM, int TN>
__device__ __forceinline__ void fma_order(const float (&x)[TM], const float (&y)[TN], float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) {
      const int j = Snake && i % 2 ? TN - 1 - jj : jj;
      acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
    }
}

/// Shared tiles as the generated kernels have them (sketch::simt::shared_tiles: static
/// arrays up to 48 KB, else dynamic).
template <int Rows, int Cols, int TM, int TN, int BK, int MinBlocks, bool Cross, bool Snake = false>
__global__ void __launch_bounds__(THREADS, MinBlocks)
    sgemm_cross(const float *__restrict__ A, const float *__restrict__ B, float *D, int M, int N, int K) {
  auto *a_tile = reinterpret_cast<float(*)[BK][padded(Rows)]>(shared_tiles<Rows, Cols, BK, 2, false>());
  auto *b_tile = reinterpret_cast<float(*)[BK][padded(Cols)]>(shared_tiles<Rows, Cols, BK, 2, true>());
  const int m0 = blockIdx.y * Rows, n0 = blockIdx.x * Cols;
  const MicroTile<Rows, Cols, TM, TN> micro;
  float acc[TM][TN];
  zero_accumulators(acc);
  {
    KContiguousLoader<Rows, BK, THREADS, true> load_a(A, K, m0, M, K);
    RowContiguousLoader<Cols, BK, THREADS, true> load_b(B, N, n0, N, K);
    const int ktiles = (K + BK - 1) / BK;
    load_a.fetch(0, a_tile[0]);
    load_b.fetch(0, b_tile[0]);
    load_a.stash(a_tile[0]);
    wait_async_loads<decltype(load_a), decltype(load_b)>();
    __syncthreads();
    float x[2][TM], y[2][TN];
    load_fragments(a_tile[0][0], b_tile[0][0], micro, x[0], y[0]);
    for (int kt = 0; kt < ktiles; ++kt) {
      const int cur = kt & 1;
      const bool more = kt + 1 < ktiles;
      if (more) {
        load_a.fetch(kt + 1, a_tile[cur ^ 1]);
        load_b.fetch(kt + 1, b_tile[cur ^ 1]);
      }
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        if (k + 1 < BK) {
          load_fragments(a_tile[cur][k + 1], b_tile[cur][k + 1], micro, x[(k + 1) % 2], y[(k + 1) % 2]);
        } else if (Cross) {
          if (more)
            load_a.stash(a_tile[cur ^ 1]);
          wait_async_loads<decltype(load_a), decltype(load_b)>();
          __syncthreads();
          load_fragments(a_tile[cur ^ 1][0], b_tile[cur ^ 1][0], micro, x[(k + 1) % 2], y[(k + 1) % 2]);
        }
        fma_order<Snake>(x[k % 2], y[k % 2], acc);
      }
      if (!Cross) {
        if (more)
          load_a.stash(a_tile[cur ^ 1]);
        wait_async_loads<decltype(load_a), decltype(load_b)>();
        __syncthreads();
        load_fragments(a_tile[cur ^ 1][0], b_tile[cur ^ 1][0], micro, x[0], y[0]);
      }
    }
  }
  store_tile(micro, acc, D, m0, n0, M, N);
}


/// xm: cuBLAS's structure (its sm80 ffma kernel at 4096^3: 256 x 128 x 8, 3 stages, every copy
/// by cp.async, 254 registers, one block an SM). A by 4-byte cp.async straight to its transposed
/// place (KContiguousLoader at Vec = false), B by 16-byte cp.async, Stages deep (Stages - 1
/// tiles in flight); the fragments of the next tile's k = 0 read before this tile's last
/// FMAs (the barrier that publishes tile kt + 1 comes one k step early: every read of tile
/// kt is then done, so its stage may be refilled at the next iteration).
template <int Rows, int Cols, int TM, int TN, int BK, int Stages, int MinBlocks, bool Vec = true>
__global__ void __launch_bounds__(THREADS, MinBlocks)
    sgemm_xm(const float *__restrict__ A, const float *__restrict__ B, float *D, int M, int N, int K) {
  extern __shared__ __align__(16) float smem[];
  auto *a_tile = reinterpret_cast<float(*)[BK][padded(Rows)]>(smem);
  auto *b_tile = reinterpret_cast<float(*)[BK][padded(Cols)]>(smem + Stages * BK * padded(Rows));
  const int m0 = blockIdx.y * Rows, n0 = blockIdx.x * Cols;
  const MicroTile<Rows, Cols, TM, TN> micro;
  float acc[TM][TN];
  zero_accumulators(acc);
  {
    KContiguousLoader<Rows, BK, THREADS, false> load_a(A, K, m0, M, K);
    RowContiguousLoader<Cols, BK, THREADS, Vec> load_b(B, N, n0, N, K);
    const int ktiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < Stages - 1; ++s) {
      if (s < ktiles) {
        load_a.fetch(s, a_tile[s]);
        load_b.fetch(s, b_tile[s]);
      }
      sketch::cp_async_commit();
    }
    sketch::cp_async_wait<Stages - 2>();
    __syncthreads();
    float x[2][TM], y[2][TN];
    load_fragments(a_tile[0][0], b_tile[0][0], micro, x[0], y[0]);
    int read = 0, write = Stages - 1;  // stages of tile kt and of tile kt + Stages - 1
    for (int kt = 0; kt < ktiles; ++kt) {
      if (kt + Stages - 1 < ktiles) {
        load_a.fetch(kt + Stages - 1, a_tile[write]);
        load_b.fetch(kt + Stages - 1, b_tile[write]);
      }
      sketch::cp_async_commit();
      write = write + 1 == Stages ? 0 : write + 1;
      const int next = read + 1 == Stages ? 0 : read + 1;
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        if (k + 1 < BK) {
          load_fragments(a_tile[read][k + 1], b_tile[read][k + 1], micro, x[(k + 1) % 2], y[(k + 1) % 2]);
        } else {
          sketch::cp_async_wait<Stages - 2>();  // tile kt + 1 has landed
          __syncthreads();
          load_fragments(a_tile[next][0], b_tile[next][0], micro, x[(k + 1) % 2], y[(k + 1) % 2]);
        }
        fma_order<false>(x[k % 2], y[k % 2], acc);
      }
      read = next;
    }
  }
  store_tile<Vec>(micro, acc, D, m0, n0, M, N);
}

/// kfrag: A stays k-contiguous in shared memory (no transposition: 16-byte cp.async for both
/// operands, Stages deep, no registers for loads). A thread reads each of its 8 rows' 4
/// consecutive k values with one 16-byte load and uses them over 4 k steps; the row's
/// 16-byte chunks are XOR-swizzled by (row / 4) so a warp's 4 row groups hit distinct banks.
template <int BK, int Stages, int MinBlocks>
__global__ void __launch_bounds__(THREADS, MinBlocks)
    sgemm_kfrag(const float *__restrict__ A, const float *__restrict__ B, float *D, int M, int N, int K) {
  constexpr int CH = BK / 4, LDB = COLS + 4;
  extern __shared__ __align__(16) float smem[];
  float *a_s = smem;                          // [Stages][ROWS][BK], chunks swizzled
  float *b_s = smem + Stages * ROWS * BK;     // [Stages][BK][LDB]
  const int m0 = blockIdx.y * ROWS, n0 = blockIdx.x * COLS;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int tx = (warp % 2) * 8 + lane % 8, ty = (warp / 2) * 4 + lane / 8;
  auto load = [&](int kt, int s) {
    const int k0 = kt * BK;
#pragma unroll
    for (int i = 0; i < ROWS * CH / THREADS; ++i) {
      const int idx = tid + i * THREADS, r = idx / CH, c = idx % CH;
      const bool p = m0 + r < M && k0 + c * 4 < K;
      const uint32_t dst = sketch::smem_addr(a_s + (s * ROWS + r) * BK + ((c ^ ((r >> 2) & (CH - 1))) * 4));
      sketch::cp_async_16(dst, p ? A + int64_t(m0 + r) * K + k0 + c * 4 : A, p);
    }
#pragma unroll
    for (int i = 0; i < BK * (COLS / 4) / THREADS; ++i) {
      const int idx = tid + i * THREADS, r = idx / (COLS / 4), c = idx % (COLS / 4);
      const bool p = k0 + r < K && n0 + c * 4 < N;
      const uint32_t dst = sketch::smem_addr(b_s + (s * BK + r) * LDB + c * 4);
      sketch::cp_async_16(dst, p ? B + int64_t(k0 + r) * N + n0 + c * 4 : B, p);
    }
  };
  float acc[8][8];
  zero_accumulators(acc);
  const int ktiles = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < ktiles) load(s, s);
    sketch::cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    sketch::cp_async_wait<Stages - 2>();
    __syncthreads();
    const int next = kt + Stages - 1;
    if (next < ktiles) load(next, next % Stages);
    sketch::cp_async_commit();
    const float *at = a_s + (kt % Stages) * ROWS * BK;
    const float *bt = b_s + (kt % Stages) * BK * LDB;
#pragma unroll(MinBlocks == 2 ? 1 : CH)  // two blocks an SM: rolled, or ptxas spills
    for (int c = 0; c < CH; ++c) {
      float a[8][4];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = (i / 4) * 64 + ty * 4 + i % 4;
        const float4 v = *reinterpret_cast<const float4 *>(at + r * BK + ((c ^ ((r >> 2) & (CH - 1))) * 4));
        a[i][0] = v.x, a[i][1] = v.y, a[i][2] = v.z, a[i][3] = v.w;
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        float b[8];
        const float4 b0 = *reinterpret_cast<const float4 *>(bt + (c * 4 + kk) * LDB + tx * 4);
        const float4 b1 = *reinterpret_cast<const float4 *>(bt + (c * 4 + kk) * LDB + 64 + tx * 4);
        b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j)
            acc[i][j] = fmaf(a[i][kk], b[j], acc[i][j]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = m0 + (i / 4) * 64 + ty * 4 + i % 4;
    if (row >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = n0 + h * 64 + tx * 4;
      float *dst = D + int64_t(row) * N + col;
      if (col + 4 <= N)
        *reinterpret_cast<float4 *>(dst) = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
      else
        for (int e = 0; e < 4 && col + e < N; ++e) dst[e] = acc[i][4 * h + e];
    }
  }
}

/// One arrival on `bar` when this thread's earlier cp.async copies have landed (counted in the
/// barrier's expected arrivals: .noinc).
__device__ __forceinline__ void cp_async_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

/// The default's loaders and FMAs over Stages >= 3 shared stages with a pair of mbarriers a
/// stage instead of a block barrier a k tile: a thread waits for its tile's data (full: every
/// thread's A stores and B copies) and, before refilling a stage, for every thread (or warp,
/// WarpArrive) to have read it (empty). The fastest warp may run Stages - 2 tiles ahead of the
/// slowest; the default's __syncthreads allows none.
/// StaticMask: bit 0, A's tiles a static array (else dynamic shared memory); bit 1, B's.
template <int BK, int Stages, int StaticMask>
__device__ __forceinline__ void mbar_tiles(float *&a, float *&b) {
  constexpr int kA = Stages * BK * padded(ROWS), kB = Stages * BK * padded(COLS);
  extern __shared__ __align__(16) float smem[];
  float *dynamic = smem;
  if constexpr (StaticMask & 1) {
    __shared__ __align__(16) float a_static[kA];
    a = a_static;
  } else {
    a = dynamic;
    dynamic += kA;
  }
  if constexpr (StaticMask & 2) {
    __shared__ __align__(16) float b_static[kB];
    b = b_static;
  } else {
    b = dynamic;
  }
}

template <int BK, int Stages, bool WarpArrive, int StaticMask = 0>
__global__ void __launch_bounds__(THREADS, 2)
    sgemm_mbar(const float *__restrict__ A, const float *__restrict__ B, float *D, int M, int N, int K) {
  float *a_base, *b_base;
  mbar_tiles<BK, Stages, StaticMask>(a_base, b_base);
  auto *a_tile = reinterpret_cast<float(*)[BK][padded(ROWS)]>(a_base);
  auto *b_tile = reinterpret_cast<float(*)[BK][padded(COLS)]>(b_base);
  __shared__ __align__(8) uint64_t bars[2 * Stages];
  const uint32_t full = sketch::smem_addr(&bars[0]), empty = full + 8 * Stages;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Stages; ++s) {
      sketch::mbarrier_init(full + 8 * s, 2 * THREADS);
      sketch::mbarrier_init(empty + 8 * s, WarpArrive ? THREADS / 32 : THREADS);
    }
    sketch::fence_mbarrier_init();
  }
  __syncthreads();
  const int m0 = blockIdx.y * ROWS, n0 = blockIdx.x * COLS;
  const MicroTile<ROWS, COLS, 8, 8> micro;
  float acc[8][8];
  zero_accumulators(acc);
  {
    KContiguousLoader<ROWS, BK, THREADS, true> load_a(A, K, m0, M, K);
    RowContiguousLoader<COLS, BK, THREADS, true> load_b(B, N, n0, N, K);
    const int ktiles = (K + BK - 1) / BK;
    auto publish = [&](int kt) {  // A's staged floats stored, B's copies issued, two arrivals
      const int s = kt % Stages;
      load_a.stash(a_tile[s]);
      load_b.fetch(kt, b_tile[s]);
      sketch::mbarrier_arrive(full + 8 * s);
      cp_async_arrive_noinc(full + 8 * s);
    };
    for (int t = 0; t < Stages - 1 && t < ktiles; ++t) {
      load_a.fetch(t, a_tile[t]);
      publish(t);
    }
    for (int kt = 0; kt < ktiles; ++kt) {
      const int s = kt % Stages, next = kt + Stages - 1;
      if (next < ktiles)
        load_a.fetch(next, a_tile[next % Stages]);  // global -> registers during the math
      sketch::mbarrier_wait(full + 8 * s, (kt / Stages) & 1);
      multiply_tile<ROWS, COLS, BK>(a_tile[s], b_tile[s], micro, acc);
      if constexpr (WarpArrive)
        sketch::mbarrier_arrive_by_warp(empty + 8 * s);
      else
        sketch::mbarrier_arrive(empty + 8 * s);
      if (next < ktiles) {
        if (next >= Stages)  // tile next - Stages (= kt - 1) read by everyone
          sketch::mbarrier_wait(empty + 8 * (next % Stages), (next / Stages - 1) & 1);
        publish(next);
      }
    }
  }
  store_tile(micro, acc, D, m0, n0, M, N);
}

using sgemm_labs::Variant;

template <int BK, int Stages, bool AAsync>
Variant variant(const char *name) {
  constexpr int bytes = Stages * BK * (padded(ROWS) + padded(COLS)) * 4;
  cudaFuncSetAttribute(sgemm_lab<BK, Stages, AAsync>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return {std::string(name) + "_bk" + std::to_string(BK),
          [](const float *a, const float *b, float *d, int m, int n, int k) {
            dim3 grid((n + COLS - 1) / COLS, (m + ROWS - 1) / ROWS);
            sgemm_lab<BK, Stages, AAsync><<<grid, THREADS, bytes>>>(a, b, d, m, n, k);
          }};
}

template <int Rows, int Cols, int TM, int TN, int BK, int MinBlocks, bool Cross, bool Snake = false>
Variant cross_variant() {
  constexpr int all = shared_bytes<Rows, Cols, BK, 2>();
  constexpr int bytes = all <= kStaticSharedBytes ? 0 : all;
  auto kernel = sgemm_cross<Rows, Cols, TM, TN, BK, MinBlocks, Cross, Snake>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  const std::string name = std::string(Snake ? "snake_" : "") + (Cross ? "cross_" : "plain_") + std::to_string(Rows) + "x" +
                           std::to_string(Cols) + "x" + std::to_string(BK) + "_t" +
                           std::to_string(TM) + "x" + std::to_string(TN);
  return {name, [kernel](const float *a, const float *b, float *d, int m, int n, int k) {
            dim3 grid((n + Cols - 1) / Cols, (m + Rows - 1) / Rows);
            kernel<<<grid, THREADS, bytes>>>(a, b, d, m, n, k);
          }};
}


template <int Rows, int Cols, int TM, int TN, int BK, int Stages, int MinBlocks, bool Vec = true>
Variant xm_variant() {
  constexpr int bytes = Stages * BK * (padded(Rows) + padded(Cols)) * 4;
  auto kernel = sgemm_xm<Rows, Cols, TM, TN, BK, Stages, MinBlocks, Vec>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  const std::string name = "xm_" + std::to_string(Rows) + "x" + std::to_string(Cols) + "x" + std::to_string(BK) +
                           "_t" + std::to_string(TM) + "x" + std::to_string(TN) + "_s" + std::to_string(Stages) +
                           "_b" + std::to_string(MinBlocks) + (Vec ? "" : "_4byte");
  return {name, [kernel](const float *a, const float *b, float *d, int m, int n, int k) {
            dim3 grid((n + Cols - 1) / Cols, (m + Rows - 1) / Rows);
            kernel<<<grid, THREADS, bytes>>>(a, b, d, m, n, k);
          }};
}


template <int BK, int Stages, int MinBlocks>
Variant kfrag_variant() {
  constexpr int bytes = Stages * BK * (ROWS + COLS + 4) * 4;
  cudaFuncSetAttribute(sgemm_kfrag<BK, Stages, MinBlocks>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return {"kfrag_bk" + std::to_string(BK) + "_s" + std::to_string(Stages) + "_b" + std::to_string(MinBlocks),
          [](const float *a, const float *b, float *d, int m, int n, int k) {
            dim3 grid((n + COLS - 1) / COLS, (m + ROWS - 1) / ROWS);
            sgemm_kfrag<BK, Stages, MinBlocks><<<grid, THREADS, bytes>>>(a, b, d, m, n, k);
          }};
}

template <int BK, int Stages, bool WarpArrive, int StaticMask = 0>
Variant mbar_variant() {
  constexpr int bytes = Stages * BK * ((StaticMask & 1 ? 0 : padded(ROWS)) + (StaticMask & 2 ? 0 : padded(COLS))) * 4;
  auto kernel = sgemm_mbar<BK, Stages, WarpArrive, StaticMask>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return {std::string("mbar") + (WarpArrive ? "w" : "") + "_bk" + std::to_string(BK) + "_s" + std::to_string(Stages) +
              (StaticMask ? "_static" + std::to_string(StaticMask) : ""),
          [kernel](const float *a, const float *b, float *d, int m, int n, int k) {
            dim3 grid((n + COLS - 1) / COLS, (m + ROWS - 1) / ROWS);
            kernel<<<grid, THREADS, bytes>>>(a, b, d, m, n, k);
          }};
}

} // namespace

// lab.sketch's kernels as sketchc generated them (linked in: README.md).
#define LAB_GEMM(name)                                                                         \
  extern "C" cudaError_t name(const float *A, const float *B, float *D, int64_t M, int64_t K,  \
                              int64_t N, cudaStream_t stream);
LAB_GEMM(lab_default)
LAB_GEMM(lab_t128)
LAB_GEMM(lab_t256)
#define LAB_VARIANT(name)                                                                      \
  Variant{#name, [](const float *a_, const float *b_, float *d, int m_, int n_, int k_) {      \
            name(a_, b_, d, m_, k_, n_, 0);                                                    \
          }}

int main(int argc, char **argv) {
  const bool profile = argc > 1 && std::string(argv[1]) == "--once";  // one run each (ncu)
  // sgemm [SIZE | M N K]: M = N = K = SIZE (4096 without arguments)
  const int size = argc > 1 && !profile ? std::atoi(argv[1]) : 4096;
  const int m = size, n = argc > 3 ? std::atoi(argv[2]) : size, k = argc > 3 ? std::atoi(argv[3]) : size;
  const bool aligned = n % 4 == 0;  // B's and D's rows whole 16-byte chunks: the Vec xm variant
  const sgemm_labs::Problem problem = sgemm_labs::make_problem(m, n, k);
  float *a = problem.a, *b = problem.b, *ref = problem.ref, *out = problem.out;
  std::vector<Variant> vs = {
      sgemm_labs::cublas_variant(),
      LAB_VARIANT(lab_default), LAB_VARIANT(lab_t128), LAB_VARIANT(lab_t256)};
#ifdef SGEMM_XM
  vs.push_back(xm_variant<256, 128, 8, 16, 16, 3, 1, false>());
  vs.push_back(xm_variant<128, 128, 8, 8, 16, 3, 2, false>());
  if (aligned)
    vs.push_back(xm_variant<256, 128, 8, 16, 16, 3, 1>());
#endif
  const std::vector<double> errors = sgemm_labs::check_variants(vs, a, b, ref, out, m, n, k);
  for (size_t v = 1; v < vs.size(); ++v) {
    const double worst = errors[v];
    printf("%-12s max rel err %.2e %s\n", vs[v].name.c_str(), worst, worst < 1e-4 ? "ok" : "WRONG");
  }
  if (profile)
    return 0;
  sgemm_labs::time_and_print(vs, problem, m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
