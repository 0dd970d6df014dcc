// What mma.sync m16n8k16 (f16 operands, f32 accumulators) can reach on this GPU, with
// nothing else in the way: the ceiling the mma.sync GEMM path is measured against.
//   registers only   fragments stay in registers; only MMAs issue
//   ldmatrix-fed     each k16 step reloads the warp tile's A and B fragments from shared
//                    memory with ldmatrix.x4 (swizzled, conflict-free), all of them before
//                    the step's MMAs
//   interleaved      the GEMM's own schedule: the next step's fragments load between this
//                    step's MMAs; then the same with a tile refill's shared-memory stores.
//                    No global memory, no barriers, no epilogue in any of them
//   ldmatrix alone   shared-memory read throughput of ldmatrix.x4, bytes a clock an SM
// Build and run: bench/run.sh --ceiling (nvcc -O3 -arch=sm_90a, or sm_80 on Ampere).
#include <cstdint>
#include <cstdio>
#include <cuda_fp16.h>

namespace {

__device__ __forceinline__ void mma_f16(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t *r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// Byte address of 16-byte chunk `chunk` of row `row` in a 64-row tile of 64-byte rows
/// (32 halves), chunks XOR-swizzled so that ldmatrix's 8 rows hit 8 bank groups.
__device__ __forceinline__ uint32_t tile_chunk(uint32_t base, int row, int chunk) {
  return base + row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4);
}

template <typename T>
__device__ __forceinline__ void keep(float *out, T value) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = (float)value; // defeats dead-code removal
}

template <int MI, int NI>
__device__ float sum_of(const float (&acc)[MI][NI][4]) {
  float sum = 0;
  for (int i = 0; i < MI; ++i)
    for (int j = 0; j < NI; ++j)
      for (int e = 0; e < 4; ++e)
        sum += acc[i][j][e];
  return sum;
}

template <int MI, int NI>
__global__ void __launch_bounds__(128) registers_only(float *out, int iterations, uint32_t seed) {
  float acc[MI][NI][4] = {};
  uint32_t a[MI][4], b[NI][2];
  for (int i = 0; i < MI; ++i)
    for (int j = 0; j < 4; ++j)
      a[i][j] = seed * (threadIdx.x + i + j);
  for (int i = 0; i < NI; ++i)
    for (int j = 0; j < 2; ++j)
      b[i][j] = seed ^ (threadIdx.x * 7 + i + j);
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
        mma_f16(acc[i][j], a[i], b[j][0], b[j][1]);
  }
  keep(out, sum_of(acc));
}

/// Each warp's A and B tiles: 64 rows of 32 halves (64-byte rows).
constexpr int kTileHalves = 64 * 32;

struct WarpTiles {
  uint32_t a, b; // this warp's tiles, shared-memory addresses
};

/// Fills the block's 4 warps' A and B tiles with small values, then returns this warp's.
__device__ WarpTiles fill_warp_tiles(half (&tile_a)[4][kTileHalves],
                                     half (&tile_b)[4][kTileHalves]) {
  for (int i = threadIdx.x; i < 4 * kTileHalves; i += blockDim.x) {
    (&tile_a[0][0])[i] = __float2half(i % 7);
    (&tile_b[0][0])[i] = __float2half(i % 5);
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  return {(uint32_t)__cvta_generic_to_shared(&tile_a[warp][0]),
          (uint32_t)__cvta_generic_to_shared(&tile_b[warp][0])};
}

/// A warp tile of MI*16 x NI*8; each iteration is two k16 steps, each all its ldmatrix
/// then its MMAs.
template <int MI, int NI>
__global__ void __launch_bounds__(128) ldmatrix_fed(float *out, int iterations) {
  __shared__ __align__(128) half tile_a[4][kTileHalves], tile_b[4][kTileHalves];
  const int lane = threadIdx.x % 32;
  const WarpTiles tiles = fill_warp_tiles(tile_a, tile_b);
  const uint32_t base_a = tiles.a, base_b = tiles.b;
  float acc[MI][NI][4] = {};
  uint32_t a[2][MI][4], b[2][NI / 2][4];
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
#pragma unroll
      for (int i = 0; i < MI; ++i)
        ldmatrix_x4(a[ks][i], tile_chunk(base_a, i * 16 + lane % 16, ks * 2 + lane / 16));
#pragma unroll
      for (int j = 0; j < NI / 2; ++j)
        ldmatrix_x4(b[ks][j], tile_chunk(base_b, j * 16 + lane % 16, ks * 2 + lane / 16));
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
          mma_f16(acc[i][j], a[ks][i], b[ks][j / 2][j % 2], b[ks][j / 2][2 + j % 2]);
    }
  }
  keep(out, sum_of(acc));
}

/// The GEMM's inner loop (emitTensorCoreMainloop, lib/Emit/TensorCoreGemm.cpp): an iteration is one k-tile of two k16 steps; the
/// next step's fragments load between this step's MMAs (two register buffers), and each
/// lane writes STORES 16-byte chunks to shared memory an iteration, the bytes a tile
/// refill writes (cp.async or TMA land there the same way): 128x256x32 tiles with 8 warps
/// refill 24 KB a k-tile, 6 chunks a lane; 128x128x32 with 4 warps 16 KB, 8 a lane.
template <int MI, int NI, int STORES>
__global__ void __launch_bounds__(128) interleaved(float *out, int iterations) {
  __shared__ __align__(128) half tile_a[4][kTileHalves], tile_b[4][kTileHalves];
  __shared__ __align__(16) uint4 refill[4][(STORES > 0 ? STORES : 1) * 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const WarpTiles tiles = fill_warp_tiles(tile_a, tile_b);
  const uint32_t base_a = tiles.a, base_b = tiles.b;
  float acc[MI][NI][4] = {};
  uint32_t a[2][MI][4], b[2][NI / 2][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
    ldmatrix_x4(a[0][i], tile_chunk(base_a, i * 16 + lane % 16, lane / 16));
#pragma unroll
  for (int j = 0; j < NI / 2; ++j)
    ldmatrix_x4(b[0][j], tile_chunk(base_b, j * 16 + lane % 16, lane / 16));
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      const int next = (ks + 1) % 2;
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        ldmatrix_x4(a[next][i], tile_chunk(base_a, i * 16 + lane % 16, next * 2 + lane / 16));
#pragma unroll
        for (int j = i * (NI / 2) / MI; j < (i + 1) * (NI / 2) / MI; ++j)
          ldmatrix_x4(b[next][j], tile_chunk(base_b, j * 16 + lane % 16, next * 2 + lane / 16));
        if (ks == 0 && i < STORES)
          refill[warp][i * 32 + lane] = make_uint4(it, i, lane, warp);
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const int n = (i % 2) ? NI - 1 - j : j;
          mma_f16(acc[i][n], a[ks][i], b[ks][n / 2][n % 2], b[ks][n / 2][2 + n % 2]);
        }
      }
      if (ks == 1)
        for (int i = MI; i < STORES; ++i)
          refill[warp][i * 32 + lane] = make_uint4(it, i, lane, warp);
    }
  }
  keep(out, sum_of(acc) + (float)refill[warp][lane].x);
}

__global__ void __launch_bounds__(256) ldmatrix_alone(float *out, int iterations) {
  __shared__ __align__(128) half tile[8][64 * 32];
  for (int i = threadIdx.x; i < 8 * 64 * 32; i += blockDim.x)
    (&tile[0][0])[i] = __float2half(i % 7);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(&tile[warp][0]);
  uint32_t folded = 0;
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      uint32_t r[4];
      ldmatrix_x4(r, tile_chunk(base, (i * 8 + lane % 16) % 64, (it + lane / 16) & 3));
      folded ^= r[0] ^ r[1] ^ r[2] ^ r[3];
    }
  }
  keep(out, folded);
}

/// Best of 9 timed launches after 3 warm-up launches, in milliseconds.
template <typename Launch>
float best_ms(Launch launch) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i)
    launch();
  float best = 1e30f;
  for (int i = 0; i < 9; ++i) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best = ms < best ? ms : best;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

constexpr double kMmaFlops = 2.0 * 16 * 8 * 16;

template <int MI, int NI>
void report_registers_only(float *out, int sms, int blocks_per_sm, int iterations) {
  const int grid = sms * blocks_per_sm;
  const float ms = best_ms([&] { registers_only<MI, NI><<<grid, 128>>>(out, iterations, 3u); });
  const double flops = kMmaFlops * MI * NI * 4 * grid * (double)iterations;
  printf("| registers only | %dx%d | %d | %.1f TFLOP/s |\n", MI * 16, NI * 8, blocks_per_sm * 4,
         flops / ms / 1e9);
}

template <int MI, int NI>
void report_ldmatrix_fed(float *out, int sms, int blocks_per_sm, int iterations) {
  const int grid = sms * blocks_per_sm;
  const float ms = best_ms([&] { ldmatrix_fed<MI, NI><<<grid, 128>>>(out, iterations); });
  const double flops = kMmaFlops * MI * NI * 2 * 4 * grid * (double)iterations;
  printf("| ldmatrix-fed | %dx%d | %d | %.1f TFLOP/s |\n", MI * 16, NI * 8, blocks_per_sm * 4,
         flops / ms / 1e9);
}

template <int STORES>
void report_interleaved(float *out, int sms, int blocks_per_sm, int iterations) {
  const int grid = sms * blocks_per_sm;
  const float ms = best_ms([&] { interleaved<4, 8, STORES><<<grid, 128>>>(out, iterations); });
  const double flops = kMmaFlops * 4 * 8 * 2 * 4 * grid * (double)iterations;
  printf("| ldmatrix interleaved, %d refill stores a lane | 64x64 | %d | %.1f TFLOP/s |\n", STORES,
         blocks_per_sm * 4, flops / ms / 1e9);
}

} // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  int sms = 0, clock_khz = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  float *out = nullptr;
  if (cudaMalloc(&out, sizeof(float) * sms * 4 * 256) != cudaSuccess) {
    printf("no GPU memory\n");
    return 1;
  }
  const int iterations = 4096;
  printf("mma.sync m16n8k16 f16 -> f32 on %s (%d SMs, %d MHz max)\n\n", prop.name, sms,
         clock_khz / 1000);
  printf("| kind | warp tile | warps an SM | throughput |\n| --- | --- | --- | --- |\n");
  for (int blocks = 1; blocks <= 4; ++blocks)
    report_registers_only<4, 8>(out, sms, blocks, iterations);
  for (int blocks = 1; blocks <= 2; ++blocks)
    report_ldmatrix_fed<4, 8>(out, sms, blocks, iterations / 2);
  for (int blocks = 1; blocks <= 2; ++blocks)
    report_interleaved<0>(out, sms, blocks, iterations / 2);
  report_interleaved<6>(out, sms, 2, iterations / 2);
  report_interleaved<8>(out, sms, 2, iterations / 2);
  for (int blocks = 2; blocks <= 4; ++blocks)
    report_ldmatrix_fed<4, 4>(out, sms, blocks, iterations / 2);
  for (int blocks = 2; blocks <= 3; ++blocks)
    report_ldmatrix_fed<2, 8>(out, sms, blocks, iterations / 2);
  for (int blocks = 1; blocks <= 2; ++blocks) {
    const int grid = sms * blocks;
    const float ms = best_ms([&] { ldmatrix_alone<<<grid, 256>>>(out, iterations); });
    const double bytes = 512.0 * 8 * 8 * grid * iterations;
    printf("| ldmatrix.x4 alone | - | %d | %.1f bytes/clock/SM |\n", blocks * 8,
           bytes / (ms * 1e-3) / sms / (clock_khz * 1e3));
  }
  const cudaError_t err = cudaDeviceSynchronize();
  printf("\n%s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
