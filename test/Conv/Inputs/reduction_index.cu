// sketch::ReductionIndex::next (runtime/include/sketch/conv.cuh) against the direct split of
// every reduction index k = (r * S + s) * C + c: from each k's (c, s, r), eight steps must give
// those of k + 1 .. k + 8 (the im2col element path's chunk). Prints the cases and the first
// mismatch, if any, for test/Conv/reduction-index.test.
#include <cstdio>

#include "sketch/conv.cuh"

static sketch::ReductionIndex split(int k, int c, int s) {
  return {k % c, k / c % s, k / c / s};
}

int main() {
  long cases = 0;
  for (int c : {1, 2, 3, 5, 7, 8, 64, 72})
    for (int s : {1, 2, 3, 7})
      for (int r : {1, 3})
        for (int k = 0; k < c * r * s + 8; ++k) {
          sketch::ReductionIndex at = split(k, c, s);
          for (int e = 1; e <= 8; ++e) {
            at.next(c, s);
            const sketch::ReductionIndex want = split(k + e, c, s);
            ++cases;
            if (at.c != want.c || at.s != want.s || at.r != want.r) {
              std::printf("mismatch C %d S %d k %d + %d: (%d, %d, %d) against (%d, %d, %d)\n", c, s,
                          k, e, at.c, at.s, at.r, want.c, want.s, want.r);
              return 1;
            }
          }
        }
  std::printf("%ld steps match\n", cases);
  return 0;
}
