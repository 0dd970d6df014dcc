// Runs the generated MLP layer on random data, checks it against a simple
// reference kernel, and prints its time.
#include "mlp_layer.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t err = (call);                                                            \
    if (err != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// Reference: one thread per output, f32 accumulation.
__global__ void referenceLayer(const __half *x, const __half *w, const __half *b, float *y,
                               int64_t m, int64_t n, int64_t k) {
  int64_t row = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (row >= m || col >= n)
    return;
  float acc = 0.f;
  for (int64_t i = 0; i < k; ++i)
    acc += __half2float(x[row * k + i]) * __half2float(w[i * n + col]);
  y[row * n + col] = fmaxf(acc + __half2float(b[col]), 0.f);
}

static __half *uploadRandom(size_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__half> host(count);
  for (auto &v : host)
    v = __float2half(dist(rng));
  __half *device;
  CHECK(cudaMalloc(&device, count * sizeof(__half)));
  CHECK(cudaMemcpy(device, host.data(), count * sizeof(__half), cudaMemcpyHostToDevice));
  return device;
}

int main(int argc, char **argv) {
  int64_t m = argc > 1 ? std::atoll(argv[1]) : 4096;
  int64_t n = argc > 2 ? std::atoll(argv[2]) : 4096;
  int64_t k = argc > 3 ? std::atoll(argv[3]) : 1024;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("mlp_layer: no CUDA device, nothing run\n");
    return 77;
  }
  std::mt19937 rng(42);
  __half *x = uploadRandom(m * k, rng), *w = uploadRandom(k * n, rng), *b = uploadRandom(n, rng);
  __half *y;
  float *ref;
  CHECK(cudaMalloc(&y, m * n * sizeof(__half)));
  CHECK(cudaMalloc(&ref, m * n * sizeof(float)));
  CHECK(cudaMemset(y, 0xff, m * n * sizeof(__half))); // poison: NaN

  CHECK(mlp_layer(x, w, b, y, m, k, n, 0));
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  referenceLayer<<<grid, block>>>(x, w, b, ref, m, n, k);
  CHECK(cudaDeviceSynchronize());

  std::vector<__half> out(m * n);
  std::vector<float> expect(m * n);
  CHECK(cudaMemcpy(out.data(), y, out.size() * sizeof(__half), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(expect.data(), ref, expect.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double got = __half2float(out[i]), want = expect[i];
    double err = std::fabs(got - want) / (std::fabs(want) + 1.0);
    worst = std::isfinite(got) ? std::max(worst, err) : INFINITY;
  }

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int runs = 20;
  CHECK(mlp_layer(x, w, b, y, m, k, n, 0)); // warm-up
  CHECK(cudaEventRecord(start));
  for (int i = 0; i < runs; ++i)
    CHECK(mlp_layer(x, w, b, y, m, k, n, 0));
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  ms /= runs;
  std::printf("mlp_layer %lldx%lldx%lld: max error %.2e, %.3f ms, %.1f TFLOP/s\n", (long long)m,
              (long long)n, (long long)k, worst, ms, 2.0 * m * n * k / (ms * 1e9));
  bool ok = worst < 1e-2;
  std::printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
