// sketch::wgmma_desc_sw128 with an offset, and k_major_desc / mn_major_desc built on it
// (runtime/include/sketch/wgmma.cuh), on the host against the descriptor built field by
// field from the offset address (test/Runtime/wgmma-descriptor.test): every 1024-byte
// tile base in the 227 KB shared window, every k16 step of tiles of 16 to 256 rows.
#include <cstdint>
#include <cstdio>

#include "sketch/wgmma.cuh"

// PTX's matrix descriptor: start address bits 0-13, leading byte offset 16-29, stride
// byte offset 32-45 (each >> 4, the address within 256 KB), base offset 0, 128-byte
// swizzle (bits 62-63 = 1).
static uint64_t reference(uint32_t start, uint32_t lbo, uint32_t sbo) {
  return uint64_t((start & 0x3FFFF) >> 4) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t(1) << 62);
}

constexpr uint32_t kSharedWindow = 227 * 1024;

template <int ROWS>
static long check(long &cases) {
  long wrong = 0;
  // a tile of ROWS rows and up to 256 columns: 4 panels of ROWS x 128 bytes
  for (uint32_t tile = 0; tile + ROWS * 128 <= kSharedWindow; tile += 1024)
    for (int k = 0; k < 16; ++k) {
      const uint32_t k_offset = (k / 4) * ROWS * 128 + (k % 4) * 32;
      if (tile + k_offset < kSharedWindow) {
        ++cases;
        wrong += sketch::k_major_desc<ROWS>(tile, k) != reference(tile + k_offset, 16, 1024);
      }
      const uint32_t mn_offset = k * 2048;
      if (tile + mn_offset < kSharedWindow) {
        ++cases;
        wrong += sketch::mn_major_desc<ROWS>(tile, k) !=
                 reference(tile + mn_offset, ROWS * 128, 1024);
      }
    }
  return wrong;
}

template <int... R>
static long check_all(long &cases) {
  return (check<R>(cases) + ...);
}

int main() {
  long cases = 0;
  const long wrong =
      check_all<16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256>(cases);
  // the offset form of the descriptor itself, at the window's last 16-byte address
  const bool edge = sketch::wgmma_desc_sw128(kSharedWindow - 32, 16, 1024, 16) ==
                    reference(kSharedWindow - 16, 16, 1024);
  std::printf("descriptors checked: %ld, wrong: %ld\n", cases, wrong);
  std::printf("wgmma descriptors: %s\n", wrong == 0 && edge ? "ok" : "WRONG");
  return wrong == 0 && edge ? 0 : 1;
}
