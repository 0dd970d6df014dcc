// `split_k auto`'s fill forms against the split tile's own split form (docs/backend.md
// "Split-K GEMM"): over a sweep of sizes, batches and SM counts, wherever the form for the
// rows (64 x 64 tiles up to 64 rows, and up to 128 where their blocks outnumber those of
// 128 x 64, which serve the rest; slices over all the SMs)
// takes one slice, the 64 x 128 form (slices over half the SMs) takes one too, so the
// generated code need not have it. Prints the cases checked and any that break this, and
// a few slice counts, for test/Split/fill-forms-rule.test.
#include <cstdio>

#include "sketch/host.h"

static int64_t tiles_of(int64_t m, int64_t n, int64_t batch, int bm, int bn) {
  return sketch::ceil_div(m, (int64_t)bm) * sketch::ceil_div(n, (int64_t)bn) * batch;
}

static int slices(int sms, int64_t m, int64_t n, int64_t batch, int bm, int bn, int64_t k_tiles) {
  return sketch::split_slices(sms, tiles_of(m, n, batch, bm, bn), k_tiles, 2, 4);
}

// The generated host function's choice: 64 x 64 up to 64 rows, and up to 128 where its
// blocks outnumber those of 128 x 64, which serve the rest.
static bool takes_square(int sms, int64_t m, int64_t n, int64_t batch, int64_t k_tiles) {
  const int tall = slices(sms, m, n, batch, 128, 64, k_tiles);
  const int square = slices(sms, m, n, batch, 64, 64, k_tiles);
  return m <= 64 || (m <= 128 && tiles_of(m, n, batch, 64, 64) * square > tiles_of(m, n, batch, 128, 64) * tall);
}

static int fill_slices(int sms, int64_t m, int64_t n, int64_t batch, int64_t k_tiles) {
  return takes_square(sms, m, n, batch, k_tiles) ? slices(sms, m, n, batch, 64, 64, k_tiles)
                                                 : slices(sms, m, n, batch, 128, 64, k_tiles);
}

int main() {
  const int sm_counts[] = {1, 16, 66, 108, 114, 132, 144};
  long checked = 0, broken = 0;
  for (int sms : sm_counts)
    for (int64_t m = 1; m <= 320; ++m)
      for (int64_t n = 1; n <= 20000; n += (n < 512 ? 1 : 37))
        for (int64_t batch = 1; batch <= 3; ++batch)
          for (int64_t k_tiles : {1, 4, 7, 8, 9, 64, 224}) {
            ++checked;
            const int fill = fill_slices(sms, m, n, batch, k_tiles);
            const int own = slices(sms * 1 / 2, m, n, batch, 64, 128, k_tiles);
            if (fill <= 1 && own > 1 && ++broken <= 5)
              std::printf("broken: sms %d M %ld N %ld batch %ld k-tiles %ld: %d slices against %d\n",
                          sms, (long)m, (long)n, (long)batch, (long)k_tiles, fill, own);
          }
  std::printf("checked %ld, broken %ld\n", checked, broken);
  // The projection shapes on 132 SMs (K = 4096: 64 k-tiles; 14336: 224).
  std::printf("M 1 N 4096: %d\n", fill_slices(132, 1, 4096, 1, 64));
  std::printf("M 16 N 6144: %d\n", fill_slices(132, 16, 6144, 1, 64));
  std::printf("M 128 N 4096 K 14336: %d\n", fill_slices(132, 128, 4096, 1, 224));
  std::printf("M 128 N 6144: %d\n", fill_slices(132, 128, 6144, 1, 64));
  // The Llama layer's M = 77 (hidden 2048): 64 x 64 tiles, 2 slices (128 blocks, not 64).
  std::printf("M 77 N 2048: %s %d\n", takes_square(132, 77, 2048, 1, 32) ? "square" : "tall",
              fill_slices(132, 77, 2048, 1, 32));
  std::printf("M 128 N 4096: %s\n", takes_square(132, 128, 4096, 1, 64) ? "square" : "tall");
  return 0;
}
