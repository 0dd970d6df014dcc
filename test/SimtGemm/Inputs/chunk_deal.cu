// Host check of sketch::simt::ChunkDeal (test/SimtGemm/chunk-deal.test): every float of a
// Lines x Width tile is dealt to exactly one thread's chunk, and a deal of single floats
// (MaxVector 1, the scalar f32 KContiguousLoader's) gives a warp's copy c runs of
// consecutive floats: ceil(32 / G) lines of min(32, G) floats each.
#include "sketch/simt.cuh"
#include <cstdio>
#include <vector>

using sketch::simt::ChunkDeal;

static int failures = 0, checked = 0;

template <int Lines, int Width, int Threads, int MaxVector>
void check() {
  using Deal = ChunkDeal<Lines, Width, Threads, MaxVector>;
  std::vector<int> owner(Lines * Width, 0);
  for (int t = 0; t < Threads; ++t)
    for (int c = 0; c < Deal::kChunks; ++c)
      for (int e = 0; e < Deal::kVector; ++e) {
        int line = Deal::line(t) + Deal::line_step(c), at = Deal::offset(t) + Deal::offset_step(c) + e;
        if (line >= Lines || at >= Width) {
          ++failures;
          printf("FAIL %dx%d/%d/%d: thread %d chunk %d outside\n", Lines, Width, Threads, MaxVector, t, c);
        } else {
          ++owner[line * Width + at];
        }
      }
  for (int i = 0; i < Lines * Width; ++i)
    if (owner[i] != 1) {
      ++failures;
      printf("FAIL %dx%d/%d/%d: float %d dealt %d times\n", Lines, Width, Threads, MaxVector, i, owner[i]);
      return;
    }
  if (MaxVector == 1 && Threads % 32 == 0) {
    const int run = Deal::kColumns < 32 ? Deal::kColumns : 32;
    for (int w = 0; w < Threads / 32; ++w)
      for (int c = 0; c < Deal::kChunks; ++c)
        for (int lane = 0; lane < 32; ++lane) {
          const int t = w * 32 + lane, first = w * 32 + lane / run * run;
          const bool same_line = Deal::line(t) == Deal::line(first);
          const bool next_float = Deal::offset(t) == Deal::offset(first) + lane % run;
          if (!same_line || !next_float) {
            ++failures;
            printf("FAIL %dx%d/%d: warp %d copy %d lane %d not consecutive\n", Lines, Width, Threads, w, c, lane);
            return;
          }
        }
  }
  ++checked;
}

template <int Lines, int Width, int Threads>
void both() {
  check<Lines, Width, Threads, 4>();
  check<Lines, Width, Threads, 1>();
}

int main() {
  both<128, 16, 256>();  // the default SGEMM's A tile
  both<128, 8, 256>();
  both<64, 16, 64>();
  both<64, 8, 64>();
  both<256, 8, 256>();
  both<32, 16, 128>();
  both<128, 32, 256>();
  both<64, 16, 256>();
  both<16, 128, 256>();  // a k-major tile (B [K, N])
  both<8, 64, 128>();
  printf("%d deals checked, %d failures\n", checked, failures);
  return failures != 0;
}
