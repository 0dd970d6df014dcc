// sketch/epilogue.cuh - the elementwise functions of sketch expressions, on f32.
//
// The generated epilogue code is a per-element expression over these (and
// + - * /); each function is the one the contract names:
//   relu(x)            max(x, 0)
//   gelu(x)            x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))   -- the exact (erf) form,
//                      as torch.nn.functional.gelu(x) with approximate='none'
//   gelu_tanh(x)       0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (not used by
//                      the compiler; for hand-written comparisons)
//   silu(x)            x * sigmoid(x)
//   sigmoid(x)         1 / (1 + exp(-x))
//   tanh(x)            tanhf(x)
//   leaky_relu(x, s)   x >= 0 ? x : s * x
//   exp(x)             expf(x)
//   max(a, b), min(a, b)
//   fast_exp2(x)       2^x by ex2.approx (not a sketch function; gelu and the softmax use it)
// All but gelu use the accurate CUDA math functions (no --use_fast_math approximations),
// so an f32 epilogue stays within 1e-6 relative of an f64 reference. gelu is one fitted
// polynomial and one ex2: within 4e-6 relative for x >= -5 (where 1 + erff cancels: 5e-2
// off at -5) and |error| under 2e-7 |x| everywhere (test/Runtime/gelu-accuracy). sigmoid's one
// division is the hardware reciprocal (__fdividef: within 2 ulp, 0 once 1 + exp(-x)
// passes 2^126, where the quotient is under 1.2e-38). With the IEEE reciprocal,
// Y = silu(X W^T) * U took 243-246 us at 4096 x 5632 x 2048 (bf16, H200) where a lab
// kernel with this one took 206 (docs/backend.md, "Epilogues that read a whole [M, N]
// tensor").
#ifndef SKETCH_EPILOGUE_CUH
#define SKETCH_EPILOGUE_CUH

#include <cuda_runtime.h>

namespace sketch {

__device__ __forceinline__ float relu(float x) { return fmaxf(x, 0.0f); }

/// 2^x with the hardware approximation (relative error about 2^-22); 2^-inf = +0.
__host__ __device__ __forceinline__ float fast_exp2(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

/// x Phi(x) with Phi(x) = erfc(-z) / 2, z = x / sqrt 2, as 2^Q(t) for t = |z| clamped to 4:
/// Q a degree-11 polynomial (bench/labs/gelu/fit_gelu.py, 9.8e-8 in log2). One ex2 and no
/// select around it: erff's coefficient selects and branch, unrolled over a 128 x 256 tile,
/// spilled; this form does not, and ran 2% faster (docs/backend.md, "GELU").
__host__ __device__ __forceinline__ float gelu(float x) {
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
  const float tail = fast_exp2(q);  // Phi(-|x|)
  return x * (x > 0.0f ? 1.0f - tail : tail);
}

__device__ __forceinline__ float gelu_tanh(float x) {
  float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

__device__ __forceinline__ float sigmoid(float x) { return __fdividef(1.0f, 1.0f + expf(-x)); }

__device__ __forceinline__ float silu(float x) { return x * sigmoid(x); }

__device__ __forceinline__ float tanh(float x) { return tanhf(x); }

__device__ __forceinline__ float leaky_relu(float x, float slope) {
  return x >= 0.0f ? x : slope * x;
}

__device__ __forceinline__ float exp(float x) { return expf(x); }

__device__ __forceinline__ float max(float a, float b) { return fmaxf(a, b); }

__device__ __forceinline__ float min(float a, float b) { return fminf(a, b); }

/// The same functions on attention scores (the statements between the scores GEMM and the
/// softmax). A softmax turns an absolute error e of a score into a relative error of about e
/// in its probability, so these trade the relative accuracy of tiny results for speed where
/// the accurate forms spend many instructions a score: exp, sigmoid, silu and tanh use the
/// hardware's ex2.approx and rcp.approx (__expf, __fdividef); their absolute error is about
/// 1e-6 (tanh: 1 - 2 / (1 + e^2x), e^2x within 2e-6 relative for |2x| up to 44).
namespace scores {

using sketch::gelu;
using sketch::leaky_relu;
using sketch::max;
using sketch::min;
using sketch::relu;

__device__ __forceinline__ float exp(float x) { return __expf(x); }

__device__ __forceinline__ float sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }

__device__ __forceinline__ float silu(float x) { return x * sigmoid(x); }

__device__ __forceinline__ float tanh(float x) {
  return 1.0f - __fdividef(2.0f, 1.0f + __expf(2.0f * x));
}

} // namespace scores

} // namespace sketch

#endif // SKETCH_EPILOGUE_CUH
