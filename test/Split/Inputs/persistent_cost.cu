// sketch::persistent_cost (runtime/include/sketch/host.h; the wave tiles 128 x 96, 48, 112,
// 144 and 192 x 128) with sketch::tail_split on an H200's residency in clusters of 1 to 8
// (132, 132, 117, 120, 110, 102, 105, 120; measured 2026-12-04): for M x N x K, each tile's cost relative to 128 x 256 and the tile the
// generated host function takes (another only under 19/20 of 128 x 256's), for
// test/Split/persistent-cost.test.
#include <cstdio>

#include "sketch/host.h"

static const int kResident[9] = {0, 132, 132, 117, 120, 110, 102, 105, 120};

static double cost(long m, long n, long k, int bm, int bn) {
  const long tiles = sketch::ceil_div(m, (long)bm) * sketch::ceil_div(n, (long)bn);
  const long k_tiles = sketch::ceil_div(k, 64L);
  sketch::TailSplit split = sketch::tail_split(tiles, k_tiles, 132,
                                               [](int cluster) { return kResident[cluster]; });
  return sketch::persistent_cost(tiles, split, bm, bn, k_tiles);
}

static void show(long m, long n, long k) {
  const int tiles[5][2] = {{128, 96}, {128, 48}, {128, 112}, {128, 144}, {192, 128}};
  const double own = cost(m, n, k, 128, 256);
  double best = own * 19 / 20;
  int pick_m = 128, pick_n = 256;
  std::printf("%ld x %ld x %ld:", m, n, k);
  for (const auto &tile : tiles) {
    const double c = cost(m, n, k, tile[0], tile[1]);
    std::printf(" %dx%d %.2f", tile[0], tile[1], c / own);
    if (c < best) {
      best = c;
      pick_m = tile[0];
      pick_n = tile[1];
    }
  }
  std::printf(" -> %d x %d\n", pick_m, pick_n);
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
  // M a multiple of 192: 192 x 128 (bench/labs/tall_wave_tiles, H100: 1.09x and 1.10x the
  // tile before)
  show(768, 28672, 4096);
  show(1536, 4096, 4096);
  // whole rounds of 128 x 256, 5.5 rounds of 192 x 128 (H100: 1.14x)
  show(4096, 4224, 4096);
  return 0;
}
