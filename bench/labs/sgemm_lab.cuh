// What the f32 GEMM labs (sgemm_pipeline, sgemm_scalar, sgemm_tail) share on the host: a
// variant to time, random inputs, the check against cuBLAS's output and the CUDA-event timer.
#ifndef SKETCH_SGEMM_LAB_CUH
#define SKETCH_SGEMM_LAB_CUH

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace sgemm_labs {

/// A kernel to time: run(A, B, D, M, N, K) with A [M, K], B [K, N], D [M, N] row-major.
struct Variant {
  std::string name;
  std::function<void(const float *, const float *, float *, int, int, int)> run;
};

/// Uniform values in [-0.5, 0.5) from one linear congruential sequence, continued by `seed`.
inline void fill_random(std::vector<float> &values, uint32_t &seed) {
  for (auto &x : values) {
    seed = seed * 1664525u + 1013904223u;
    x = float(seed >> 8) / float(1 << 24) - 0.5f;
  }
}

/// The device buffers of an M x N x K problem: A and B random (B is A's sequence reversed,
/// both from one buffer of max(M K, K N) values), D's reference and the output under test.
struct Problem {
  float *a, *b, *ref, *out;
};
inline Problem make_problem(int m, int n, int k) {
  std::vector<float> host(std::max(size_t(m) * k, size_t(k) * n));
  uint32_t seed = 12345;
  fill_random(host, seed);
  Problem p;
  cudaMalloc(&p.a, host.size() * 4);
  cudaMalloc(&p.b, host.size() * 4);
  cudaMalloc(&p.ref, size_t(m) * n * 4);
  cudaMalloc(&p.out, size_t(m) * n * 4);
  cudaMemcpy(p.a, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
  std::reverse(host.begin(), host.end());
  cudaMemcpy(p.b, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
  return p;
}

/// cuBLAS SGEMM on row-major A, B, D (D^T = B^T A^T in its column-major terms), pedantic
/// math: no TF32.
inline Variant cublas_variant() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
    return h;
  }();
  return {"cublas", [](const float *a, const float *b, float *d, int m, int n, int k) {
            const float one = 1.f, zero = 0.f;
            cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, d, n);
          }};
}

/// The largest |out - ref| / max(1, |ref|) (1e9 for a NaN: an element left unwritten).
inline double max_rel_error(const std::vector<float> &out, const std::vector<float> &ref) {
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double e = std::abs(double(out[i]) - ref[i]) / std::max(1.0, std::abs(double(ref[i])));
    worst = std::isnan(out[i]) ? 1e9 : std::max(worst, e);
  }
  return worst;
}

/// Variant 0 (the library) writes `ref`; every other variant runs once on `out` poisoned
/// with NaN and is checked against it: their max_rel_error, in order (entry 0 is 0).
inline std::vector<double> check_variants(const std::vector<Variant> &vs, const float *a, const float *b,
                                          float *ref, float *out, int m, int n, int k) {
  vs[0].run(a, b, ref, m, n, k);
  std::vector<float> r(size_t(m) * n), o(r.size());
  cudaMemcpy(r.data(), ref, r.size() * 4, cudaMemcpyDeviceToHost);
  std::vector<double> errors(vs.size(), 0.0);
  for (size_t v = 1; v < vs.size(); ++v) {
    cudaMemset(out, 0xff, o.size() * 4);  // NaN poison
    vs[v].run(a, b, out, m, n, k);
    cudaMemcpy(o.data(), out, o.size() * 4, cudaMemcpyDeviceToHost);
    errors[v] = max_rel_error(o, r);
  }
  return errors;
}

/// The median of `reps` CUDA-event timings of f(), in ms.
inline float median_ms(const std::function<void()> &f, int reps) {
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
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Every variant's time on `p` in three alternating rounds (two warm-up runs, then the
/// median of 20 each), then a table: the rounds, TFLOP/s at the median round, and the best
/// round of variant 0 (cuBLAS) over the median round.
inline void time_and_print(const std::vector<Variant> &vs, const Problem &p, int m, int n, int k) {
  std::vector<std::vector<float>> times(vs.size());
  for (int round = 0; round < 3; ++round)
    for (size_t v = 0; v < vs.size(); ++v) {
      auto f = [&] { vs[v].run(p.a, p.b, p.out, m, n, k); };
      f(), f();
      times[v].push_back(median_ms(f, 20));
    }
  printf("%-16s %8s %8s %8s %7s %7s\n", "variant", "round0", "round1", "round2", "TFLOP/s", "cuBLAS/x");
  const float library = *std::min_element(times[0].begin(), times[0].end());
  for (size_t v = 0; v < vs.size(); ++v) {
    auto t = times[v];
    std::sort(t.begin(), t.end());
    printf("%-16s %8.3f %8.3f %8.3f %7.1f %7.3f\n", vs[v].name.c_str(), times[v][0], times[v][1],
           times[v][2], 2.0 * m * n * k / t[1] / 1e9, library / t[1]);
  }
}

} // namespace sgemm_labs

#endif // SKETCH_SGEMM_LAB_CUH
