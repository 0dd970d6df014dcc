// sketch/wgmma.cuh - Hopper warpgroup MMA primitives (sm_90a) for the GEMM path
// that sketchc emits for --arch=sm_90a (lib/Emit/WgmmaGemm.cpp).
//
//   wgmma_desc_sw128(addr, lbo, sbo[, offset])   matrix descriptor of a 128-byte-swizzled tile
//   wgmma_fence() / wgmma_commit() / wgmma_wait<N>()   ordering of the async MMAs
//   fence_async_shared()                 ordinary (cp.async) shared stores -> async proxy
//   wgmma_m64nNk16<T, tA, tB>(d, desc_a, desc_b)   d += A * B, f32 accumulators, N any
//                                        multiple of 16 up to 256 (also wgmma_m64k16<T, N, ..>)
//   wgmma_m64nNk16_rs<T, tB>(d, a, desc_b)   the same with A from registers (wgmma_m64k16_rs):
//                                        a[4] is the mma.sync m16n8k16 A fragment of the
//                                        warp's 16 rows (softmax.cuh's reshape_c_to_a)
//   wgmma_fence_fragments(a)             after the wait: keeps A fragments alive until then
//   k_major_desc<ROWS>(tile, k) / mn_major_desc<ROWS>(tile, k)   the descriptor of k16 step k
//                                        of a tile in 64-element panels of ROWS rows
//   setmaxnreg_dec<R>() / setmaxnreg_inc<R>()   a warpgroup gives registers back / takes them
//   named_barrier_sync(id, threads)      bar.sync among `threads` threads (the consumers only)
//   named_barrier_arrive(id, threads)    bar.arrive: counts towards it, does not wait
//   grid_dependency_wait()               under a programmatic dependent launch (host.h's
//                                        launch_kernel): waits until the previous kernel has
//                                        finished and its writes are visible; then lets the
//                                        next kernel start its own launch
//
// Shared tiles (PTX ISA "Matrix Descriptor", 128-byte swizzle; tile bases 1024-byte aligned):
//   K-major  (rows along M or N, 64 k-elements = 128 bytes a row): chunk c of row r
//            at r * 128 + ((c ^ (r % 8)) << 4); SBO = 1024 (8-row groups), LBO unused;
//            the k16 step s starts 32 * s bytes further.
//   MN-major (rows along K, 64 m/n-elements a row, one 64-wide block after another):
//            chunk c of row k of block j at j * BK * 128 + k * 128 + ((c ^ (k % 8)) << 4);
//            LBO = BK * 128 (block stride), SBO = 1024 (8-row groups along K); the k16
//            step s starts 2048 * s bytes further; the instruction's transpose bit is 1.
// Accumulators: thread t of warp w in the warpgroup holds d[j][0..1] = D[16w + t/4][8j + 2(t%4) + 0..1]
// and d[j][2..3] = D[16w + t/4 + 8][...]: the mma.sync m16n8 C fragments of the warp's 16 rows.
#ifndef SKETCH_WGMMA_CUH
#define SKETCH_WGMMA_CUH

#include <cstdint>
#include <type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SKETCH_HAS_WGMMA 1
#else
#define SKETCH_HAS_WGMMA 0
#endif

namespace sketch {

/// A wgmma matrix descriptor: start address, leading and stride byte offsets
/// (all >> 4), layout 1 = 128-byte swizzle (bits 62-63), base offset 0. `offset` (a k16
/// step's bytes into the tile) is added to the built low word, so a loop's descriptors
/// share one build; addr + offset must stay under 256 KB (any shared address does).
__host__ __device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t addr, uint32_t lbo,
                                                             uint32_t sbo, uint32_t offset = 0) {
  const uint32_t lo = (((addr & 0x3FFFF) >> 4) | (((lbo >> 4) & 0x3FFF) << 16)) + (offset >> 4);
  const uint32_t hi = ((sbo >> 4) & 0x3FFF) | (1u << 30);
  return (uint64_t(hi) << 32) | lo;
}

__device__ __forceinline__ void wgmma_fence() {
#if SKETCH_HAS_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit() {
#if SKETCH_HAS_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if SKETCH_HAS_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/// The first statement of a kernel that host.h's launch_kernel may launch as a
/// programmatic dependent: griddepcontrol.wait returns once the stream's previous kernel
/// has completed and flushed its memory (at once without such a launch); launch_dependents
/// then lets the next such kernel be scheduled, to wait in turn, while this one runs.
__device__ __forceinline__ void grid_dependency_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

/// Makes this thread's completed shared-memory writes (cp.async included)
/// visible to the async proxy that wgmma reads through; a barrier follows.
__device__ __forceinline__ void fence_async_shared() {
#if SKETCH_HAS_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Warp specialization (all 128 threads of the warpgroup execute it): the producer
/// warpgroup lowers its register budget to R so the consumers can raise theirs; R a
/// multiple of 8 in 24 .. 256.
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
#if SKETCH_HAS_WGMMA
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}

template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
#if SKETCH_HAS_WGMMA
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}

/// A block barrier among `threads` threads (a multiple of 32) on barrier `id` (1 .. 15;
/// 0 is __syncthreads'): the consumer warpgroups meet without the producer.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// Arrives at barrier `id` without waiting: the threads in bar.sync on it go on
/// once `threads` threads (those waiting and those arriving) have come.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// Keeps the compiler from moving accumulator reads or writes across a wgmma
/// fence or wait (the registers belong to the async unit in between).
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      asm volatile("" : "+f"(d[j][e])::"memory");
}

// The wgmma wrappers, one per N (every multiple of 16 up to 256): the instruction is the
// same for every N but for the number of accumulator registers (N / 2 a thread), which
// inline asm must list. SKETCH_WGMMA_R8_i is "%8i, ..., %8i+7" (the 8 registers of
// columns 16i .. 16i+15); SKETCH_WGMMA_N<N>_REGS lists N / 2 of them and
// SKETCH_WGMMA_N<N>_ACC the matching "+f" operands, accumulator rows 0 .. N / 8 - 1.
#define SKETCH_WGMMA_R8_0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define SKETCH_WGMMA_R8_1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define SKETCH_WGMMA_R8_2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define SKETCH_WGMMA_R8_3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define SKETCH_WGMMA_R8_4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define SKETCH_WGMMA_R8_5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define SKETCH_WGMMA_R8_6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define SKETCH_WGMMA_R8_7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define SKETCH_WGMMA_R8_8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define SKETCH_WGMMA_R8_9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define SKETCH_WGMMA_R8_10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define SKETCH_WGMMA_R8_11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define SKETCH_WGMMA_R8_12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define SKETCH_WGMMA_R8_13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define SKETCH_WGMMA_R8_14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define SKETCH_WGMMA_R8_15 "%120, %121, %122, %123, %124, %125, %126, %127"
#define SKETCH_WGMMA_N16_REGS SKETCH_WGMMA_R8_0
#define SKETCH_WGMMA_N32_REGS SKETCH_WGMMA_N16_REGS ", " SKETCH_WGMMA_R8_1
#define SKETCH_WGMMA_N48_REGS SKETCH_WGMMA_N32_REGS ", " SKETCH_WGMMA_R8_2
#define SKETCH_WGMMA_N64_REGS SKETCH_WGMMA_N48_REGS ", " SKETCH_WGMMA_R8_3
#define SKETCH_WGMMA_N80_REGS SKETCH_WGMMA_N64_REGS ", " SKETCH_WGMMA_R8_4
#define SKETCH_WGMMA_N96_REGS SKETCH_WGMMA_N80_REGS ", " SKETCH_WGMMA_R8_5
#define SKETCH_WGMMA_N112_REGS SKETCH_WGMMA_N96_REGS ", " SKETCH_WGMMA_R8_6
#define SKETCH_WGMMA_N128_REGS SKETCH_WGMMA_N112_REGS ", " SKETCH_WGMMA_R8_7
#define SKETCH_WGMMA_N144_REGS SKETCH_WGMMA_N128_REGS ", " SKETCH_WGMMA_R8_8
#define SKETCH_WGMMA_N160_REGS SKETCH_WGMMA_N144_REGS ", " SKETCH_WGMMA_R8_9
#define SKETCH_WGMMA_N176_REGS SKETCH_WGMMA_N160_REGS ", " SKETCH_WGMMA_R8_10
#define SKETCH_WGMMA_N192_REGS SKETCH_WGMMA_N176_REGS ", " SKETCH_WGMMA_R8_11
#define SKETCH_WGMMA_N208_REGS SKETCH_WGMMA_N192_REGS ", " SKETCH_WGMMA_R8_12
#define SKETCH_WGMMA_N224_REGS SKETCH_WGMMA_N208_REGS ", " SKETCH_WGMMA_R8_13
#define SKETCH_WGMMA_N240_REGS SKETCH_WGMMA_N224_REGS ", " SKETCH_WGMMA_R8_14
#define SKETCH_WGMMA_N256_REGS SKETCH_WGMMA_N240_REGS ", " SKETCH_WGMMA_R8_15
#define SKETCH_WGMMA_ACC1(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define SKETCH_WGMMA_ACC2(j) SKETCH_WGMMA_ACC1(j), SKETCH_WGMMA_ACC1(j + 1)
#define SKETCH_WGMMA_N16_ACC SKETCH_WGMMA_ACC2(0)
#define SKETCH_WGMMA_N32_ACC SKETCH_WGMMA_N16_ACC, SKETCH_WGMMA_ACC2(2)
#define SKETCH_WGMMA_N48_ACC SKETCH_WGMMA_N32_ACC, SKETCH_WGMMA_ACC2(4)
#define SKETCH_WGMMA_N64_ACC SKETCH_WGMMA_N48_ACC, SKETCH_WGMMA_ACC2(6)
#define SKETCH_WGMMA_N80_ACC SKETCH_WGMMA_N64_ACC, SKETCH_WGMMA_ACC2(8)
#define SKETCH_WGMMA_N96_ACC SKETCH_WGMMA_N80_ACC, SKETCH_WGMMA_ACC2(10)
#define SKETCH_WGMMA_N112_ACC SKETCH_WGMMA_N96_ACC, SKETCH_WGMMA_ACC2(12)
#define SKETCH_WGMMA_N128_ACC SKETCH_WGMMA_N112_ACC, SKETCH_WGMMA_ACC2(14)
#define SKETCH_WGMMA_N144_ACC SKETCH_WGMMA_N128_ACC, SKETCH_WGMMA_ACC2(16)
#define SKETCH_WGMMA_N160_ACC SKETCH_WGMMA_N144_ACC, SKETCH_WGMMA_ACC2(18)
#define SKETCH_WGMMA_N176_ACC SKETCH_WGMMA_N160_ACC, SKETCH_WGMMA_ACC2(20)
#define SKETCH_WGMMA_N192_ACC SKETCH_WGMMA_N176_ACC, SKETCH_WGMMA_ACC2(22)
#define SKETCH_WGMMA_N208_ACC SKETCH_WGMMA_N192_ACC, SKETCH_WGMMA_ACC2(24)
#define SKETCH_WGMMA_N224_ACC SKETCH_WGMMA_N208_ACC, SKETCH_WGMMA_ACC2(26)
#define SKETCH_WGMMA_N240_ACC SKETCH_WGMMA_N224_ACC, SKETCH_WGMMA_ACC2(28)
#define SKETCH_WGMMA_N256_ACC SKETCH_WGMMA_N240_ACC, SKETCH_WGMMA_ACC2(30)
// After the accumulators: desc_a, desc_b, scale-d, the scales, kTransA, kTransB.
#define SKETCH_WGMMA_N16_TAIL "}, %8, %9, p, 1, 1, %10, %11;\n"
#define SKETCH_WGMMA_N32_TAIL "}, %16, %17, p, 1, 1, %18, %19;\n"
#define SKETCH_WGMMA_N48_TAIL "}, %24, %25, p, 1, 1, %26, %27;\n"
#define SKETCH_WGMMA_N64_TAIL "}, %32, %33, p, 1, 1, %34, %35;\n"
#define SKETCH_WGMMA_N80_TAIL "}, %40, %41, p, 1, 1, %42, %43;\n"
#define SKETCH_WGMMA_N96_TAIL "}, %48, %49, p, 1, 1, %50, %51;\n"
#define SKETCH_WGMMA_N112_TAIL "}, %56, %57, p, 1, 1, %58, %59;\n"
#define SKETCH_WGMMA_N128_TAIL "}, %64, %65, p, 1, 1, %66, %67;\n"
#define SKETCH_WGMMA_N144_TAIL "}, %72, %73, p, 1, 1, %74, %75;\n"
#define SKETCH_WGMMA_N160_TAIL "}, %80, %81, p, 1, 1, %82, %83;\n"
#define SKETCH_WGMMA_N176_TAIL "}, %88, %89, p, 1, 1, %90, %91;\n"
#define SKETCH_WGMMA_N192_TAIL "}, %96, %97, p, 1, 1, %98, %99;\n"
#define SKETCH_WGMMA_N208_TAIL "}, %104, %105, p, 1, 1, %106, %107;\n"
#define SKETCH_WGMMA_N224_TAIL "}, %112, %113, p, 1, 1, %114, %115;\n"
#define SKETCH_WGMMA_N240_TAIL "}, %120, %121, p, 1, 1, %122, %123;\n"
#define SKETCH_WGMMA_N256_TAIL "}, %128, %129, p, 1, 1, %130, %131;\n"

// wgmma.mma_async m64nNk16 with element type TYPE ("f16" or "bf16"): d += A * B, scale-d 1
// (accumulate), scales 1, the transpose bits kTransA / kTransB.
#define SKETCH_WGMMA_ASM(N, TYPE)                                                                 \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " "               \
               "{" SKETCH_WGMMA_N##N##_REGS SKETCH_WGMMA_N##N##_TAIL "}\n"                        \
               : SKETCH_WGMMA_N##N##_ACC                                                          \
               : "l"(desc_a), "l"(desc_b), "n"(kTransA), "n"(kTransB))

// The register-A form: after the N / 2 accumulators, {a0..a3}, desc_b, scale-d, the
// scales, kTransB (SKETCH_WGMMA_RS_TAIL(i) with i = N / 2).
#define SKETCH_WGMMA_RS_TAIL_N16 "}, {%8, %9, %10, %11}, %12, p, 1, 1, %13;\n"
#define SKETCH_WGMMA_RS_TAIL_N32 "}, {%16, %17, %18, %19}, %20, p, 1, 1, %21;\n"
#define SKETCH_WGMMA_RS_TAIL_N48 "}, {%24, %25, %26, %27}, %28, p, 1, 1, %29;\n"
#define SKETCH_WGMMA_RS_TAIL_N64 "}, {%32, %33, %34, %35}, %36, p, 1, 1, %37;\n"
#define SKETCH_WGMMA_RS_TAIL_N80 "}, {%40, %41, %42, %43}, %44, p, 1, 1, %45;\n"
#define SKETCH_WGMMA_RS_TAIL_N96 "}, {%48, %49, %50, %51}, %52, p, 1, 1, %53;\n"
#define SKETCH_WGMMA_RS_TAIL_N112 "}, {%56, %57, %58, %59}, %60, p, 1, 1, %61;\n"
#define SKETCH_WGMMA_RS_TAIL_N128 "}, {%64, %65, %66, %67}, %68, p, 1, 1, %69;\n"
#define SKETCH_WGMMA_RS_TAIL_N144 "}, {%72, %73, %74, %75}, %76, p, 1, 1, %77;\n"
#define SKETCH_WGMMA_RS_TAIL_N160 "}, {%80, %81, %82, %83}, %84, p, 1, 1, %85;\n"
#define SKETCH_WGMMA_RS_TAIL_N176 "}, {%88, %89, %90, %91}, %92, p, 1, 1, %93;\n"
#define SKETCH_WGMMA_RS_TAIL_N192 "}, {%96, %97, %98, %99}, %100, p, 1, 1, %101;\n"
#define SKETCH_WGMMA_RS_TAIL_N208 "}, {%104, %105, %106, %107}, %108, p, 1, 1, %109;\n"
#define SKETCH_WGMMA_RS_TAIL_N224 "}, {%112, %113, %114, %115}, %116, p, 1, 1, %117;\n"
#define SKETCH_WGMMA_RS_TAIL_N240 "}, {%120, %121, %122, %123}, %124, p, 1, 1, %125;\n"
#define SKETCH_WGMMA_RS_TAIL_N256 "}, {%128, %129, %130, %131}, %132, p, 1, 1, %133;\n"
#define SKETCH_WGMMA_RS_ASM(N, TYPE)                                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " "               \
               "{" SKETCH_WGMMA_N##N##_REGS SKETCH_WGMMA_RS_TAIL_N##N "}\n"                      \
               : SKETCH_WGMMA_N##N##_ACC                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(kTransB))

#if SKETCH_HAS_WGMMA
#define SKETCH_WGMMA_RS_BODY(N)                                                                   \
  if constexpr (std::is_same<T, __half>::value)                                                  \
    SKETCH_WGMMA_RS_ASM(N, "f16");                                                                \
  else                                                                                            \
    SKETCH_WGMMA_RS_ASM(N, "bf16");
#define SKETCH_WGMMA_BODY(N)                                                                      \
  if constexpr (std::is_same<T, __half>::value)                                                  \
    SKETCH_WGMMA_ASM(N, "f16");                                                                   \
  else                                                                                            \
    SKETCH_WGMMA_ASM(N, "bf16");
#else
#define SKETCH_WGMMA_RS_BODY(N)
#define SKETCH_WGMMA_BODY(N)
#endif

/// D[64 x N] += A[64 x 16] * B[16 x N], both operands from shared memory;
/// T = __half or __nv_bfloat16. d holds N / 8 accumulator rows of 4 (see the layout above).
#define SKETCH_WGMMA_DEFINE(N)                                                                    \
  template <typename T, int kTransA, int kTransB>                                                 \
  __device__ __forceinline__ void wgmma_m64n##N##k16(float (&d)[N / 8][4], uint64_t desc_a,       \
                                                     uint64_t desc_b) {                           \
    SKETCH_WGMMA_BODY(N)                                                                          \
  }

/// D[64 x N] += A[64 x 16] * B[16 x N] with A in registers (a: this warp's 16 rows, as
/// an mma.sync m16n8k16 A fragment) and B from shared memory.
#define SKETCH_WGMMA_RS_DEFINE(N)                                                                 \
  template <typename T, int kTransB>                                                              \
  __device__ __forceinline__ void wgmma_m64n##N##k16_rs(float (&d)[N / 8][4],                    \
                                                        const uint32_t (&a)[4], uint64_t desc_b) { \
    SKETCH_WGMMA_RS_BODY(N)                                                                       \
  }

/// wgmma_m64nNk16 for any N of those, chosen at compile time: wgmma_m64k16<T, N, tA, tB>
/// (d, desc_a, desc_b) and wgmma_m64k16_rs<T, N, tB>(d, a, desc_b).
template <int N>
struct WgmmaN;
#define SKETCH_WGMMA_N_ENTRY(N)                                                                   \
  template <>                                                                                     \
  struct WgmmaN<N> {                                                                              \
    template <typename T, int kTransA, int kTransB>                                               \
    static __device__ __forceinline__ void ss(float (&d)[N / 8][4], uint64_t da, uint64_t db) {   \
      wgmma_m64n##N##k16<T, kTransA, kTransB>(d, da, db);                                         \
    }                                                                                             \
    template <typename T, int kTransB>                                                            \
    static __device__ __forceinline__ void rs(float (&d)[N / 8][4], const uint32_t (&a)[4],       \
                                              uint64_t db) {                                      \
      wgmma_m64n##N##k16_rs<T, kTransB>(d, a, db);                                                \
    }                                                                                             \
  };

/// One N: both wrappers and its entry in WgmmaN.
#define SKETCH_WGMMA_DEFINE_N(N) SKETCH_WGMMA_DEFINE(N) SKETCH_WGMMA_RS_DEFINE(N) SKETCH_WGMMA_N_ENTRY(N)
SKETCH_WGMMA_DEFINE_N(16)
SKETCH_WGMMA_DEFINE_N(32)
SKETCH_WGMMA_DEFINE_N(48)
SKETCH_WGMMA_DEFINE_N(64)
SKETCH_WGMMA_DEFINE_N(80)
SKETCH_WGMMA_DEFINE_N(96)
SKETCH_WGMMA_DEFINE_N(112)
SKETCH_WGMMA_DEFINE_N(128)
SKETCH_WGMMA_DEFINE_N(144)
SKETCH_WGMMA_DEFINE_N(160)
SKETCH_WGMMA_DEFINE_N(176)
SKETCH_WGMMA_DEFINE_N(192)
SKETCH_WGMMA_DEFINE_N(208)
SKETCH_WGMMA_DEFINE_N(224)
SKETCH_WGMMA_DEFINE_N(240)
SKETCH_WGMMA_DEFINE_N(256)

template <typename T, int N, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 8][4], uint64_t desc_a,
                                             uint64_t desc_b) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "wgmma N: a multiple of 16 up to 256");
  WgmmaN<N>::template ss<T, kTransA, kTransB>(d, desc_a, desc_b);
}

template <typename T, int N, int kTransB>
__device__ __forceinline__ void wgmma_m64k16_rs(float (&d)[N / 8][4], const uint32_t (&a)[4],
                                                uint64_t desc_b) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "wgmma N: a multiple of 16 up to 256");
  WgmmaN<N>::template rs<T, kTransB>(d, a, desc_b);
}

/// Keeps the compiler from moving writes of A fragments past the wgmma fence.
template <int K>
__device__ __forceinline__ void wgmma_fence_fragments(uint32_t (&a)[K][4]) {
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      asm volatile("" : "+r"(a[k][e])::"memory");
}

/// K-major operand tile (64 elements = 128 bytes a row, panels of ROWS rows): the
/// descriptor of k16 step k.
template <int ROWS>
__host__ __device__ __forceinline__ uint64_t k_major_desc(uint32_t tile, int k) {
  return wgmma_desc_sw128(tile, 16, 1024, (k / 4) * ROWS * 128 + (k % 4) * 32);
}

/// MN-major operand tile (rows along K, 64 elements of N = 128 bytes a row, panels of
/// ROWS rows): the descriptor of k16 step k (16 rows, 2048 bytes; panels ROWS * 128
/// bytes apart, 8-row groups 1024).
template <int ROWS>
__host__ __device__ __forceinline__ uint64_t mn_major_desc(uint32_t tile, int k) {
  return wgmma_desc_sw128(tile, ROWS * 128, 1024, k * 2048);
}

} // namespace sketch

#endif // SKETCH_WGMMA_CUH
