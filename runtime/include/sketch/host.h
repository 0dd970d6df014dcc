// sketch/host.h - small host-side helpers of the generated host functions.
//
//   ceil_div(a, b)                 tiles of size b covering a (host and device)
//   aligned_to(ptr, bytes)         ptr is a multiple of `bytes` (null counts as aligned)
//   all_nonnull(p, ...)            no pointer is null
//   valid_pointer(p, count)        p is not null, or the tensor has no elements
//   all_nonnegative(n, ...)        no size is negative
//   all_multiple_of(k, n, ...)     every size is a multiple of k
//   allow_dynamic_smem(kernel, b)  lets `kernel` use b bytes of dynamic shared memory
//                                  (cudaFuncSetAttribute, needed above 48 KB)
#ifndef SKETCH_HOST_H
#define SKETCH_HOST_H

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

namespace sketch {

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool aligned_to(const void *ptr, size_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

inline bool all_nonnull() { return true; }
template <typename P, typename... Rest>
inline bool all_nonnull(const P *ptr, const Rest *...rest) {
  return ptr != nullptr && all_nonnull(rest...);
}

inline bool valid_pointer(const void *ptr, int64_t count) { return ptr != nullptr || count == 0; }

inline bool all_nonnegative() { return true; }
template <typename... Rest>
inline bool all_nonnegative(int64_t n, Rest... rest) {
  return n >= 0 && all_nonnegative(rest...);
}

inline bool all_multiple_of(int64_t) { return true; }
template <typename... Rest>
inline bool all_multiple_of(int64_t k, int64_t n, Rest... rest) {
  return n % k == 0 && all_multiple_of(k, rest...);
}

/// Raises `kernel`'s dynamic shared-memory limit to `bytes` when it exceeds the
/// default 48 KB; returns the CUDA error (cudaSuccess when nothing was needed).
template <typename Kernel>
inline cudaError_t allow_dynamic_smem(Kernel kernel, int bytes) {
  if (bytes <= 48 * 1024)
    return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

} // namespace sketch

#endif // SKETCH_HOST_H
