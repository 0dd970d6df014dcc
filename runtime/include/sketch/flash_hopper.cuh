// sketch/flash_hopper.cuh - the steps of the Hopper (sm_90a) attention kernel that
// lib/Emit/EmitAttention.cpp writes: a producer warpgroup loads Q, K and V tiles by
// TMA (full / empty mbarriers), consumer warpgroups of 64 query rows run both GEMMs on
// wgmma and the online softmax of softmax.cuh on the accumulators in between.
//
//   (the producer gives registers back and the consumers take them with wgmma.cuh's
//   setmaxnreg_dec / setmaxnreg_inc, each role one branch of an if)
//   tma_load_panels<PANELS, ROWS>(dst, map, row, matrix, bar)
//                              rows row.. of matrix `matrix` of a 3-D map, PANELS boxes of
//                              64 columns x ROWS rows, one after the other at dst (128-byte
//                              swizzle, the K-major / MN-major layout of wgmma.cuh)
//   tma_load_key_panels<PANELS, ROWS>(dst, map, key, matrix, bar)
//                              a tile stored a key per column: keys key.. of matrix
//                              `matrix`, PANELS boxes of 64 keys x ROWS rows (the head
//                              dimension), one after the other at dst
//   tma_load_tile_panels<PANELS, ROWS>(dst, map, col, row, matrix, bar)
//                              both in one: PANELS boxes of 64 columns from col x ROWS
//                              rows from row (a tensor on the scores: BN keys x BM queries)
//   tma_prefetch_tile_panels<PANELS>(map, col, row, matrix)
//                              the boxes of tma_load_tile_panels into L2 only (a hint)
//   shared_tile_element<E, ROWS>(tile, row, col)
//                              element (row, col) of such a tile of 16-bit E in shared
//                              memory (64-column panels of ROWS rows, 128-byte swizzle)
//   flash_scores_issue<T, DQK, QROWS, BN, KEY_ROWS>(s, q, k)
//                              issues s = Q K^T for the warpgroup's 64 rows (one wgmma
//                              group, no wait): q its first row in Q's panels (QROWS rows
//                              each), k the K tile: KEY_ROWS, BN keys a panel of 64
//                              columns (K-major B); else DQK rows a panel of 64 keys
//                              (MN-major B); DQK / 16 k16 steps, so a DQK short of whole
//                              64-column panels reads none past it
//   flash_probabilities_a<T, BN>(p, a)
//                              p (the probabilities, f32 accumulators of the scores)
//                              rounded to T as wgmma's register A
//   flash_value_issue<T, BN, DV, KEY_ROWS>(o, a, v)
//                              issues o += P V (one wgmma group, no wait): v the V tile,
//                              KEY_ROWS: BN keys, DV columns in panels of 64 (MN-major
//                              B); else DV rows a panel of 64 keys (K-major B); wgmma's
//                              N is DV, any multiple of 16
//   (wgmma.cuh: wgmma_fence_fragments, k_major_desc, mn_major_desc)
//   scale_shared_tile<T, BYTES>(tile, factor, thread, threads)
//                              tile's elements *= factor (16 bytes a thread at a time), then
//                              visible to wgmma (the caller's barrier follows)
//   WarpgroupTurns<WARPGROUPS>{wg}.open() / take() / pass(last)
//                              the consumer warpgroups' turns at the tensor cores (ping-pong)
//   (O leaves through shared memory with softmax.cuh's store_tile_shared and
//   store_rows_global: 16-byte stores)
// Key splits (a grid short of the SMs: the blocks of a cluster share a row tile's keys):
//   row_log2_sums(row_max, row_sum, lse)
//                              each row's log2 of its softmax sum: max + log2(quad sum),
//                              -inf for a row that saw no key
//   stage_key_split<BM, DV>(part, row0, o, lse)
//                              the warp's 16 rows of o (f32) at part ([BM][DV + 8] floats),
//                              their lse after them (KeySplitTile<BM, DV>)
//   combine_key_splits<T, BM, DV, SOFTMAX>(out, part, rows, thread, threads)
//                              after a cluster barrier: this block's share of the rows
//                              (rank, rank + splits, ..., below `rows`) summed over the
//                              cluster's blocks in rank order through distributed shared
//                              memory, weighted by 2^(lse - max) with SOFTMAX, stored to out
//
// A wgmma m64nN accumulator gives each warp exactly the mma.sync m16n8 C fragments of
// its 16 rows (wgmma.cuh), so softmax.cuh's row reductions apply as they are, with one
// row tile (MT = 1).
#ifndef SKETCH_FLASH_HOPPER_CUH
#define SKETCH_FLASH_HOPPER_CUH

#include "sketch/softmax.cuh"
#include "sketch/split.cuh"
#include "sketch/tma.cuh"
#include "sketch/wgmma.cuh"

namespace sketch {

template <int PANELS, int ROWS>
__device__ __forceinline__ void tma_load_tile_panels(uint32_t dst, const CUtensorMap *map, int col,
                                                     int row, int matrix, uint32_t bar) {
#pragma unroll
  for (int p = 0; p < PANELS; ++p)
    tma_load_3d(dst + p * ROWS * 128, map, col + p * 64, row, matrix, bar);
}

template <int PANELS>
__device__ __forceinline__ void tma_prefetch_tile_panels(const CUtensorMap *map, int col, int row,
                                                         int matrix) {
#pragma unroll
  for (int p = 0; p < PANELS; ++p)
    tma_prefetch_3d(map, col + p * 64, row, matrix);
}

template <int PANELS, int ROWS>
__device__ __forceinline__ void tma_load_panels(uint32_t dst, const CUtensorMap *map, int row,
                                                int matrix, uint32_t bar) {
  tma_load_tile_panels<PANELS, ROWS>(dst, map, 0, row, matrix, bar);
}

template <int PANELS, int ROWS>
__device__ __forceinline__ void tma_load_key_panels(uint32_t dst, const CUtensorMap *map, int key,
                                                    int matrix, uint32_t bar) {
  tma_load_tile_panels<PANELS, ROWS>(dst, map, key, 0, matrix, bar);
}

template <typename E, int ROWS>
__device__ __forceinline__ E shared_tile_element(uint32_t tile, int row, int col) {
  const uint32_t r = uint32_t(row), c = uint32_t(col);
  const uint32_t offset =
      (c >> 6) * (ROWS * 128) + r * 128 + ((((c >> 3) & 7u) ^ (r & 7u)) << 4) + (c & 7u) * 2;
  unsigned short bits; // volatile: after the wait for the tile, before its release
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(bits) : "r"(tile + offset));
  E value;
  static_assert(sizeof(E) == 2, "a 16-bit element");
  __builtin_memcpy(&value, &bits, 2);
  return value;
}

/// Issues s = Q K^T for the warpgroup's 64 rows as one committed wgmma group (no
/// wait: wgmma_wait, then wgmma_fence_operands(s), before s is read).
template <typename T, int DQK, int QROWS, int BN, bool KEY_ROWS = true>
__device__ __forceinline__ void flash_scores_issue(float (&s)[BN / 8][4], uint32_t q, uint32_t k) {
#pragma unroll
  for (int n = 0; n < BN / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s[n][e] = 0.0f;
  wgmma_fence_operands(s);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < DQK / 16; ++kk) {
    if constexpr (KEY_ROWS)
      wgmma_m64k16<T, BN, 0, 0>(s, k_major_desc<QROWS>(q, kk), k_major_desc<BN>(k, kk));
    else
      wgmma_m64k16<T, BN, 0, 1>(s, k_major_desc<QROWS>(q, kk), mn_major_desc<DQK>(k, kk));
  }
  wgmma_commit();
}

/// The probabilities (f32 accumulators of the scores) rounded to T as wgmma's
/// register A, one fragment per k16 step of P V.
template <typename T, int BN>
__device__ __forceinline__ void flash_probabilities_a(const float (&p)[BN / 8][4],
                                                      uint32_t (&a)[BN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk)
    reshape_c_to_a<T>(p[2 * kk], p[2 * kk + 1], a[kk]);
}

/// Issues o += P V as one committed wgmma group (no wait): a from
/// flash_probabilities_a, v the V tile (KEY_ROWS: BN keys, DV columns in panels of
/// 64, MN-major B; else DV rows in panels of 64 keys, K-major B). o and a stay
/// untouched until wgmma_wait, then wgmma_fence_operands(o) and wgmma_fence_fragments(a).
template <typename T, int BN, int DV, bool KEY_ROWS = true>
__device__ __forceinline__ void flash_value_issue(float (&o)[DV / 8][4], uint32_t (&a)[BN / 16][4],
                                                  uint32_t v) {
  wgmma_fence_fragments(a);
  wgmma_fence_operands(o);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    if constexpr (KEY_ROWS)
      wgmma_m64k16_rs<T, DV, 1>(o, a[kk], mn_major_desc<BN>(v, kk));
    else
      wgmma_m64k16_rs<T, DV, 0>(o, a[kk], k_major_desc<DV>(v, kk));
  }
  wgmma_commit();
}

/// Multiplies the BYTES / sizeof(T) elements of a shared tile by `factor`: thread
/// `thread` of `threads` takes 16-byte chunks thread, thread + threads, ...; then
/// fences its writes for the async proxy (wgmma reads the tile after the caller's
/// barrier). Used once before the loop, so not on any hot path.
template <typename T, int BYTES>
__device__ __forceinline__ void scale_shared_tile(uint32_t tile, float factor, int thread,
                                                  int threads) {
  static_assert(BYTES % 16 == 0, "whole 16-byte chunks");
  for (int chunk = thread; chunk < BYTES / 16; chunk += threads) {
    uint4 v = ld_shared_128(tile + chunk * 16);
    T *e = reinterpret_cast<T *>(&v);
#pragma unroll
    for (int i = 0; i < int(16 / sizeof(T)); ++i)
      e[i] = T(float(e[i]) * factor);
    st_shared_128(tile + chunk * 16, v);
  }
  fence_async_shared();
}

/// The ping-pong of the consumer warpgroups (FlashAttention-3's inter-warpgroup
/// overlap): warpgroup w issues its GEMMs only on its turn (bar.sync on barrier 1 + w,
/// with the 128 threads of the warpgroup before it arriving), then passes the turn
/// to warpgroup w + 1 (mod WARPGROUPS): one warpgroup's softmax runs while the
/// next one's GEMMs hold the tensor cores. Every warpgroup takes the same number of
/// turns; the last one opens (gives warpgroup 0 its first turn) and so does not pass
/// its last turn on. Barriers 1 .. WARPGROUPS (0 is __syncthreads').
template <int WARPGROUPS>
struct WarpgroupTurns {
  static_assert(WARPGROUPS >= 1 && WARPGROUPS <= 15, "named barriers 1 .. 15");
  int wg; // this warpgroup among the consumers

  __device__ __forceinline__ void open() const {
    if (WARPGROUPS > 1 && wg == WARPGROUPS - 1)
      named_barrier_arrive(1, 256);
  }
  __device__ __forceinline__ void take() const {
    if (WARPGROUPS > 1)
      named_barrier_sync(1 + wg, 256);
  }
  __device__ __forceinline__ void pass(bool last = false) const {
    if (WARPGROUPS > 1 && !(last && wg == WARPGROUPS - 1))
      named_barrier_arrive(1 + (wg + 1) % WARPGROUPS, 256);
  }
};

/// Where a key split stages its partial rows: BM rows of DV floats (8 floats of padding a
/// row spread the fragments' rows over the banks), then BM row lse.
template <int BM, int DV>
struct KeySplitTile {
  static constexpr int kRowFloats = DV + 8;
  static constexpr int kLse = BM * kRowFloats * 4; // byte offset of the lse
  static constexpr int kBytes = kLse + BM * 4;
};

template <int MT>
__device__ __forceinline__ void row_log2_sums(const float (&row_max)[MT][2],
                                              const float (&row_sum)[MT][2], float (&lse)[MT][2]) {
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float sum = quad_sum(row_sum[m][r]);
      lse[m][r] = sum > 0.0f ? row_max[m][r] + __log2f(sum) : -CUDART_INF_F;
    }
}

template <int BM, int DV, int NT>
__device__ __forceinline__ void stage_key_split(uint32_t part, int row0, const float (&o)[1][NT][4],
                                                const float (&lse)[1][2]) {
  using Tile = KeySplitTile<BM, DV>;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + lane / 4 + r * 8;
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      const uint32_t at = part + (row * Tile::kRowFloats + n * 8 + (lane % 4) * 2) * 4;
      st_shared_32(at, __float_as_uint(o[0][n][2 * r]));
      st_shared_32(at + 4, __float_as_uint(o[0][n][2 * r + 1]));
    }
    if (lane % 4 == 0)
      st_shared_32(part + Tile::kLse + row * 4, __float_as_uint(lse[0][r]));
  }
}

template <typename T, int BM, int DV, bool SOFTMAX>
__device__ __forceinline__ void combine_key_splits(T *out, uint32_t part, int rows, int thread,
                                                   int threads) {
  using Tile = KeySplitTile<BM, DV>;
  constexpr int kChunks = DV / 4; // 4 floats a thread at a time
  const int splits = int(cluster_size()), rank = int(cluster_rank());
  const int mine = rows > rank ? (rows - rank + splits - 1) / splits : 0;
  for (int i = thread; i < mine * kChunks; i += threads) {
    const int row = rank + (i / kChunks) * splits, col = (i % kChunks) * 4;
    float top = -CUDART_INF_F;
    if constexpr (SOFTMAX)
      for (int k = 0; k < splits; ++k)
        top = fmaxf(top, ld_cluster_f32(cluster_shared_addr(part + Tile::kLse + row * 4, k)));
    float sum[4] = {}, weights = 0.0f;
    for (int k = 0; k < splits; ++k) {
      float weight = 1.0f;
      if constexpr (SOFTMAX) {
        const float lse = ld_cluster_f32(cluster_shared_addr(part + Tile::kLse + row * 4, k));
        weight = lse == -CUDART_INF_F ? 0.0f : fast_exp2(lse - top);
        weights += weight;
      }
      const uint4 x = ld_cluster_128(
          cluster_shared_addr(part + (row * Tile::kRowFloats + col) * 4, k));
      sum[0] += weight * __uint_as_float(x.x);
      sum[1] += weight * __uint_as_float(x.y);
      sum[2] += weight * __uint_as_float(x.z);
      sum[3] += weight * __uint_as_float(x.w);
    }
    const float inverse = !SOFTMAX ? 1.0f : weights > 0.0f ? 1.0f / weights : 0.0f;
    uint2 packed;
    packed.x = pack2<T>(sum[0] * inverse, sum[1] * inverse);
    packed.y = pack2<T>(sum[2] * inverse, sum[3] * inverse);
    *reinterpret_cast<uint2 *>(out + int64_t(row) * DV + col) = packed;
  }
}

} // namespace sketch

#endif // SKETCH_FLASH_HOPPER_CUH
