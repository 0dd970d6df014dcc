// sketch::persistent_cost (runtime/include/sketch/host.h; the wave tiles 96, 48, 112, 144 wide) with sketch::tail_split on an H200's
// residency in clusters of 1 to 8 (132, 132, 117, 120, 110, 102, 105, 120; measured
// 2026-12-04): for M x N x K, each tile's cost relative to 128 x 256 and the tile the
// generated host function takes (another only under 19/20 of 128 x 256's), for
// test/Split/persistent-cost.test.
#include <cstdio>

#include "sketch/host.h"

static const int kResident[9] = {0, 132, 132, 117, 120, 110, 102, 105, 120};

static double cost(long m, long n, long k, int bn) {
  const long tiles = sketch::ceil_div(m, 128L) * sketch::ceil_div(n, (long)bn);
  const long k_tiles = sketch::ceil_div(k, 64L);
  sketch::TailSplit split = sketch::tail_split(tiles, k_tiles, 132,
                                               [](int cluster) { return kResident[cluster]; });
  return sketch::persistent_cost(tiles, split, 128, bn, k_tiles);
}

static void show(long m, long n, long k) {
  const int widths[4] = {96, 48, 112, 144};
  const double own = cost(m, n, k, 256);
  double best = own * 19 / 20;
  int pick = 256;
  std::printf("%ld x %ld x %ld:", m, n, k);
  for (int bn : widths) {
    const double c = cost(m, n, k, bn);
    std::printf(" %d %.2f", bn, c / own);
    if (c < best) {
      best = c;
      pick = bn;
    }
  }
  std::printf(" -> 128 x %d\n", pick);
}

int main() {
  // rows where 128 x 112 ran faster than 128 x 256 (bench/labs/tail_slices, H200)
  show(320, 14336, 4096);
  show(384, 14336, 4096);
  show(640, 14336, 4096);
  show(1536, 6144, 4096);
  show(1024, 4864, 2048);
  // rows where 128 x 256 ran faster
  show(512, 14336, 4096);
  show(768, 14336, 4096);
  show(1024, 4096, 14336);
  show(512, 28672, 4096);
  show(384, 28672, 4096);
  // long K: the split tail's fixed cost a smaller part of a round (H100, 2026-12-05)
  show(1152, 4096, 14336);
  // whole rounds of 128 x 256: it stays
  show(4096, 4224, 4096);
  return 0;
}
