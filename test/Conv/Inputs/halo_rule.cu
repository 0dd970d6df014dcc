// sketch::halo_stages and sketch::HaloPlan (runtime/include/sketch/conv.cuh) on made-up
// shapes: prints "n c h w k r s pad dil stride -> stages slots tile_rows patch_rows
// row_tiles smem_bytes" for test/Conv/halo-rule.test (BM 128, BN 64, an f16 staging tile);
// then sketch::halo_pays on 132 SMs for 3x3, pad-1 shapes: "pays n c h w k -> yes / no".
#include <cstdio>

#include "sketch/conv.cuh"

static void show(int n, int c, int h, int w, int k, int r, int s, int pad, int dil, int stride) {
  const sketch::ConvShape cs =
      sketch::make_conv_shape(n, c, h, w, k, r, s, stride, stride, pad, pad, dil, dil);
  const int stages = sketch::halo_stages(cs, 128, 64, 16384, 232448, 4);
  const sketch::HaloPlan plan(cs, 128, 64, 16384, stages);
  std::printf("%d %d %d %d %d %d %d %d %d %d -> %d %d %d %d %d %lld\n", n, c, h, w, k, r, s, pad,
              dil, stride, stages, plan.slots, plan.tile_rows, plan.patch_rows, plan.row_tiles,
              stages ? (long long)plan.smem_bytes : 0ll);
}

static void pays(int n, int c, int hw, int k) {
  const sketch::ConvShape cs = sketch::make_conv_shape(n, c, hw, hw, k, 3, 3, 1, 1, 1, 1, 1, 1);
  const sketch::HaloPlan plan(cs, 128, 64, 16384, sketch::halo_stages(cs, 128, 64, 16384, 232448, 4));
  std::printf("pays %d %d %d %d -> %s\n", n, c, hw, k, sketch::halo_pays(cs, plan, 128, 64, 132) ? "yes" : "no");
}

int main() {
  show(64, 64, 56, 56, 64, 3, 3, 1, 1, 1);   // ResNet-50's C64 56x56: 4 stages
  show(2, 64, 28, 28, 64, 3, 3, 1, 1, 1);    // 30 slots: 4 rows a tile
  show(1, 64, 1, 1, 8, 3, 3, 1, 1, 1);       // one pixel: 3 slots, 42 rows a tile
  show(2, 64, 9, 126, 64, 1, 3, 1, 1, 1);    // 126 + 2 = 128 slots: one row a tile
  show(2, 64, 9, 127, 64, 3, 3, 1, 1, 1);    // 129 slots: no
  show(2, 128, 56, 56, 64, 3, 3, 1, 1, 1);   // a 147 KB filter: no room for two patches
  show(2, 128, 9, 11, 64, 1, 3, 0, 1, 1);    // two channel panels
  show(2, 96, 9, 9, 64, 3, 3, 1, 1, 1);      // C % 64 != 0: no
  show(2, 64, 56, 56, 64, 3, 3, 1, 1, 2);    // stride 2: no
  show(2, 64, 20, 20, 64, 3, 3, 2, 2, 1);    // dilation 2: 24 slots, 5 rows + 4 a patch
  show(3, 64, 30, 64, 24, 5, 5, 2, 1, 1);    // 68 slots, 5 rows a patch, but a 200 KB filter: no
  // the shapes measured for the rule (halo rounds against im2col rounds on 132 SMs)
  pays(256, 64, 7, 64);   // 256 tiles (2 rounds) against 98 (1): no
  pays(64, 64, 7, 64);    // 64 against 25, one round each
  pays(256, 64, 14, 64);  // 4 rounds against 3: 12 <= 12
  pays(64, 64, 28, 64);   // 4 against 3
  pays(64, 64, 56, 64);   // 14 against 12
  pays(128, 64, 56, 64);  // 28 against 24
  pays(2048, 64, 7, 64);  // 16 rounds against 6: no
  return 0;
}
