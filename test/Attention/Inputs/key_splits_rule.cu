// sketch::key_splits (runtime/include/sketch/host.h) on made-up devices: prints
// "blocks key_tiles resident2 resident4 resident8 -> splits" for
// test/Attention/key-splits-rule.test.
#include <cstdio>

#include "sketch/host.h"

static void show(long blocks, long key_tiles, int pairs, int quads, int octets) {
  int splits = sketch::key_splits(blocks, key_tiles, [&](int cluster) {
    return cluster == 2 ? pairs : cluster == 4 ? quads : octets;
  });
  std::printf("%ld %ld %d %d %d -> %d\n", blocks, key_tiles, pairs, quads, octets, splits);
}

int main() {
  show(32, 32, 132, 132, 128);   // decode, 32 heads: quads (8 x 32 = 256 > 128)
  show(16, 32, 132, 132, 128);   // 16 heads: octets
  show(16, 12, 132, 132, 128);   // 12 key tiles: pairs (a quad would keep 3 a block)
  show(16, 16, 132, 132, 128);   // 16 key tiles: quads of 4
  show(16, 7, 132, 132, 128);    // 7 key tiles: no split
  show(66, 32, 132, 132, 128);   // 66 row tiles: pairs
  show(67, 32, 132, 132, 128);   // 67: a split would not fit one wave
  show(16, 32, 132, 0, 0);       // only pairs resident
  show(16, 32, 0, 0, 0);         // no clusters resident: no split
  show(1, 1000, 133, 132, 120);  // one row tile: octets
  show(0, 32, 132, 132, 128);    // nothing to do
  return 0;
}
