// sketch/host.h - small host-side helpers of the generated host functions.
//
//   ceil_div(a, b)                 tiles of size b covering a (host and device)
//   FastDivmod(d)                  n / d and n % d on the device by a multiply-shift the host
//                                  computes (n < 2^31): ptxas recomputes it where registers
//                                  are short, as it would not an integer division
//   aligned_to(ptr, bytes)         ptr is a multiple of `bytes` (null counts as aligned)
//   all_nonnull(p, ...)            no pointer is null
//   valid_pointer(p, count)        p is not null, or the tensor has no elements
//   all_nonnegative(n, ...)        no size is negative
//   all_multiple_of(k, n, ...)     every size is a multiple of k
//   allow_dynamic_smem(kernel, b)  lets `kernel` use b bytes of dynamic shared memory
//                                  (cudaFuncSetAttribute, needed above 48 KB)
//   sm_count()                     the current device's multiprocessors, read once a device
//   split_slices(sms, tiles, k_tiles, most, min_k_tiles)
//                                  `split_k auto`'s K slices: min(most, sms / tiles,
//                                  k_tiles / min_k_tiles), at least 1
//   wave_rows(m, n, batch, sms, bm, bn)
//                                  operand rows a BM x BN tiling moves an SM:
//                                  ceil(tiles / sms) x (bm + bn)
//   cluster_resident_blocks(kernel, threads, smem, cluster, cache)
//                                  blocks of `kernel` resident at once in clusters of
//                                  `cluster` (the driver's occupancy query), cached a device
//   tail_split(tiles, k_tiles, sms, resident)
//                                  a persistent kernel's split tail: the K slices (2 to
//                                  kMaxTailSlices) of the tiles past its last whole round,
//                                  and its grid
//   persistent_cost(tiles, split, bm, bn, k_tiles)
//                                  a persistent launch's time in rounds of its tiles (the
//                                  split tail's share plus its fixed cost) times a tile's
//                                  cost, bm x bn + kTileEdgeCost x (bm + bn)
//   key_splits(blocks, key_tiles, resident)
//                                  attention's key splits: the most blocks of a cluster (2, 4
//                                  or 8) that share each of `blocks` row tiles' keys in one
//                                  wave, at least kMinSplitKeyTiles key tiles a block; else 1
//   launch_kernel(kernel, grid, block, smem, cluster, dependent, stream, args...)
//                                  a launch in clusters of `cluster` blocks along x; with
//                                  `dependent`, a programmatic dependent launch (the kernel
//                                  must start with grid_dependency_wait(), wgmma.cuh)
#ifndef SKETCH_HOST_H
#define SKETCH_HOST_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <cuda_runtime.h>

namespace sketch {

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Division by a run-time constant d >= 1 for dividends 0 <= n < 2^31:
/// q = (umulhi(n, mul) + n) >> shift (Granlund-Montgomery, the round-up multiplier).
struct FastDivmod {
  int divisor;
  uint32_t mul, shift;

  FastDivmod() = default;
  /// d < 1 is taken as 1 (such a divisor is never used: nothing is reduced).
  __host__ explicit FastDivmod(int d) : divisor(d < 1 ? 1 : d) {
    d = divisor;
    shift = 0;
    while ((1ull << shift) < static_cast<uint64_t>(d))
      ++shift;
    const uint64_t two32 = 1ull << 32;
    mul = static_cast<uint32_t>(two32 * ((1ull << shift) - d) / d + 1);
  }
  __device__ __forceinline__ int div(int n) const {
    return static_cast<int>((__umulhi(static_cast<uint32_t>(n), mul) + static_cast<uint32_t>(n)) >>
                            shift);
  }
  /// quotient, and n - quotient * d in `rem`.
  __device__ __forceinline__ int divmod(int n, int &rem) const {
    const int q = div(n);
    rem = n - q * divisor;
    return q;
  }
};

inline bool aligned_to(const void *ptr, size_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

inline bool all_nonnull() { return true; }
template <typename P, typename... Rest>
inline bool all_nonnull(const P *ptr, const Rest *...rest) {
  return ptr != nullptr && all_nonnull(rest...);
}

inline bool valid_pointer(const void *ptr, int64_t count) { return ptr != nullptr || count == 0; }

inline bool all_nonnegative() { return true; }
template <typename... Rest>
inline bool all_nonnegative(int64_t n, Rest... rest) {
  return n >= 0 && all_nonnegative(rest...);
}

inline bool all_multiple_of(int64_t) { return true; }
template <typename... Rest>
inline bool all_multiple_of(int64_t k, int64_t n, Rest... rest) {
  return n % k == 0 && all_multiple_of(k, rest...);
}

/// Raises `kernel`'s dynamic shared-memory limit to `bytes` when it exceeds the
/// default 48 KB; returns the CUDA error (cudaSuccess when nothing was needed).
template <typename Kernel>
inline cudaError_t allow_dynamic_smem(Kernel kernel, int bytes) {
  if (bytes <= 48 * 1024)
    return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

/// A value of each device (up to 64), computed by `read(device)` for the current device the
/// first time it is asked for and cached; 0 (not cached) when `read` or cudaGetDevice fails.
class PerDevice {
public:
  template <class Read> int get(Read read) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices)
      return 0;
    int value = values_[device].load(std::memory_order_relaxed);
    if (value == 0) {
      value = read(device);
      values_[device].store(value, std::memory_order_relaxed);
    }
    return value;
  }

private:
  static constexpr int kDevices = 64;
  std::atomic<int> values_[kDevices] = {};
};

/// Attribute `attr` of `device`, 0 when the driver cannot read it.
inline int device_attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  return cudaDeviceGetAttribute(&value, attr, device) == cudaSuccess ? value : 0;
}

/// The current device's multiprocessor count, read from the driver once a device and
/// cached; 0 when it cannot be read (the split-K rule then keeps the kernel's own tile).
inline int sm_count() {
  static PerDevice counts;
  return counts.get(
      [](int device) { return device_attribute(cudaDevAttrMultiProcessorCount, device); });
}

/// The current device's L2 cache size in bytes, read from the driver once a device and
/// cached; 0 when it cannot be read.
inline int l2_cache_bytes() {
  static PerDevice sizes;
  return sizes.get([](int device) { return device_attribute(cudaDevAttrL2CacheSize, device); });
}

/// How many heads a causal attention kernel's blocks walk together (row tiles the longest
/// first across them; the grid's x), with an L2 of `l2_bytes`: as many as keep their K and
/// V (`kv_bytes` a head) within half the L2, at least 1 and enough for at most 65535 groups
/// (grid z), then evened out: a divisor of `heads` down to half that many where one is (64
/// tries, not below the fewest), else the groups' ceiling share, so the last group misses
/// fewer heads than there are groups.
inline int causal_head_group_for(int64_t l2_bytes, int64_t kv_bytes, int64_t heads) {
  int64_t group = kv_bytes > 0 ? l2_bytes / 2 / kv_bytes : heads;
  const int64_t fewest = ceil_div(heads, 65535);
  group = group < fewest ? fewest : group > heads ? heads : group;
  group = ceil_div(heads, ceil_div(heads, group)); // the groups' ceiling share
  for (int64_t g = group, tries = 0; g * 2 >= group && g >= fewest && tries < 64; --g, ++tries)
    if (heads % g == 0)
      return int(g);
  return int(group);
}

/// causal_head_group_for the current device's L2 (read once a device).
inline int causal_head_group(int64_t kv_bytes, int64_t heads) {
  return causal_head_group_for(l2_cache_bytes(), kv_bytes, heads);
}

/// The current device's compute capability as 10 * major + minor (90 on an H100), read
/// from the driver once a device and cached; 0 when it cannot be read. The host function
/// of a file built for several architectures picks its variant with it.
inline int compute_capability() {
  static PerDevice capabilities;
  return capabilities.get([](int device) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      return 0;
    return 10 * major + minor;
  });
}

/// Whether the code the current device runs compiled a variant's kernels (not to a trap):
/// `flag` is the variant's `__device__ int`, 1 in the nvcc passes that compile them and 0 in
/// the others (a file built without the variant's -gencode). Read once a device
/// (cudaMemcpyFromSymbol) and cached in `cache`; false when the device has no code at all.
inline bool variant_built(const void *flag, PerDevice &cache) {
  constexpr int kBuilt = 1, kNotBuilt = 2;
  return cache.get([flag](int) {
    int built = 0;
    if (cudaMemcpyFromSymbol(&built, flag, sizeof built) != cudaSuccess) {
      (void)cudaGetLastError(); // no image for this device: not an error of the caller's
      return kNotBuilt;
    }
    return built ? kBuilt : kNotBuilt;
  }) == kBuilt;
}

/// The K slices `split_k auto` gives a split form of `tiles` blocks (docs/backend.md):
/// as many as keep the grid within `sms` blocks (the generated call passes 3/4 of the
/// SMs: the share the kernel's own grid may leave idle), at most `most` (a cluster's blocks)
/// and at most k_tiles / min_k_tiles (each slice at least that many k-tiles); at least 1.
inline int split_slices(int sms, int64_t tiles, int64_t k_tiles, int most, int min_k_tiles) {
  int64_t slices = most;
  if (tiles > 0 && sms / tiles < slices)
    slices = sms / tiles;
  if (k_tiles / min_k_tiles < slices)
    slices = k_tiles / min_k_tiles;
  return slices < 1 ? 1 : (int)slices;
}

/// The operand rows (of A and B, per k step) an SM loads for an m x n (x batch) output
/// in tiles of bm x bn, all SMs busy: its waves of tiles, ceil(tiles / sms), each loading
/// bm + bn rows. `split_k auto` takes the tile with the fewer (docs/backend.md).
inline int64_t wave_rows(int64_t m, int64_t n, int64_t batch, int sms, int bm, int bn) {
  const int64_t tiles = ceil_div(m, bm) * ceil_div(n, bn) * batch;
  return ceil_div(tiles, (int64_t)(sms < 1 ? 1 : sms)) * (bm + bn);
}

/// How many blocks of `kernel` (`threads` a block, `smem` bytes of dynamic shared memory)
/// run at once when launched in clusters of `cluster` blocks: the driver's
/// cudaOccupancyMaxActiveClusters times `cluster`, asked once a device (after allowing the
/// shared memory, which the answer depends on) and cached in `cache`; 0 when the driver
/// cannot tell.
template <typename Kernel>
inline int cluster_resident_blocks(Kernel kernel, int threads, int smem, int cluster,
                                   PerDevice &cache) {
  int blocks = cache.get([&](int) {
    if (allow_dynamic_smem(kernel, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(cluster);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.attrs = &attribute;
    config.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
      (void)cudaGetLastError(); // not an error of the caller's: the tail is not split
      return -1;
    }
    return clusters > 0 ? clusters * cluster : -1;
  });
  return blocks > 0 ? blocks : 0;
}

/// A persistent kernel's split tail (docs/backend.md): `slices` blocks (a cluster) share
/// each tile past the kernel's last whole round of `grid` tiles, each summing 1 / slices
/// of its k-tiles.
struct TailSplit {
  int slices = 1;
  int64_t grid = 0;
};

/// The split tail of `tiles` tiles of `k_tiles` k-tiles each on `sms` multiprocessors,
/// a block each; `resident(c)` is how many blocks run at once in clusters of c. Slices
/// 2 to kMaxTailSlices where the tail tiles, split, fit one round of the grid and each
/// slice keeps at least kMinTailKTiles k-tiles: of those, the one whose blocks run the
/// fewest k-tiles (whole rounds, then ceil(k_tiles / slices)), if fewer than whole tiles
/// alone; ties keep fewer slices; else one slice (no clusters).
/// SKETCH_TAIL_SPLIT=0 in the environment (read once) keeps every tail whole: test/gpu/
/// sanitize.sh's racecheck pass, which did not complete these kernels' cluster launches.
constexpr int kMinTailKTiles = 4;
constexpr int kMaxTailSlices = 8; // a portable cluster's blocks
inline bool tail_split_allowed() {
  static const bool allowed = [] {
    const char *value = std::getenv("SKETCH_TAIL_SPLIT");
    return !(value && value[0] == '0');
  }();
  return allowed;
}
template <typename Resident>
inline TailSplit tail_split(int64_t tiles, int64_t k_tiles, int sms, Resident resident) {
  TailSplit best{1, tiles < sms ? tiles : sms};
  if (!tail_split_allowed())
    return best;
  int64_t best_k_tiles = ceil_div(tiles, sms) * k_tiles; // a block's, over the launch
  for (int slices = 2; slices <= kMaxTailSlices && k_tiles >= (int64_t)slices * kMinTailKTiles;
       ++slices) {
    int fit = resident(slices);
    int64_t grid = (fit < sms ? fit : sms) / slices * slices;
    if (grid == 0)
      continue;
    int64_t tail = tiles % grid;
    if (tail == 0 || tail * slices > grid)
      continue;
    int64_t block_k_tiles = (tiles - tail) / grid * k_tiles + ceil_div(k_tiles, slices);
    if (block_k_tiles < best_k_tiles) {
      best = TailSplit{slices, tiles >= grid ? grid : tail * slices};
      best_k_tiles = block_k_tiles;
    }
  }
  return best;
}

/// A persistent launch's time, to compare tiles (docs/backend.md, "Persistent tiles"): its
/// whole rounds of `split.grid` blocks, then, split along K, 1 / slices of a round plus the
/// split tail's fixed cost (the partial tile's prologue and the cluster reduction), or a
/// whole round for an unsplit remainder; times a tile's cost, bm x bn multiply-adds a k step
/// plus kTileEdgeCost for each of its bm + bn operand rows. Fitted on the H200 (2026-12-04,
/// K = 2048 and 4096): a round of 128 x 112 tiles ran 1.12 x 14336 / 32768 of a 128 x 256
/// round, and a split tail about a quarter of a round more than its share; a fixed cost is
/// a smaller part of a longer round, so past kTailSplitFitKTiles k-tiles that quarter
/// shrinks with K (H100, 2026-12-05: at 1152 x 4096 x 14336 128 x 256 split in 4 ran 13%
/// faster than 128 x 96, which a quarter of a round would have taken).
constexpr double kTailSplitRoundCost = 0.25;
constexpr int64_t kTailSplitFitKTiles = 64;
constexpr double kTileEdgeCost = 33.0;
inline double persistent_cost(int64_t tiles, TailSplit split, int bm, int bn, int64_t k_tiles) {
  const int64_t grid = split.grid < 1 ? 1 : split.grid;
  double rounds = (double)ceil_div(tiles, grid);
  if (split.slices > 1) {
    const int64_t tail = tiles % grid;
    const double fixed = k_tiles > kTailSplitFitKTiles
                             ? kTailSplitRoundCost * kTailSplitFitKTiles / (double)k_tiles
                             : kTailSplitRoundCost;
    rounds = (double)((tiles - tail) / grid) + 1.0 / split.slices + fixed;
  }
  return rounds * ((double)bm * bn + kTileEdgeCost * (bm + bn));
}

/// Attention's key splits (docs/backend.md): a grid of `blocks` row tiles (one block an SM)
/// short of the SMs leaves most of them idle, so each row tile's `key_tiles` may be shared
/// by the blocks of a cluster. The most blocks a cluster, 2, 4 or 8, for which every cluster
/// is resident at once (`resident(cluster)`: cluster_resident_blocks) and each block keeps
/// at least kMinSplitKeyTiles key tiles; 1 (no split) where none does. The same sizes on the
/// same device give the same splits, so the same bits.
constexpr int64_t kMinSplitKeyTiles = 4;
template <typename Resident>
inline int key_splits(int64_t blocks, int64_t key_tiles, Resident resident) {
  int splits = 1;
  if (!tail_split_allowed()) // SKETCH_TAIL_SPLIT=0: no splits over clusters
    return splits;
  for (int cluster = 2; cluster <= 8 && key_tiles >= cluster * kMinSplitKeyTiles; cluster *= 2)
    if (blocks * cluster <= resident(cluster))
      splits = cluster;
  return splits;
}

/// Launches `kernel` on `grid` (grid.x a multiple of `cluster`) in thread-block clusters
/// of `cluster` blocks along x (sm_90); returns the launch's error. A cluster of one block
/// is a plain launch (each block is then its own cluster, without cluster scheduling).
/// `dependent`: the launch may begin while the stream's previous kernel finishes (sm_90
/// programmatic stream serialization); the kernel's grid_dependency_wait() then holds it
/// until that kernel's writes are visible.
template <typename... Params, typename... Args>
inline cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, int smem,
                                 int cluster, bool dependent, cudaStream_t stream,
                                 Args &&...args) {
  cudaLaunchAttribute attributes[2];
  unsigned count = 0;
  if (cluster > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = cluster;
    attributes[count].val.clusterDim.y = 1;
    attributes[count].val.clusterDim.z = 1;
    ++count;
  }
  if (dependent) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count].val.programmaticStreamSerializationAllowed = 1;
    ++count;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

} // namespace sketch

#endif // SKETCH_HOST_H
