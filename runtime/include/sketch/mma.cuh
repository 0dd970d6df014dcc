// sketch/mma.cuh - tensor-core primitives the generated kernels call (sm_80+).
//
//   ldmatrix_x1/x2/x4(regs..., addr)        8x8 b16 matrices from shared memory
//   ldmatrix_x1/x2/x4_trans(regs..., addr)  the same, each matrix transposed
//   mma_m16n8k16_f16 / _bf16(d, a, b)       d += a * b, f32 accumulators
//   mma_m16n8k16<T>(d, a, b)                the same, chosen by element type
//   pack2<T>(lo, hi), to_float(x), from_float<T>(f)   f32 <-> f16/bf16
//   load_word(p), load_pair_bits(p, col, cols), unpack2<T>(bits)   two 16-bit elements,
//                                             one word
//
// Fragment layouts (PTX ISA, "mma.m16n8k16"), lane = 4*g + t (g = lane/4, t = lane%4):
//   A (16x16, row-major): a[0] = A[g][2t..2t+1],   a[1] = A[g+8][2t..2t+1],
//                         a[2] = A[g][2t+8..+9],   a[3] = A[g+8][2t+8..+9]
//   B (16x8,  "col"):     b[0] = B[2t..2t+1][g],   b[1] = B[2t+8..+9][g]
//   C/D (16x8, f32):      d[0..1] = D[g][2t..2t+1], d[2..3] = D[g+8][2t..2t+1]
// ldmatrix: lanes 8j..8j+7 give the row addresses (16 bytes each) of matrix j;
// after the load, register j of lane 4*g + t holds row g, columns 2t..2t+1 of
// matrix j (with .trans: column g, rows 2t..2t+1).
#ifndef SKETCH_MMA_CUH
#define SKETCH_MMA_CUH

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace sketch {

__device__ __forceinline__ void ldmatrix_x1(uint32_t &r0, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r0) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x2(uint32_t &r0, uint32_t &r1, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1)
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                            uint32_t &r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x1_trans(uint32_t &r0, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r0)
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t &r0, uint32_t &r1, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1)
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                                  uint32_t &r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

/// d += a * b for a 16x8x16 tile: f16 operands, f32 accumulators.
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4],
                                                 const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// d += a * b for a 16x8x16 tile: bf16 operands, f32 accumulators.
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// The m16n8k16 MMA for operand element type T (__half or __nv_bfloat16).
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2]);

template <>
__device__ __forceinline__ void mma_m16n8k16<__half>(float (&d)[4], const uint32_t (&a)[4],
                                                     const uint32_t (&b)[2]) {
  mma_m16n8k16_f16(d, a, b);
}

template <>
__device__ __forceinline__ void mma_m16n8k16<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                            const uint32_t (&b)[2]) {
  mma_m16n8k16_bf16(d, a, b);
}

/// Two floats rounded (to nearest even) into one 32-bit register of two T,
/// `lo` in the low half (the lower column / index).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);

template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&h);
}

template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&h);
}

/// Element conversions used by loads and stores of any element type.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

/// Whether 16-bit elements at p can be read as 32-bit words (p 4-byte aligned).
template <typename T>
__device__ __forceinline__ bool aligned_words(const T *p) {
  return (reinterpret_cast<uintptr_t>(p) & 3) == 0;
}

/// p[0] and p[1] (16-bit elements) as one 32-bit word, p[0] low; p 4-byte aligned.
template <typename T>
__device__ __forceinline__ uint32_t load_word(const T *p) {
  static_assert(sizeof(T) == 2, "pairs of 16-bit elements");
  return *reinterpret_cast<const uint32_t *>(p);
}

/// load_word of p[0], p[1] at columns `col`, col + 1 of a row of `cols`, any alignment:
/// element loads where it is not aligned or not inside (zero outside). A kernel parks
/// such words in its accumulator registers and widens them there (unpack2), so that a
/// tile's loads of a per-column operand are all in flight at once.
template <typename T>
__device__ __forceinline__ uint32_t load_pair_bits(const T *p, int64_t col, int64_t cols) {
  if (col + 1 < cols && aligned_words(p))
    return load_word(p);
  const auto *half = reinterpret_cast<const uint16_t *>(p);
  const uint32_t lo = col < cols ? half[0] : 0u, hi = col + 1 < cols ? half[1] : 0u;
  return lo | hi << 16;
}

/// The two T halves of a 32-bit register as floats (low half first).
template <typename T>
__device__ __forceinline__ float2 unpack2(uint32_t packed);

template <>
__device__ __forceinline__ float2 unpack2<__half>(uint32_t packed) {
  return __half22float2(*reinterpret_cast<__half2 *>(&packed));
}

template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t packed) {
  return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&packed));
}

} // namespace sketch

#endif // SKETCH_MMA_CUH
