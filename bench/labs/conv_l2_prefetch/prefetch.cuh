// Lab (README.md): the producer thread asks L2 for the next tile's im2col boxes while the
// current tile's later (mostly L2-hit) k-tiles load, so that DRAM reads spread over the tile
// instead of bunching at every round's start.
namespace lab_pf {

__device__ __forceinline__ void prefetch_im2col_4d(const CUtensorMap *map, int c, int w, int h, int n,
                                                   uint16_t off_w, uint16_t off_h) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.im2col [%0, {%1, %2, %3, %4}], {%5, %6};\n" ::
                   "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "h"(off_w), "h"(off_h)
               : "memory");
}

/// At k-tile kt of a tile (kt >= start), the next tile's (first output pixel m0) k-tiles
/// (kt - start) per .. (kt - start + 1) per - 1, per = ceil(k_tiles / (k_tiles - start)).
__device__ __forceinline__ void next_tile(const CUtensorMap *map, const sketch::ConvShape &shape, int64_t m0,
                                          int kt, int k_tiles, int start, int bk) {
  if (start < 0 || kt < start) return;
  const int per = (k_tiles + (k_tiles - start) - 1) / (k_tiles - start);
  const int pq = shape.p * shape.q;
  const int x_n = (int)(m0 / pq), x_pq = (int)(m0 % pq);
  const int x_h = x_pq / shape.q * shape.stride_h - shape.pad_h;
  const int x_w = x_pq % shape.q * shape.stride_w - shape.pad_w;
  for (int j = (kt - start) * per; j < min((kt - start + 1) * per, k_tiles); ++j) {
    const int k = j * bk, tap = k / shape.c, c0 = k - tap * shape.c;
    const int r = tap / shape.s, s = tap - r * shape.s;
    prefetch_im2col_4d(map, c0, x_w, x_h, x_n, (uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h));
  }
}

/// The k-tile from which the next tile is prefetched: LAB_PF eighths of the tile (default 4);
/// -1 (LAB_PF=off) for none.
inline int start(int64_t depth, int bk) {
  const char *v = getenv("LAB_PF");
  if (v && !strcmp(v, "off")) return -1;
  const int eighths = v ? atoi(v) : 4;
  const int k_tiles = (int)((depth + bk - 1) / bk);
  return std::min(k_tiles - 1, k_tiles * eighths / 8);
}

}  // namespace lab_pf
