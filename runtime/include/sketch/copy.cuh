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
//   load_element_chunks_16<N>(base, row, row_step, col, rows, cols, ld, dst_of)
//                              N chunks of any alignment, every load in flight before the stores
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

/// 4-byte global load (`ptr` 4-byte aligned), as an `asm volatile`: the compiler keeps it in
/// program order with the other volatile accesses (the element path's batches of loads stay
/// between their stores instead of all being hoisted into registers at once).
__device__ __forceinline__ uint32_t ld_global_32(const void *ptr) {
  uint32_t v;
  asm volatile("ld.global.nc.u32 %0, [%1];\n" : "=r"(v) : "l"(ptr));
  return v;
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

/// The 16 bytes at (row, col) .. (row, col + 16/sizeof(T) - 1) of a row-major rows x cols
/// matrix (`ld` elements a row) as four words, loaded element by element (any alignment);
/// elements outside the matrix are zero.
template <typename T>
__device__ __forceinline__ void load_element_words(const T *base, int64_t row, int64_t col,
                                                   int64_t rows, int64_t cols, int64_t ld,
                                                   uint32_t *word) {
  const element_bits<T> *src = reinterpret_cast<const element_bits<T> *>(base) + row * ld + col;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 2) {
      const uint32_t lo = (row < rows && col + 2 * i < cols) ? src[2 * i] : 0u;
      const uint32_t hi = (row < rows && col + 2 * i + 1 < cols) ? src[2 * i + 1] : 0u;
      word[i] = lo | hi << 16;
    } else {
      word[i] = (row < rows && col + i < cols) ? src[i] : 0u;
    }
  }
}

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
  if constexpr (kVec) {
    bool pred = row < rows && col < cols;
    cp_async_16(dst, pred ? base + row * ld + col : base, pred);
  } else {
    uint32_t word[4];
    load_element_words(base, row, col, rows, cols, ld, word);
    st_shared_128(dst, make_uint4(word[0], word[1], word[2], word[3]));
  }
}

/// One 16-byte chunk of a row-major matrix of any size and alignment, fetched into
/// registers first (fetch) and written to shared memory later (store), so that a
/// thread keeps several chunks' loads in flight. 2-byte elements: where the chunk lies
/// inside its row, and the aligned 4-byte words around it inside the matrix (from
/// element (0, 0) to the last row's last element), four or five word loads, shifted
/// into place by store; otherwise (and for 4-byte elements) element loads, zero outside.
template <typename T>
struct ElementChunk16 {
  static constexpr int kElems = 16 / sizeof(T);
  uint32_t word[5];

  /// Issues the loads; returns whether store must shift the words by one element.
  __device__ __forceinline__ bool fetch(const T *base, int64_t row, int64_t col, int64_t rows,
                                        int64_t cols, int64_t ld) {
    word[4] = 0;
    if constexpr (sizeof(T) == 2) {
      const uint16_t *elems = reinterpret_cast<const uint16_t *>(base);
      const uint16_t *src = elems + row * ld + col;
      const uintptr_t at = reinterpret_cast<uintptr_t>(src);
      const bool shifted = (at & 2) != 0;
      const uintptr_t first = at & ~uintptr_t(3), last = first + (shifted ? 20 : 16);
      const uintptr_t begin = reinterpret_cast<uintptr_t>(elems);
      const uintptr_t end = begin + 2 * (uintptr_t)((rows - 1) * ld + cols);  // past the last
      if (row < rows && col + kElems <= cols && first >= begin && last <= end) {
        const uint32_t *words = reinterpret_cast<const uint32_t *>(first);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          word[i] = ld_global_32(words + i);
        if (shifted)
          word[4] = ld_global_32(words + 4);
        return shifted;
      }
    }
    load_element_words(base, row, col, rows, cols, ld, word);
    return false;
  }

  /// Writes the chunk, its words shifted right by one 2-byte element if `shifted`.
  __device__ __forceinline__ void store(uint32_t dst, bool shifted) const {
    const uint32_t bits = shifted ? 16 : 0;
    st_shared_128(dst, make_uint4(__funnelshift_r(word[0], word[1], bits),
                                  __funnelshift_r(word[1], word[2], bits),
                                  __funnelshift_r(word[2], word[3], bits),
                                  __funnelshift_r(word[3], word[4], bits)));
  }
};

/// Copies N chunks, at col of rows row, row + row_step, ..., to shared addresses
/// dst_of(0) .. dst_of(N - 1) by element path (ElementChunk16): every chunk's loads
/// are issued before the first store (their shifts kept as bits of one register).
template <int N, typename T, typename DstOf>
__device__ __forceinline__ void load_element_chunks_16(const T *base, int64_t row, int row_step,
                                                       int64_t col, int64_t rows, int64_t cols,
                                                       int64_t ld, DstOf dst_of) {
  static_assert(N <= 32, "one shift bit a chunk");
  ElementChunk16<T> chunk[N];
  uint32_t shifted = 0;
#pragma unroll
  for (int i = 0; i < N; ++i)
    shifted |= (uint32_t)chunk[i].fetch(base, row + (int64_t)i * row_step, col, rows, cols, ld)
               << i;
#pragma unroll
  for (int i = 0; i < N; ++i)
    chunk[i].store(dst_of(i), shifted >> i & 1);
}

} // namespace sketch

#endif // SKETCH_COPY_CUH
