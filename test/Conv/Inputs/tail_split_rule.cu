// sketch::tail_split (runtime/include/sketch/host.h) on made-up devices: prints
// "tiles k_tiles sms resident2 resident_other -> slices grid" for test/Conv/tail-split-rule.test.
#include <cstdio>

#include "sketch/host.h"

static void show(long tiles, long k_tiles, int sms, int pairs, int others) {
  sketch::TailSplit split = sketch::tail_split(tiles, k_tiles, sms, [&](int cluster) {
    return cluster == 2 ? pairs : others;
  });
  std::printf("%ld %ld %d %d %d -> %d %ld\n", tiles, k_tiles, sms, pairs, others, split.slices,
              (long)split.grid);
}

int main() {
  show(196, 36, 132, 132, 132); // one whole round and 64 tiles: pairs
  show(100, 72, 132, 132, 132); // 100 tiles on 132 SMs: split, they would not fit one round
  show(8, 18, 132, 132, 132);   // few tiles: 4 slices (5 would keep under 4 k-tiles)
  show(8, 9, 132, 132, 132);    // 9 k-tiles: at most 2 slices of 4
  show(8, 7, 132, 132, 132);    // 7 k-tiles: no split
  show(264, 36, 132, 132, 132); // whole rounds only
  show(196, 36, 132, 0, 0);     // no clusters resident: no split
  show(196, 36, 132, 120, 120); // 60 resident pairs: grid 120, tail 76 > 60
  show(150, 36, 132, 128, 128); // 5 slices: grid 125, tail 25 (36 + 8 k-tiles a block)
  show(168, 64, 132, 132, 132); // 384 x 14336: tail 36 in threes (64 + 22 k-tiles), not pairs
  show(152, 32, 132, 132, 132); // tail 20 in sixes (32 + 6), 7 would not fit one round
  show(0, 36, 132, 132, 132);   // nothing to do
  show(1, 1000, 133, 133, 133); // an odd SM count: one tile over the most slices, 8
  return 0;
}
