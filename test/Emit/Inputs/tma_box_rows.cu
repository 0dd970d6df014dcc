// sketch::tma_box_rows and tma_tail_box_rows (runtime/include/sketch/tma.cuh) on the host:
// prints "rows tile_rows -> box rows, the last tile's box rows" for test/Emit/tma-box-rows.test.
#include <cstdio>

#include "sketch/tma.cuh"

int main() {
  const long rows[] = {1, 7, 8, 9, 16, 17, 63, 64, 65, 4096};
  for (int tile : {64, 128})
    for (long r : rows)
      std::printf("%ld %d -> %d %d\n", r, tile, sketch::tma_box_rows(r, tile),
                  sketch::tma_tail_box_rows(r, tile));
  return 0;
}
