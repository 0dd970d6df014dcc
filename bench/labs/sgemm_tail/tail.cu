// Lab: the f32 GEMM's last round balanced by a split tail (README.md). The 128 x 128 x 16
// default kernel (lab_main) runs the first row tiles; the last R rows of tiles run as a
// second launch, K split over clusters of S blocks (lab_splitS), launched as a programmatic
// dependent (PDL) so that its blocks take the SMs the first kernel's last round leaves idle.
// Every output is checked against cuBLAS SGEMM (pedantic: no TF32); times are medians of
// 20 CUDA-event timings, three alternating rounds.
//   tail M N K [R,S ...]
#include "lab.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <functional>
#include <string>
#include <vector>

extern bool lab_dependent;

namespace {
using Gemm = cudaError_t (*)(const float *, const float *, float *, int64_t, int64_t, int64_t, cudaStream_t);

struct Variant {
  std::string name;
  std::function<void(const float *, const float *, float *, int, int, int)> run;
};

float median_ms(const std::function<void()> &f, int reps) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(e0);
    f();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Gemm split_kernel(int slices) { return slices == 2 ? lab_split2 : slices == 4 ? lab_split4 : lab_split8; }

/// The first row tiles by lab_main, the last `rows` row tiles by lab_splitS (dependent or not).
Variant tail_variant(int rows, int slices, bool dependent) {
  std::string name = "tail_r" + std::to_string(rows) + "_s" + std::to_string(slices) + (dependent ? "" : "_plain");
  return {name, [=](const float *a, const float *b, float *d, int m, int n, int k) {
            const int row_tiles = (m + 127) / 128, main_m = std::max(0, row_tiles - rows) * 128;
            lab_dependent = false;
            if (main_m > 0)
              lab_main(a, b, d, main_m, k, n, 0);
            lab_dependent = dependent;
            split_kernel(slices)(a + int64_t(main_m) * k, b, d + int64_t(main_m) * n, m - main_m, k, n, 0);
            lab_dependent = false;
          }};
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: tail M N K [R,S ...]\n");
    return 2;
  }
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  std::vector<float> host(std::max(size_t(m) * k, size_t(k) * n));
  uint32_t seed = 12345;
  for (auto &x : host) {
    seed = seed * 1664525u + 1013904223u;
    x = float(seed >> 8) / float(1 << 24) - 0.5f;
  }
  float *a, *b, *ref, *out;
  cudaMalloc(&a, host.size() * 4);
  cudaMalloc(&b, host.size() * 4);
  cudaMalloc(&ref, size_t(m) * n * 4);
  cudaMalloc(&out, size_t(m) * n * 4);
  cudaMemcpy(a, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
  std::reverse(host.begin(), host.end());
  cudaMemcpy(b, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
  const float one = 1.f, zero = 0.f;
  std::vector<Variant> vs = {
      {"cublas", [&](const float *a_, const float *b_, float *d, int m_, int n_, int k_) {
         cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n_, m_, k_, &one, b_, n_, a_, k_, &zero, d, n_);
       }},
      {"plain", [](const float *a_, const float *b_, float *d, int m_, int n_, int k_) { lab_plain(a_, b_, d, m_, k_, n_, 0); }},
      {"main", [](const float *a_, const float *b_, float *d, int m_, int n_, int k_) { lab_main(a_, b_, d, m_, k_, n_, 0); }}};
  for (int i = 4; i < argc; ++i) {
    int rows = 0, slices = 0;
    char plain = 0;
    const int got = sscanf(argv[i], "%d,%d%c", &rows, &slices, &plain);
    if (got >= 2)
      vs.push_back(tail_variant(rows, slices, got < 3));
  }
  vs[0].run(a, b, ref, m, n, k);
  std::vector<float> r(size_t(m) * n), o(r.size());
  cudaMemcpy(r.data(), ref, r.size() * 4, cudaMemcpyDeviceToHost);
  bool all_ok = true;
  for (size_t v = 1; v < vs.size(); ++v) {
    cudaMemset(out, 0xff, o.size() * 4);  // NaN poison
    vs[v].run(a, b, out, m, n, k);
    cudaMemcpy(o.data(), out, o.size() * 4, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (size_t i = 0; i < o.size(); ++i) {
      const double e = std::abs(double(o[i]) - r[i]) / std::max(1.0, std::abs(double(r[i])));
      worst = std::isnan(o[i]) ? 1e9 : std::max(worst, e);
    }
    if (worst >= 1e-4) {
      all_ok = false;
      printf("%-16s max rel err %.2e WRONG\n", vs[v].name.c_str(), worst);
    }
  }
  std::vector<std::vector<float>> times(vs.size());
  for (int round = 0; round < 3; ++round)
    for (size_t v = 0; v < vs.size(); ++v) {
      auto f = [&] { vs[v].run(a, b, out, m, n, k); };
      f(), f();
      times[v].push_back(median_ms(f, 20));
    }
  printf("%-16s %8s %8s %8s %7s %7s\n", "variant", "round0", "round1", "round2", "TFLOP/s", "cuBLAS/x");
  const float cublas = *std::min_element(times[0].begin(), times[0].end());
  for (size_t v = 0; v < vs.size(); ++v) {
    auto t = times[v];
    std::sort(t.begin(), t.end());
    printf("%-16s %8.3f %8.3f %8.3f %7.1f %7.3f\n", vs[v].name.c_str(), times[v][0], times[v][1], times[v][2],
           2.0 * m * n * k / t[1] / 1e9, cublas / t[1]);
  }
  printf("outputs: %s\n", all_ok ? "all within 1e-4 of cuBLAS" : "SOME WRONG");
  return cudaGetLastError() == cudaSuccess && all_ok ? 0 : 1;
}
