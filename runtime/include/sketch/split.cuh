// sketch/split.cuh - the split-K GEMM's reduction (lib/Emit/EmitGemm.cpp, docs/backend.md
// "Split-K GEMM"): the K slices of one output tile each stage their f32 partial tile in
// shared memory; each slice then sums its share of the tile over every slice, in slice
// order (the same bits every run), and applies the epilogue to it.
//
//   add_f32x4(sum, x)                  sum[0..3] += the 4 floats of a 16-byte load x
// On sm_90 (thread-block clusters: the slices are the blocks of one cluster):
//   cluster_rank(), cluster_size()     this block's rank in its cluster, the cluster's blocks
//   cluster_sync()                     every thread of every block of the cluster; shared
//                                      stores before it are seen by any block's loads after it
//   cluster_shared_addr(addr, rank)    shared address `addr` in block `rank` of the cluster
//   ld_cluster_128(addr)               16 bytes at such an address (distributed shared memory)
//   ld_cluster_f32(addr)               a float at such an address
#ifndef SKETCH_SPLIT_CUH
#define SKETCH_SPLIT_CUH

#include <cstdint>

#include "sketch/copy.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SKETCH_HAS_CLUSTERS 1
#else
#define SKETCH_HAS_CLUSTERS 0
#endif

namespace sketch {

/// sum[0..3] += the four floats of a 16-byte load (sketch::ld_shared_128, ld_cluster_128).
__device__ __forceinline__ void add_f32x4(float *sum, uint4 x) {
  sum[0] += __uint_as_float(x.x);
  sum[1] += __uint_as_float(x.y);
  sum[2] += __uint_as_float(x.z);
  sum[3] += __uint_as_float(x.w);
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank = 0;
#if SKETCH_HAS_CLUSTERS
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
#endif
  return rank;
}

__device__ __forceinline__ uint32_t cluster_size() {
  uint32_t size = 1;
#if SKETCH_HAS_CLUSTERS
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(size));
#endif
  return size;
}

__device__ __forceinline__ void cluster_sync() {
#if SKETCH_HAS_CLUSTERS
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __syncthreads();
#endif
}

__device__ __forceinline__ uint32_t cluster_shared_addr(uint32_t addr, uint32_t rank) {
#if SKETCH_HAS_CLUSTERS
  uint32_t mapped;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(mapped) : "r"(addr), "r"(rank));
  return mapped;
#else
  return addr;
#endif
}

__device__ __forceinline__ uint4 ld_cluster_128(uint32_t addr) {
#if SKETCH_HAS_CLUSTERS
  uint4 v;
  asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
#else
  return ld_shared_128(addr);
#endif
}

__device__ __forceinline__ float ld_cluster_f32(uint32_t addr) {
  float v;
#if SKETCH_HAS_CLUSTERS
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
#else
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
#endif
  return v;
}

} // namespace sketch

#endif // SKETCH_SPLIT_CUH
