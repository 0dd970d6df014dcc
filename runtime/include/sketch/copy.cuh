// sketch/copy.cuh - data movement primitives the generated kernels call.
//
// Each function is one instruction (or a few) with a documented contract; the
// kernel's plan (which tile, which stage, which predicate) stays in the kernel.
//
//   smem_addr(p)               generic pointer into shared memory -> 32-bit shared address
//   cp_async_16/8/4(dst,src,p) asynchronous global->shared copy; zero-fills dst when !p
//   cp_async_16_bytes(dst,src,n) copies n (0..16) bytes and zero-fills the rest of 16
//   cp_async_commit()          closes the current group of cp.async
//   cp_async_wait<N>()         waits until at most N groups are still in flight
//   cp_async_wait_all()        waits for every outstanding cp.async
//   load_chunk_16<kVec>(dst, base, row, col, rows, cols, ld)
//                              one 16-byte chunk of a row-major matrix, zero outside it
//   ld_global_128 / st_global_128, ld_shared_128 / st_shared_128, st_shared_32
//                              16-byte (and 4-byte) vector accesses
//
// cp.async needs sm_80 or newer. Addresses must be aligned to the copy size
// (both the shared destination and the global source). When the predicate is
// false no global memory is read, but pass an in-bounds source address anyway
// (for instance the tensor's base pointer): tools and future hardware may check it.
#ifndef SKETCH_COPY_CUH
#define SKETCH_COPY_CUH

#include <cstdint>
#include <cuda_runtime.h>
#include <type_traits>

namespace sketch {

/// The 32-bit shared-window address of a pointer into shared memory.
__device__ __forceinline__ uint32_t smem_addr(const void *ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

/// 16-byte asynchronous copy, cached in L2 only (.cg). When `pred` is false the
/// 16 destination bytes are zero-filled (src-size 0).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, bool pred) {
  int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

/// 16-byte asynchronous copy of `src_bytes` (0..16) bytes; the rest is zero-filled.
__device__ __forceinline__ void cp_async_16_bytes(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

/// 8-byte asynchronous copy (cached in L1 and L2: .ca); zero-fills when !pred.
__device__ __forceinline__ void cp_async_8(uint32_t dst, const void *src, bool pred) {
  int src_bytes = pred ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

/// 4-byte asynchronous copy (.ca); zero-fills when !pred.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, bool pred) {
  int src_bytes = pred ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

/// Closes the group of cp.async issued by this thread since the last commit.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

/// Waits until at most N of this thread's committed groups are still pending.
/// Other threads' copies are visible only after a following __syncthreads().
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// Waits for all of this thread's cp.async (committed or not).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::);
}

/// 16-byte global load through the read-only path; `ptr` 16-byte aligned and not
/// written by the kernel.
__device__ __forceinline__ uint4 ld_global_128(const void *ptr) {
  return __ldg(reinterpret_cast<const uint4 *>(ptr));
}

/// 16-byte global store; `ptr` 16-byte aligned.
__device__ __forceinline__ void st_global_128(void *ptr, uint4 value) {
  *reinterpret_cast<uint4 *>(ptr) = value;
}

/// 16-byte shared load / store at a shared address (see smem_addr); 16-byte aligned.
__device__ __forceinline__ uint4 ld_shared_128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr));
  return v;
}

__device__ __forceinline__ void st_shared_128(uint32_t addr, uint4 value) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(value.x),
               "r"(value.y), "r"(value.z), "r"(value.w));
}

/// 4-byte shared store at a shared address; 4-byte aligned.
__device__ __forceinline__ void st_shared_32(uint32_t addr, uint32_t value) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(value));
}

/// The raw bits of an element of T (2- or 4-byte types).
template <typename T>
using element_bits = typename std::conditional<sizeof(T) == 2, uint16_t, uint32_t>::type;

/// Copies the 16-byte chunk at (row, col) .. (row, col + 16/sizeof(T) - 1) of a
/// row-major rows x cols matrix (`ld` elements a row) to shared address `dst`;
/// elements outside the matrix become zero.
///   kVec = true:  one cp.async; needs col and ld multiples of the chunk, and
///                 `base` 16-byte aligned (cols a multiple of the chunk too).
///   kVec = false: element loads with per-element bounds, one 16-byte st.shared
///                 (synchronous; any size and alignment).
template <bool kVec, typename T>
__device__ __forceinline__ void load_chunk_16(uint32_t dst, const T *base, int64_t row,
                                              int64_t col, int64_t rows, int64_t cols,
                                              int64_t ld) {
  constexpr int kElems = 16 / sizeof(T);
  if constexpr (kVec) {
    bool pred = row < rows && col < cols;
    cp_async_16(dst, pred ? base + row * ld + col : base, pred);
  } else {
    using Bits = element_bits<T>;
    const Bits *src = reinterpret_cast<const Bits *>(base) + row * ld + col;
    union {
      Bits e[kElems];
      uint4 v;
    } chunk;
#pragma unroll
    for (int i = 0; i < kElems; ++i)
      chunk.e[i] = (row < rows && col + i < cols) ? src[i] : Bits(0);
    st_shared_128(dst, chunk.v);
  }
}

} // namespace sketch

#endif // SKETCH_COPY_CUH
