// The large-grid tile's rule, sketch::full_rounds, on the tile counts of the lab's sweep
// (bench/labs/sgemm_pipeline/README.md) over 132 SMs and on edge cases; prints
// "TILES SLOTS: large" or "TILES SLOTS: own" for test/SimtGemm/full-rounds.test.
#include <cstdio>

#include "sketch/host.h"

int main() {
  const long long cases[][2] = {{132, 132}, {198, 132}, {264, 132}, {288, 132}, {330, 132},
                                {363, 132}, {384, 132}, {396, 132}, {462, 132}, {512, 132},
                                {726, 132}, {792, 132}, {0, 132},   {5, 0},     {2, 1}};
  for (const auto &c : cases)
    std::printf("%lld %lld: %s\n", c[0], c[1], sketch::full_rounds(c[0], c[1]) ? "large" : "own");
  return 0;
}
