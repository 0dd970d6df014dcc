// sketch/simt.cuh - the f32 SIMT (CUDA-core) GEMM mainloop: SGEMM and nchw convolution.
//
// A block computes a Rows x Cols tile of the output, each thread a TM x TN
// register micro-tile (MicroTile; 8 x 8 unless the emitter derived another
// from the block's threads, lib/Passes/SimtTile.cpp). The micro-tile's rows are
// TM / VM pieces of VM = vector_width(TM) consecutive rows, piece p starting at
// p * Rows / (TM / VM): thread row ty owns rows ty*VM + {0..VM-1} of each piece
// (8 x 8: two 4-row pieces, ty*4 + {0..3} and Rows/2 + ty*4 + {0..3}); columns
// likewise with tx. A warp covers 4 (ty) x 8 (tx) threads where the thread grid
// allows, so a k step reads 4 distinct float4 of the A tile and 8 of the B tile
// from shared memory: broadcasts, no bank conflicts.
//
// Shared memory holds both operand tiles k-major, `tile[k][row]`, rows padded to
// Rows + 4 floats (the transposed 4-float stores of a K-contiguous operand then
// fall at most 2 to a bank; a conflict-free deal ran 13% slower, ptxas scheduling
// it worse: bench/labs/sgemm_stash), twice (double buffering): while the block
// multiplies tile kt out of one buffer, each thread has already loaded its part
// of tile kt+1 from global memory into registers; it stores them into the other
// buffer afterwards, and one barrier per k tile separates the two. Tiles up to
// 48 KB are static shared memory, larger ones dynamic (the host opts in).
//
// Operand loaders (`fetch(kt, tile)` global -> registers, `stash(tile)`
// registers -> shared; a loader with kAsync copies global -> shared with
// cp.async in `fetch` and its `stash` does nothing). Each deals its tile's
// chunks of V floats to the block's threads (ChunkDeal: V = 4 where the sizes
// allow, else 2 or 1; every thread moves as many chunks):
//   KContiguousLoader<Rows, BK, Threads, Vec>   rows contiguous along k
//       (A [M, K] row-major, B^T stored [N, K], a kcrs filter [K, C*R*S]);
//       f32 with Vec = false: 4-byte cp.async into the transposed tile, no registers
//   RowContiguousLoader<Rows, BK, Threads, Vec> k rows contiguous along the tile's rows
//       (B [K, N] row-major, A^T stored [K, M]); cp.async (Vec: whole chunks, else
//       element by element), no registers
//   Im2colNchwLoader (sketch/conv.cuh)        nchw activations, the im2col gather
// Vec = true loads whole chunks and needs the contiguous extent to be a
// multiple of 4 and the base pointer 16-byte aligned; Vec = false loads
// scalars. Both zero-fill outside the matrix, so any size works. The f32 GEMM's
// scalar copies are all cp.async, so its scalar kernel needs no more registers
// than the 16-byte one and takes as many blocks an SM (unaligned sizes, 4096 x
// 4096 x 4095 on an H200: 4.39 -> 3.52 ms, cuBLAS 2.82).
//
// On sm_90 an f32 GEMM may take DmmaTile (sketch/dmma.cuh) for MicroTile: the same
// loaders, tiles and mainloops, each k tile multiplied on the f64 tensor cores.
//
//   mainloop<Rows, Cols, BK, Stages>(load_a, load_b, ktiles, micro, acc[, first])
//       Stages 2: double buffering as above; Stages 1: load, barrier, multiply;
//       Stages >= 3 where both loaders copy by cp.async: Stages - 1 tiles in flight
//   sum_k_slices<Rows, Cols, BK, Stages, Threads>(acc)   split-K over a cluster: rank 0
//       adds the other blocks' accumulators (through the shared tiles), in rank order
//   store_row<Vec>(dst_row, micro, col0, cols, out)   one micro-tile row of a
//       row-major output (whole pieces where they fit)
//   block_z()   blockIdx.z read again after the mainloop (batch indices)
#ifndef SKETCH_SIMT_CUH
#define SKETCH_SIMT_CUH

#include <cstdint>
#include <cuda_runtime.h>
#include <type_traits>

#include "sketch/copy.cuh" // cp.async
#include "sketch/mma.cuh"  // from_float
#include "sketch/split.cuh" // split-K over a cluster (sum_k_slices)

namespace sketch {
namespace simt {

/// Shared-memory row length (floats) of a tile with `rows` rows.
__host__ __device__ constexpr int padded(int rows) { return rows + 4; }

/// The floats one access moves for a run of `n` (4, 2 or 1: the widest dividing n).
__host__ __device__ constexpr int vector_width(int n) {
  return n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
}

/// V floats from `src` (V-aligned) to dst[0..V-1]; Global: a read-only global load.
template <int V, bool Global = false>
__device__ __forceinline__ void load_vector(const float *src, float *dst) {
  if constexpr (V == 4) {
    const float4 x = Global ? __ldg(reinterpret_cast<const float4 *>(src))
                            : *reinterpret_cast<const float4 *>(src);
    dst[0] = x.x, dst[1] = x.y, dst[2] = x.z, dst[3] = x.w;
  } else if constexpr (V == 2) {
    const float2 x = Global ? __ldg(reinterpret_cast<const float2 *>(src))
                            : *reinterpret_cast<const float2 *>(src);
    dst[0] = x.x, dst[1] = x.y;
  } else {
    dst[0] = Global ? __ldg(src) : *src;
  }
}

/// V elements of T (f16 / bf16) from `src` (V-aligned) as floats: one 8-, 4- or
/// 2-byte read-only load, converted.
template <int V, typename T>
__device__ __forceinline__ void load_vector_as_float(const T *src, float *dst) {
  if constexpr (std::is_same<T, float>::value) {
    load_vector<V, true>(src, dst);
  } else {
    union {
      T e[V];
      typename std::conditional<V == 4, uint2, typename std::conditional<V == 2, uint32_t,
                                                                          uint16_t>::type>::type bits;
    } chunk;
    chunk.bits = __ldg(reinterpret_cast<const decltype(chunk.bits) *>(src));
#pragma unroll
    for (int e = 0; e < V; ++e)
      dst[e] = to_float(chunk.e[e]);
  }
}

/// src[0..V-1] to `dst` (V-aligned) as one store.
template <int V>
__device__ __forceinline__ void store_vector(float *dst, const float *src) {
  if constexpr (V == 4)
    *reinterpret_cast<float4 *>(dst) = make_float4(src[0], src[1], src[2], src[3]);
  else if constexpr (V == 2)
    *reinterpret_cast<float2 *>(dst) = make_float2(src[0], src[1]);
  else
    *dst = src[0];
}

/// cp.async of V floats (V-aligned); zero-fills the destination when !pred.
template <int V>
__device__ __forceinline__ void cp_async_floats(uint32_t dst, const float *src, bool pred) {
  if constexpr (V == 4)
    cp_async_16(dst, src, pred);
  else if constexpr (V == 2)
    cp_async_8(dst, src, pred);
  else
    cp_async_4(dst, src, pred);
}

/// Lanes of a warp along the thread columns: 8 (a warp of 4 x 8 threads) where
/// the Rows x Cols thread grid allows, else the first of 4, 16, 2, 32, 1 that fits.
__host__ __device__ constexpr int lane_cols(int rows, int cols) {
  constexpr int kChoices[] = {8, 4, 16, 2, 32, 1};
  for (int c : kChoices)
    if (cols % c == 0 && rows % (32 / c) == 0)
      return c;
  return 0;
}

/// This thread's place in the block tile and the rows/columns of its TM x TN micro-tile.
template <int Rows, int Cols, int TM = 8, int TN = 8>
struct MicroTile {
  static constexpr bool kCudaCores = true;  // FFMA (DmmaTile: the f64 tensor cores)
  static constexpr int kRows = TM, kCols = TN;
  static constexpr int kThreadRows = Rows / TM, kThreadCols = Cols / TN; // the thread grid
  static constexpr int kVecRows = vector_width(TM), kVecCols = vector_width(TN);
  static constexpr int kRowPieces = TM / kVecRows, kColPieces = TN / kVecCols;
  static constexpr int kLaneCols = lane_cols(kThreadRows, kThreadCols), kLaneRows = 32 / kLaneCols;
  static constexpr int kWarpCols = kThreadCols / kLaneCols; // warps across the columns
  static_assert(Rows % TM == 0 && Cols % TN == 0 && kThreadRows * kThreadCols % 32 == 0 &&
                    kLaneCols > 0,
                "the micro-tile must divide the block tile among whole warps");
  int ty, tx;
  __device__ MicroTile() {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    ty = (warp / kWarpCols) * kLaneRows + lane / kLaneCols;
    tx = (warp % kWarpCols) * kLaneCols + lane % kLaneCols;
  }
  /// Block-tile row of micro-tile row i (0..TM-1).
  __device__ int row(int i) const {
    return ty * kVecRows + i % kVecRows + i / kVecRows * (Rows / kRowPieces);
  }
  /// Block-tile column of micro-tile column j (0..TN-1).
  __device__ int col(int j) const {
    return tx * kVecCols + j % kVecCols + j / kVecCols * (Cols / kColPieces);
  }
};

/// Greatest common divisor (compile time).
__host__ __device__ constexpr int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }

/// A tile of Lines lines of Width floats (contiguous along a line) split into
/// chunks of kVector floats, dealt to Threads threads. The threads form a
/// grid of Threads / G rows by G columns, G = gcd(Threads, chunks a line):
/// thread t starts at line t / G, chunk t % G of it, and moves on by G chunks
/// along the line (kAcross times), then by Threads / G lines. Consecutive
/// threads copy consecutive chunks; every step is a compile-time constant.
/// (When Threads is a multiple of the chunks a line, G is all of them: a
/// thread's chunks are kLineStep lines apart at one offset.) MaxVector 1 deals
/// single floats: a warp's copy then reads consecutive floats of a line.
template <int Lines, int Width, int Threads, int MaxVector = 4>
struct ChunkDeal {
  static constexpr int kVector =
      MaxVector >= 4 && Lines * Width / 4 % Threads == 0 && Width % 4 == 0   ? 4
      : MaxVector >= 2 && Lines * Width / 2 % Threads == 0 && Width % 2 == 0 ? 2
                                                                             : 1;
  static constexpr int kPerLine = Width / kVector;
  static constexpr int kChunks = Lines * kPerLine / Threads; // chunks a thread
  static constexpr int kColumns = gcd(Threads, kPerLine);      // G
  static constexpr int kAcross = kPerLine / kColumns;          // a thread's chunks a line
  static constexpr int kLineStep = Threads / kColumns;
  static_assert(Lines * Width % Threads == 0 && kChunks >= 1 && Lines % kLineStep == 0,
                "each thread copies as many floats of the tile");
  /// Line and float offset of thread t's chunk 0 (t = threadIdx.x; unsigned
  /// arithmetic: the divisions become shifts).
  __host__ __device__ static int line(unsigned t) { return t / kColumns; }
  __host__ __device__ static int offset(unsigned t) { return t % kColumns * kVector; }
  /// Lines and floats from a thread's chunk 0 to its chunk c.
  __host__ __device__ static constexpr int line_step(int c) { return c / kAcross * kLineStep; }
  __host__ __device__ static constexpr int offset_step(int c) {
    return c % kAcross * kColumns * kVector;
  }
};

/// Operand rows contiguous along k: global `base[row * ld + k]`, `extent` rows, `depth` k.
/// Thread t's chunk c covers row `row + dr`, k `koff + dk .. + V-1` of the tile
/// (dr, dk: the deal's compile-time steps).
template <int Rows, int BK, int Threads, bool Vec, typename T = float>
struct KContiguousLoader {
  /// Scalar f32 copies go element by element straight to their transposed place in
  /// shared memory (4-byte cp.async, zero-filled outside the matrix): no registers.
  /// They are dealt a float at a time, so a warp's copy reads whole sectors (4-float
  /// chunks copied a float at a time read 16 sectors for 128 bytes, then again: the
  /// generated SGEMM 1.5-3% slower on unaligned sizes, bench/labs/sgemm_scalar).
  static constexpr bool kAsync = !Vec && std::is_same<T, float>::value;
  using Deal = ChunkDeal<Rows, BK, Threads, kAsync ? 1 : 4>;
  static constexpr int V = Deal::kVector, kChunks = Deal::kChunks;
  const T *ptr; // chunk 0 in k tile 0 (f16 / bf16 elements are converted to f32)
  int ld;           // < 2^31: the host checks that every matrix has fewer elements
  int row, koff;
  int rows_left;    // rows of the matrix from this thread's first row on
  int depth;
  struct NoStaging {};
  /// The floats a fetch stages for stash (none where cp.async copies).
  std::conditional_t<kAsync, NoStaging, float[kChunks][V]> v;

  __device__ KContiguousLoader(const T *base, int ld_, int row0, int extent, int depth_)
      : ld(ld_), depth(depth_) {
    row = Deal::line(threadIdx.x);
    koff = Deal::offset(threadIdx.x);
    rows_left = extent - row0 - row;
    ptr = base + int64_t(row0 + row) * ld_ + koff;
  }

  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Rows)]) {
    const int k = kt * BK + koff;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int dr = Deal::line_step(c), dk = Deal::offset_step(c);
      const bool live = dr < rows_left;
      const T *p = ptr + int64_t(dr) * ld + kt * BK + dk;
      if constexpr (kAsync) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const bool in = live && k + dk + e < depth;
          cp_async_4(smem_addr(&tile[koff + dk + e][row + dr]), in ? p + e : ptr, in);
        }
      } else if constexpr (Vec) {
#pragma unroll
        for (int e = 0; e < V; ++e)
          v[c][e] = 0.f;
        if (live && k + dk < depth)
          load_vector_as_float<V>(p, v[c]);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          v[c][e] = live && k + dk + e < depth ? to_float(__ldg(p + e)) : 0.f;
      }
    }
  }

  /// Transposed store: tile[k][row] (kAsync: cp.async did it).
  __device__ __forceinline__ void stash(float (*tile)[padded(Rows)]) const {
    if constexpr (!kAsync) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int dr = Deal::line_step(c), dk = Deal::offset_step(c);
#pragma unroll
        for (int e = 0; e < V; ++e)
          tile[koff + dk + e][row + dr] = v[c][e];
      }
    }
  }
};

/// Operand k rows contiguous along the tile's rows: global `base[k * ld + row]`.
/// Thread t's chunk c covers k row `krow + dk`, rows `row + dr .. + V-1` of the
/// tile (dk, dr: the deal's compile-time steps). The chunks need no transposition, so
/// they go straight to shared memory (cp.async, zero-filled outside the matrix; Vec:
/// one copy a chunk, else one a float) and take no registers.
template <int Rows, int BK, int Threads, bool Vec>
struct RowContiguousLoader {
  using Deal = ChunkDeal<BK, Rows, Threads>;
  static constexpr int V = Deal::kVector, kChunks = Deal::kChunks;
  static constexpr bool kAsync = true;
  const float *ptr;
  int ld; // < 2^31 (see KContiguousLoader)
  int krow, row;
  int rows_left; // matrix rows from this thread's first row on
  int depth;

  __device__ RowContiguousLoader(const float *base, int ld_, int row0, int extent, int depth_)
      : ld(ld_), depth(depth_) {
    krow = Deal::line(threadIdx.x);
    row = Deal::offset(threadIdx.x);
    rows_left = extent - row0 - row;
    ptr = base + int64_t(krow) * ld_ + row0 + row;
  }

  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Rows)]) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int dk = Deal::line_step(c), dr = Deal::offset_step(c);
      const bool k_ok = kt * BK + krow + dk < depth;
      const float *p = ptr + int64_t(kt * BK + dk) * ld + dr;
      if constexpr (Vec) {
        const bool in = k_ok && dr < rows_left;
        cp_async_floats<V>(smem_addr(&tile[krow + dk][row + dr]), in ? p : ptr, in);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const bool in = k_ok && dr + e < rows_left;
          cp_async_4(smem_addr(&tile[krow + dk][row + dr + e]), in ? p + e : ptr, in);
        }
      }
    }
  }

  /// Nothing: cp.async stored the chunks (tile[krow][row..]).
  __device__ __forceinline__ void stash(float (*)[padded(Rows)]) const {}
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

/// Loads micro-tile k row `k` of the shared tiles: x[i] = a[k][row(i)], y[j] = b[k][col(j)].
template <int Rows, int Cols, int TM, int TN>
__device__ __forceinline__ void load_fragments(const float *a_row, const float *b_row,
                                               const MicroTile<Rows, Cols, TM, TN> &t,
                                               float (&x)[TM], float (&y)[TN]) {
  using Micro = MicroTile<Rows, Cols, TM, TN>;
#pragma unroll
  for (int i = 0; i < TM; i += Micro::kVecRows)
    load_vector<Micro::kVecRows>(&a_row[t.row(i)], &x[i]);
#pragma unroll
  for (int j = 0; j < TN; j += Micro::kVecCols)
    load_vector<Micro::kVecCols>(&b_row[t.col(j)], &y[j]);
}

/// The fragments of k + 1 are loaded before the FMAs of k (two register sets) on
/// sm_90: with the unguarded prologue below, the 128 x 128 x 16 SGEMM ran 5% faster on
/// an H200 than loading each k in turn. sm_80 loads each k in turn: there the second
/// set made ptxas spill 8 bytes at 128 registers (64 x 64 x 8 with 2 warps), and no
/// sm_80 GPU measured a gain.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr bool kPrefetchFragments = false;
#else
constexpr bool kPrefetchFragments = true;
#endif

/// Whether the Stages = 2 mainloop runs only for ktiles > 0 (see mainloop_double_buffered):
/// on sm_80, where ptxas spilled without the branch; sm_90 schedules better without it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr bool kGuardEmptyMainloop = true;
#else
constexpr bool kGuardEmptyMainloop = false;
#endif

/// acc += x y^T: one k step of the micro-tile.
template <int TM, int TN>
__device__ __forceinline__ void fma_fragments(const float (&x)[TM], const float (&y)[TN],
                                              float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
      acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
}

/// Multiplies one shared k tile into the accumulators (see kPrefetchFragments).
template <int Rows, int Cols, int BK, int TM, int TN>
__device__ __forceinline__ void multiply_tile(const float (*a)[padded(Rows)],
                                              const float (*b)[padded(Cols)],
                                              const MicroTile<Rows, Cols, TM, TN> &t,
                                              float (&acc)[TM][TN]) {
  if constexpr (kPrefetchFragments) {
    float x[2][TM], y[2][TN];
    load_fragments(a[0], b[0], t, x[0], y[0]);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK)
        load_fragments(a[k + 1], b[k + 1], t, x[(k + 1) % 2], y[(k + 1) % 2]);
      fma_fragments(x[k % 2], y[k % 2], acc);
    }
  } else {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float x[TM], y[TN];
      load_fragments(a[k], b[k], t, x, y);
      fma_fragments(x, y, acc);
    }
  }
}

} // namespace simt
} // namespace sketch

#include "sketch/dmma.cuh" // DmmaTile, its multiply_tile

namespace sketch {
namespace simt {

/// Zeroes accumulators (float or double, any rank).
__device__ __forceinline__ void clear(float &x) { x = 0.f; }
__device__ __forceinline__ void clear(double &x) { x = 0.0; }
template <typename T, int N>
__device__ __forceinline__ void clear(T (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    clear(x[i]);
}

/// The Stages = 2 mainloop (see mainloop below) over k tiles first .. first + ktiles - 1,
/// tile kt in buffer kt & 1. With ktiles = 0 the prologue
/// still stages tile `first`, all of it zero-filled (the loaders check k < depth);
/// on sm_90 no `ktiles > 0` branch around it: with one, ptxas scheduled the
/// 128 x 128 x 16 SGEMM 3-4% slower on an H200 (sm_80 keeps it: without it
/// ptxas spilled 20 bytes at 128 registers in the 64 x 64 x 8, 2-warp tile).
template <int Rows, int Cols, int BK, typename LoadA, typename LoadB, typename Tile, typename Acc>
__device__ __forceinline__ void mainloop_double_buffered(LoadA &load_a, LoadB &load_b, int ktiles,
                                                         const Tile &t, Acc &acc,
                                                         float (*a_tile)[BK][padded(Rows)],
                                                         float (*b_tile)[BK][padded(Cols)],
                                                         int first) {
  const int end = first + ktiles;
  load_a.fetch(first, a_tile[first & 1]);
  load_b.fetch(first, b_tile[first & 1]);
  load_a.stash(a_tile[first & 1]);
  load_b.stash(b_tile[first & 1]);
  wait_async_loads<LoadA, LoadB>();
  __syncthreads();
  for (int kt = first; kt < end; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < end;
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

/// The Stages >= 3 mainloop, for loaders that copy only by cp.async (no registers
/// staged): tiles first .. first + Stages - 2 in flight before the math, then each
/// iteration refills the stage its previous tile was read from. The barrier that publishes
/// tile kt + 1 comes before tile kt's last FMAs (their fragments are in registers by then),
/// and tile kt + 1's first fragments are read right after it (sm_80, see
/// kPrefetchFragments: one fragment set, the barrier after the FMAs). Sizes without 16-byte rows
/// at 128 x 128 x 16 on an H200: 4095^3 3.48 -> 3.36 ms and 3001^3 1.61 -> 1.56 against 2
/// stages (bench/labs/sgemm_pipeline).
template <int Rows, int Cols, int BK, int Stages, typename LoadA, typename LoadB, typename Tile, typename Acc>
__device__ __forceinline__ void mainloop_pipelined(LoadA &load_a, LoadB &load_b, int ktiles,
                                                   const Tile &t, Acc &acc,
                                                   float (*a_tile)[BK][padded(Rows)],
                                                   float (*b_tile)[BK][padded(Cols)], int first) {
  static_assert(LoadA::kAsync && LoadB::kAsync, "3 or more stages need cp.async loaders");
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < ktiles) {
      load_a.fetch(first + s, a_tile[s]);
      load_b.fetch(first + s, b_tile[s]);
    }
    cp_async_commit();
  }
  auto publish = [] { // the oldest tile in flight has landed, every thread's copies of it
    cp_async_wait<Stages - 2>();
    __syncthreads();
  };
  auto after = [](int stage) { return stage + 1 == Stages ? 0 : stage + 1; };
  publish(); // tile `first`
  constexpr bool kPrefetch = kPrefetchFragments && Tile::kCudaCores;
  float x[2][Tile::kRows], y[2][Tile::kCols];
  if constexpr (kPrefetch)
    load_fragments(a_tile[0][0], b_tile[0][0], t, x[0], y[0]);
  int read = 0, write = Stages - 1; // the stages of tiles kt and kt + Stages - 1
  for (int kt = 0; kt < ktiles; ++kt) {
    if (kt + Stages - 1 < ktiles) { // into the stage tile kt - 1 was read from
      load_a.fetch(first + kt + Stages - 1, a_tile[write]);
      load_b.fetch(first + kt + Stages - 1, b_tile[write]);
    }
    cp_async_commit();
    write = after(write);
    const int next = after(read);
    if constexpr (kPrefetch) {
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        if (k + 1 < BK) {
          load_fragments(a_tile[read][k + 1], b_tile[read][k + 1], t, x[(k + 1) % 2], y[(k + 1) % 2]);
        } else { // (after the last tile this reads a stage no one uses)
          publish(); // tile kt + 1
          load_fragments(a_tile[next][0], b_tile[next][0], t, x[(k + 1) % 2], y[(k + 1) % 2]);
        }
        fma_fragments(x[k % 2], y[k % 2], acc);
      }
    } else {
      multiply_tile<Rows, Cols, BK>(a_tile[read], b_tile[read], t, acc);
      publish(); // tile kt + 1
    }
    read = next;
  }
}

/// The mainloop on the shared tiles a_tile[Stages], b_tile[Stages], over k tiles
/// first .. first + ktiles - 1.
template <int Rows, int Cols, int BK, int Stages, typename LoadA, typename LoadB, typename Tile, typename Acc>
__device__ __forceinline__ void mainloop_on(LoadA &load_a, LoadB &load_b, int ktiles, const Tile &t, Acc &acc,
                                            float (*a_tile)[BK][padded(Rows)],
                                            float (*b_tile)[BK][padded(Cols)],
                                            int first = 0) {
  clear(acc);
  if constexpr (Stages == 1) {
    for (int kt = first; kt < first + ktiles; ++kt) {
      load_a.fetch(kt, a_tile[0]);
      load_b.fetch(kt, b_tile[0]);
      load_a.stash(a_tile[0]);
      load_b.stash(b_tile[0]);
      wait_async_loads<LoadA, LoadB>();
      __syncthreads();
      multiply_tile<Rows, Cols, BK>(a_tile[0], b_tile[0], t, acc);
      __syncthreads();
    }
  } else if constexpr (Stages >= 3) {
    mainloop_pipelined<Rows, Cols, BK, Stages>(load_a, load_b, ktiles, t, acc, a_tile, b_tile, first);
  } else if (!kGuardEmptyMainloop || ktiles > 0) {
    mainloop_double_buffered<Rows, Cols, BK>(load_a, load_b, ktiles, t, acc, a_tile, b_tile, first);
  }
}

/// Bytes of the shared tiles of mainloop<Rows, Cols, BK, Stages>; above
/// kStaticSharedBytes they are dynamic shared memory, which the launch must
/// provide (lib/Passes/SimtTile.cpp computes the same).
template <int Rows, int Cols, int BK, int Stages>
__host__ __device__ constexpr int shared_bytes() {
  return Stages * BK * (padded(Rows) + padded(Cols)) * int(sizeof(float));
}
constexpr int kStaticSharedBytes = 48 * 1024;

/// The shared memory of mainloop<Rows, Cols, BK, Stages>'s A tiles (B = false: Stages x
/// BK x padded(Rows) floats) or B tiles (B = true): static up to kStaticSharedBytes (an
/// array each: one array for both made ptxas spill 4 bytes in a 64-register tile), above it
/// the dynamic shared memory the launch provides. sum_k_slices reuses the A tiles.
template <int Rows, int Cols, int BK, int Stages, bool B>
__device__ __forceinline__ float *shared_tiles() {
  constexpr int kFloats = Stages * BK * padded(B ? Cols : Rows);
  if constexpr (shared_bytes<Rows, Cols, BK, Stages>() <= kStaticSharedBytes) {
    __shared__ __align__(16) float tiles[kFloats];
    return tiles;
  } else {
    extern __shared__ __align__(16) float simt_shared_tiles[];
    return simt_shared_tiles + (B ? Stages * BK * padded(Rows) : 0);
  }
}

/// acc = sum over `ktiles` k tiles (from k tile `first`) of A-tile^T * B-tile. `load_a` fills
/// tile[k][row] for the Rows rows, `load_b` tile[k][col] for the Cols columns.
/// Stages 2: double buffering (tile kt+1 is in registers while tile kt is
/// multiplied); Stages 1: load, barrier, multiply, barrier; Stages >= 3 (cp.async
/// loaders only): mainloop_pipelined.
template <int Rows, int Cols, int BK, int Stages, typename LoadA, typename LoadB, int TM, int TN>
__device__ __forceinline__ void mainloop(LoadA &load_a, LoadB &load_b, int ktiles,
                                         const MicroTile<Rows, Cols, TM, TN> &t,
                                         float (&acc)[TM][TN], int first = 0) {
  auto *a_tile = reinterpret_cast<float (*)[BK][padded(Rows)]>(shared_tiles<Rows, Cols, BK, Stages, false>());
  auto *b_tile = reinterpret_cast<float (*)[BK][padded(Cols)]>(shared_tiles<Rows, Cols, BK, Stages, true>());
  mainloop_on<Rows, Cols, BK, Stages>(load_a, load_b, ktiles, t, acc, a_tile, b_tile, first);
}

/// The same on the f64 tensor cores: f64 sums, rounded to f32 into `acc` at the end.
template <int Rows, int Cols, int BK, int Stages, typename LoadA, typename LoadB, int WarpsM, int WarpsN>
__device__ __forceinline__ void mainloop(LoadA &load_a, LoadB &load_b, int ktiles,
                                         const DmmaTile<Rows, Cols, WarpsM, WarpsN> &t,
                                         float (&acc)[DmmaTile<Rows, Cols, WarpsM, WarpsN>::kRows]
                                                     [DmmaTile<Rows, Cols, WarpsM, WarpsN>::kCols],
                                         int first = 0) {
  auto *a_tile = reinterpret_cast<float (*)[BK][padded(Rows)]>(shared_tiles<Rows, Cols, BK, Stages, false>());
  auto *b_tile = reinterpret_cast<float (*)[BK][padded(Cols)]>(shared_tiles<Rows, Cols, BK, Stages, true>());
  typename DmmaTile<Rows, Cols, WarpsM, WarpsN>::Accumulators sums;
  mainloop_on<Rows, Cols, BK, Stages>(load_a, load_b, ktiles, t, sums, a_tile, b_tile, first);
  t.round(sums, acc);
}

/// Split-K over a thread-block cluster (sm_90; the f32 GEMM's kernel<..., true>): each block
/// of the cluster has summed its run of the k tiles into `acc` (the mainloop above, its last
/// barrier passed). The blocks other than rank 0 stage their accumulators in their shared
/// A tiles, kPerRound floats a thread a round (thread-major: consecutive threads, consecutive
/// words), and rank 0 adds them in rank order 1, 2, ... (the same bits every run) from
/// distributed shared memory, kBatch loads in flight before their adds (4-byte loads: with
/// 16-byte ones ptxas spilled at the default tile's 128 registers). Returns whether this
/// block holds the sums (rank 0); the others have nothing to store, and leave only after
/// rank 0's last read of their tiles.
template <int Rows, int Cols, int BK, int Stages, int Threads, int TM, int TN>
__device__ __forceinline__ bool sum_k_slices(float (&acc)[TM][TN]) {
  constexpr int kFloats = TM * TN;
  constexpr int kRoom = Stages * BK * padded(Rows) / Threads;  // the A tiles' floats a thread
  constexpr int kPerRound = kRoom < kFloats ? kRoom : kFloats;
  constexpr int kBatch = 16;  // remote loads in flight before their adds
  static_assert(kPerRound > 0, "split-K: the shared tiles hold no accumulator a thread");
  float *flat = &acc[0][0];
  float *staged = shared_tiles<Rows, Cols, BK, Stages, false>();
  const uint32_t rank = cluster_rank(), slices = cluster_size();
  const int tid = threadIdx.x;
#pragma unroll
  for (int first = 0; first < kFloats; first += kPerRound) {
    const int end = first + kPerRound < kFloats ? first + kPerRound : kFloats;
    if (rank != 0) {
#pragma unroll
      for (int e = first; e < end; ++e)
        staged[(e - first) * Threads + tid] = flat[e];
    }
    cluster_sync();  // every slice's round is staged
    if (rank == 0) {
      const uint32_t local = smem_addr(staged + tid);
      for (uint32_t q = 1; q < slices; ++q) {
        const uint32_t remote = cluster_shared_addr(local, q);
#pragma unroll
        for (int b = first; b < end; b += kBatch) {
          float part[kBatch];
#pragma unroll
          for (int e = b; e < b + kBatch && e < end; ++e)
            part[e - b] = ld_cluster_f32(remote + uint32_t((e - first) * Threads * 4));
#pragma unroll
          for (int e = b; e < b + kBatch && e < end; ++e)
            flat[e] += part[e - b];
        }
      }
    }
    cluster_sync();  // rank 0 has read the round: the tiles may take the next
  }
  return rank == 0;
}

/// Stores the TN values of a micro-tile row: out[j] at column col(j) of
/// `dst_row` (the row's first element), columns >= `cols` skipped. Vec: one
/// store per piece of the micro-tile's row where the piece fits (f32 outputs;
/// the row must be 16-byte aligned).
template <bool Vec, typename Tile, typename T>
__device__ __forceinline__ void store_row(T *dst_row, const Tile &t, int col0, int cols,
                                          const float (&out)[Tile::kCols]) {
  constexpr int V = Tile::kVecCols, TN = Tile::kCols;
#pragma unroll
  for (int piece = 0; piece < TN; piece += V) {
    const int col = col0 + t.col(piece);
    if constexpr (Vec && std::is_same<T, float>::value) {
      if (col + V <= cols) {
        store_vector<V>(dst_row + col, &out[piece]);
        continue;
      }
    }
#pragma unroll
    for (int e = 0; e < V; ++e)
      if (col + e < cols)
        dst_row[col + e] = from_float<T>(out[piece + e]);
  }
}

} // namespace simt
} // namespace sketch

#endif // SKETCH_SIMT_CUH
