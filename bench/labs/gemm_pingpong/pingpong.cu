// The ping-pong lab's host (README.md): the generated default kernels (lab.sketch) against
// lab_pp::gemm (pingpong.cuh) at 4 and 5 stages, cuBLAS beside the plain GEMM; every
// output checked against the default's, then timed in alternating rounds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include "../sgemm_lab.cuh"  // median_ms
#include "lab.h"
#include "pingpong.cuh"

namespace {

using sgemm_labs::median_ms;
using Run = std::function<cudaError_t(const __half *, const __half *, const __half *, __half *, int, int, int)>;
struct Variant { std::string name; Run run; };

std::vector<Variant> variants(int epi) {
  std::vector<Variant> vs;
  if (epi == lab_pp::kPlain) {
    vs.push_back({"default", [](auto a, auto b, auto, auto d, int m, int n, int k) { return lab_plain(a, b, d, m, k, n, 0); }});
    static cublasHandle_t handle = [] { cublasHandle_t h; cublasCreate(&h); return h; }();
    vs.push_back({"cublas", [](auto a, auto b, auto, auto d, int m, int n, int k) {
      const float one = 1.f, zero = 0.f;
      return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_16F, n, a, CUDA_R_16F, k, &zero, d, CUDA_R_16F, n,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown; }});
    vs.push_back({"t192", [](auto a, auto b, auto, auto d, int m, int n, int k) { return lab_t192(a, b, d, m, k, n, 0); }});
    vs.push_back({"pp4", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run<__half, 4, lab_pp::kPlain>(a, b, bias, d, m, n, k); }});
    vs.push_back({"pp5", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run<__half, 5, lab_pp::kPlain>(a, b, bias, d, m, n, k); }});
    vs.push_back({"coop3", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run_coop<__half, 3, lab_pp::kPlain>(a, b, bias, d, m, n, k); }});
    vs.push_back({"coop4", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run_coop<__half, 4, lab_pp::kPlain>(a, b, bias, d, m, n, k); }});
  } else if (epi == lab_pp::kBiasRelu) {
    vs.push_back({"default", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_relu(a, b, bias, d, m, k, n, 0); }});
    vs.push_back({"pp4", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run<__half, 4, lab_pp::kBiasRelu>(a, b, bias, d, m, n, k); }});
    vs.push_back({"pp5", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run<__half, 5, lab_pp::kBiasRelu>(a, b, bias, d, m, n, k); }});
    vs.push_back({"coop3", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run_coop<__half, 3, lab_pp::kBiasRelu>(a, b, bias, d, m, n, k); }});
    vs.push_back({"coop4", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run_coop<__half, 4, lab_pp::kBiasRelu>(a, b, bias, d, m, n, k); }});
  } else {
    vs.push_back({"default", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_gelu(a, b, bias, d, m, k, n, 0); }});
    vs.push_back({"pp4", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run<__half, 4, lab_pp::kBiasGelu>(a, b, bias, d, m, n, k); }});
    vs.push_back({"pp5", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run<__half, 5, lab_pp::kBiasGelu>(a, b, bias, d, m, n, k); }});
    vs.push_back({"coop3", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run_coop<__half, 3, lab_pp::kBiasGelu>(a, b, bias, d, m, n, k); }});
    vs.push_back({"coop4", [](auto a, auto b, auto bias, auto d, int m, int n, int k) { return lab_pp::run_coop<__half, 4, lab_pp::kBiasGelu>(a, b, bias, d, m, n, k); }});
  }
  return vs;
}

std::vector<__half> random_halves(size_t n, uint32_t seed) {
  std::vector<__half> v(n);
  for (auto &x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = __float2half(float(seed >> 8) / float(1 << 24) - 0.5f);
  }
  return v;
}

__half *device_copy(const std::vector<__half> &h) {
  __half *d;
  cudaMalloc(&d, h.size() * 2);
  cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
  return d;
}

std::vector<float> read_back(const __half *d, size_t n) {
  std::vector<__half> h(n);
  cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = __half2float(h[i]);
  return f;
}

bool run_case(int epi, int m, int n, int k) {
  static const char *names[] = {"plain", "bias+relu", "bias+gelu"};
  const size_t mn = size_t(m) * n;
  __half *a = device_copy(random_halves(size_t(m) * k, 1)), *b = device_copy(random_halves(size_t(k) * n, 2));
  __half *bias = device_copy(random_halves(n, 3)), *d;
  cudaMalloc(&d, mn * 2);
  auto vs = variants(epi);
  bool ok = true;
  std::vector<float> ref;
  for (size_t v = 0; v < vs.size(); ++v) {
    cudaMemset(d, 0xff, mn * 2);  // NaN poison
    cudaError_t err = vs[v].run(a, b, bias, d, m, n, k);
    cudaError_t sync = cudaDeviceSynchronize();
    std::vector<float> out = read_back(d, mn);
    if (v == 0) { ref = out; continue; }
    double worst = 0;
    for (size_t i = 0; i < mn; ++i) {
      const double e = std::abs(double(out[i]) - ref[i]) / std::max(1.0, std::abs(double(ref[i])));
      worst = std::isnan(out[i]) ? 1e9 : std::max(worst, e);
    }
    printf("check %s %dx%dx%d %s: launch %s, sync %s, max rel error against default %.3g\n", names[epi], m, n, k,
           vs[v].name.c_str(), cudaGetErrorString(err), cudaGetErrorString(sync), worst);
    ok = ok && err == cudaSuccess && sync == cudaSuccess && worst < 1e-2;
  }
  std::vector<std::vector<float>> times(vs.size());
  for (int round = 0; round < 3; ++round)
    for (size_t v = 0; v < vs.size(); ++v) {
      auto f = [&] { vs[v].run(a, b, bias, d, m, n, k); };
      f(), f();
      times[v].push_back(median_ms(f, 20));
    }
  printf("%s %dx%dx%d (ms, three rounds; x default at the median round)\n", names[epi], m, n, k);
  std::vector<float> base = times[0];
  std::sort(base.begin(), base.end());
  for (size_t v = 0; v < vs.size(); ++v) {
    auto t = times[v];
    std::sort(t.begin(), t.end());
    printf("  %-8s %8.4f %8.4f %8.4f  %6.1f TFLOP/s  %.3f\n", vs[v].name.c_str(), times[v][0], times[v][1], times[v][2],
           2.0 * m * n * k / t[1] / 1e9, base[1] / t[1]);
  }
  cudaFree(a), cudaFree(b), cudaFree(bias), cudaFree(d);
  return ok;
}

}  // namespace

int main() {
  bool ok = true;
  ok &= run_case(lab_pp::kBiasGelu, 8192, 4096, 4096);
  ok &= run_case(lab_pp::kBiasRelu, 8192, 4096, 4096);
  ok &= run_case(lab_pp::kPlain, 8192, 4096, 4096);
  ok &= run_case(lab_pp::kPlain, 4096, 4096, 4096);
  ok &= run_case(lab_pp::kPlain, 8192, 8192, 8192);
  ok &= run_case(lab_pp::kBiasGelu, 4096, 4096, 4096);
  printf(ok ? "all outputs agree\n" : "MISMATCH\n");
  return ok ? 0 : 1;
}
