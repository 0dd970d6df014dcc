// sketch/softmax.cuh - online softmax and the attention kernels' tile helpers.
//
// Register tiles here are arrays of m16n8k16 accumulator fragments,
// float x[MT][NT][4] (see mma.cuh for the layout): MT tiles of 16 rows, NT
// tiles of 8 columns. Lane 4*g + t holds, in x[m][n], rows g (elements 0, 1)
// and g + 8 (elements 2, 3) of row tile m, columns 2t, 2t + 1 of column tile n.
// So each thread holds two rows per row tile, and a row's values are spread
// over the 4 lanes of one quad (lanes 4*g .. 4*g + 3).
//
//   Swizzle<COLS>, swizzled_offset<COLS>(row, chunk)
//                                         the XOR swizzle of 16-byte chunks in a
//                                         [rows][COLS] b16 tile, and a chunk's offset
//   SwizzledLane<COLS>                    a lane's ldmatrix address walk in such a tile
//   for_each_chunk<ROWS, COLS, THREADS>   a tile's 16-byte chunks spread over a block
//   copy_tile_async<ROWS, COLS, THREADS>  cp.async of rows row0.. of a global
//                                         [rows][COLS] matrix into that layout, rows
//                                         past `valid_rows` zero-filled
//   copy_cols_async<ROWS, COLS, THREADS>  the same for columns col0.. of a global
//                                         [ROWS][ld] matrix, columns past `valid_cols`
//                                         zero-filled
//   fast_exp2(x)                          ex2.approx (2^x; 2^-inf = 0; epilogue.cuh)
//   quad_max / quad_sum                   reduce over the 4 lanes of a quad
//   scale_tile(x, f)                      x *= f
//   map_tile(x, f)                        f(x) on every element (the statements on the scores)
//   map_tile_at(x, row0, col0, f)         f(x, row, col), with the element's row and column
//   map_tile_at(x, row0, col0, cols, f)   f(x, row, col, tile) with tile.in_bounds a constant:
//                                         true where every column is below `cols`; tile.col0
//   mask_tile(x, diagonal0, col0, cols, causal[, fill])  -inf (or fill) where
//                                         col >= cols, or (causal) col past the
//                                         row's diagonal
//   online_softmax_probabilities(s, row_max, row_sum, correction[, scale[, slack]])
//        s * scale (scale > 0, 1 by default) are scores in log2 units; updates the
//        running row max (of s * scale) and sum, rescales the sum by correction =
//        2^(old max - new max), and turns s into the unnormalized probabilities
//        2^(s * scale - new max) (one FFMA a score: the scaling folded in; the
//        sm_90a attention kernel's)
//        with slack > 0 the max moves only when passed by more than slack (the
//        probabilities stay below 2^slack) and correction is mostly 1
//   warp_rescales(correction)             whether any row of the warp needs rescaling
//   scale_rows(acc, factor)               acc *= factor, per row
//   online_softmax_step(s, row_max, row_sum, acc)
//        both: the accumulator rescaled by the corrections too
//   online_softmax_finish(row_sum, acc[, factor])  sums the quad's partial row
//                                         sums and divides acc by them (times factor:
//                                         a scaling of the probabilities), once, after
//                                         the loop
//   softmax_rows(s)                       the row softmax of a tile holding its rows
//                                         whole (both halves above, in one step)
//   reshape_c_to_a<T>(c0, c1, a)          two accumulator fragments (columns
//                                         16k..16k+15) as one A fragment of the next MMA
#ifndef SKETCH_SOFTMAX_CUH
#define SKETCH_SOFTMAX_CUH

#include "sketch/copy.cuh"
#include "sketch/epilogue.cuh"
#include "sketch/mma.cuh"

#include <cstdint>
#include <cuda_runtime.h>
#include <math_constants.h>

namespace sketch {

/// The XOR swizzle of a [rows][COLS] tile of 2-byte elements (COLS a multiple
/// of 16). A row's 16-byte chunks are XOR-ed, within aligned groups of kGroup
/// chunks (the largest power of two up to 8 that divides the row's chunks),
/// with kGroup - 1 bits of the row number: bits 0-2 for 8, 1-2 for 4, bit 2
/// for 2. Then the 8 rows an ldmatrix reads at one chunk (rows 8i..8i+7) hit 8
/// different 16-byte bank groups: the row stride spreads the rows over the
/// multiples of kGroup, the XOR over the values below it. The pattern depends
/// on row bits 0-2 only, so moving by multiples of 8 rows keeps it.
template <int COLS>
struct Swizzle {
  static_assert(COLS % 16 == 0, "swizzled rows hold an even number of 16-byte chunks");
  static constexpr int kChunks = COLS / 8;
  static constexpr int kGroup = kChunks % 8 == 0 ? 8 : kChunks % 4 == 0 ? 4 : 2;
  static constexpr int kShift = kGroup == 8 ? 0 : kGroup == 4 ? 1 : 2; // log2(8 / kGroup)

  __device__ __forceinline__ static int pattern(int row) { return (row >> kShift) & (kGroup - 1); }
};

/// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled [rows][COLS]
/// tile of 2-byte elements (see Swizzle).
template <int COLS>
__device__ __forceinline__ uint32_t swizzled_offset(int row, int chunk) {
  return uint32_t(row * COLS * 2 + ((chunk ^ Swizzle<COLS>::pattern(row)) << 4));
}

/// A lane's ldmatrix address into a swizzled [rows][COLS] tile. The lane reads
/// row `row` (its low 3 bits fixed for the whole tile walk: every step moves by
/// multiples of 8 rows) and chunk `c + bit`, where c is even and known at
/// compile time and `bit` is 0 or 1 per lane. Precomputing y = bit ^ pattern(row)
/// leaves one constant XOR per load: chunk (c + bit) ^ pattern(row) = c ^ y.
template <int COLS>
struct SwizzledLane {
  static constexpr int kGroup = Swizzle<COLS>::kGroup;
  uint32_t row_addr; // shared address of the lane's row
  uint32_t y;

  __device__ __forceinline__ SwizzledLane(uint32_t tile, int row, int bit)
      : row_addr(tile + uint32_t(row * COLS * 2)),
        y(uint32_t(bit ^ Swizzle<COLS>::pattern(row))) {}

  /// Address of chunk c (even) plus `rows` rows (a multiple of 8) and `bytes`
  /// (a stage offset), for this lane.
  __device__ __forceinline__ uint32_t at(int c, int rows = 0, uint32_t bytes = 0) const {
    return row_addr + bytes + uint32_t(rows * COLS * 2) + uint32_t(c & ~(kGroup - 1)) * 16u +
           ((uint32_t(c & (kGroup - 1)) ^ y) << 4);
  }
};

/// Calls copy(row, delta, chunk, to) for every 16-byte chunk of the swizzled
/// [ROWS][COLS] tile of 2-byte elements at shared address `tile` (ROWS a multiple
/// of 8): the chunk of tile row row + delta, at shared address `to`. The chunks are spread over
/// the THREADS threads of the block so that a thread's `row` and `chunk` stay
/// fixed and `delta` is a compile-time multiple of 8 rows (the swizzle stays, and
/// addresses move by constants). When THREADS covers whole groups of 8 rows,
/// thread t takes chunk t % (COLS / 8) of rows t / (COLS / 8) + i * STEP;
/// otherwise chunks t, t + THREADS, ... of each group of 8 rows.
template <int ROWS, int COLS, int THREADS, typename Copy>
__device__ __forceinline__ void for_each_chunk(uint32_t tile, Copy &&copy) {
  static_assert(ROWS % 8 == 0, "tiles have whole groups of 8 rows");
  constexpr int kChunksPerRow = COLS / 8, kGroupChunks = 8 * kChunksPerRow;
  if constexpr (THREADS % kGroupChunks == 0) {
    constexpr int kStep = THREADS / kChunksPerRow;
    const int row = threadIdx.x / kChunksPerRow, chunk = threadIdx.x % kChunksPerRow;
    const uint32_t to = tile + swizzled_offset<COLS>(row, chunk);
#pragma unroll
    for (int i = 0; i < (ROWS + kStep - 1) / kStep; ++i)
      if (ROWS % kStep == 0 || row + i * kStep < ROWS)
        copy(row, i * kStep, chunk, to + i * kStep * COLS * 2);
  } else {
#pragma unroll
    for (int u = 0; u < (kGroupChunks + THREADS - 1) / THREADS; ++u) {
      const int id = int(threadIdx.x) + u * THREADS;
      const int row = id / kChunksPerRow, chunk = id % kChunksPerRow;
      const uint32_t to = tile + swizzled_offset<COLS>(row, chunk);
      if (kGroupChunks % THREADS == 0 || id < kGroupChunks)
#pragma unroll
        for (int g = 0; g < ROWS / 8; ++g)
          copy(row, g * 8, chunk, to + g * 8 * COLS * 2);
    }
  }
}

/// Asynchronous copy of rows [row0, row0 + ROWS) of a global row-major [*][COLS]
/// matrix into the swizzled shared tile at `dst`; rows at or past `valid_rows`
/// are zero-filled. All THREADS threads of the block take part, as in
/// for_each_chunk; a tile that the block covers in whole passes of STEP rows
/// (thread t: chunk t % (COLS / 8) of rows t / (COLS / 8) + i * STEP) is copied
/// with one source and one destination address per thread plus constants.
template <int ROWS, int COLS, int THREADS, typename T>
__device__ __forceinline__ void copy_tile_async(uint32_t dst, const T *src, int row0,
                                                int valid_rows) {
  constexpr int kChunksPerRow = COLS / 8;
  constexpr int kStep = THREADS / kChunksPerRow;
  if constexpr (THREADS % (8 * kChunksPerRow) == 0 && ROWS % kStep == 0) {
    const int row = threadIdx.x / kChunksPerRow, chunk = threadIdx.x % kChunksPerRow;
    const uint32_t to = dst + swizzled_offset<COLS>(row, chunk);
    const T *from = src + int64_t(row0 + row) * COLS + chunk * 8;
    if (row0 + ROWS <= valid_rows) { // a whole tile: no predicates
#pragma unroll
      for (int i = 0; i < ROWS / kStep; ++i)
        cp_async_16(to + i * kStep * COLS * 2, from + i * kStep * COLS, true);
    } else {
#pragma unroll
      for (int i = 0; i < ROWS / kStep; ++i) {
        bool inside = row0 + row + i * kStep < valid_rows;
        cp_async_16(to + i * kStep * COLS * 2, inside ? from + i * kStep * COLS : src, inside);
      }
    }
  } else {
    const bool whole = row0 + ROWS <= valid_rows;
    for_each_chunk<ROWS, COLS, THREADS>(dst, [&](int row, int delta, int chunk, uint32_t to) {
      const T *from = src + int64_t(row0 + row) * COLS + chunk * 8;
      const bool inside = whole || row0 + row + delta < valid_rows;
      cp_async_16(to, inside ? from + delta * COLS : src, inside);
    });
  }
}

/// Copy of columns [col0, col0 + COLS) of a global row-major [ROWS][ld] matrix
/// (all its rows) into the swizzled shared tile at `dst`; columns at or past
/// `valid_cols` are zero-filled. With `vec` (ld a multiple of 8: rows start on
/// 16-byte boundaries) one cp.async a chunk; otherwise each chunk is read element
/// by element and stored with one st.shared (synchronous, any ld).
template <int ROWS, int COLS, int THREADS, typename T>
__device__ __forceinline__ void copy_cols_async(uint32_t dst, const T *src, int64_t ld, int col0,
                                                int valid_cols, bool vec) {
  if (vec) {
    for_each_chunk<ROWS, COLS, THREADS>(dst, [&](int row, int delta, int chunk, uint32_t to) {
      load_chunk_16<true>(to, src, row + delta, col0 + chunk * 8,
                          ROWS, valid_cols, ld);
    });
  } else {
    for_each_chunk<ROWS, COLS, THREADS>(dst, [&](int row, int delta, int chunk, uint32_t to) {
      load_chunk_16<false>(to, src, row + delta, col0 + chunk * 8,
                           ROWS, valid_cols, ld);
    });
  }
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/// f(x, row, col) on every element of the register tile, with its row (from row0, this
/// warp's first) and column (from col0) in the m16n8 accumulator layout. f may load from
/// global memory; the indices cost nothing where f does not use them.
template <int MT, int NT, typename F>
__device__ __forceinline__ void map_tile_at(float (&x)[MT][NT][4], int row0, int col0,
                                            const F &f) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        f(x[m][n][e], row0 + m * 16 + lane / 4 + (e / 2) * 8,
          col0 + n * 8 + (lane % 4) * 2 + e % 2);
}

/// Whether every column of a register tile is in bounds, as a compile-time constant
/// (the map_tile_at below): f then need not clamp its columns.
template <bool InBounds> struct TileColumns {
  static constexpr bool in_bounds = InBounds;
  int col0; // the tile's first column
};

/// map_tile_at with f(x, row, col, tile): tile is TileColumns<true> when the tile's
/// columns col0 .. col0 + 8 NT - 1 are all below `cols`, so f's clamps on columns fold away
/// on every tile but the one that crosses `cols`.
template <int MT, int NT, typename F>
__device__ __forceinline__ void map_tile_at(float (&x)[MT][NT][4], int row0, int col0, int cols,
                                            const F &f) {
  if (col0 + NT * 8 <= cols)
    map_tile_at(x, row0, col0,
                [&](float &v, int row, int col) { f(v, row, col, TileColumns<true>{col0}); });
  else
    map_tile_at(x, row0, col0,
                [&](float &v, int row, int col) { f(v, row, col, TileColumns<false>{col0}); });
}

/// f(x) on every element of the register tile (f takes a float &).
template <int MT, int NT, typename F>
__device__ __forceinline__ void map_tile(float (&x)[MT][NT][4], const F &f) {
  map_tile_at(x, 0, 0, [&](float &v, int, int) { f(v); });
}

/// x *= factor, every element of the register tile.
template <int MT, int NT>
__device__ __forceinline__ void scale_tile(float (&x)[MT][NT][4], float factor) {
  map_tile(x, [&](float &v) { v *= factor; });
}

/// Sets to -inf (or `fill`: 0 where no softmax follows) the elements whose column
/// is `cols` or more, and with `causal` those past their row's diagonal: row r of
/// the tile (r from 0, this warp's rows) sees the columns up to diagonal0 + r.
/// col0: the tile's first column.
template <int MT, int NT>
__device__ __forceinline__ void mask_tile(float (&x)[MT][NT][4], int diagonal0, int col0, int cols,
                                          bool causal, float fill) {
  map_tile_at(x, diagonal0, col0, [&](float &v, int diagonal, int col) {
    if (col >= cols || (causal && col > diagonal))
      v = fill;
  });
}

/// mask_tile with -inf: the masked scores get no weight in a following softmax.
template <int MT, int NT>
__device__ __forceinline__ void mask_tile(float (&x)[MT][NT][4], int diagonal0, int col0, int cols,
                                          bool causal) {
  mask_tile(x, diagonal0, col0, cols, causal, -CUDART_INF_F);
}

/// The softmax half of an online step over a tile of scores `s` times `scale`
/// (log2 units; scale > 0), leaving the accumulator alone (it may still be in
/// flight on the tensor cores). Per row: new max = max(old max, tile max * scale);
/// correction = 2^(old - new) rescales the running sum; s becomes 2^(s * scale -
/// new max) (nvcc contracts it to one FFMA; one ex2 a score) and is added to the sum. Sums stay
/// per-lane partial until online_softmax_finish.
template <int MT, int NT>
__device__ __forceinline__ void online_softmax_probabilities(float (&s)[MT][NT][4],
                                                             float (&row_max)[MT][2],
                                                             float (&row_sum)[MT][2],
                                                             float (&correction)[MT][2],
                                                             float scale = 1.0f,
                                                             float slack = 0.0f) {
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = -CUDART_INF_F;
#pragma unroll
      for (int n = 0; n < NT; ++n)
        tile_max = fmaxf(tile_max, fmaxf(s[m][n][2 * r], s[m][n][2 * r + 1]));
      const float seen = fmaxf(row_max[m][r], quad_max(tile_max) * scale);
      // The max moves only when the scores pass it by more than `slack` (the
      // probabilities stay below 2^slack); otherwise correction is 1.
      const float new_max = seen > row_max[m][r] + slack ? seen : row_max[m][r];
      // A row with no unmasked score yet keeps max -inf: subtract 0 instead.
      const float base = new_max == -CUDART_INF_F ? 0.0f : new_max;
      correction[m][r] = fast_exp2(row_max[m][r] - base);
      row_max[m][r] = new_max;
      float sum = row_sum[m][r] * correction[m][r];
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        s[m][n][2 * r] = fast_exp2(s[m][n][2 * r] * scale - base);
        s[m][n][2 * r + 1] = fast_exp2(s[m][n][2 * r + 1] * scale - base);
        sum += s[m][n][2 * r] + s[m][n][2 * r + 1];
      }
      row_sum[m][r] = sum;
    }
}

/// Whether any row of the warp has a correction other than 1 (a warp vote: the
/// accumulator's rescaling is skipped by the whole warp or by none).
template <int MT>
__device__ __forceinline__ bool warp_rescales(const float (&correction)[MT][2]) {
  bool mine = false;
#pragma unroll
  for (int m = 0; m < MT; ++m)
    mine = mine || correction[m][0] != 1.0f || correction[m][1] != 1.0f;
  return __any_sync(0xffffffffu, mine);
}

/// acc *= factor, per row (factor[m][r]: the thread's row r of row tile m).
template <int MT, int NACC>
__device__ __forceinline__ void scale_rows(float (&acc)[MT][NACC][4], const float (&factor)[MT][2]) {
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int n = 0; n < NACC; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[m][n][e] *= factor[m][e / 2];
}

/// One step of the online softmax: online_softmax_probabilities, then the
/// accumulator rescaled by the same corrections.
template <int MT, int NT, int NACC>
__device__ __forceinline__ void online_softmax_step(float (&s)[MT][NT][4], float (&row_max)[MT][2],
                                                    float (&row_sum)[MT][2],
                                                    float (&acc)[MT][NACC][4]) {
  float correction[MT][2];
  online_softmax_probabilities(s, row_max, row_sum, correction);
  scale_rows(acc, correction);
}

/// After the loop: total row sums over the quad, then acc *= factor / sum, one
/// quotient per row (factor: a scaling of the probabilities after the softmax,
/// exact here since it multiplies every term of the row). A row whose sum is 0
/// (no unmasked score) is left 0.
template <int MT, int NACC>
__device__ __forceinline__ void online_softmax_finish(float (&row_sum)[MT][2],
                                                      float (&acc)[MT][NACC][4],
                                                      float factor = 1.0f) {
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float sum = quad_sum(row_sum[m][r]);
      const float inverse = sum > 0.0f ? factor / sum : 0.0f;
#pragma unroll
      for (int n = 0; n < NACC; ++n) {
        acc[m][n][2 * r] *= inverse;
        acc[m][n][2 * r + 1] *= inverse;
      }
    }
}

/// The row-wise softmax of a tile that holds its rows whole (each row's columns all in
/// its quad: a back-to-back GEMM's first result in registers), in one step: the online
/// step's probabilities from a max of -inf (log2 units: the scores times log2 e), then
/// the division.
template <int MT, int NT>
__device__ __forceinline__ void softmax_rows(float (&s)[MT][NT][4]) {
  float row_max[MT][2], row_sum[MT][2], correction[MT][2];
#pragma unroll
  for (int m = 0; m < MT; ++m)
    row_max[m][0] = row_max[m][1] = -CUDART_INF_F, row_sum[m][0] = row_sum[m][1] = 0.0f;
  online_softmax_probabilities(s, row_max, row_sum, correction, 1.4426950408889634f);
  online_softmax_finish(row_sum, s);
}

/// Reshape from (MMA_C, ...) to (MMA_A, ...): the accumulator fragments of
/// columns 16k..16k+7 (c0) and 16k+8..16k+15 (c1) are, rounded to T, exactly the
/// A fragment of k-step k: a[0] = rows g, a[1] = rows g+8 of c0; a[2], a[3] of c1.
template <typename T>
__device__ __forceinline__ void reshape_c_to_a(const float (&c0)[4], const float (&c1)[4],
                                               uint32_t (&a)[4]) {
  a[0] = pack2<T>(c0[0], c0[1]);
  a[1] = pack2<T>(c0[2], c0[3]);
  a[2] = pack2<T>(c1[0], c1[1]);
  a[3] = pack2<T>(c1[2], c1[3]);
}

/// Stores a register tile (rows of this warp starting at tile row `row0`) into
/// the swizzled shared [rows][COLS] tile at `dst`, rounded to T.
template <typename T, int COLS, int MT, int NT>
__device__ __forceinline__ void store_tile_shared(uint32_t dst, int row0,
                                                  const float (&x)[MT][NT][4]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int row = row0 + m * 16 + lane / 4 + r * 8;
        uint32_t at = dst + swizzled_offset<COLS>(row, n) + (lane % 4) * 4;
        st_shared_32(at, pack2<T>(x[m][n][2 * r], x[m][n][2 * r + 1]));
      }
}

/// Copies ROWS rows of the swizzled shared tile at `src` (tile rows row0..)
/// to global rows grow0.. of a row-major [*][COLS] matrix with 16-byte stores,
/// skipping rows at or past `valid_rows`. The LANES lanes of one warp take part.
template <int ROWS, int COLS, typename T>
__device__ __forceinline__ void store_rows_global(T *dst, uint32_t src, int row0, int64_t grow0,
                                                  int64_t valid_rows) {
  constexpr int kChunksPerRow = COLS / 8;
  constexpr int kChunks = ROWS * kChunksPerRow;
  static_assert(kChunks % 32 == 0, "row chunks must divide among the lanes");
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kChunks / 32; ++i) {
    int id = i * 32 + lane;
    int row = id / kChunksPerRow, chunk = id % kChunksPerRow;
    if (grow0 + row < valid_rows) {
      uint4 value = ld_shared_128(src + swizzled_offset<COLS>(row0 + row, chunk));
      st_global_128(dst + (grow0 + row) * COLS + chunk * 8, value);
    }
  }
}

} // namespace sketch

#endif // SKETCH_SOFTMAX_CUH
