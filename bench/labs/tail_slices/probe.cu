// The tail-slices lab's probe (README.md): lab.cu, plus how many blocks of its kernels are
// resident in clusters of 1 to 8 and the split each shape's tail takes (sketch::tail_split).
#include "lab.cu"

namespace {
sketch::PerDevice resident[3][sketch::kMaxTailSlices + 1];

int resident_blocks(int which, int cluster) {
  switch (which) {
  case 0: return sketch::cluster_resident_blocks(tl_f16_default_kernel<true>, 384, 231488, cluster, resident[0][cluster]);
  case 1: return sketch::cluster_resident_blocks(tl_f16_128x112_kernel<true>, 384, 220256, cluster, resident[1][cluster]);
  default: return sketch::cluster_resident_blocks(tl_f16_128x192_kernel<true>, 384, 231504, cluster, resident[2][cluster]);
  }
}
} // namespace

/// Blocks of kernel `which` (0 default, 1 128 x 112, 2 128 x 192) resident in clusters of `cluster`.
extern "C" int lab_resident(int which, int cluster) { return resident_blocks(which, cluster); }

/// The split tail of kernel `which` for `tiles` tiles of `k_tiles`: slices * 100000 + grid.
extern "C" long lab_tail_split(int which, long tiles, long k_tiles) {
  sketch::TailSplit split = sketch::tail_split(tiles, k_tiles, std::max(sketch::sm_count(), 1),
                                               [&](int cluster) { return resident_blocks(which, cluster); });
  return split.slices * 100000L + split.grid;
}
