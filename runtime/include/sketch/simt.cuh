// sketch/simt.cuh - the f32 SIMT (CUDA-core) GEMM mainloop: SGEMM and nchw convolution.
//
// A block computes a Rows x Cols tile of the output with Rows*Cols/64 threads,
// each owning an 8x8 register micro-tile made of four 4x4 pieces: thread rows
// ty*4 + {0..3} and Rows/2 + ty*4 + {0..3}, columns likewise with tx. A warp is
// 4 (ty) x 8 (tx) threads, so a k step reads 4 distinct float4 of the A tile and
// 8 of the B tile from shared memory: broadcasts, no bank conflicts.
//
// Shared memory holds both operand tiles k-major, `tile[k][row]`, rows padded to
// Rows + 4 floats (the transposed 4-float stores of a K-contiguous operand then
// land in 32 distinct banks), twice (double buffering): while the block
// multiplies tile kt out of one buffer, each thread has already loaded its part
// of tile kt+1 from global memory into registers; it stores them into the other
// buffer afterwards, and one barrier per k tile separates the two.
//
// Operand loaders (each thread moves 4-float chunks; `fetch(kt, tile)` global ->
// registers, `stash(tile)` registers -> shared; a loader with kAsync copies
// global -> shared with cp.async in `fetch` and its `stash` does nothing):
//   KContiguousLoader<Rows, BK, Threads, Vec>   rows contiguous along k
//       (A [M, K] row-major, B^T stored [N, K], a kcrs filter [K, C*R*S])
//   RowContiguousLoader<Rows, BK, Threads, Vec> k rows contiguous along the tile's rows
//       (B [K, N] row-major, A^T stored [K, M]); Vec: cp.async, no registers
//   Im2colNchwLoader (sketch/conv.cuh)        nchw activations, the im2col gather
// Vec = true loads float4 and needs the contiguous extent to be a multiple of 4
// and the base pointer 16-byte aligned; Vec = false loads scalars. Both zero-fill
// outside the matrix, so any size works.
//
//   mainloop<Rows, Cols, BK, Stages>(load_a, load_b, ktiles, micro, acc)
//       Stages 2: double buffering as above; Stages 1: load, barrier, multiply
//   store_row<Vec>(dst_row, micro, col0, cols, out)   one micro-tile row of a
//       row-major output (float4 where 4 columns fit)
//   block_z()   blockIdx.z read again after the mainloop (batch indices)
#ifndef SKETCH_SIMT_CUH
#define SKETCH_SIMT_CUH

#include <cstdint>
#include <cuda_runtime.h>
#include <type_traits>

#include "sketch/copy.cuh" // cp.async
#include "sketch/mma.cuh"  // from_float

namespace sketch {
namespace simt {

/// Shared-memory row length (floats) of a tile with `rows` rows.
__host__ __device__ constexpr int padded(int rows) { return rows + 4; }

/// Threads of a block computing a rows x cols tile with 8x8 per thread.
__host__ __device__ constexpr int threads_for(int rows, int cols) { return rows * cols / 64; }

/// This thread's place in the block tile and the rows/columns of its micro-tile.
template <int Rows, int Cols>
struct MicroTile {
  static_assert(Rows % 32 == 0 && Cols % 64 == 0, "tile must be a multiple of 32 x 64");
  static constexpr int kWarpCols = Cols / 64; // warps across the columns
  int ty, tx;
  __device__ MicroTile() {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    ty = (warp / kWarpCols) * 4 + lane / 8;
    tx = (warp % kWarpCols) * 8 + lane % 8;
  }
  /// Block-tile row of micro-tile row i (0..7).
  __device__ int row(int i) const { return ty * 4 + (i & 3) + (i >> 2) * (Rows / 2); }
  /// Block-tile column of micro-tile column j (0..7).
  __device__ int col(int j) const { return tx * 4 + (j & 3) + (j >> 2) * (Cols / 2); }
};

/// Operand rows contiguous along k: global `base[row * ld + k]`, `extent` rows, `depth` k.
/// Chunk c of a thread covers row `row + c * kStep`, k `koff..koff+3` of the tile.
template <int Rows, int BK, int Threads, bool Vec>
struct KContiguousLoader {
  static constexpr int kChunks = Rows * BK / 4 / Threads; // 4-float chunks per thread
  static constexpr int kStep = Threads / (BK / 4);         // rows between a thread's chunks
  static_assert(kChunks >= 1 && Rows * BK / 4 % Threads == 0, "tile too small for the block");
  const float *ptr; // chunk 0 in k tile 0
  int ld;           // < 2^31: the host checks that every matrix has fewer elements
  int row, koff;
  int rows_left;    // rows of the matrix from this thread's first row on
  int depth;
  float v[kChunks][4];
  static constexpr bool kAsync = false;

  __device__ KContiguousLoader(const float *base, int ld_, int row0, int extent, int depth_)
      : ld(ld_), depth(depth_) {
    row = threadIdx.x / (BK / 4);
    koff = threadIdx.x % (BK / 4) * 4;
    rows_left = extent - row0 - row;
    ptr = base + int64_t(row0 + row) * ld_ + koff;
  }

  __device__ __forceinline__ void fetch(int kt, float (*)[padded(Rows)]) {
    const int k = kt * BK + koff;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const bool live = c * kStep < rows_left;
      const float *p = ptr + int64_t(c * kStep) * ld + kt * BK;
      if (Vec) {
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (live && k < depth)
          x = __ldg(reinterpret_cast<const float4 *>(p));
        v[c][0] = x.x, v[c][1] = x.y, v[c][2] = x.z, v[c][3] = x.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          v[c][e] = live && k + e < depth ? __ldg(p + e) : 0.f;
      }
    }
  }

  /// Transposed store: tile[k][row].
  __device__ __forceinline__ void stash(float (*tile)[padded(Rows)]) const {
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        tile[koff + e][row + c * kStep] = v[c][e];
  }
};

/// Operand k rows contiguous along the tile's rows: global `base[k * ld + row]`.
/// Chunk c of a thread covers k row `krow + c * kStep`, rows `row..row+3` of the tile.
/// Vec: the chunks need no transposition, so they go straight to shared memory
/// (cp.async, zero-filled outside the matrix) and take no registers.
template <int Rows, int BK, int Threads, bool Vec>
struct RowContiguousLoader {
  static constexpr int kChunks = Rows * BK / 4 / Threads;
  static constexpr int kStep = Threads / (Rows / 4);
  static_assert(kChunks >= 1 && Rows * BK / 4 % Threads == 0, "tile too small for the block");
  static constexpr bool kAsync = Vec;
  const float *ptr;
  int ld; // < 2^31 (see KContiguousLoader)
  int krow, row;
  int rows_left; // matrix rows from this thread's first row on
  int depth;
  float v[Vec ? 1 : kChunks][4];

  __device__ RowContiguousLoader(const float *base, int ld_, int row0, int extent, int depth_)
      : ld(ld_), depth(depth_) {
    krow = threadIdx.x / (Rows / 4);
    row = threadIdx.x % (Rows / 4) * 4;
    rows_left = extent - row0 - row;
    ptr = base + int64_t(krow) * ld_ + row0 + row;
  }

  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Rows)]) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const bool k_ok = kt * BK + krow + c * kStep < depth;
      const float *p = ptr + int64_t(kt * BK + c * kStep) * ld;
      if constexpr (Vec) {
        const bool in = k_ok && rows_left > 0;
        cp_async_16(smem_addr(&tile[krow + c * kStep][row]), in ? p : ptr, in);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          v[c][e] = k_ok && e < rows_left ? __ldg(p + e) : 0.f;
      }
    }
  }

  /// Direct 16-byte store: tile[krow][row..row+3] (Vec: cp.async did it).
  __device__ __forceinline__ void stash(float (*tile)[padded(Rows)]) const {
    if constexpr (!Vec) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
        *reinterpret_cast<float4 *>(&tile[krow + c * kStep][row]) =
            make_float4(v[c][0], v[c][1], v[c][2], v[c][3]);
    }
  }
};

/// Waits for the cp.async of the loaders that have any (before the barrier
/// that publishes a k tile).
template <typename LoadA, typename LoadB>
__device__ __forceinline__ void wait_async_loads() {
  if constexpr (LoadA::kAsync || LoadB::kAsync)
    cp_async_wait_all();
}

/// blockIdx.z, read again: the compiler does not merge it with an earlier read,
/// so values derived from it before the mainloop need not stay live across it.
__device__ __forceinline__ unsigned block_z() {
  unsigned z;
  asm volatile("mov.u32 %0, %%ctaid.z;" : "=r"(z));
  return z;
}

/// Multiplies one shared k tile into the accumulators.
template <int Rows, int Cols, int BK>
__device__ __forceinline__ void multiply_tile(const float (*a)[padded(Rows)],
                                              const float (*b)[padded(Cols)],
                                              const MicroTile<Rows, Cols> &t, float (&acc)[8][8]) {
#pragma unroll
  for (int k = 0; k < BK; ++k) {
    const float4 a0 = *reinterpret_cast<const float4 *>(&a[k][t.ty * 4]);
    const float4 a1 = *reinterpret_cast<const float4 *>(&a[k][t.ty * 4 + Rows / 2]);
    const float4 b0 = *reinterpret_cast<const float4 *>(&b[k][t.tx * 4]);
    const float4 b1 = *reinterpret_cast<const float4 *>(&b[k][t.tx * 4 + Cols / 2]);
    const float x[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    const float y[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
  }
}

/// The Stages = 2 mainloop (see mainloop below), for ktiles >= 1.
template <int Rows, int Cols, int BK, typename LoadA, typename LoadB>
__device__ __forceinline__ void mainloop_double_buffered(LoadA &load_a, LoadB &load_b, int ktiles,
                                                         const MicroTile<Rows, Cols> &t,
                                                         float (&acc)[8][8],
                                                         float (*a_tile)[BK][padded(Rows)],
                                                         float (*b_tile)[BK][padded(Cols)]) {
  load_a.fetch(0, a_tile[0]);
  load_b.fetch(0, b_tile[0]);
  load_a.stash(a_tile[0]);
  load_b.stash(b_tile[0]);
  wait_async_loads<LoadA, LoadB>();
  __syncthreads();
  for (int kt = 0; kt < ktiles; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < ktiles;
    if (more) { // global -> registers (or cp.async) for the next tile, in flight during the math
      load_a.fetch(kt + 1, a_tile[cur ^ 1]);
      load_b.fetch(kt + 1, b_tile[cur ^ 1]);
    }
    multiply_tile<Rows, Cols, BK>(a_tile[cur], b_tile[cur], t, acc);
    if (more) {
      load_a.stash(a_tile[cur ^ 1]);
      load_b.stash(b_tile[cur ^ 1]);
    }
    wait_async_loads<LoadA, LoadB>();
    __syncthreads();
  }
}

/// acc = sum over `ktiles` k tiles of A-tile^T * B-tile. `load_a` fills
/// tile[k][row] for the Rows rows, `load_b` tile[k][col] for the Cols columns.
/// Stages 2: double buffering (tile kt+1 is in registers while tile kt is
/// multiplied); Stages 1: load, barrier, multiply, barrier.
template <int Rows, int Cols, int BK, int Stages, typename LoadA, typename LoadB>
__device__ __forceinline__ void mainloop(LoadA &load_a, LoadB &load_b, int ktiles,
                                         const MicroTile<Rows, Cols> &t, float (&acc)[8][8]) {
  static_assert(Stages == 1 || Stages == 2, "the SIMT mainloop has 1 or 2 stages");
  __shared__ __align__(16) float a_tile[Stages][BK][padded(Rows)];
  __shared__ __align__(16) float b_tile[Stages][BK][padded(Cols)];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      acc[i][j] = 0.f;
  if constexpr (Stages == 1) {
    for (int kt = 0; kt < ktiles; ++kt) {
      load_a.fetch(kt, a_tile[0]);
      load_b.fetch(kt, b_tile[0]);
      load_a.stash(a_tile[0]);
      load_b.stash(b_tile[0]);
      wait_async_loads<LoadA, LoadB>();
      __syncthreads();
      multiply_tile<Rows, Cols, BK>(a_tile[0], b_tile[0], t, acc);
      __syncthreads();
    }
  } else {
    if (ktiles > 0)
      mainloop_double_buffered<Rows, Cols, BK>(load_a, load_b, ktiles, t, acc, a_tile, b_tile);
  }
}

/// Stores the 8 values of a micro-tile row: out[0..3] at columns col(0..3),
/// out[4..7] at col(4..7) of `dst_row` (the row's first element), columns >=
/// `cols` skipped. Vec: 16-byte stores where 4 columns fit (f32 outputs; the
/// row must be 16-byte aligned).
template <bool Vec, int Rows, int Cols, typename T>
__device__ __forceinline__ void store_row(T *dst_row, const MicroTile<Rows, Cols> &t, int col0,
                                          int cols, const float (&out)[8]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int col = col0 + t.col(4 * half);
    if constexpr (Vec && std::is_same<T, float>::value) {
      if (col + 4 <= cols) {
        *reinterpret_cast<float4 *>(dst_row + col) =
            make_float4(out[4 * half], out[4 * half + 1], out[4 * half + 2], out[4 * half + 3]);
        continue;
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (col + e < cols)
        dst_row[col + e] = from_float<T>(out[4 * half + e]);
  }
}

} // namespace simt
} // namespace sketch

#endif // SKETCH_SIMT_CUH
