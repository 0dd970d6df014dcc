// Lab (bench/labs/gelu): a GELU without erff, for a same-run A/B against sketch::gelu.
// gelu(x) = x * Phi(x), Phi(x) = erfc(-z) / 2 with z = x / sqrt 2, and erfc(t) / 2 = 2^Q(t)
// for t = |z| clamped to 4 (fit_gelu.py: degree 11, Horner, 9.8e-8 in log2): one polynomial,
// one ex2, no select around the ex2 (ptxas branched around it, or spilled without the branch).
// Past |z| = 4 the tail stays erfc(4) / 2 = 7.7e-9 (x = -30: -2.3e-7, not -0).
#ifndef SKETCH_LAB_GELU_CUH
#define SKETCH_LAB_GELU_CUH

#include <cuda_runtime.h>

__host__ __device__ __forceinline__ float lab_exp2(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

__host__ __device__ __forceinline__ float lab_gelu(float x) {
  const float t = fminf(fabsf(x * 0.70710678118654752f), 4.0f);
  float q = 1.37171856e-07f;
  q = fmaf(q, t, -3.52950688e-06f);
  q = fmaf(q, t, 4.03317257e-05f);
  q = fmaf(q, t, -2.67651211e-04f);
  q = fmaf(q, t, 1.11011472e-03f);
  q = fmaf(q, t, -2.64402447e-03f);
  q = fmaf(q, t, 4.24953774e-04f);
  q = fmaf(q, t, 2.75085356e-02f);
  q = fmaf(q, t, -1.48212718e-01f);
  q = fmaf(q, t, -9.18468416e-01f);
  q = fmaf(q, t, -1.62790434e+00f);
  q = fmaf(q, t, -1.00000006e+00f);
  const float tail = lab_exp2(q);
  return x * (x > 0.0f ? 1.0f - tail : tail);
}

#endif
