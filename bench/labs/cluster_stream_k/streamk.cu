// The cluster stream-K lab (README.md): a projection Y[M, N] = X[M, K] W[N, K]^T (f16, f32
// accumulators) whose blocks share the k-tiles of a few 128 x 128 tiles evenly inside a
// thread-block cluster, the partial tiles summed over distributed shared memory. Written
// from the generated persistent kernel (sk_base in README.md); lab limits: M and N
// multiples of 128, K of 64, 16-byte aligned tensors, no epilogue.
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "sketch/copy.cuh"
#include "sketch/host.h"
#include "sketch/mma.cuh"
#include "sketch/split.cuh"
#include "sketch/tma.cuh"
#include "sketch/wgmma.cuh"

namespace {

constexpr int BM = 128, BN = 128, BK = 64, STAGES = 4;
constexpr int THREADS = 256;  // two consumer warpgroups, after the producer warpgroup
constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2;
constexpr int LD = BN + 8;  // a partial tile's row (floats), padded against bank conflicts
constexpr int PARTIAL_BYTES = BM * LD * 4;
// 1024 for alignment, the pipeline, the stashed partial tile, the barriers
constexpr int STASH_OFFSET = STAGES * (A_STAGE_BYTES + B_STAGE_BYTES);
constexpr int BARS_OFFSET = STASH_OFFSET + PARTIAL_BYTES;
constexpr int SMEM_BYTES = 1024 + BARS_OFFSET + 16 * STAGES;

/// The k-tiles [begin, end) of the cluster's tiles that block `rank` of `slices` sums:
/// an even share of tiles * k_tiles, contiguous in (tile, k-tile) order.
struct Share {
  int begin, end;
  __device__ Share(int rank, int slices, int tiles, int k_tiles)
      : begin((int)((int64_t)rank * tiles * k_tiles / slices)),
        end((int)((int64_t)(rank + 1) * tiles * k_tiles / slices)) {}
  /// The tile whose partial this block stashes (its first piece, where it begins inside a
  /// tile and goes on to another), else -1.
  __device__ int stashed(int k_tiles) const {
    const int first = begin / k_tiles;
    return begin % k_tiles != 0 && end > (first + 1) * k_tiles ? first : -1;
  }
  /// The tile whose partial this block leaves in its pipeline buffers (its last piece,
  /// where that is not a whole tile), else -1.
  __device__ int staged(int k_tiles) const {
    if (end <= begin)
      return -1;
    const int last = (end - 1) / k_tiles;
    return end % k_tiles != 0 || last * k_tiles < begin ? last : -1;
  }
};

__global__ void __launch_bounds__(384, 1)
    csk_kernel(__half *Y, int M, int N, int K, int tiles_per_cluster,
               const __grid_constant__ CUtensorMap a_map,
               const __grid_constant__ CUtensorMap b_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t smem_base = sketch::smem_addr(smem);
  const uint32_t a_smem = (smem_base + 1023) & ~1023u;
  const uint32_t b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const uint32_t stash = a_smem + STASH_OFFSET, bars = a_smem + BARS_OFFSET;
  // tiles column by column (M fastest): the tiles that share a W panel go to neighbouring
  // blocks at about the same k-tile, so the panel comes from DRAM once
  const int k_tiles = K / BK, tiles_m = M / BM;
  const int tiles = tiles_m * (N / BN);
  const int slices = (int)sketch::cluster_size(), rank = (int)sketch::cluster_rank();
  const int tile0 = (int)(blockIdx.x / slices) * tiles_per_cluster;  // the cluster's first
  const int cluster_tiles = max(0, min(tiles_per_cluster, tiles - tile0));
  const Share share(rank, slices, cluster_tiles, k_tiles);
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
      for (int u = share.begin; u < share.end;) {
        const int tile = u / k_tiles, k_end = min(k_tiles, share.end - tile * k_tiles);
        const int m0 = (tile0 + tile) % tiles_m * BM, n0 = (tile0 + tile) / tiles_m * BN;
        for (int kt = u - tile * k_tiles; kt < k_end; ++kt, ++k_step) {
          const uint32_t full = bars + 8 * (k_step % STAGES);
          if (k_step >= STAGES)
            sketch::mbarrier_wait(bars + 8 * (STAGES + k_step % STAGES), (k_step / STAGES - 1) & 1);
          sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);
          sketch::tma_load_2d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &a_map, kt * BK, m0, full);
          sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &b_map, kt * BK, n0, full);
        }
        u = tile * k_tiles + k_end;
      }
    }
    return;  // exited threads count as arrived at the cluster barriers
  }
  sketch::setmaxnreg_inc<232>();
  const int tid = (int)threadIdx.x - 128, lane = tid % 32, warp = tid / 32, wg = warp / 4;
  const int g = lane / 4, t = lane % 4;  // accumulator rows g, g + 8; columns 2t, 2t + 1
  constexpr int NI = BN / 8, KI = BK / 16;
  float acc[NI][4];
  // this thread's accumulators as f32 pairs of a partial tile at `base` (shared memory)
  auto stage_partial = [&](uint32_t base) {
    #pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp * 16 + g + h * 8, c = ni * 8 + 2 * t;
        float2 *at = reinterpret_cast<float2 *>(smem + (base - smem_base) + (r * LD + c) * 4);
        *at = make_float2(acc[ni][2 * h], acc[ni][2 * h + 1]);
      }
    }
  };
  int k_step = 0;
  const int stashed = share.stashed(k_tiles), staged = share.staged(k_tiles);
  for (int u = share.begin; u < share.end;) {
    const int tile = u / k_tiles, k_end = min(k_tiles, share.end - tile * k_tiles);
    const int k_begin = u - tile * k_tiles;
    #pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      #pragma unroll
      for (int e = 0; e < 4; ++e) acc[ni][e] = 0.0f;
    }
    for (int kt = k_begin; kt < k_end; ++kt, ++k_step) {
      sketch::mbarrier_wait(bars + 8 * (k_step % STAGES), (k_step / STAGES) & 1);
      const uint32_t a_stage = a_smem + (k_step % STAGES) * A_STAGE_BYTES;
      const uint32_t b_stage = b_smem + (k_step % STAGES) * B_STAGE_BYTES;
      sketch::wgmma_fence_operands(acc);
      sketch::wgmma_fence();
      #pragma unroll
      for (int kk = 0; kk < KI; ++kk) {
        const uint64_t desc_a = sketch::wgmma_desc_sw128(a_stage + wg * 64 * 128 + kk * 32, 16, 1024);
        const uint64_t desc_b = sketch::wgmma_desc_sw128(b_stage + kk * 32, 16, 1024);
        sketch::wgmma_m64n128k16<__half, 0, 0>(acc, desc_a, desc_b);
      }
      sketch::wgmma_commit();
      sketch::wgmma_fence_operands(acc);
      sketch::wgmma_wait<1>();
      sketch::wgmma_fence_operands(acc);
      if (kt > k_begin) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    }
    sketch::wgmma_wait<0>();
    sketch::wgmma_fence_operands(acc);
    sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));
    u = tile * k_tiles + k_end;
    if (tile == stashed) {
      stage_partial(stash);
    } else if (tile != staged) {  // a whole tile: stored from the registers
      const int m0 = (tile0 + tile) % tiles_m * BM, n0 = (tile0 + tile) / tiles_m * BN;
      #pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = m0 + warp * 16 + g + h * 8, c = n0 + ni * 8 + 2 * t;
          *reinterpret_cast<uint32_t *>(Y + (int64_t)r * N + c) =
              sketch::pack2<__half>(acc[ni][2 * h], acc[ni][2 * h + 1]);
        }
      }
    }
  }
  // the last piece's partial into the pipeline buffers, once every consumer is done with them
  sketch::named_barrier_sync(1, THREADS);
  if (staged >= 0)
    stage_partial(a_smem);
  sketch::cluster_sync();  // every block's partial tiles are complete
  // each partial tile of this block: its share of the tile's 16-byte output chunks, summed
  // over the tile's blocks in rank order (the same bits every run)
  for (int which = 0; which < 2; ++which) {
    const int tile = which == 0 ? stashed : staged;
    if (tile < 0)
      continue;
    int first = rank, last = rank;  // the blocks that hold a piece of the tile
    while (first > 0 && Share(first - 1, slices, cluster_tiles, k_tiles).end > tile * k_tiles)
      --first;
    while (last + 1 < slices && Share(last + 1, slices, cluster_tiles, k_tiles).begin < (tile + 1) * k_tiles)
      ++last;
    const int count = last - first + 1, chunks = BM * BN / 8;
    const int m0 = (tile0 + tile) % tiles_m * BM, n0 = (tile0 + tile) / tiles_m * BN;
    uint32_t piece[sketch::kMaxTailSlices];
    #pragma unroll
    for (int q = 0; q < sketch::kMaxTailSlices; ++q) {
      if (q < count) {
        const Share other(first + q, slices, cluster_tiles, k_tiles);
        const uint32_t local = other.stashed(k_tiles) == tile ? stash : a_smem;
        piece[q] = sketch::cluster_shared_addr(local, first + q);
      }
    }
    const int mine = rank - first;
    #pragma unroll 1
    for (int idx = mine * chunks / count + tid; idx < (mine + 1) * chunks / count; idx += THREADS) {
      const int r = idx / (BN / 8), c = idx % (BN / 8) * 8;
      const uint32_t at = (r * LD + c) * 4;
      float sum[8] = {};
      #pragma unroll
      for (int q = 0; q < sketch::kMaxTailSlices; ++q) {
        if (q < count) {
          sketch::add_f32x4(sum, sketch::ld_cluster_128(piece[q] + at));
          sketch::add_f32x4(sum + 4, sketch::ld_cluster_128(piece[q] + at + 16));
        }
      }
      sketch::st_global_128(Y + (int64_t)(m0 + r) * N + n0 + c,
                            make_uint4(sketch::pack2<__half>(sum[0], sum[1]), sketch::pack2<__half>(sum[2], sum[3]),
                                       sketch::pack2<__half>(sum[4], sum[5]), sketch::pack2<__half>(sum[6], sum[7])));
    }
  }
  sketch::cluster_sync();  // no block leaves while another reads its partial tiles
}

int forced_slices = 0, forced_tiles = 0;

/// The tiles a cluster of `c` blocks takes so that every cluster is resident at once
/// (cudaOccupancyMaxActiveClusters), 0 where none is.
int64_t tiles_a_cluster(int64_t tiles, int c) {
  static sketch::PerDevice resident[sketch::kMaxTailSlices + 1];
  const int clusters = sketch::cluster_resident_blocks(csk_kernel, 384, SMEM_BYTES, c, resident[c]) / c;
  return clusters > 0 ? (tiles + clusters - 1) / clusters : 0;
}

/// The cluster size and tiles a cluster for `tiles` tiles: of cluster sizes 1 to 8, the
/// least tiles a block (t / c); ties keep the smaller cluster.
void pick(int64_t tiles, int *slices, int *per_cluster) {
  double best = 1e30;
  *slices = 1;
  *per_cluster = (int)tiles;
  for (int c = 1; c <= sketch::kMaxTailSlices; ++c) {
    const int64_t t = tiles_a_cluster(tiles, c);
    if (t > 0 && (double)t / c < best - 1e-9) {
      best = (double)t / c;
      *slices = c;
      *per_cluster = (int)t;
    }
  }
}

} // namespace

/// tiles_a_cluster at M x N for clusters of c blocks.
extern "C" int csk_fit(int64_t M, int64_t N, int c) { return (int)tiles_a_cluster((M / BM) * (N / BN), c); }

/// Forces the cluster size and tiles a cluster (0, 0: the rule's).
extern "C" void csk_force(int slices, int per_cluster) {
  forced_slices = slices;
  forced_tiles = per_cluster;
}

/// The rule's choice at M x N (f16 128 x 128 tiles): slices * 1000 + tiles a cluster.
extern "C" int csk_pick(int64_t M, int64_t N) {
  int slices = 0, per_cluster = 0;
  pick((M / BM) * (N / BN), &slices, &per_cluster);
  return slices * 1000 + per_cluster;
}

extern "C" cudaError_t csk_f16(const __half *X, const __half *W, __half *Y, int64_t M, int64_t K,
                               int64_t N, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0 || M % BM || N % BN || K % BK || M >= (1 << 30) ||
      N >= (1 << 30) || K >= (1 << 24) || !sketch::aligned_to(X, 16) ||
      !sketch::aligned_to(W, 16) || !sketch::aligned_to(Y, 16))
    return cudaErrorInvalidValue;
  const int64_t tiles = (M / BM) * (N / BN);
  int slices = forced_slices, per_cluster = forced_tiles;
  if (slices <= 0)
    pick(tiles, &slices, &per_cluster);
  const int64_t clusters = (tiles + per_cluster - 1) / per_cluster;
  CUtensorMap a_map{}, b_map{};
  if (!sketch::encode_tensor_map_2d(&a_map, X, K, M, K * 2, 64, 128, 2) ||
      !sketch::encode_tensor_map_2d(&b_map, W, K, N, K * 2, 64, 128, 2))
    return cudaErrorInvalidValue;
  cudaError_t err = sketch::allow_dynamic_smem(csk_kernel, SMEM_BYTES);
  if (err != cudaSuccess)
    return err;
  return sketch::launch_kernel(csk_kernel, dim3((unsigned)(clusters * slices)), 384, SMEM_BYTES,
                               slices, false, stream, Y, (int)M, (int)N, (int)K, per_cluster,
                               a_map, b_map);
}
