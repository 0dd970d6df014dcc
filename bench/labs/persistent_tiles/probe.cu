// The persistent-tiles lab's probe (README.md): lab.cu, plus the costs the default kernel's
// host function compares (sketch::persistent_cost of each tile with its split tail).
#include "lab.cu"

/// sketch::persistent_cost of 128 x 256, 128 x 96, 128 x 48 and 128 x 112 tiles at M x N x K,
/// into costs[0..3], and each tile's split (slices * 100000 + grid) into splits[0..3].
extern "C" void lab_costs(long m, long n, long k, double *costs, long *splits) {
  const int widths[4] = {256, 96, 48, 112};
  const int64_t k_tiles = sketch::ceil_div(k, 64);
  for (int i = 0; i < 4; ++i) {
    const int64_t tiles = sketch::ceil_div(m, 128) * sketch::ceil_div(n, widths[i]);
    const sketch::TailSplit split =
        i == 0 ? pt_k_default_tail_split(tiles, k_tiles)
        : i == 1 ? pt_k_default_128x96_tail_split(tiles, k_tiles)
        : i == 2 ? pt_k_default_128x48_tail_split(tiles, k_tiles)
                 : pt_k_default_128x112_tail_split(tiles, k_tiles);
    costs[i] = sketch::persistent_cost(tiles, split, 128, widths[i], k_tiles);
    splits[i] = split.slices * 100000L + split.grid;
  }
}
