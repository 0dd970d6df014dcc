// sketch/tma.cuh - tensor-map (TMA) tile loads completing on mbarriers (sm_90).
//
// Device side (each function is one instruction, or a wait loop):
//   mbarrier_init(bar, count)        a barrier expecting `count` arrivals a phase
//   fence_mbarrier_init()            makes initialised barriers visible to the copy engine
//   mbarrier_arrive_expect_tx(bar, bytes)
//                                    arrives and announces `bytes` still to land this phase
//   mbarrier_arrive(bar)             a plain arrival
//   mbarrier_arrive_by_warp(bar)     one arrival for the whole warp, once all its lanes are
//                                    here (their earlier shared-memory reads included)
//   mbarrier_wait(bar, parity)       waits until the phase of parity `parity` has completed
//   tma_load_2d(dst, map, x, y, bar) the box at column x, row y of the tensor `map` into
//                                    shared `dst` (a 1024-byte aligned address with
//                                    SWIZZLE_128B); its bytes complete_tx on `bar`
//   tma_load_3d(dst, map, x, y, z, bar)
//                                    the same in matrix z of a batch of matrices
//   tma_load_4d(dst, map, c, w, h, n, bar)
//                                    the box from (c, w, h, n) of a rank-4 map
//                                    (encode_tensor_map_nhwc): a patch of an nhwc tensor
//   tma_prefetch_3d(map, x, y, z)    asks L2 for that box (no shared memory, no barrier: a hint)
//   tma_load_im2col_4d(dst, map, c, w, h, n, off_w, off_h, bar)
//                                    im2col mode (encode_tensor_map_im2col): the map's
//                                    pixels-per-column pixels from input position (w, h) of
//                                    image n on (W fastest, then H, then the next image, at the
//                                    convolution's stride inside the output's bounding box),
//                                    each shifted by the filter tap (off_w, off_h), channels
//                                    c .. c + channels-per-pixel - 1 of each: one row a pixel
//   tma_store_2d(map, src, x, y)     the box at shared `src` (1024-byte aligned, laid out
//                                    as Swizzle128 says) to column x, row y of the tensor
//                                    `map`; elements past the tensor are not written. One
//                                    thread issues it, after the writers' fence_async_shared
//                                    and a barrier; asynchronous: a bulk group (below)
//   tma_store_3d(map, src, x, y, z)  the same into matrix z of a batch of matrices
//   tma_store_4d(map, src, c, w, h, n)  the same into a rank-4 map at (c, w, h, n)
//   tma_store_commit()               closes this thread's stores issued so far into a group
//   tma_store_wait_read<P = 0>()     until all but this thread's P latest groups have read
//                                    their shared memory (it may be written again, or the
//                                    block leave)
//   Swizzle128<ROWS, E>::offset(row, col)
//                                    where element (row, col) of a ROWS-row tile lies when
//                                    it was loaded (or is stored) as 128-byte wide column
//                                    panels with SWIZZLE_128B (see below)
// Host side:
//   encode_tensor_map(map, base, elem_bytes, rank, dims, strides, box)
//                                    the general form the others call: a tensor of rank 2
//                                    to 5, 128B-swizzled boxes, out-of-range zero-filled
//   tma_box_rows(rows, tile_rows)    the rows of a box over a tile of `tile_rows` rows that
//                                    has `rows` rows of the matrix left: the tile's, or `rows`
//                                    rounded up to 8 where fewer are left (host and device)
//   tma_tail_box_rows(rows, tile_rows)
//                                    tma_box_rows of the matrix's last tile (host)
//   encode_tensor_map_2d(map, base, cols, rows, row_bytes, box_cols, box_rows, elem_bytes)
//                                    a row-major matrix with a 128B-swizzled box, out-of-range
//                                    elements zero-filled; false when the driver refuses it
//                                    (sizes, alignment, no driver entry point): use another path
//   encode_tensor_map_3d(map, base, cols, rows, matrices, row_bytes, matrix_bytes,
//                        box_cols, box_rows, elem_bytes)
//                                    the same for `matrices` matrices `matrix_bytes` apart
//                                    (boxes of one matrix each)
//   encode_tensor_map_nhwc(map, base, elem_bytes, n, h, w, c, box_c, box_w, box_h)
//                                    an nhwc tensor in boxes of box_h rows x box_w pixels x
//                                    box_c channels (128-byte rows) of one image
//   encode_tensor_map_im2col(map, base, elem_bytes, n, h, w, c, conv..., channels, pixels)
//                                    an nhwc tensor read in im2col boxes of `pixels` output
//                                    pixels x `channels` channels (128B-swizzled rows) for a
//                                    convolution of that pad, reach ((R - 1) dilation) and
//                                    stride; false when the driver refuses it
//
// cuTensorMapEncodeTiled is a driver API function; it is looked up once through the
// runtime (cudaGetDriverEntryPointByVersion, CUDA 12.5 or newer), so nothing links
// against libcuda.
#ifndef SKETCH_TMA_CUH
#define SKETCH_TMA_CUH

#include <cstdint>
#include <cuda.h> // CUtensorMap and its enums (types only)
#include <cuda_runtime.h>

namespace sketch {

//===----------------------------------------------------------------------===//
// mbarrier
//===----------------------------------------------------------------------===//

__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/// After the barriers are initialised, before any copy may complete on them (then a
/// __syncthreads() before other threads use them).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/// One arrival per warp (lane 0, after the warp's lanes have synchronised): count a
/// consumer barrier in warps.
__device__ __forceinline__ void mbarrier_arrive_by_warp(uint32_t bar) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0)
    mbarrier_arrive(bar);
}

/// Spins on try_wait (which itself suspends the thread for a while) until the phase
/// with parity `parity` is complete; acquire semantics: the landed bytes are visible.
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n"
               "  .reg .pred done;\n"
               "WAIT_%=:\n"
               "  mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "  @!done bra WAIT_%=;\n"
               "}\n" ::"r"(bar),
               "r"(parity)
               : "memory");
}

//===----------------------------------------------------------------------===//
// Tensor copies
//===----------------------------------------------------------------------===//

/// The box whose first element is (row y, column x) of `map`'s tensor into `dst`;
/// elements outside the tensor are zero-filled (and counted in the transaction bytes).
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int x, int y,
                                            uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
               : "memory");
}

/// tma_load_2d in matrix z of a 3-D map (encode_tensor_map_3d).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap *map, int x, int y,
                                            int z, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(bar)
               : "memory");
}

/// The box at (c, w, h, n) of a rank-4 map (encode_tensor_map_nhwc) into `dst`.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap *map, int c, int w,
                                            int h, int n, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar)
               : "memory");
}

/// The box of tma_load_3d into L2 only: a hint that a block will soon load it.
__device__ __forceinline__ void tma_prefetch_3d(const CUtensorMap *map, int x, int y, int z) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(x), "r"(y), "r"(z)
               : "memory");
}

/// The im2col box of an nhwc tensor (encode_tensor_map_im2col) for the output pixels
/// from the one whose window starts at input (w, h) of image n, filter tap (off_w, off_h)
/// (times the dilation), channels from c; positions outside the image read as zero.
__device__ __forceinline__ void tma_load_im2col_4d(uint32_t dst, const CUtensorMap *map, int c,
                                                   int w, int h, int n, uint16_t off_w,
                                                   uint16_t off_h, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar),
               "h"(off_w), "h"(off_h)
               : "memory");
}

/// The box at shared `src` to column x, row y of the 2-D tensor `map` (bulk group).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, uint32_t src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::
                   "l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(x), "r"(y)
               : "memory");
}

/// tma_store_2d into matrix z of a 3-D map (encode_tensor_map_3d).
__device__ __forceinline__ void tma_store_3d(const CUtensorMap *map, uint32_t src, int x, int y,
                                             int z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::
                   "l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(x), "r"(y), "r"(z)
               : "memory");
}

/// The box at shared `src` to (c, w, h, n) of a rank-4 map (bulk group).
__device__ __forceinline__ void tma_store_4d(const CUtensorMap *map, uint32_t src, int c, int w,
                                             int h, int n) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::
                   "l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c), "r"(w), "r"(h), "r"(n)
               : "memory");
}

__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

template <int kPending = 0>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}

/// A ROWS x COLS tile of 2- or 4-byte elements moved as 128-byte wide column panels
/// (boxes of 128 bytes by ROWS rows, one after the other) with SWIZZLE_128B: in each
/// 1024-byte group of 8 rows, the 16-byte chunk c of row r lies at chunk c ^ (r % 8).
/// 16-byte pieces (ldmatrix rows, 8 two-byte elements from a multiple of 8) stay whole;
/// the 8 rows an ldmatrix reads (or an accumulator fragment writes) at one chunk column
/// hit 8 distinct chunks.
template <int ROWS, typename E>
struct Swizzle128 {
  static_assert(sizeof(E) == 2 || sizeof(E) == 4, "128-byte panels of 2- or 4-byte elements");
  static_assert(ROWS % 8 == 0, "whole 1024-byte swizzle groups");
  static constexpr int kPanelCols = 128 / (int)sizeof(E), kChunkCols = 16 / (int)sizeof(E);
  __device__ __forceinline__ static int offset(int row, int col) {
    const int panel = col / kPanelCols, c = col % kPanelCols;
    return panel * (ROWS * kPanelCols) + row * kPanelCols +
           (((c / kChunkCols) ^ (row & 7)) * kChunkCols) + (c % kChunkCols);
  }
};

//===----------------------------------------------------------------------===//
// Host
//===----------------------------------------------------------------------===//

/// Encodes `map` for a tensor of `rank` dimensions (innermost first: `dims`; bytes between
/// consecutive indices of dimensions 1.. in `strides`) read in `box` boxes with
/// SWIZZLE_128B; elements past the tensor read as zero. `element_strides` (1 each where
/// null): a box traverses dimension i at that step, ceil(box[i] / step) elements. False
/// when the driver refuses it.
inline bool encode_tensor_map(CUtensorMap *map, const void *base, int elem_bytes, uint32_t rank,
                              const cuuint64_t *dims, const cuuint64_t *strides,
                              const cuuint32_t *box,
                              const cuuint32_t *element_strides = nullptr) {
  using Encode = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                              const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                              const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<Encode>(fn);
  }();
  if (encode == nullptr)
    return false;
  for (uint32_t i = 0; i < rank; ++i)
    if (dims[i] == 0)
      return false;
  const CUtensorMapDataType type = elem_bytes == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                                     : CU_TENSOR_MAP_DATA_TYPE_UINT32;
  if (rank < 1 || rank > 5)
    return false;
  const cuuint32_t unit_strides[5] = {1, 1, 1, 1, 1};
  return encode(map, type, rank, const_cast<void *>(base), dims, strides, box,
                element_strides ? element_strides : unit_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// The rows of a TMA box over a tile of `tile_rows` rows (K-major: a row is one
/// 128-byte swizzle row) that has `rows` rows of the matrix left: the whole tile, or
/// where fewer are left (the last tile; a few tokens through a projection), `rows`
/// rounded up to 8 (one swizzle atom). The copy engine fills rows past the matrix with
/// zeros and that fill is slow: a 64-row box over M = 1 ran M = 1, N = 6144, K = 4096 in
/// 21.3 us against 16.1 us with an 8-row box (H200, same run). The tile's rows past the
/// box keep whatever the stage held; they only reach accumulator rows past the matrix,
/// which nothing stores. The kernel counts the same rows in its stage's transaction bytes.
__host__ __device__ inline int tma_box_rows(int64_t rows, int tile_rows) {
  if (rows >= tile_rows)
    return tile_rows;
  return rows <= 8 ? 8 : (int)((rows + 7) / 8 * 8);
}

/// tma_box_rows of the last tile of `tile_rows` rows over a matrix of `rows` rows (the
/// box of a tail tensor map; a whole tile when `rows` is a multiple of it).
inline int tma_tail_box_rows(int64_t rows, int tile_rows) {
  const int64_t last = rows > 0 ? (rows - 1) / tile_rows * tile_rows : 0;
  return tma_box_rows(rows - last, tile_rows);
}

/// Encodes `map` for the row-major matrix at `base` (rows x cols elements of
/// `elem_bytes` each, rows `row_bytes` apart) read in boxes of box_rows x box_cols with
/// SWIZZLE_128B (box_cols * elem_bytes <= 128); elements past the matrix read as zero.
inline bool encode_tensor_map_2d(CUtensorMap *map, const void *base, uint64_t cols,
                                 uint64_t rows, uint64_t row_bytes, uint32_t box_cols,
                                 uint32_t box_rows, int elem_bytes) {
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {box_cols, box_rows};
  return encode_tensor_map(map, base, elem_bytes, 2, dims, strides, box);
}

/// encode_tensor_map_2d for `matrices` such matrices, `matrix_bytes` apart.
inline bool encode_tensor_map_3d(CUtensorMap *map, const void *base, uint64_t cols,
                                 uint64_t rows, uint64_t matrices, uint64_t row_bytes,
                                 uint64_t matrix_bytes, uint32_t box_cols, uint32_t box_rows,
                                 int elem_bytes) {
  const cuuint64_t dims[3] = {cols, rows, matrices};
  const cuuint64_t strides[2] = {row_bytes, matrix_bytes};
  const cuuint32_t box[3] = {box_cols, box_rows, 1};
  return encode_tensor_map(map, base, elem_bytes, 3, dims, strides, box);
}

/// Encodes `map` for the nhwc tensor at `base` (n images of h rows of w pixels of c
/// channels of `elem_bytes` each) read in boxes of box_h rows x box_w pixels x box_c
/// channels of one image (box_c * elem_bytes = 128, SWIZZLE_128B); positions outside the
/// tensor read as zero and are not written by a store.
inline bool encode_tensor_map_nhwc(CUtensorMap *map, const void *base, int elem_bytes, int64_t n,
                                   int64_t h, int64_t w, int64_t c, uint32_t box_c,
                                   uint32_t box_w, uint32_t box_h) {
  const cuuint64_t dims[4] = {(cuuint64_t)c, (cuuint64_t)w, (cuuint64_t)h, (cuuint64_t)n};
  const cuuint64_t pixel = (cuuint64_t)c * elem_bytes;
  const cuuint64_t strides[3] = {pixel, pixel * w, pixel * w * h};
  const cuuint32_t box[4] = {box_c, box_w, box_h, 1};
  return encode_tensor_map(map, base, elem_bytes, 4, dims, strides, box);
}

/// Encodes `map` for the nhwc tensor at `base` (n x h x w x c elements of `elem_bytes`)
/// read in im2col boxes of `pixels` output pixels by `channels` channels (one 128B-swizzled
/// row a pixel; channels * elem_bytes <= 128) for a convolution with these pads, reaches
/// ((filter - 1) x dilation) and strides: the bounding box of the windows' first input
/// positions runs from -pad to (size - 1) + pad - reach, traversed at the stride. False
/// when the driver refuses it (corners, strides or sizes out of its range).
inline bool encode_tensor_map_im2col(CUtensorMap *map, const void *base, int elem_bytes,
                                     uint64_t n, uint64_t h, uint64_t w, uint64_t c, int pad_h,
                                     int pad_w, int reach_h, int reach_w, int stride_h,
                                     int stride_w, uint32_t channels, uint32_t pixels) {
  using Encode = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                              const cuuint64_t *, const cuuint64_t *, const int *, const int *,
                              cuuint32_t, cuuint32_t, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion,
                              CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &fn, 12000,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<Encode>(fn);
  }();
  if (encode == nullptr || n == 0 || h == 0 || w == 0 || c == 0)
    return false;
  const CUtensorMapDataType type =
      elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_UINT32;
  const cuuint64_t dims[4] = {c, w, h, n};
  const uint64_t row = c * uint64_t(elem_bytes);
  const cuuint64_t strides[3] = {row, row * w, row * w * h};
  const int lower[2] = {-pad_w, -pad_h};
  const int upper[2] = {pad_w - reach_w, pad_h - reach_h};
  const cuuint32_t element_strides[4] = {1, cuuint32_t(stride_w), cuuint32_t(stride_h), 1};
  return encode(map, type, 4, const_cast<void *>(base), dims, strides, lower, upper, channels,
                pixels, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

} // namespace sketch

#endif // SKETCH_TMA_CUH
