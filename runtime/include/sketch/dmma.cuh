// sketch/dmma.cuh - the f32 GEMM's multiply step on the f64 tensor cores (sm_90).
//
// An f32 product is exact in f64, so `mma.sync.m16n8k4.f64` over operands widened from
// f32 sums exact products in f64, and the result is rounded to f32 once: at least as
// accurate as FFMA. On an H100 / H200 the f64 tensor cores peak at the FP32 CUDA cores'
// rate (67 TFLOP/s) and keep closer to it (bench/labs/sgemm_dmma).
//
// DmmaTile<Rows, Cols, WarpsM, WarpsN> takes MicroTile's place in the SIMT mainloop
// (sketch/simt.cuh): the block's warps form a WarpsM x WarpsN grid, each owning a
// (Rows / WarpsM) x (Cols / WarpsN) piece of m16n8 accumulator tiles. The shared tiles
// are the SIMT ones (k-major, `tile[k][row]`); a k step of 4 reads a thread's
// fragments from them and widens them. A thread's outputs are the rows
// g, g + 8 of each m16 tile and the columns 2t, 2t + 1 of each n8 tile (g = lane / 4,
// t = lane % 4): kRows x kCols of them, row(i) and col(j) as MicroTile's, in pairs of
// adjacent columns (kVecCols 2).
#ifndef SKETCH_DMMA_CUH
#define SKETCH_DMMA_CUH

namespace sketch {
namespace simt {

/// d += a b: one m16n8k4 f64 MMA (a: rows g and g + 8 at k t; b: k t, column g).
__device__ __forceinline__ void mma_f64_16x8x4(double (&d)[4], const double (&a)[2], double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
               "{%0, %1, %2, %3};"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(b));
#else
  __trap();  // the emitter takes this step for sm_90 only
#endif
}

template <int Rows, int Cols, int WarpsM, int WarpsN>
struct DmmaTile {
  static constexpr bool kCudaCores = false;
  static constexpr int kWarpRows = Rows / WarpsM, kWarpCols = Cols / WarpsN;
  static constexpr int kMmaRows = kWarpRows / 16, kMmaCols = kWarpCols / 8;  // m16 / n8 tiles a warp
  static constexpr int kRows = 2 * kMmaRows, kCols = 2 * kMmaCols;           // outputs a thread
  static constexpr int kVecCols = 2;
  static_assert(Rows % WarpsM == 0 && Cols % WarpsN == 0 && kWarpRows % 16 == 0 && kWarpCols % 8 == 0,
                "a warp's piece of the tile must be whole m16n8 tiles");
  using Accumulators = double[kMmaRows][kMmaCols][4];
  int row0, col0;  // this thread's first output row and column
  int b_col, k;     // its fragments: A rows row0 (+ 8), B column b_col, at k step + k
  __device__ DmmaTile() {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / WarpsN * kWarpRows, warp_col = warp % WarpsN * kWarpCols;
    row0 = warp_row + lane / 4;
    col0 = warp_col + 2 * (lane % 4);
    b_col = warp_col + lane / 4;
    k = lane % 4;
  }
  /// Block-tile row of output row i (0..kRows-1): m16 tile i / 2, its row g or g + 8.
  __device__ int row(int i) const { return row0 + i / 2 * 16 + i % 2 * 8; }
  /// Block-tile column of output column j (0..kCols-1): n8 tile j / 2, column 2t + j % 2.
  __device__ int col(int j) const { return col0 + j / 2 * 8 + j % 2; }
  /// The f64 sums rounded to f32, in row(i) x col(j) order.
  __device__ __forceinline__ void round(const Accumulators &sums, float (&out)[kRows][kCols]) const {
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kCols; ++j)
        out[i][j] = float(sums[i / 2][j / 2][i % 2 * 2 + j % 2]);
  }
};

/// Multiplies one shared k tile (BK a multiple of 4) into the f64 accumulators.
template <int Rows, int Cols, int BK, int WarpsM, int WarpsN>
__device__ __forceinline__ void multiply_tile(const float (*a)[padded(Rows)], const float (*b)[padded(Cols)],
                                              const DmmaTile<Rows, Cols, WarpsM, WarpsN> &t,
                                              typename DmmaTile<Rows, Cols, WarpsM, WarpsN>::Accumulators &acc) {
  using Tile = DmmaTile<Rows, Cols, WarpsM, WarpsN>;
  static_assert(BK % 4 == 0, "the f64 MMA steps k by 4");
#pragma unroll
  for (int k = 0; k < BK; k += 4) {
    const float *a_k = a[k + t.k] + t.row0, *b_k = b[k + t.k] + t.b_col;
    double x[Tile::kMmaRows][2], y[Tile::kMmaCols];
#pragma unroll
    for (int i = 0; i < Tile::kMmaRows; ++i)
      x[i][0] = a_k[i * 16], x[i][1] = a_k[i * 16 + 8];
#pragma unroll
    for (int j = 0; j < Tile::kMmaCols; ++j)
      y[j] = b_k[j * 8];
#pragma unroll
    for (int i = 0; i < Tile::kMmaRows; ++i)
#pragma unroll
      for (int j = 0; j < Tile::kMmaCols; ++j)
        mma_f64_16x8x4(acc[i][j], x[i], y[j]);
  }
}

} // namespace simt
} // namespace sketch

#endif // SKETCH_DMMA_CUH
