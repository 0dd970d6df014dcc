// Lab: the f32 GEMM's last round balanced by a split tail (README.md). The 128 x 128 x 16
// default kernel (lab_main) runs the first row tiles; the last R rows of tiles run as a
// second launch, K split over clusters of S blocks (lab_splitS), launched as a programmatic
// dependent (PDL) so that its blocks take the SMs the first kernel's last round leaves idle.
// Every output is checked against cuBLAS SGEMM (pedantic: no TF32); times are medians of
// 20 CUDA-event timings, three alternating rounds.
//   tail M N K [R,S ...]
#include "lab.h"
#include "../sgemm_lab.cuh"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern bool lab_dependent;

namespace {
using Gemm = cudaError_t (*)(const float *, const float *, float *, int64_t, int64_t, int64_t, cudaStream_t);

using sgemm_labs::Variant;

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
  const sgemm_labs::Problem problem = sgemm_labs::make_problem(m, n, k);
  float *a = problem.a, *b = problem.b, *ref = problem.ref, *out = problem.out;
  std::vector<Variant> vs = {
      sgemm_labs::cublas_variant(),
      {"plain", [](const float *a_, const float *b_, float *d, int m_, int n_, int k_) { lab_plain(a_, b_, d, m_, k_, n_, 0); }},
      {"main", [](const float *a_, const float *b_, float *d, int m_, int n_, int k_) { lab_main(a_, b_, d, m_, k_, n_, 0); }}};
  for (int i = 4; i < argc; ++i) {
    int rows = 0, slices = 0;
    char plain = 0;
    const int got = sscanf(argv[i], "%d,%d%c", &rows, &slices, &plain);
    if (got >= 2)
      vs.push_back(tail_variant(rows, slices, got < 3));
  }
  const std::vector<double> errors = sgemm_labs::check_variants(vs, a, b, ref, out, m, n, k);
  bool all_ok = true;
  for (size_t v = 1; v < vs.size(); ++v) {
    const double worst = errors[v];
    if (worst >= 1e-4) {
      all_ok = false;
      printf("%-16s max rel err %.2e WRONG\n", vs[v].name.c_str(), worst);
    }
  }
  sgemm_labs::time_and_print(vs, problem, m, n, k);
  printf("outputs: %s\n", all_ok ? "all within 1e-4 of cuBLAS" : "SOME WRONG");
  return cudaGetLastError() == cudaSuccess && all_ok ? 0 : 1;
}
