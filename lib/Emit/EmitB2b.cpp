//===- EmitB2b.cpp - CUDA for back-to-back GEMM kernels -------------------===//
//
// One block computes BM rows of both GEMMs. Its warps split the rows (warps
// along M only), so each warp owns BM / warps whole rows of D0 and of D1:
//
//   B1 (or its first chunks) -> shared, cp.async, before anything else
//   GEMM-I:  for each K0 tile (cp.async multistage pipeline of A0 and B0):
//              acc0 += A0 tile · B0 tile                     (mma.sync m16n8k16)
//            epilogue on D0 in registers (alpha0, relu, any expression)
//   D0 in registers: the Reshape re-packs acc0 (MMA C layout, f32) into GEMM-II's
//            A fragments (f16/bf16): the C fragments of n8 tiles 2k and 2k+1 are
//            exactly the A fragment of k16 step k, thread by thread.
//   D0 staged: GEMM-I runs over N0 in column chunks; each chunk, after its
//            epilogue, is written to a shared tile; GEMM-II reads A from it.
//   epilogue tiles (C1, ...) -> shared, cp.async, over the dead GEMM-I buffers
//   GEMM-II: acc1 += D0 · B1 chunk, chunk by chunk
//   final epilogue in registers, rounded into a shared staging tile, then
//   16-byte coalesced stores of whole rows (rows past M skipped).
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/ConvGeometry.h"
#include "lib/Emit/EmitGemm.h"
#include "lib/Emit/EmitHost.h"
#include "lib/Emit/KernelEmitters.h"
#include "lib/Emit/WgmmaGemm.h"
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/ChooseB2bResidency.h"
#include "lib/Passes/SketchAnalysis.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>
#include <string>

using namespace mlir;
using namespace sketch;
using namespace sketch::b2b;
using llvm::formatv;

namespace {

/// The device helpers every b2b kernel uses, written once per translation unit.
constexpr const char *kHelpers = R"cuda(#ifndef SKETCH_B2B_HELPERS
#define SKETCH_B2B_HELPERS
// Building blocks of the back-to-back GEMM kernels (sketchc, lib/Emit/EmitB2b.cpp).
// Shared tiles are row-major with each row padded by 16 bytes, which keeps the
// ldmatrix reads (8 rows of 16 bytes) and the 16-byte cp.async writes free of
// bank conflicts. MMA fragments follow sketch/mma.cuh (lane = 4 * g + t).
namespace sketch_b2b {

// The L2 prefetch hint (.L2::256B: the rows of a tile are 64 to 256 bytes, so DRAM sees
// longer bursts). -1 (the default): a persistent kernel's host function turns it on when
// A0 streams (at least kStages K0 tiles a row tile; measured on an H100, docs/backend.md:
// 1-3% faster with 9 K0 tiles, 2-4% slower with one or with D0 staged), the other
// kernels leave it off; 0 or 256 force it off or on everywhere (-DSKETCH_B2B_L2_PREFETCH=256).
#ifndef SKETCH_B2B_L2_PREFETCH
#define SKETCH_B2B_L2_PREFETCH -1
#endif

/// 16-byte cp.async (zero-filled when !pred), with the L2 prefetch hint when PREFETCH.
template <bool PREFETCH>
__device__ __forceinline__ void cp_async_16_l2(uint32_t dst, const void *src, bool pred) {
  if constexpr (PREFETCH)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(pred ? 16 : 0));
  else
    sketch::cp_async_16(dst, src, pred);
}

/// Copies the ROWS x COLS tile at (row0, col0) of a row-major matrix (`ld` elements
/// a row) into shared memory (DST_LD elements a row) with 16-byte cp.async; chunks
/// in rows at or past `rows`, or starting at or past column `cols`, are zero-filled.
template <int ROWS, int COLS, int DST_LD, int THREADS,
          bool PREFETCH = (SKETCH_B2B_L2_PREFETCH == 256), typename E>
__device__ __forceinline__ void copy_tile_async(E *dst, const E *src, int64_t ld, int64_t row0,
                                                int64_t rows, int64_t col0, int64_t cols) {
  constexpr int kChunk = 16 / sizeof(E);
  constexpr int kChunksPerRow = COLS / kChunk;
  constexpr int kChunks = ROWS * kChunksPerRow;
  // Whole up to 32 chunks a thread; past that (one or two warps holding a wide tile's many
  // rows) 8 at a time: 64 to 128 unrolled chunks' addresses spilled 168 to 1,492 bytes.
  constexpr int kIterations = (kChunks + THREADS - 1) / THREADS;
#pragma unroll(kIterations <= 32 ? kIterations : 8)
  for (int i = 0; i < kIterations; ++i) {
    const int chunk = i * THREADS + threadIdx.x;
    if (kChunks % THREADS != 0 && chunk >= kChunks)
      break;
    const int r = chunk / kChunksPerRow;
    const int c = chunk % kChunksPerRow * kChunk;
    const bool inside = row0 + r < rows && col0 + c < cols;
    const E *from = inside ? src + (row0 + r) * ld + (col0 + c) : src;
    cp_async_16_l2<PREFETCH>(sketch::smem_addr(dst + r * DST_LD + c), from, inside);
  }
}

/// Stores the ROWS x COLS shared tile `src` to rows row0.. of a row-major matrix with
/// 16-byte streaming stores (st.global.cs: written once, not read again by the kernel);
/// rows at or past `rows` are skipped. `at(r, c)`: where element (r, c) lies in `src` (a
/// 16-byte chunk stays whole); `thread`: this thread's index among the THREADS that store.
template <int ROWS, int COLS, int THREADS, typename E, typename At>
__device__ __forceinline__ void store_tile_from(E *dst, int64_t ld, int64_t row0, int64_t rows,
                                                const E *src, int thread, At at) {
  constexpr int kChunk = 16 / sizeof(E);
  constexpr int kChunksPerRow = COLS / kChunk;
  constexpr int kChunks = ROWS * kChunksPerRow;
  constexpr int kIterations = (kChunks + THREADS - 1) / THREADS;
#pragma unroll(kIterations <= 32 ? kIterations : 8)  // as copy_tile_async's
  for (int i = 0; i < kIterations; ++i) {
    const int chunk = i * THREADS + thread;
    if (kChunks % THREADS != 0 && chunk >= kChunks)
      break;
    const int r = chunk / kChunksPerRow;
    const int c = chunk % kChunksPerRow * kChunk;
    if (row0 + r < rows) {
      const uint4 v = sketch::ld_shared_128(sketch::smem_addr(src + at(r, c)));
      asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst + (row0 + r) * ld + c),
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                   : "memory");
    }
  }
}

/// store_tile_from a tile of rows of SRC_LD elements.
template <int ROWS, int COLS, int SRC_LD, int THREADS, typename E>
__device__ __forceinline__ void store_tile(E *dst, int64_t ld, int64_t row0, int64_t rows,
                                           const E *src, int thread = int(threadIdx.x)) {
  store_tile_from<ROWS, COLS, THREADS>(dst, ld, row0, rows, src, thread,
                                       [](int r, int c) { return r * SRC_LD + c; });
}

/// store_tile_from a 128-byte-swizzled tile of two-byte elements (as sketch::Swizzle128<ROWS,
/// E> of tma.cuh: panels of 64 columns, as TMA lays a box out).
template <int ROWS, int COLS, int THREADS, typename E>
__device__ __forceinline__ void store_swizzled_tile(E *dst, int64_t ld, int64_t row0, int64_t rows,
                                                    const E *src, int thread) {
  static_assert(sizeof(E) == 2, "128-byte panels of 64 two-byte elements");
  store_tile_from<ROWS, COLS, THREADS>(dst, ld, row0, rows, src, thread, [](int r, int c) {
    return c / 64 * (ROWS * 64) + r * 64 + ((((c % 64) >> 3) ^ (r & 7)) << 3);
  });
}

/// Where element (row, col) of a shared tile lies, in elements: rows of LD elements,
/// padded (the TMA-loaded stages use sketch::Swizzle128, sketch/tma.cuh, instead).
template <int LD>
struct Padded {
  __device__ __forceinline__ static int offset(int row, int col) { return row * LD + col; }
};

/// Where element (k, n) of a K-contiguous B tile lies (B stored [N][K]): a row of
/// LD elements per column n, padded.
template <int LD>
struct PaddedKMajor {
  __device__ __forceinline__ static int offset(int k, int n) { return n * LD + k; }
};
template <typename TILE>
struct is_k_major : std::false_type {};
template <int LD>
struct is_k_major<PaddedKMajor<LD>> : std::true_type {};

/// The A fragment (16 x 16) at (row, col) of a shared tile laid out as TILE.
template <typename TILE, typename E>
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const E *tile, int row, int col,
                                       int lane) {
  const E *p = tile + TILE::offset(row + (lane & 15), col + (lane >> 4) * 8);
  sketch::ldmatrix_x4(a[0], a[1], a[2], a[3], sketch::smem_addr(p));
}

/// The B fragments of the two n8 tiles of the 16 x 16 block at (k, n) of a shared
/// tile laid out as TILE: a row-major [K][N] tile is transposed by ldmatrix; a
/// K-contiguous one is read as it is, matrices (n 0-7 | 8-15) x (k 0-7 | 8-15), the
/// lane walk of TensorCoreGemm's k-contiguous B.
template <typename TILE, typename E>
__device__ __forceinline__ void load_b2(uint32_t (&b0)[2], uint32_t (&b1)[2], const E *tile,
                                        int k, int n, int lane) {
  if constexpr (is_k_major<TILE>::value) {
    const E *p = tile + TILE::offset(k + ((lane >> 3) & 1) * 8, n + (lane & 7) + (lane >> 4) * 8);
    sketch::ldmatrix_x4(b0[0], b0[1], b1[0], b1[1], sketch::smem_addr(p));
  } else {
    const E *p = tile + TILE::offset(k + (lane & 15), n + (lane >> 4) * 8);
    sketch::ldmatrix_x4_trans(b0[0], b0[1], b1[0], b1[1], sketch::smem_addr(p));
  }
}

/// acc += A · B over one BK-deep stage: A is rows warp_row .. warp_row + 16 MT - 1
/// of `a_tile` (BK columns, laid out as A_TILE), B is the BK x 8 NT tile `b_tile`.
template <int BK, typename A_TILE, typename B_TILE, int MT, int NT, typename E>
__device__ __forceinline__ void warp_mma(float (&acc)[MT][NT][4], const E *a_tile,
                                         const E *b_tile, int warp_row, int lane) {
#pragma unroll
  for (int ks = 0; ks < BK; ks += 16) {
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      load_a<A_TILE>(a[mt], a_tile, warp_row + mt * 16, ks, lane);
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      uint32_t b0[2], b1[2];
      load_b2<B_TILE>(b0, b1, b_tile, ks, nt * 8, lane);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        sketch::mma_m16n8k16<E>(acc[mt][nt], a[mt], b0);
        sketch::mma_m16n8k16<E>(acc[mt][nt + 1], a[mt], b1);
      }
    }
  }
}

/// The same with the A fragments already in registers: k16 steps k0 .. k0 + BK / 16 - 1.
template <int BK, typename B_TILE, int MT, int NT, int KS, typename E>
__device__ __forceinline__ void warp_mma_a_regs(float (&acc)[MT][NT][4],
                                                const uint32_t (&a)[MT][KS][4], int k0,
                                                const E *b_tile, int lane) {
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) {
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      uint32_t b0[2], b1[2];
      load_b2<B_TILE>(b0, b1, b_tile, ks * 16, nt * 8, lane);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        sketch::mma_m16n8k16<E>(acc[mt][nt], a[mt][k0 + ks], b0);
        sketch::mma_m16n8k16<E>(acc[mt][nt + 1], a[mt][k0 + ks], b1);
      }
    }
  }
}

/// The Reshape from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new), in registers:
/// lane (g, t) holds C[g][8j + 2t .. +1] and C[g + 8][8j + 2t .. +1] of n8 tile j;
/// the A fragment of k16 step k wants A[g][16k + 2t ..], A[g + 8][16k + 2t ..],
/// A[g][16k + 8 + 2t ..], A[g + 8][16k + 8 + 2t ..]: tiles 2k and 2k + 1, rounded to E.
template <typename E, int MT, int NT>
__device__ __forceinline__ void pack_c_as_a(uint32_t (&a)[MT][NT / 2][4],
                                            const float (&c)[MT][NT][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int k = 0; k < NT / 2; ++k) {
      a[mt][k][0] = sketch::pack2<E>(c[mt][2 * k][0], c[mt][2 * k][1]);
      a[mt][k][1] = sketch::pack2<E>(c[mt][2 * k][2], c[mt][2 * k][3]);
      a[mt][k][2] = sketch::pack2<E>(c[mt][2 * k + 1][0], c[mt][2 * k + 1][1]);
      a[mt][k][3] = sketch::pack2<E>(c[mt][2 * k + 1][2], c[mt][2 * k + 1][3]);
    }
}

/// Waits for the cp.async group committed `newer` groups before the latest one, when
/// the pipeline's own waits (which leave MAX - 1 groups in flight) have not already.
template <int MAX>
__device__ __forceinline__ void cp_async_wait_older(int64_t newer) {
  if constexpr (MAX > 0) {
    if (newer >= MAX)
      return;
    if (newer == MAX - 1) {
      sketch::cp_async_wait<MAX - 1>();
      return;
    }
    cp_async_wait_older<MAX - 1>(newer);
  }
}

/// Two adjacent elements rounded to the tile's type, written with one store.
__device__ __forceinline__ void store_pair(__half *p, float lo, float hi) {
  *reinterpret_cast<uint32_t *>(p) = sketch::pack2<__half>(lo, hi);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16 *p, float lo, float hi) {
  *reinterpret_cast<uint32_t *>(p) = sketch::pack2<__nv_bfloat16>(lo, hi);
}
__device__ __forceinline__ void store_pair(float *p, float lo, float hi) {
  *reinterpret_cast<float2 *>(p) = make_float2(lo, hi);
}

/// Writes a warp's accumulators (MMA C layout) into rows warp_row .. and columns
/// col0 .. of a shared tile (LD elements a row), rounded to E.
template <int LD, typename E, int MT, int NT>
__device__ __forceinline__ void store_c(E *tile, const float (&c)[MT][NT][4], int warp_row,
                                        int col0, int lane) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      E *p = tile + (warp_row + mt * 16 + (lane >> 2)) * LD + col0 + nt * 8 + (lane & 3) * 2;
      store_pair(p, c[mt][nt][0], c[mt][nt][1]);
      store_pair(p + 8 * LD, c[mt][nt][2], c[mt][nt][3]);
    }
}

} // namespace sketch_b2b
#endif // SKETCH_B2B_HELPERS
)cuda";

/// The A0 loader of back-to-back convolutions (after kHelpers), once per translation unit.
constexpr const char *kConvHelpers = R"cuda(#ifndef SKETCH_B2B_CONV_HELPERS
#define SKETCH_B2B_CONV_HELPERS
#include "sketch/conv.cuh"
namespace sketch_b2b {

/// Copies the ROWS x COLS im2col tile at (output pixel row0, reduction index k0) of an
/// nhwc input into shared memory (DST_LD elements a row) with 16-byte cp.async: 8
/// channels of one filter tap a chunk (C % 8 == 0, `x` 16-byte aligned), zero in the
/// padding, past the last pixel and past C*R*S. Each thread keeps one chunk column, so
/// its (r, s, c) split is made once a tile, and finds its rows' input windows.
template <int ROWS, int COLS, int DST_LD, int THREADS,
          bool PREFETCH = (SKETCH_B2B_L2_PREFETCH == 256), typename E>
__device__ __forceinline__ void copy_im2col_tile_async(E *dst, const E *x,
                                                       const sketch::ConvShape &cs, int64_t row0,
                                                       int64_t k0) {
  constexpr int kChunksPerRow = COLS / 8;
  static_assert(THREADS % kChunksPerRow == 0, "each thread keeps one chunk column");
  constexpr int kRowStep = THREADS / kChunksPerRow;
  const int col = threadIdx.x % kChunksPerRow * 8;
  const sketch::ReductionNhwc red = sketch::reduction_nhwc(cs, int(k0) + col);
#pragma unroll
  for (int i = 0; i < (ROWS + kRowStep - 1) / kRowStep; ++i) {
    const int r = int(threadIdx.x) / kChunksPerRow + i * kRowStep;
    if (ROWS % kRowStep != 0 && r >= ROWS)
      break;
    const sketch::WindowNhwc win = sketch::window_nhwc(cs, row0 + r);
    const bool inside = sketch::im2col_reads(cs, win, red);
    cp_async_16_l2<PREFETCH>(sketch::smem_addr(dst + r * DST_LD + col),
                             inside ? x + win.offset + red.delta : x, inside);
  }
}

} // namespace sketch_b2b
#endif // SKETCH_B2B_CONV_HELPERS
)cuda";

/// K0 of back-to-back convolutions, from the kernel's and host's `shape` (R*S*C).
constexpr const char *kConvK0Size = "int64_t(shape.r) * shape.s * shape.c";

/// Local names of the generated kernel; a parameter spelled like one of them is renamed.
const char *const kLocals[] = {"lane",      "warp_row",  "m0",          "row",
                               "row0",      "col",       "col0",        "v",
                               "out",       "acc0",      "acc1",        "d0_a",
                               "k_tiles",   "k_steps",   "steps",       "stage",
                               "kt",        "u",         "next",        "nc",
                               "c",         "h",         "j",           "mt",
                               "nt",        "i",         "s",           "t",
                               "pass",      "smem",      "m_size",      "k0_size",
                               "a0_s",      "b0_s",      "b1_s",        "d0_s",
                               "out_s",     "b1_tile",   "tiles",       "tile",
                               "has_next",  "next_m0",   "load_k_tile", "load_epilogue_tiles",
                               "device",    "sms",       "per_sm",      "error",
                               "blocks",    "stream",    "T0",          "T1",
                               "BM",        "WM",        "MT",          "N0",
                               "N1",        "NC",        "NC1",         "BK0",
                               "BK1",       "kStages",   "kThreads",    "kB1Chunks",
                               "kB1Passes", "kB1Tiles",  "kB1Buffers",  "A0_LD",
                               "B0_LD",     "B1_LD",     "D0_LD",       "OUT_LD",
                               "kSmemA0",   "kSmemB0",   "kSmemB1",     "kSmemD0",
                               "kSmemOut",  "kSmemBytes", "B0Layout", "B1Layout", "kB0Elems", "kB1Elems", "my_tiles", "load_m0", "load_kt", "load_next",
                               "kL2Prefetch", "l2_prefetch", "kernel_fn",
                               // the TMA pipeline (tma(), emitPersistentBody)
                               "kTma", "tma", "a0_map", "b0_map", "pipeline", "A0Tile", "B0Tile",
                               "kA0Stage", "kB0Stage", "kTmaA0", "kTmaB0", "kTmaBars",
                               "kTmaStageBytes", "stage_full", "stage_empty", "phase", "load_u",
                               "bar", "panel",
                               // the sm_90a form (emitWgmmaKernel)
                               "BN", "BK", "THREADS", "WN", "MI", "NI", "KI", "STAGES",
                               "smem_base", "tid", "warp", "warp_m", "warp_n", "wg",
                               "A_STAGE_BYTES", "B_STAGE_BYTES", "a_smem", "b_smem", "acc",
                               "bars", "b1_bars", "b1_smem", "b1_full", "B1_BYTES",
                               "B1_BUFFERS", "b1_step", "k_step", "x_map", "w_map", "b1_map",
                               "pq", "x_n", "x_pq", "x_h", "x_w", "k", "tap", "c0", "r", "full",
                               "a_stage", "b_stage", "kk", "desc_a", "desc_b", "e", "ni", "b",
                               "grid", "smem_bytes", "T0", "T1", "buffer", "release",
                               "TILE_BYTES", "B1_BUFFER_BYTES", "out_t"};

/// (The batched kernels' "batch", "z" and "bidx0", ... need no entry: cIdent renames
/// them in every kernel.)
bool isLocal(StringRef name) { return llvm::is_contained(kLocals, name); }

/// Where an epilogue reads its full-tile inputs: global memory (guarded), the padded
/// shared tiles cp.async loaded, or the wgmma form's 128B-swizzled TMA tiles (those of a
/// 16-bit type, b2b::isTmaTile; the others from global memory).
enum class TileSource { global, padded, swizzled };

std::string typeName(ElementType type) { return cTypeOf(type); }

/// Binding strength of a printed expression.
enum class Prec { additive = 1, multiplicative = 2, unary = 3, primary = 4 };
struct Printed {
  std::string text;
  Prec prec;
};

/// True when `code` mentions the identifier `word`.
bool usesWord(StringRef code, StringRef word) {
  for (size_t at = code.find(word); at != StringRef::npos; at = code.find(word, at + 1)) {
    bool before = at > 0 && (llvm::isAlnum(code[at - 1]) || code[at - 1] == '_');
    size_t end = at + word.size();
    bool after = end < code.size() && (llvm::isAlnum(code[end]) || code[end] == '_');
    if (!before && !after)
      return true;
  }
  return false;
}

std::string wrap(const Printed &p, bool needed) { return needed ? "(" + p.text + ")" : p.text; }

/// The first k-step of a row tile starts GEMM-I's accumulators at zero.
void emitClearFirstAccumulator(CudaWriter &w) {
  w.open("if (kt == 0)");
  w.line("#pragma unroll");
  w.line("for (int mt = 0; mt < MT; ++mt)");
  w.line("  #pragma unroll");
  w.line("  for (int nt = 0; nt < NC / 8; ++nt)");
  w.line("    acc0[mt][nt][0] = acc0[mt][nt][1] = acc0[mt][nt][2] = acc0[mt][nt][3] = 0.0f;");
  w.close();
}

class B2bEmitter {
public:
  B2bEmitter(KernelOp kernel, Plan plan, KernelSignature sig,
             std::optional<ConvGeometry> geometry, CudaWriter &w)
      : kernel(kernel), plan(std::move(plan)), sig(std::move(sig)),
        geometry(std::move(geometry)), w(w) {
    ns = ident(kernel.getSymName()) + "_b2b";
    kernelName = ident(kernel.getSymName()) + "_kernel";
  }

  LogicalResult emit() {
    if (failed(checkNames()))
      return failure();
    if (tma() || plan.wgmma)
      w.line("#include \"sketch/tma.cuh\" // tensor-map (TMA) loads and mbarriers");
    if (plan.wgmma)
      w.line("#include \"sketch/wgmma.cuh\" // the sm_90a form's warpgroup MMAs");
    if (plan.softmaxOfD0())
      w.line("#include \"sketch/softmax.cuh\" // softmax_rows: the Softmax of " + plan.d0);
    w.stream() << kHelpers;
    if (plan.conv)
      w.stream() << kConvHelpers;
    w.line();
    emitConstants();
    w.line();
    if (failed(emitKernel()))
      return failure();
    w.line();
    if (plan.wgmma) {
      if (failed(emitWgmmaKernel()))
        return failure();
      w.line();
    }
    emitHost();
    return success();
  }

private:
  //===--------------------------------------------------------------------===//
  // Names
  //===--------------------------------------------------------------------===//

  /// The C++ name of a sketch parameter or symbol.
  std::string ident(StringRef name) const {
    if (const ParamInfo *param = sig.find(name))
      return param->cname;
    return cIdent(name);
  }

  /// Size symbols spelled like a local of the generated code are errors (parameters
  /// are renamed instead, see emitB2b).
  LogicalResult checkNames() {
    for (const std::string &symbol : sig.sizeSymbols)
      if (isLocal(cIdent(symbol)))
        return kernel.emitError() << "back-to-back GEMM: the size symbol '" << symbol
                                  << "' is used by the generated code; rename it";
    return success();
  }

  /// A C++ expression of a size: a literal, a bound value or a symbol argument.
  std::string size(StringRef dim) const { return "int64_t(" + sig.dim(dim) + ")"; }

  std::string t0() const { return typeName(plan.a0.getElementType()); }
  std::string t1() const { return typeName(plan.b1.getElementType()); }
  bool staged() const { return plan.residency == Residency::shared; }
  /// The rows of GEMM-I: M, or batch x M where the batch folds into M (Plan::foldBatch).
  std::string mSize() const {
    return plan.foldBatch ? "int64_t(" + sig.product(foldedRows()) + ")" : size(plan.m);
  }
  /// The batch dims and M, whose product is the folded M.
  std::vector<std::string> foldedRows() const {
    std::vector<std::string> dims(plan.batchDims.begin(), plan.batchDims.end());
    dims.push_back(plan.m);
    return dims;
  }

  /// A0 and B0 through tensor-map TMA as well (sm_90; the host function chooses at run
  /// time, sketch/tma.cuh): persistent kernels whose K0 tiles and B0 tiles are whole
  /// 64-column panels (128 bytes, the SWIZZLE_128B span) and whose TMA stages, unpadded,
  /// with their mbarriers and the 1024-byte alignment, fit the plan's pipeline region.
  bool tma() const {
    if (!plan.persistent || plan.b0KContiguous || plan.conv || plan.batchSlices() ||
        (plan.arch != "sm_90" && plan.arch != "sm_90a"))
      return false;
    if (plan.tileK0 % 64 != 0 || plan.chunkN0 % 64 != 0)
      return false;
    int64_t pipelineEnd = llvm::alignTo(plan.smem.b0 + plan.stages * plan.smem.b0Stage, 128);
    return tmaBars() + 16 * plan.stages + 1023 <= pipelineEnd;
  }
  /// Offsets (bytes) of the TMA stages of B0 and of the mbarriers in the pipeline region.
  int64_t tmaB0() const { return plan.stages * plan.tileM * plan.tileK0 * 2; }
  int64_t tmaBars() const { return tmaB0() + plan.stages * plan.tileK0 * plan.chunkN0 * 2; }

  /// A tile copy of a persistent kernel takes the kernel's kL2Prefetch (its template
  /// parameter, chosen by the host function); the others keep copy_tile_async's default.
  std::string withL2(std::string copy) const {
    if (plan.persistent) {
      const std::string plain = "kThreads>(";
      size_t at = copy.find(plain);
      assert(at != std::string::npos && "a copy_tile_async call");
      copy.replace(at, plain.size(), "kThreads, kL2Prefetch>(");
    }
    return copy;
  }

  //===--------------------------------------------------------------------===//
  // Constants
  //===--------------------------------------------------------------------===//

  int64_t ldOf(int64_t cols, int64_t elementBytes) const { return cols + 16 / elementBytes; }

  void emitConstants() {
    const SmemLayout &s = plan.smem;
    if (plan.conv) {
      w.line(formatv("// ===== kernel {0}: back-to-back convolution =====", kernel.getSymName())
                 .str());
      w.line(formatv("// GEMM-I:  {0} ({1} x {2}) = im2col({3}) ({1} x {4}) . {5}^T: the {6}x{7} "
                     "convolution, stride ({8}, {9}) pad ({10}, {11}) dilation ({12}, {13})",
                     plan.d0, plan.m, plan.n0, plan.a0.getName(), plan.k0, plan.b0.getName(),
                     geometry->r, geometry->s, geometry->strideH, geometry->strideW,
                     geometry->padH, geometry->padW, geometry->dilH, geometry->dilW)
                 .str());
      w.line(formatv("// GEMM-II: {0} ({1} x {2}) = {3} . {4}^T: the 1x1 convolution over the "
                     "{5} channels of {3} at each output pixel",
                     plan.d1, plan.m, plan.n1, plan.d0, plan.b1.getName(), plan.n0)
                 .str());
    } else {
      w.line(formatv("// ===== kernel {0}: back-to-back GEMM =====", kernel.getSymName()).str());
      w.line(formatv("// GEMM-I:  {0} ({1} x {2}) = {3} ({1} x {4}) . {5} ({4} x {2})", plan.d0,
                     plan.m, plan.n0, plan.a0.getName(), plan.k0, plan.b0.getName())
                 .str());
      w.line(formatv("// GEMM-II: {0} ({1} x {2}) = {3} . {4} ({5} x {2})", plan.d1, plan.m,
                     plan.n1, plan.d0, plan.b1.getName(), plan.n0)
                 .str());
    }
    if (plan.foldBatch)
      w.line("// Batched over (" + llvm::join(plan.batchDims, ", ") + "), " +
             plan.b0.getName().str() + " and " + plan.b1.getName().str() +
             " shared: the rows of every batch index are one M of " + sig.product(foldedRows()) +
             " rows.");
    if (plan.batchSlices()) {
      std::string shared;
      for (TensorParamOp param : {plan.a0, plan.b0, plan.b1})
        if (!plan.batchPositions.count(param.getName().str()))
          shared += (shared.empty() ? "" : ", ") + param.getName().str();
      w.line("// Batched over (" + llvm::join(plan.batchDims, ", ") +
             "): one grid z-slice a batch index" +
             (shared.empty() ? "" : "; " + shared + " shared by the batch") +
             ". No TMA (the tensor maps have no batch coordinate): cp.async and mma.sync.");
    }
    if (staged())
      w.line(formatv("// {0} staged in shared memory: GEMM-I runs over {1} columns at a time and "
                     "writes each chunk, after its epilogue, to a {2} x {3} shared tile that "
                     "GEMM-II reads its A fragments from.",
                     plan.d0, plan.chunkN0, plan.tileM, plan.n0)
                 .str());
    else
      w.line(formatv("// {0} kept in registers: each of the {1} warps owns {2} rows and all {3} "
                     "columns of {0}; GEMM-I's accumulators become GEMM-II's A fragments.",
                     plan.d0, plan.warps, plan.warpRows, plan.n0)
                 .str());
    CudaWriter::Block block(w, "namespace " + ns);
    w.line("using T0 = " + t0() + "; // operands of GEMM-I");
    w.line("using T1 = " + t1() + "; // operands of GEMM-II (" + plan.d0 + " is rounded to it)");
    w.line(formatv("constexpr int kThreads = {0}; // {1} warps along M", plan.threads(), plan.warps)
               .str());
    w.line(formatv("constexpr int BM = {0}, WM = {1}, MT = WM / 16; // block rows, rows per warp, "
                   "m16 tiles per warp",
                   plan.tileM, plan.warpRows)
               .str());
    w.line(formatv("constexpr int N0 = {0}, N1 = {1}; // widths of {2} and {3}", plan.n0, plan.n1,
                   plan.d0, plan.d1)
               .str());
    w.line(formatv("constexpr int NC = {0}, NC1 = {1}; // columns per pass of GEMM-I and GEMM-II",
                   plan.chunkN0, plan.chunkN1)
               .str());
    w.line(formatv("constexpr int BK0 = {0}, BK1 = {1}; // stage depths of GEMM-I (K0) and "
                   "GEMM-II (rows of {2})",
                   plan.tileK0, plan.tileK1, plan.b1.getName())
               .str());
    w.line(formatv("constexpr int kStages = {0};", plan.stages).str());
    w.line(formatv("constexpr int kB1Chunks = N0 / BK1, kB1Passes = N1 / NC1, kB1Tiles = "
                   "kB1Chunks * kB1Passes;")
               .str());
    w.line(formatv("constexpr int kB1Buffers = {0}; // {1}", plan.b1Buffers,
                   plan.b1Resident ? "all of " + plan.b1.getName().str() + " stays in shared memory"
                                   : plan.b1.getName().str() +
                                         " streams through shared memory, BK1 x NC1 tiles")
               .str());
    w.comment("Shared rows (elements), padded by 16 bytes: conflict-free ldmatrix and cp.async.");
    w.line(formatv("constexpr int A0_LD = {0}, B0_LD = {1}, B1_LD = {2};", ldOf(plan.tileK0, 2),
                   ldOf(plan.b0KContiguous ? plan.tileK0 : plan.chunkN0, 2),
                   ldOf(plan.b1KContiguous ? plan.tileK1 : plan.chunkN1, 2))
               .str());
    emitBLayout("B0", plan.b0, plan.b0KContiguous, "BK0", "NC");
    emitBLayout("B1", plan.b1, plan.b1KContiguous, "BK1", "NC1");
    if (staged())
      w.line(formatv("constexpr int D0_LD = {0};", ldOf(plan.n0, 2)).str());
    w.line(formatv("constexpr int OUT_LD = {0};{1}",
                   ldOf(plan.outPerPass ? plan.chunkN1 : plan.n1,
                        plan::elementBytes(plan.out.getElementType())),
                   plan.outPerPass ? " // a BM x NC1 tile: each pass of GEMM-II is stored" : "")
               .str());
    w.comment("Shared memory (bytes). The epilogue tiles reuse the GEMM-I pipeline buffers.");
    w.line(formatv("constexpr int kSmemA0 = {0}, kSmemB0 = {1}, kSmemB1 = {2};", s.a0, s.b0, s.b1)
               .str());
    if (staged())
      w.line(formatv("constexpr int kSmemD0 = {0};", s.d0).str());
    for (auto [index, input] : llvm::enumerate(plan.afterInputs))
      if (input.broadcast == Broadcast::full)
        w.line(formatv("constexpr int kSmem_{0} = {1}, LD_{0} = {2}; // BM x N1 tile of {3}",
                       ident(input.name), s.tiles[index],
                       ldOf(plan.n1, plan::elementBytes(input.type)), input.name)
                   .str());
    w.line(formatv("constexpr int kSmemOut = {0}; // {1} rounded for the store{2}", s.out, plan.d1,
                   plan.outShares >= 0 ? ", in place of " + plan.afterInputs[plan.outShares].name
                                       : std::string())
               .str());
    w.line(formatv("constexpr int kSmemBytes = {0};", s.total).str());
    if (tma()) {
      w.comment("TMA: the A0 and B0 stages as unpadded 64-column panels (128B-swizzled) from the "
                "first 1024-byte boundary of the pipeline region, then the stages' mbarriers.");
      w.line(formatv("constexpr int kTmaA0 = 0, kTmaB0 = {0}, kTmaBars = {1};", tmaB0(), tmaBars())
                 .str());
      w.line("constexpr int kTmaStageBytes = (BM + NC) * BK0 * int(sizeof(T0)); // a stage's boxes");
    }
  }

  /// The layout of B tile `name` in shared memory and its elements a stage or buffer:
  /// depth x cols rows (ldmatrix.trans), or cols x depth when stored K-contiguous.
  void emitBLayout(StringRef name, TensorParamOp param, bool kContiguous, StringRef depth,
                   StringRef cols) {
    if (kContiguous)
      w.line(formatv("using {0}Layout = sketch_b2b::PaddedKMajor<{0}_LD>; // {1} is K-contiguous: "
                     "[{2}][{3}] tiles",
                     name, param.getName(), cols, depth)
                 .str());
    else
      w.line(formatv("using {0}Layout = sketch_b2b::Padded<{0}_LD>; // [{1}][{2}] tiles", name,
                     depth, cols)
                 .str());
    w.line(formatv("constexpr int k{0}Elems = {1} * {0}_LD; // elements of a {0} tile", name,
                   kContiguous ? cols : depth)
               .str());
  }

  //===--------------------------------------------------------------------===//
  // Kernel
  //===--------------------------------------------------------------------===//

  /// The kernel's parameters; a tensor with batch dims is taken as `<name>_batches` (the
  /// whole tensor) and the kernel declares `<name>` at its block's batch.
  std::string kernelParams() const {
    KernelSignature kernelSig = sig;
    for (ParamInfo &param : kernelSig.params)
      if (plan.batchSlices() && plan.batchPositions.count(param.name))
        param.cname = batchesName(param);
    std::string params = kernelParameterList(kernelSig, [](const ParamInfo &) { return true; });
    if (plan.conv)
      params += ", const sketch::ConvShape shape";
    return params;
  }

  /// The kernel parameter that holds a batched tensor whole: a name no parameter has.
  std::string batchesName(const ParamInfo &param) const {
    std::string name = param.cname + "_batches";
    while (sig.find(name) ||
           llvm::any_of(sig.params, [&](const ParamInfo &p) { return p.cname == name; }) ||
           llvm::any_of(sig.sizeSymbols, [&](const std::string &s) { return cIdent(s) == name; }))
      name += "_";
    return name;
  }

  /// The block's batch indices and, for each batched tensor, its pointer at them.
  void emitBatchPointers() {
    if (!plan.batchSlices())
      return;
    emitBatchIndices(w, sig, plan.batchDims);
    for (const ParamInfo &param : sig.params) {
      auto positions = plan.batchPositions.find(param.name);
      if (positions == plan.batchPositions.end())
        continue;
      ParamInfo whole = param;
      whole.cname = batchesName(param);
      w.line(pointerType(param) + "__restrict__ " + param.cname + " = " +
             batchOffset(sig, whole, positions->second) + ";");
    }
  }

  /// The launch's arguments: the host function's, then the convolution's shape.
  std::string kernelArgs() const {
    return kernelArgumentList(sig) + (plan.conv ? ", shape" : "") + (tma() ? ", a0_map, b0_map" : "");
  }

  LogicalResult emitKernel() {
    w.line("#ifndef SKETCH_B2B_MIN_BLOCKS");
    w.line(
        "#define SKETCH_B2B_MIN_BLOCKS 1 // blocks per SM ptxas must fit (1: registers unbounded)");
    w.line("#endif");
    const bool tma = this->tma();
    std::string params = kernelParams();
    if (tma) {
      w.line("#ifndef SKETCH_B2B_TMA");
      w.line("#define SKETCH_B2B_TMA 1 // 0: the host functions never choose the TMA instances");
      w.line("#endif");
      w.line("template <bool kL2Prefetch, bool kTma> // the L2 prefetch hint on the cp.async "
             "copies; A0 and B0 by TMA");
      params += ",\n    const __grid_constant__ CUtensorMap a0_map, const __grid_constant__ "
                "CUtensorMap b0_map";
    } else if (plan.persistent) {
      w.line("template <bool kL2Prefetch> // the L2 prefetch hint on the tile copies");
    }
    w.line("__global__ void __launch_bounds__(" + ns + "::kThreads, SKETCH_B2B_MIN_BLOCKS)");
    CudaWriter::Block fn(w, kernelName + "(" + params + ")");
    w.line("using namespace " + ns + ";");
    emitBatchPointers();
    w.line("extern __shared__ __align__(128) unsigned char smem[];");
    if (tma) {
      w.comment("TMA: the pipeline region from its first 1024-byte boundary (128B-swizzled "
                "panels), the stages unpadded.");
      w.line("unsigned char *const pipeline = kTma ? smem + (1024 - sketch::smem_addr(smem) % "
             "1024) % 1024 : smem;");
      w.line("using A0Tile = std::conditional_t<kTma, sketch::Swizzle128<BM, T0>, "
             "sketch_b2b::Padded<A0_LD>>;");
      w.line("using B0Tile = std::conditional_t<kTma, sketch::Swizzle128<BK0, T0>, "
             "B0Layout>;");
      w.line("constexpr int kA0Stage = kTma ? BM * BK0 : BM * A0_LD; // elements a stage");
      w.line("constexpr int kB0Stage = kTma ? BK0 * NC : kB0Elems;");
      w.line("T0 *a0_s = reinterpret_cast<T0 *>(pipeline + (kTma ? kTmaA0 : kSmemA0)); // "
             "[kStages][kA0Stage]");
      w.line("T0 *b0_s = reinterpret_cast<T0 *>(pipeline + (kTma ? kTmaB0 : kSmemB0)); // "
             "[kStages][kB0Stage]");
      w.line("uint64_t *stage_full = reinterpret_cast<uint64_t *>(pipeline + kTmaBars); // "
             "[kStages] (TMA)");
      w.line("uint64_t *stage_empty = stage_full + kStages;                              // "
             "[kStages] (TMA)");
    } else {
      w.line("T0 *a0_s = reinterpret_cast<T0 *>(smem + kSmemA0); // [kStages][BM][A0_LD]");
      w.line("T0 *b0_s = reinterpret_cast<T0 *>(smem + kSmemB0); // [kStages][kB0Elems]");
    }
    w.line("T1 *b1_s = reinterpret_cast<T1 *>(smem + kSmemB1); // [kB1Buffers][kB1Elems]");
    if (staged())
      w.line("T1 *d0_s = reinterpret_cast<T1 *>(smem + kSmemD0); // [BM][D0_LD]");
    for (const EpilogueInput &input : plan.afterInputs)
      if (input.broadcast == Broadcast::full)
        w.line(formatv("{0} *{1}_s = reinterpret_cast<{0} *>(smem + kSmem_{1}); // [BM][N1 + pad]",
                       typeName(input.type), ident(input.name))
                   .str());
    w.line(formatv("{0} *out_s = reinterpret_cast<{0} *>(smem + kSmemOut); // [BM][OUT_LD]",
                   typeName(plan.out.getElementType()))
               .str());
    w.line("const int lane = threadIdx.x & 31;");
    w.line("const int warp_row = (threadIdx.x >> 5) * WM; // this warp's first row in the block");
    if (!plan.persistent)
      w.line("const int64_t m0 = int64_t(blockIdx.x) * BM;  // the block's first row");
    if (plan.conv) {
      w.line("const int64_t m_size = int64_t(shape.n) * shape.p * shape.q; // output pixels");
      w.line("const int64_t k0_size = " + std::string(kConvK0Size) + "; // the first "
             "convolution's reduction (r, s, c)");
    } else {
      w.line("const int64_t m_size = " + mSize() + ";  // rows of " +
             plan.a0.getName().str());
      w.line("const int64_t k0_size = " + size(plan.k0) + "; // columns of " +
             plan.a0.getName().str());
    }
    w.line();
    if (plan.persistent)
      return emitPersistentBody();
    emitB1Prologue();
    w.line();
    if (failed(emitFirstGemm()))
      return failure();
    w.line();
    emitEpilogueTileLoads();
    w.line();
    if (!staged() && failed(emitBetween("acc0", "0")))
      return failure();
    if (!staged())
      emitReshape();
    return emitSecondGemm();
  }

  /// The kernel of persistent blocks: each takes row tiles blockIdx.x, + gridDim.x, ...
  /// and runs one pipeline over all its (row tile, K0 tile) steps, so that the next
  /// tile's first K0 tiles load while the current one ends (GEMM-II, the epilogues, the
  /// store) and A0 never stops streaming at a tile boundary. With TMA (a kTma template
  /// instance, see tma()), one thread asks for a stage's A0 and B0 boxes, every thread
  /// waits on the stage's full mbarrier, and each warp releases the stage on its empty
  /// mbarrier once read; the cp.async instance waits on groups and a block barrier.
  LogicalResult emitPersistentBody() {
    const bool tma = this->tma();
    w.line("const int64_t tiles = sketch::ceil_div(m_size, BM); // row tiles");
    w.line("const int64_t k_tiles = sketch::ceil_div(k0_size, BK0);");
    w.line("const int64_t k_steps = k_tiles > 0 ? k_tiles : 1; // K0 = 0 still writes D1");
    w.line("const int64_t my_tiles = (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x; // >= 1");
    w.line("const int64_t steps = my_tiles * k_steps; // this block's (row tile, K0 tile) pairs");
    w.line("const int nc = 0; // one pass: NC == N0");
    if (tma)
      emitTmaLoadKTile();
    else
      emitLoadKTile("int64_t row0, int64_t kt", "row0", "kt");
    w.comment("The next (row tile, K0 tile) step to ask for, counted without divisions.");
    w.line("int64_t load_m0 = int64_t(blockIdx.x) * BM, load_kt = 0;");
    if (tma)
      w.line("int64_t load_u = 0; // TMA: that step's index (its stage last held step load_u - "
             "kStages)");
    w.open("auto load_next = [&](int stage)");
    if (tma) {
      w.line("if (kTma && threadIdx.x == 0 && load_u >= kStages) // every warp is done with the "
             "stage's last step");
      w.line("  sketch::mbarrier_wait(sketch::smem_addr(stage_empty + stage), "
             "uint32_t(load_u / kStages - 1) & 1);");
      w.line("++load_u;");
    }
    w.line("load_k_tile(load_m0, load_kt, stage);");
    w.open("if (++load_kt == k_steps)");
    w.line("load_kt = 0;");
    w.line("load_m0 += int64_t(gridDim.x) * BM;");
    w.close();
    w.close(";");
    w.open("auto load_epilogue_tiles = [&](int64_t row0)");
    for (const EpilogueInput &input : plan.afterInputs)
      if (input.broadcast == Broadcast::full)
        w.line(withL2(
            formatv("sketch_b2b::copy_tile_async<BM, N1, LD_{0}, kThreads>({0}_s, {0}, N1, row0, "
                    "m_size, 0, N1);",
                    ident(input.name))
                .str()));
    w.close(";");
    w.line();
    if (tma) {
      w.open("if constexpr (kTma)");
      w.comment("A stage is full once its boxes have landed (one arrival: the thread that asks "
                "for them), empty once every warp has read it.");
      w.open("if (threadIdx.x == 0)");
      w.open("for (int s = 0; s < kStages; ++s)");
      w.line("sketch::mbarrier_init(sketch::smem_addr(stage_full + s), 1);");
      w.line("sketch::mbarrier_init(sketch::smem_addr(stage_empty + s), kThreads / 32);");
      w.close();
      w.line("sketch::fence_mbarrier_init();");
      w.close();
      w.line("__syncthreads();");
      w.close();
    }
    emitB1Prologue();
    w.comment("The first tile's epilogue tiles join the group of its first K0 tile; later ones "
              "join the group committed right after the previous tile's store.");
    w.line("load_epilogue_tiles(int64_t(blockIdx.x) * BM);");
    w.line("#pragma unroll");
    w.open("for (int s = 0; s < kStages - 1; ++s)");
    w.line("if (s < steps)");
    w.line("  load_next(s);");
    w.line("sketch::cp_async_commit();");
    w.close();
    w.line();
    w.comment(formatv("GEMM-I: {0} = {1} . {2}, K0 in tiles of BK0 through a {3}-stage {4} "
                      "pipeline that runs on across row tiles.",
                      plan.d0, plan.a0.getName(), plan.b0.getName(), plan.stages,
                      tma ? "TMA (or cp.async)" : "cp.async")
                  .str());
    w.line("float acc0[MT][NC / 8][4];");
    w.line("int stage = 0;");
    if (tma)
      w.line("uint32_t phase = 0; // TMA: the parity of the stages' current round");
    w.line("int64_t m0 = int64_t(blockIdx.x) * BM, kt = 0; // this step's row tile and K0 tile");
    w.line("#pragma unroll 1");
    w.open("for (int64_t u = 0; u < steps; ++u)");
    auto waitForStep = [&] { // the cp.async pipeline's wait
      w.line("sketch::cp_async_wait<kStages - 2>(); // step u has landed");
      w.line("__syncthreads();                      // ... for every thread; stage u - 1 is free");
    };
    if (tma) {
      w.open("if constexpr (kTma)");
      w.line("sketch::mbarrier_wait(sketch::smem_addr(stage_full + stage), phase); // step u has "
             "landed");
      elseBranch();
      waitForStep();
      w.close();
    } else {
      waitForStep();
    }
    w.line("if (u + kStages - 1 < steps)");
    w.line("  load_next((stage + kStages - 1) % kStages);");
    w.line(tma ? "sketch::cp_async_commit(); // (TMA: a group of the epilogue tiles' copies, if any)"
               : "sketch::cp_async_commit();");
    emitClearFirstAccumulator(w);
    if (tma) {
      w.line("sketch_b2b::warp_mma<BK0, A0Tile, B0Tile>(acc0, a0_s + stage * kA0Stage, b0_s + "
             "stage * kB0Stage, warp_row, lane);");
      w.line("if constexpr (kTma)");
      w.line("  sketch::mbarrier_arrive_by_warp(sketch::smem_addr(stage_empty + stage)); // this "
             "warp is done with the stage");
      w.open("if (++stage == kStages)");
      w.line("stage = 0;");
      w.line("phase ^= 1;");
      w.close();
    } else {
      w.line(firstMma());
      w.line("stage = (stage + 1) % kStages;");
    }
    w.open("if (++kt != k_steps)");
    w.line("continue;");
    w.close();
    w.line("kt = 0;");
    w.comment("The tile's last K0 tile: the next tile's first ones are in flight.");
    if (failed(emitBetween("acc0", "0")))
      return failure();
    emitReshape();
    w.comment(formatv("GEMM-II: {0} = {1} . {2}, {3} rows of {2} at a time.", plan.d1, plan.d0,
                      plan.b1.getName(), plan.tileK1)
                  .str());
    if (tma) {
      w.line("if constexpr (kTma)");
      w.line("  sketch::cp_async_wait<0>(); // this tile's epilogue tiles (the only cp.async in "
             "flight) have landed");
      w.line("else");
      w.line("  sketch_b2b::cp_async_wait_older<kStages - 1>(k_steps - 1); // this tile's "
             "epilogue tiles have landed");
    } else {
      w.line("sketch_b2b::cp_async_wait_older<kStages - 1>(k_steps - 1); // this tile's epilogue "
             "tiles have landed");
    }
    w.line("__syncthreads();");
    if (failed(emitRegisterSecondGemm(true)))
      return failure();
    emitStoreTile("N1", "", ": whole rows with 16-byte stores");
    w.line("__syncthreads(); // the staging tile is read: the next epilogue tiles may replace it");
    w.line("m0 += int64_t(gridDim.x) * BM;");
    w.line("if (u + 1 < steps)");
    w.line("  load_epilogue_tiles(m0);");
    w.close();
    w.line("sketch::cp_async_wait<0>();");
    return success();
  }

  /// Closes the `if` block being written with `} else {`.
  void elseBranch() {
    w.indentLess();
    w.line("} else {");
    w.indentMore();
  }

  /// `auto load_k_tile = [&](int64_t row0, int64_t kt, int stage)` of a kernel with the
  /// TMA path: the kTma instance asks for the stage's A0 and B0 boxes (64-column panels,
  /// zero-filled past M and K0) from one thread; the other copies them with cp.async.
  void emitTmaLoadKTile() {
    w.open("auto load_k_tile = [&](int64_t row0, int64_t kt, int stage)");
    w.open("if constexpr (kTma)");
    w.open("if (threadIdx.x == 0)");
    w.line("const uint32_t bar = sketch::smem_addr(stage_full + stage);");
    w.line("sketch::mbarrier_arrive_expect_tx(bar, kTmaStageBytes);");
    w.line("#pragma unroll");
    w.line("for (int panel = 0; panel < BK0 / 64; ++panel)");
    w.line("  sketch::tma_load_2d(sketch::smem_addr(a0_s + stage * kA0Stage + panel * (BM * 64)), "
           "&a0_map, int(kt * BK0) + panel * 64, int(row0), bar);");
    w.line("#pragma unroll");
    w.line("for (int panel = 0; panel < NC / 64; ++panel)");
    w.line("  sketch::tma_load_2d(sketch::smem_addr(b0_s + stage * kB0Stage + panel * (BK0 * 64)), "
           "&b0_map, nc + panel * 64, int(kt * BK0), bar);");
    w.close();
    elseBranch();
    emitKTileCopies("row0", "kt", "kA0Stage", "kB0Stage");
    w.close();
    w.close(";");
  }

  /// The first kStages - 1 K0 tiles of the row tile at `row0`, when `when`.
  void emitKPrologue(StringRef row0, StringRef when) {
    w.line("#pragma unroll");
    w.open("for (int s = 0; s < kStages - 1; ++s)");
    w.line(when == "true" ? std::string("if (s < k_tiles)")
                          : ("if (" + when + " && s < k_tiles)").str());
    w.line(("  load_k_tile(" + row0 + ", s, s);").str());
    w.line("sketch::cp_async_commit();");
    w.close();
  }

  /// The K0 loop of GEMM-I for the row tile at `row0`, its first stages already asked for.
  void emitKLoop(StringRef row0) {
    std::string mma = firstMma();
    if (plan.stages == 1) {
      w.open("for (int64_t kt = 0; kt < k_tiles; ++kt)");
      w.line("const int stage = kStages - 1; // the one buffer");
      w.line(("load_k_tile(" + row0 + ", kt, stage);").str());
      w.line("sketch::cp_async_commit();");
      w.line("sketch::cp_async_wait<0>();");
      w.line("__syncthreads();");
      w.line(mma);
      w.line("__syncthreads(); // the next tile overwrites this one");
      w.close();
      return;
    }
    w.line("int stage = 0;");
    w.open("for (int64_t kt = 0; kt < k_tiles; ++kt)");
    w.line("sketch::cp_async_wait<kStages - 2>(); // tile kt has landed");
    w.line("__syncthreads();                      // ... for every thread; stage kt - 1 is free");
    w.line("const int64_t next = kt + kStages - 1;");
    w.line("if (next < k_tiles)");
    w.line(("  load_k_tile(" + row0 + ", next, (stage + kStages - 1) % kStages);").str());
    w.line("sketch::cp_async_commit();");
    w.line(mma);
    w.line("stage = (stage + 1) % kStages;");
    w.close();
  }

  /// GEMM-I's MMAs on pipeline stage `stage` (padded cp.async stages).
  static std::string firstMma() {
    return "sketch_b2b::warp_mma<BK0, sketch_b2b::Padded<A0_LD>, B0Layout>(acc0, a0_s + stage * "
           "(BM * A0_LD), b0_s + stage * kB0Elems, warp_row, lane);";
  }

  /// Copies B1 tile `tile` (rows chunk * BK1.., columns pass * NC1..) into buffer `buffer`.
  std::string copyB1Tile(const std::string &tile, const std::string &buffer) const {
    const char *copy =
        plan.b1KContiguous
            ? "sketch_b2b::copy_tile_async<NC1, BK1, B1_LD, kThreads>(b1_s + ({1}) * kB1Elems, "
              "{0} + int64_t(({2}) / kB1Chunks * NC1) * N0, N0, 0, NC1, ({2}) % kB1Chunks * BK1, "
              "N0);"
            : "sketch_b2b::copy_tile_async<BK1, NC1, B1_LD, kThreads>(b1_s + ({1}) * kB1Elems, "
              "{0} + ({2}) / kB1Chunks * NC1, N1, ({2}) % kB1Chunks * BK1, N0, 0, NC1);";
    return withL2(formatv(copy, ident(plan.b1.getName()), buffer, tile).str());
  }

  void emitB1Prologue() {
    if (plan.b1Resident) {
      w.comment("All of " + plan.b1.getName().str() +
                " (GEMM-II's B), loaded once; every block reads it (from L2).");
      w.line("#pragma unroll");
      w.open("for (int t = 0; t < kB1Tiles; ++t)");
      w.line(copyB1Tile("t", "t"));
      w.close();
    } else {
      w.comment("The first kB1Buffers - 1 tiles of " + plan.b1.getName().str() +
                " (GEMM-II's B); the rest stream in during GEMM-II.");
      w.line("#pragma unroll");
      w.open("for (int t = 0; t < kB1Buffers - 1; ++t)");
      w.line(copyB1Tile("t", "t"));
      w.close();
    }
    w.line("sketch::cp_async_commit();");
  }

  LogicalResult emitFirstGemm() {
    w.comment(formatv("GEMM-I: {0} = {1} . {2}, K0 in tiles of BK0 through a {3}-stage cp.async "
                      "pipeline.",
                      plan.d0, plan.a0.getName(), plan.b0.getName(), plan.stages)
                  .str());
    if (staged())
      return emitStagedFirstGemm();
    w.line("const int64_t k_tiles = sketch::ceil_div(k0_size, BK0);");
    w.line("const int nc = 0; // one pass: NC == N0");
    w.line("float acc0[MT][NC / 8][4] = {};");
    emitLoadKTile("int64_t row0, int64_t kt", "row0", "kt");
    emitKPrologue("m0", "true");
    emitKLoop("m0");
    w.line("__syncthreads(); // every warp is done with the pipeline buffers");
    return success();
  }

  /// `auto load_k_tile = [&](PARAMS, int stage)`: A0 and B0 tiles into a stage.
  void emitLoadKTile(StringRef params, StringRef row0, StringRef kt, StringRef prelude = "") {
    w.open(("auto load_k_tile = [&](" + params + ", int stage)").str());
    if (!prelude.empty())
      w.line(prelude);
    emitKTileCopies(row0, kt, "(BM * A0_LD)", "kB0Elems");
    w.close(";");
  }

  /// The cp.async copies of the A0 and B0 tiles of K0 tile `kt` into stage `stage`
  /// (stages `a0Stage` and `b0Stage` elements apart).
  void emitKTileCopies(StringRef row0, StringRef kt, StringRef a0Stage, StringRef b0Stage) {
    const char *copyA0 =
        plan.conv ? "sketch_b2b::copy_im2col_tile_async<BM, BK0, A0_LD, kThreads>(a0_s + stage * "
                    "{3}, {0}, shape, {1}, ({2}) * BK0);"
                  : "sketch_b2b::copy_tile_async<BM, BK0, A0_LD, kThreads>(a0_s + stage * {3}, "
                    "{0}, k0_size, {1}, m_size, ({2}) * BK0, k0_size);";
    w.line(withL2(formatv(copyA0, ident(plan.a0.getName()), row0, kt, a0Stage).str()));
    const char *copyB0 =
        plan.b0KContiguous
            ? "sketch_b2b::copy_tile_async<NC, BK0, B0_LD, kThreads>(b0_s + stage * {2}, {0}, "
              "k0_size, nc, N0, ({1}) * BK0, k0_size);"
            : "sketch_b2b::copy_tile_async<BK0, NC, B0_LD, kThreads>(b0_s + stage * {2}, {0} + "
              "nc, N0, ({1}) * BK0, k0_size, 0, NC);";
    w.line(withL2(formatv(copyB0, ident(plan.b0.getName()), kt, b0Stage).str()));
  }

  /// Staged D0: one pipeline over the (column chunk, K0 tile) steps, so that the next
  /// chunk's first tiles load while a chunk ends; each chunk, after the epilogue,
  /// goes to the shared tile.
  LogicalResult emitStagedFirstGemm() {
    w.line("const int64_t k_tiles = sketch::ceil_div(k0_size, BK0);");
    w.line("const int64_t k_steps = k_tiles > 0 ? k_tiles : 1; // K0 = 0 still writes D0");
    w.line("const int64_t steps = k_steps * (N0 / NC);           // (chunk, K0 tile) pairs");
    w.line("float acc0[MT][NC / 8][4];");
    emitLoadKTile("int64_t u", "m0", "u % k_steps", "const int nc = int(u / k_steps) * NC;");
    std::string mma = firstMma();
    if (plan.stages > 1) {
      w.line("#pragma unroll");
      w.open("for (int s = 0; s < kStages - 1; ++s)");
      w.line("if (s < steps)");
      w.line("  load_k_tile(s, s);");
      w.line("sketch::cp_async_commit();");
      w.close();
      w.line("int stage = 0;");
    }
    w.line("#pragma unroll 1");
    w.open("for (int64_t u = 0; u < steps; ++u)");
    w.line("const int64_t kt = u % k_steps;");
    w.line("const int nc = int(u / k_steps) * NC; // this chunk's first column of " + plan.d0);
    if (plan.stages == 1) {
      w.line("const int stage = kStages - 1; // the one buffer");
      w.line("load_k_tile(u, stage);");
      w.line("sketch::cp_async_commit();");
      w.line("sketch::cp_async_wait<0>();");
      w.line("__syncthreads();");
    } else {
      w.line("sketch::cp_async_wait<kStages - 2>(); // step u has landed");
      w.line("__syncthreads();                      // ... for every thread; stage u - 1 is free");
      w.line("if (u + kStages - 1 < steps)");
      w.line("  load_k_tile(u + kStages - 1, (stage + kStages - 1) % kStages);");
      w.line("sketch::cp_async_commit();");
    }
    emitClearFirstAccumulator(w);
    w.line(mma);
    if (plan.stages == 1)
      w.line("__syncthreads(); // the next step overwrites this stage");
    else
      w.line("stage = (stage + 1) % kStages;");
    w.open("if (kt == k_steps - 1)");
    if (failed(emitBetween("acc0", "nc")))
      return failure();
    w.comment("Staging: this chunk of " + plan.d0 + ", rounded to T1, into the shared tile.");
    w.line("sketch_b2b::store_c<D0_LD, T1>(d0_s, acc0, warp_row, nc, lane);");
    w.close();
    w.close();
    w.line("__syncthreads(); // every warp is done with the pipeline buffers; D0 is complete");
    return success();
  }

  void emitEpilogueTileLoads() {
    bool any = false;
    for (const EpilogueInput &input : plan.afterInputs) {
      if (input.broadcast != Broadcast::full)
        continue;
      if (!any)
        w.comment("Tiles the final epilogue reads, loaded now over the GEMM-I buffers (they land "
                  "during GEMM-II).");
      any = true;
      std::string name = ident(input.name);
      w.line(formatv("sketch_b2b::copy_tile_async<BM, N1, LD_{0}, kThreads>({0}_s, {0}, N1, m0, "
                     "m_size, 0, N1);",
                     name)
                 .str());
    }
    if (!any)
      w.comment("The final epilogue reads no tiles from global memory.");
    w.line("sketch::cp_async_commit();");
  }

  //===--------------------------------------------------------------------===//
  // Epilogue statements
  //===--------------------------------------------------------------------===//

  /// How an epilogue reads global tensor `input` at (row, col) of its tile.
  std::string loadInput(const EpilogueInput &input, TileSource tiles, int64_t width) const {
    std::string name = ident(input.name);
    switch (input.broadcast) {
    case Broadcast::perColumn:
      return "sketch::to_float(" + name + "[col])";
    case Broadcast::perRow:
      return "(m0 + row < m_size ? sketch::to_float(" + name + "[m0 + row]) : 0.0f)";
    case Broadcast::full:
      if (tiles == TileSource::swizzled && isTmaTile(input))
        return formatv("sketch::to_float({0}_t[sketch::Swizzle128<BM, {1}>::offset(row, col - "
                       "pass * NC1)])",
                       name, typeName(input.type))
            .str();
      if (tiles == TileSource::padded)
        return "sketch::to_float(" + name + "_s[row * LD_" + name + " + col])";
      return formatv("(m0 + row < m_size ? sketch::to_float({0}[(m0 + row) * {1} + col]) : 0.0f)",
                     name, width)
          .str();
    }
    return "0.0f";
  }

  /// The C++ value of a name an epilogue statement reads.
  std::string nameValue(StringRef name, StringRef tile, ArrayRef<EpilogueInput> inputs,
                        TileSource tiles, int64_t width) const {
    if (name == tile)
      return "v";
    double number;
    if (!name.getAsDouble(number))
      return floatLiteral(number);
    if (const ParamInfo *param = sig.find(name); param && !param->isTensor)
      return param->scalar == ScalarKind::f32 ? param->cname : "float(" + param->cname + ")";
    for (const EpilogueInput &input : inputs)
      if (input.name == name)
        return loadInput(input, tiles, width);
    return "0.0f"; // unreachable: planB2b checked every name
  }

  Printed exprOf(Value value, const std::function<std::string(StringRef)> &name) const {
    Operation *def = value.getDefiningOp();
    if (auto ref = dyn_cast_or_null<RefOp>(def))
      return {name(ref.getName()), Prec::primary};
    if (auto constant = dyn_cast_or_null<ConstantOp>(def))
      return {floatLiteral(constant.getValue().convertToDouble()), Prec::primary};
    if (auto negate = dyn_cast_or_null<NegateOp>(def)) {
      Printed operand = exprOf(negate.getOperand(), name);
      return {"-" + wrap(operand, operand.prec <= Prec::unary), Prec::unary};
    }
    if (auto binary = dyn_cast_or_null<BinaryOp>(def)) {
      BinaryKind kind = binary.getKind();
      bool additive = kind == BinaryKind::add || kind == BinaryKind::sub;
      Prec own = additive ? Prec::additive : Prec::multiplicative;
      const char *op = kind == BinaryKind::add   ? " + "
                       : kind == BinaryKind::sub ? " - "
                       : kind == BinaryKind::mul ? " * "
                                                 : " / ";
      Printed lhs = exprOf(binary.getLhs(), name), rhs = exprOf(binary.getRhs(), name);
      return {wrap(lhs, lhs.prec < own) + op + wrap(rhs, rhs.prec <= own), own};
    }
    if (auto call = dyn_cast_or_null<CallOp>(def)) {
      std::string text = "sketch::" + stringifyCallKind(call.getCallee()).str() + "(";
      for (auto [index, arg] : llvm::enumerate(call.getArgs()))
        text += (index ? ", " : "") + exprOf(arg, name).text;
      return {text + ")", Prec::primary};
    }
    return {"0.0f", Prec::primary};
  }

  /// `v = ...;` for one statement.
  std::string statementCode(Operation *op,
                            const std::function<std::string(StringRef)> &name) const {
    if (auto assign = dyn_cast<AssignOp>(op)) {
      auto yield = cast<YieldOp>(assign.getExpression().front().back());
      return "v = " + exprOf(yield.getValue(), name).text + ";";
    }
    auto ew = cast<ElementwiseOp>(op);
    auto operand = [&](unsigned i) {
      return name(cast<StringAttr>(ew.getOperands()[i]).getValue());
    };
    switch (ew.getKind()) {
    case ElementwiseKind::relu:
    case ElementwiseKind::gelu:
    case ElementwiseKind::silu:
    case ElementwiseKind::sigmoid:
    case ElementwiseKind::tanh:
      return "v = sketch::" + callName(ew.getKind()) + "(v);";
    case ElementwiseKind::leaky_relu:
      return "v = sketch::leaky_relu(v, " + operand(0) + ");";
    case ElementwiseKind::scale:
      return "v = v * " + operand(0) + ";";
    case ElementwiseKind::bias:
      return "v = v + " + operand(0) + ";";
    case ElementwiseKind::add:
      if (ew.getOperands().size() == 2)
        return "v = v + " + operand(1) + " * " + operand(0) + ";";
      return "v = v + " + operand(0) + ";";
    }
    return "";
  }

  static std::string callName(ElementwiseKind kind) {
    switch (kind) {
    case ElementwiseKind::relu:
      return "relu";
    case ElementwiseKind::gelu:
      return "gelu";
    case ElementwiseKind::silu:
      return "silu";
    case ElementwiseKind::sigmoid:
      return "sigmoid";
    default:
      return "tanh";
    }
  }

  /// The statements on D0, applied to the accumulators `acc` of columns col0 ...: each run
  /// of elementwise statements in one loop over the elements, each Softmax a row softmax
  /// (the accumulators hold whole rows then: plan::checkSoftmaxRows).
  LogicalResult emitBetween(StringRef acc, StringRef col0) {
    SmallVector<Operation *> run;
    for (Operation *op : plan.between) {
      if (!isa<SoftmaxOp>(op)) {
        run.push_back(op);
        continue;
      }
      emitElementwiseRun(run, acc, col0);
      run.clear();
      w.comment("Compute Softmax " + plan.d0 +
                ": each row's max and sum over its quad (the row's columns are all there)");
      w.line(("sketch::softmax_rows(" + acc + ");").str());
    }
    emitElementwiseRun(run, acc, col0);
    return success();
  }

  /// Elementwise statements on D0 (`between`), one loop over `acc`'s elements.
  void emitElementwiseRun(ArrayRef<Operation *> between, StringRef acc, StringRef col0) {
    if (between.empty())
      return;
    w.comment("Epilogue of GEMM-I, on the f32 accumulators (element i of n8 tile nt).");
    w.line("#pragma unroll");
    w.open("for (int mt = 0; mt < MT; ++mt)");
    w.line("#pragma unroll");
    w.open("for (int nt = 0; nt < NC / 8; ++nt)");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < 4; ++i)");
    auto name = [&](StringRef n) {
      return nameValue(n, plan.d0, plan.betweenInputs, TileSource::global, plan.n0);
    };
    std::string code;
    for (Operation *op : between)
      code += statementCode(op, name);
    if (usesWord(code, "row"))
      w.line("const int row = warp_row + mt * 16 + (lane >> 2) + (i >> 1) * 8; // in the block");
    if (usesWord(code, "col"))
      w.line(("const int col = " + col0 + " + nt * 8 + (lane & 3) * 2 + (i & 1); // of " + plan.d0)
                 .str());
    w.line(("float v = " + acc + "[mt][nt][i];").str());
    for (Operation *op : between) {
      w.comment(statementText(op));
      w.line(statementCode(op, name));
    }
    w.line((acc + "[mt][nt][i] = v;").str());
    w.close();
    w.close();
    w.close();
  }

  void emitReshape() {
    w.comment("Reshape " + plan.d0 +
              " from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new): a register re-packing;");
    w.comment("n8 tiles 2k and 2k + 1 of the accumulators, rounded to T1, are GEMM-II's A "
              "fragment for k16 step k.");
    w.line("uint32_t d0_a[MT][N0 / 16][4];");
    w.line("sketch_b2b::pack_c_as_a<T1>(d0_a, acc0);");
    w.line();
  }

  /// Waits for B1 tile t when it streams, and asks for tile t + kB1Buffers - 1.
  void emitB1Refill() {
    if (plan.b1Resident)
      return;
    w.open("if (t > 0)");
    w.line("sketch::cp_async_wait<kB1Buffers - 2>(); // tile t has landed");
    w.line(
        "__syncthreads(); // ... and every warp is done with tile t - 1, whose buffer is refilled");
    w.close();
    w.line("if (t + kB1Buffers - 1 < kB1Tiles)");
    w.line("  " + copyB1Tile("t + kB1Buffers - 1", "(t + kB1Buffers - 1) % kB1Buffers"));
    w.line("sketch::cp_async_commit();");
  }

  LogicalResult emitSecondGemm() {
    w.comment(formatv("GEMM-II: {0} = {1} . {2}, {3} rows of {2} at a time{4}.", plan.d1, plan.d0,
                      plan.b1.getName(), plan.tileK1,
                      staged() ? ", NC1 columns of " + plan.d1 + " a pass" : std::string())
                  .str());
    w.line("sketch::cp_async_wait<1>(); // " + plan.b1.getName().str() +
           "'s first tiles have landed (the epilogue tiles may be in flight)");
    w.line("__syncthreads();");
    if (!staged()) {
      if (failed(emitRegisterSecondGemm(false)))
        return failure();
    } else {
      // A stays a loop over (pass, chunk) tiles; the epilogue ends each pass.
      w.line("float acc1[MT][NC1 / 8][4];");
      w.line("#pragma unroll 1");
      w.open("for (int t = 0; t < kB1Tiles; ++t)");
      w.line("const int pass = t / kB1Chunks, c = t % kB1Chunks;");
      emitB1Refill();
      w.open("if (c == 0)");
      w.line("#pragma unroll");
      w.line("for (int mt = 0; mt < MT; ++mt)");
      w.line("  #pragma unroll");
      w.line("  for (int nt = 0; nt < NC1 / 8; ++nt)");
      w.line("    acc1[mt][nt][0] = acc1[mt][nt][1] = acc1[mt][nt][2] = acc1[mt][nt][3] = 0.0f;");
      w.close();
      w.line("const T1 *b1_tile = b1_s + (t % kB1Buffers) * kB1Elems;");
      w.line("sketch_b2b::warp_mma<BK1, sketch_b2b::Padded<D0_LD>, B1Layout>(acc1, d0_s + c * "
             "BK1, b1_tile, warp_row, lane);");
      w.open("if (c == kB1Chunks - 1)");
      w.line("sketch::cp_async_wait<0>(); // the epilogue tiles have landed");
      w.line("__syncthreads();");
      if (failed(emitSecondEpilogue("pass * NC1", plan.outPerPass)))
        return failure();
      if (plan.outPerPass) {
        emitStoreTile("NC1", " + pass * NC1", ", this pass's NC1 columns: 16-byte stores");
      }
      w.close();
      w.close();
    }
    if (plan.outPerPass)
      return success();
    emitStoreTile("N1", "", ": whole rows with 16-byte stores");
    return success();
  }

  /// After a barrier, the staged output tile's `cols` columns to global memory from
  /// column offset `col` (`how`: the comment's words).
  void emitStoreTile(StringRef cols, StringRef col, StringRef how) {
    w.line("__syncthreads();");
    w.comment("Copy " + plan.d1 + " from register to global" + how.str() +
              "; rows past M are skipped.");
    w.line(formatv("sketch_b2b::store_tile<BM, {0}, OUT_LD, kThreads>({1}{2}, N1, m0, m_size, "
                   "out_s);",
                   cols, ident(plan.out.getName()), col)
               .str());
  }

  /// GEMM-II with D0's A fragments in registers (indexed by the chunk: the loop
  /// unrolls), then the epilogue. `tilesReady`: the epilogue tiles were waited for.
  LogicalResult emitRegisterSecondGemm(bool tilesReady) {
    auto waitTiles = [&] {
      if (tilesReady)
        return;
      w.line("sketch::cp_async_wait<0>(); // the epilogue tiles have landed");
      w.line("__syncthreads();");
    };
    // Registers: one pass (NC1 == N1).
    w.line("float acc1[MT][NC1 / 8][4] = {};");
    w.line("#pragma unroll");
    w.open("for (int t = 0; t < kB1Tiles; ++t)");
    emitB1Refill();
    w.line("const T1 *b1_tile = b1_s + (t % kB1Buffers) * kB1Elems;");
    w.line("sketch_b2b::warp_mma_a_regs<BK1, B1Layout>(acc1, d0_a, t * (BK1 / 16), b1_tile, lane);");
    w.close();
    waitTiles();
    return emitSecondEpilogue("0", plan.outPerPass);
  }

  /// The statements on D1 for columns `col0` .. col0 + NC1 - 1, rounded into the staging
  /// tile (BM x NC1 when `perPass`, else BM x N1), or at `target`. `tiles`: where the
  /// full-tile inputs are read.
  LogicalResult emitSecondEpilogue(StringRef colOffset, bool perPass,
                                   TileSource tiles = TileSource::padded, StringRef target = "") {
    w.comment("Epilogue of GEMM-II on the accumulators, rounded into the staging tile (pairs "
              "of columns).");
    w.line("#pragma unroll");
    w.open("for (int mt = 0; mt < MT; ++mt)");
    w.line("#pragma unroll");
    w.open("for (int nt = 0; nt < NC1 / 8; ++nt)");
    w.line("#pragma unroll");
    w.open("for (int h = 0; h < 2; ++h)");
    w.line("const int row = warp_row + mt * 16 + (lane >> 2) + h * 8; // in the block");
    w.line(("const int col0 = " + colOffset + " + nt * 8 + (lane & 3) * 2;").str());
    w.line("float out[2];");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < 2; ++j)");
    auto name = [&](StringRef n) {
      return nameValue(n, plan.d1, plan.afterInputs, tiles, plan.n1);
    };
    std::string code;
    for (Operation *op : plan.after)
      code += statementCode(op, name);
    if (usesWord(code, "col"))
      w.line("const int col = col0 + j; // of " + plan.d1);
    w.line("float v = acc1[mt][nt][2 * h + j];");
    for (Operation *op : plan.after) {
      w.comment(statementText(op));
      w.line(statementCode(op, name));
    }
    w.line("out[j] = v;");
    w.close();
    if (!target.empty())
      w.line(("sketch_b2b::store_pair(" + target + ", out[0], out[1]);").str());
    else
      w.line(perPass ? ("sketch_b2b::store_pair(out_s + row * OUT_LD + col0 - " + colOffset +
                        ", out[0], out[1]); // column of this pass")
                           .str()
                     : "sketch_b2b::store_pair(out_s + row * OUT_LD + col0, out[0], out[1]);");
    w.close();
    w.close();
    w.close();
    return success();
  }

  //===--------------------------------------------------------------------===//
  // The sm_90a form (plan.wgmma): both GEMMs on wgmma, warp-specialized
  //===--------------------------------------------------------------------===//

  std::string wgmmaKernelName() const { return ident(kernel.getSymName()) + "_wgmma_kernel"; }
  std::string outType() const { return typeName(plan.out.getElementType()); }
  int64_t outBytes() const { return plan::elementBytes(plan.out.getElementType()); }

  /// The block of the wgmma form's GEMM-I: BM x N0 tiles, the producer warpgroup first.
  WgmmaBlock wgmmaBlock() const {
    WgmmaBlock b;
    b.tileM = plan.wgmma->tileM;
    b.tileN = plan.n0;
    b.stages = plan.wgmma->stages;
    b.operandType = t0();
    b.bKMajor = plan.b0KContiguous;
    b.producer = true;
    b.storeNames = false; // the epilogues are the b2b emitter's own
    return b;
  }

  /// The tensor maps of the wgmma form: A0 (X in im2col mode), B0, B1.
  std::string a0Map() const { return plan.conv ? "x_map" : "a0_map"; }
  std::string b0Map() const { return plan.conv ? "w_map" : "b0_map"; }
  /// The epilogue inputs the wgmma form loads by TMA with each pass, in order.
  std::vector<EpilogueInput> tmaTiles() const {
    std::vector<EpilogueInput> tiles;
    if (plan.wgmma->tmaTiles > 0)
      llvm::copy_if(plan.afterInputs, std::back_inserter(tiles), isTmaTile);
    return tiles;
  }
  std::string tileMapArgs() const {
    std::string args;
    for (const EpilogueInput &input : tmaTiles())
      args += ", " + ident(input.name) + "_map";
    return args;
  }
  std::string tileMapParams() const {
    std::string params;
    for (const EpilogueInput &input : tmaTiles())
      params += ", const __grid_constant__ CUtensorMap " + ident(input.name) + "_map";
    return params;
  }

  /// What GEMM-I's A0 tiles are, for comments.
  std::string a0Boxes() const {
    return plan.a0.getName().str() + (plan.conv ? " in im2col boxes" : " in boxes of BM rows");
  }

  /// The persistent, warp-specialized kernel of the sm_90a form: blocks take row tiles
  /// blockIdx.x, + gridDim.x, ...; one producer thread asks for every tile's GEMM-I
  /// stages and B1 chunks in order, so the next tile's stages load while this one's
  /// GEMM-II runs; the consumers keep D0 in registers between the two GEMMs.
  LogicalResult emitWgmmaKernel() {
    const WgmmaForm &f = *plan.wgmma;
    WgmmaBlock b = wgmmaBlock();
    int64_t smemBytes = f.smemBytes(plan.n0, outBytes());
    w.comment(formatv("The sm_90a form of {0}: GEMM-I and GEMM-II on wgmma, {1} consumer "
                      "warpgroup(s) of 64 rows after a producer warpgroup; {2} keeps its {3} "
                      "columns in registers; {4} stages of GEMM-I by TMA ({5}), {6} in chunks "
                      "of {7} columns of {8} ({9} buffers); {10} bytes of shared memory.",
                      kernelName, b.tileM / 64, plan.d0, plan.n0, f.stages, a0Boxes(),
                      plan.b1.getName(), f.chunkN1, plan.d1, f.b1Buffers, smemBytes)
                  .str());
    w.line("#ifndef SKETCH_B2B_WGMMA");
    w.line("#define SKETCH_B2B_WGMMA 1 // 0: the host functions never choose the sm_90a form");
    w.line("#endif");
    w.line("__global__ void __launch_bounds__(" + str(b.launchThreads()) + ", 1)");
    CudaWriter::Block fn(w, wgmmaKernelName() + "(" + kernelParams() +
                                ",\n    const __grid_constant__ CUtensorMap " + a0Map() +
                                ", const __grid_constant__ CUtensorMap " + b0Map() +
                                ", const __grid_constant__ CUtensorMap b1_map" +
                                tileMapParams() + ")");
    w.line("extern __shared__ __align__(128) unsigned char smem[];  // tiles aligned below");
    w.line("using T0 = " + t0() + ";");
    w.line("using T1 = " + t1() + ";");
    emitWgmmaPreamble(w, b);
    w.line(formatv("constexpr int N1 = {0}, NC1 = {1}, B1_BUFFERS = {2};  // {3}'s columns, a "
                   "pass's, the buffers of {4} chunks",
                   plan.n1, f.chunkN1, f.b1Buffers, plan.d1, plan.b1.getName())
               .str());
    if (!f.outInPlace)
      w.line(formatv("constexpr int OUT_LD = {0};  // the BM x NC1 staging tile of {1}", f.outLd,
                     plan.d1)
                 .str());
    w.line("constexpr int MT = MI;  // the epilogues' names: m16 tiles");
    w.line("[[maybe_unused]] constexpr int NC = BN;  // ... and D0's columns (not every epilogue's)");
    w.line("const int warp_row = warp * WM;  // this warp's first row in the block");
    if (plan.conv) {
      w.line("const int64_t m_size = int64_t(shape.n) * shape.p * shape.q; // output pixels");
      w.line("const int64_t k0_size = " + std::string(kConvK0Size) + ";");
    } else {
      w.line("const int64_t m_size = " + mSize() + ", k0_size = " + size(plan.k0) + ";");
    }
    w.line("const int tiles = (int)sketch::ceil_div(m_size, BM);  // row tiles");
    emitWgmmaBuffers(w, b,
                     plan.conv ? " K-major: BM pixels (im2col rows) of BK" : " K-major: BM rows of BK",
                     plan.b0KContiguous ? " K-major: N0 rows of BK"
                                        : " MN-major: N0 / 64 panels of BK rows",
                     "k0_size");
    w.line(formatv("constexpr int B1_BYTES = NC1 * BN * 2;  // a chunk of {0}: {1}",
                   plan.b1.getName(),
                   plan.b1KContiguous ? "BN / 64 panels of NC1 rows x 128 bytes (K-major)"
                                      : "NC1 / 64 panels of BN rows x 128 bytes (MN-major)")
               .str());
    w.line(formatv("constexpr int TILE_BYTES = BM * NC1 * 2, B1_BUFFER_BYTES = B1_BYTES + {0} "
                   "* TILE_BYTES;  // and the pass's {0} epilogue tile(s) by TMA",
                   f.tmaTiles)
               .str());
    w.line("const uint32_t b1_smem = b_smem + STAGES * B_STAGE_BYTES;");
    if (!f.outInPlace)
      w.line(outType() + " *out_s = reinterpret_cast<" + outType() +
             " *>(smem + (b1_smem + B1_BUFFERS * B1_BUFFER_BYTES - smem_base));  // [BM][OUT_LD]");
    emitWgmmaStageBarriersWithB1(f.barriersOffset(plan.n0, outBytes()));
    w.open("if (threadIdx.x < 128)");
    emitWgmmaProducer();
    w.close();
    w.comment("consumer warpgroups (their block barrier is named barrier 1, without the "
              "producer)");
    emitConsumerRegisters(w, b);
    w.line("int k_step = 0, b1_step = 0;");
    w.open("for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x)");
    w.line("const int64_t m0 = (int64_t)tile * BM;");
    emitWgmmaZeroAccumulators(w);
    std::string a0 = plan.a0.getName().str(), b0 = plan.b0.getName().str();
    w.comment("GEMM-I: " + plan.d0 + " = " + (plan.conv ? "im2col(" + a0 + ")" : a0) + " . " +
              b0 + (plan.b0KContiguous ? "^T" : "") + ", a wgmma group a landed stage");
    emitWgmmaConsumerTile(w, b);
    if (failed(emitBetween("acc", "0")))
      return failure();
    emitWgmmaReshape();
    return emitWgmmaSecondGemm();
  }

  /// mbarriers past the staging tile: full/empty of the GEMM-I stages, then of the B1
  /// chunk buffers (`b1_bars`).
  void emitWgmmaStageBarriersWithB1(int64_t offset) {
    w.line("const uint32_t b1_bars = smem_base + " + str(offset) + " + 16 * STAGES;  // " +
           plan.b1.getName().str() +
           " chunks: full[b] at b1_bars + 8 b, empty[b] at b1_bars + 8 (B1_BUFFERS + b)");
    w.open("if (threadIdx.x == 0)");
    w.open("for (int b = 0; b < B1_BUFFERS; ++b)");
    w.line("sketch::mbarrier_init(b1_bars + 8 * b, 1);");
    w.line("sketch::mbarrier_init(b1_bars + 8 * (B1_BUFFERS + b), THREADS / 32);  // every "
           "consumer warp");
    w.close();
    w.close();
    emitWgmmaStageBarriers(w, offset, "  // the last barrier the producer joins");
  }

  /// The producer warpgroup: thread 0 asks, tile by tile, for GEMM-I's k-tiles (X's
  /// im2col box, or A0's; B0's) and then B1's chunks, each into a buffer the consumers freed.
  void emitWgmmaProducer() {
    w.comment("producer warpgroup: one thread asks for every tile's boxes in order");
    emitProducerRegisters(w);
    w.open("if (threadIdx.x == 0)");
    w.line("int k_step = 0, b1_step = 0;");
    w.open("for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x)");
    w.line("const int64_t m0 = (int64_t)tile * BM;");
    if (plan.conv) {
      emitConvTmaWindowStart(w);
      emitConvTapStart(w, "0");
    }
    w.open("for (int kt = 0; kt < k_tiles; ++kt, ++k_step)");
    emitWgmmaProducerStep(w, "k_step", [&] {
      if (plan.conv)
        return emitConvTmaLoads(w, "k_step", "w_map", "0");
      emitGemmTmaLoads();
    });
    w.close();
    w.open("for (int pass = 0; pass < N1 / NC1; ++pass, ++b1_step)");
    w.line("const uint32_t b1_full = b1_bars + 8 * (b1_step % B1_BUFFERS);");
    w.line("if (b1_step >= B1_BUFFERS)  // every consumer warp is done with the buffer's last "
           "chunk");
    w.line("  sketch::mbarrier_wait(b1_bars + 8 * (B1_BUFFERS + b1_step % B1_BUFFERS), "
           "(b1_step / B1_BUFFERS - 1) & 1);");
    w.line("const uint32_t buffer = b1_smem + (b1_step % B1_BUFFERS) * B1_BUFFER_BYTES;");
    w.line("sketch::mbarrier_arrive_expect_tx(b1_full, B1_BUFFER_BYTES);");
    w.line("#pragma unroll");
    if (plan.b1KContiguous) {
      w.line("for (int panel = 0; panel < BN / 64; ++panel)  // B1 rows pass * NC1 .., 64 "
             "columns a panel");
      w.line("  sketch::tma_load_2d(buffer + panel * NC1 * 128, &b1_map, panel * 64, pass * NC1, "
             "b1_full);");
    } else {
      w.line("for (int panel = 0; panel < NC1 / 64; ++panel)  // all BN rows, 64 columns a panel");
      w.line("  sketch::tma_load_2d(buffer + panel * BN * 128, &b1_map, pass * NC1 + panel * 64, "
             "0, b1_full);");
    }
    for (auto [index, input] : llvm::enumerate(tmaTiles())) {
      w.line("#pragma unroll");
      w.line("for (int panel = 0; panel < NC1 / 64; ++panel)  // " + input.name +
             ": BM rows, 64 columns a panel");
      w.line("  sketch::tma_load_2d(buffer + B1_BYTES + " + str(index) +
             " * TILE_BYTES + panel * BM * 128, &" + ident(input.name) +
             "_map, pass * NC1 + panel * 64, (int)m0, b1_full);");
    }
    w.close();
    w.close();
    w.close();
    w.line("return;");
  }

  /// The TMA requests of a back-to-back GEMM's k-tile kt into stage k_step % STAGES: A0's
  /// box (BM rows x 64), B0's (N0 rows x 64 where K-contiguous, else N0 / 64 panels of 64
  /// columns x 64 rows).
  void emitGemmTmaLoads() {
    w.line("const int k = kt * BK;");
    w.line("sketch::tma_load_2d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &a0_map, k, (int)m0, "
           "full);");
    if (plan.b0KContiguous) {
      w.line("sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES, &b0_map, k, 0, "
             "full);");
      return;
    }
    w.line("#pragma unroll");
    w.line("for (int panel = 0; panel < BN / 64; ++panel)");
    w.line("  sketch::tma_load_2d(b_smem + (k_step % STAGES) * B_STAGE_BYTES + panel * BK * 128, "
           "&b0_map, panel * 64, k, full);");
  }

  void emitWgmmaReshape() {
    w.comment("Reshape " + plan.d0 + " from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new): "
              "n8 tiles 2k and 2k + 1 of the");
    w.comment("accumulators, rounded to T1, are the register A operand of GEMM-II's k16 step k.");
    w.line("uint32_t d0_a[MT][BN / 16][4];");
    w.line("sketch_b2b::pack_c_as_a<T1>(d0_a, acc);");
  }

  /// GEMM-II pass by pass (NC1 columns of D1 each: one B1 chunk), then the pass's
  /// epilogue into the staging tile and its 16-byte stores.
  LogicalResult emitWgmmaSecondGemm() {
    w.comment(formatv("GEMM-II: {0} = {1} . {2}^T, NC1 columns a pass; A from registers",
                      plan.d1, plan.d0, plan.b1.getName())
                  .str());
    w.line("#pragma unroll 1");
    w.open("for (int pass = 0; pass < N1 / NC1; ++pass, ++b1_step)");
    w.line("float acc1[MT][NC1 / 8][4];");
    w.line("#pragma unroll");
    w.line("for (int nt = 0; nt < NC1 / 8; ++nt)");
    w.line("  acc1[0][nt][0] = acc1[0][nt][1] = acc1[0][nt][2] = acc1[0][nt][3] = 0.0f;");
    w.line("sketch::mbarrier_wait(b1_bars + 8 * (b1_step % B1_BUFFERS), (b1_step / B1_BUFFERS) "
           "& 1);  // the chunk has landed");
    w.line("const uint32_t b1_tile = b1_smem + (b1_step % B1_BUFFERS) * B1_BUFFER_BYTES;");
    for (auto [index, input] : llvm::enumerate(tmaTiles()))
      w.line(formatv("const {0} *{1}_t = reinterpret_cast<const {0} *>(smem + (b1_tile + B1_BYTES "
                     "+ {2} * TILE_BYTES - smem_base));  // this pass's tile of {3}",
                     typeName(input.type), ident(input.name), index, input.name)
                 .str());
    w.line("sketch::wgmma_fence_fragments(d0_a[0]);");
    w.line("sketch::wgmma_fence_operands(acc1[0]);");
    w.line("sketch::wgmma_fence();");
    w.line("#pragma unroll");
    w.line("for (int kk = 0; kk < BN / 16; ++kk)");
    w.line(plan.b1KContiguous
               ? "  sketch::wgmma_m64k16_rs<T1, NC1, 0>(acc1[0], d0_a[0][kk], "
                 "sketch::k_major_desc<NC1>(b1_tile, kk));"
               : "  sketch::wgmma_m64k16_rs<T1, NC1, 1>(acc1[0], d0_a[0][kk], "
                 "sketch::mn_major_desc<BN>(b1_tile, kk));");
    w.line("sketch::wgmma_commit();");
    w.line("sketch::wgmma_wait<0>();");
    w.line("sketch::wgmma_fence_operands(acc1[0]);");
    w.line("sketch::wgmma_fence_fragments(d0_a[0]);");
    std::string release = "sketch::mbarrier_arrive_by_warp(b1_bars + 8 * (B1_BUFFERS + b1_step % "
                          "B1_BUFFERS));  // the buffer may be refilled";
    const WgmmaForm &f = *plan.wgmma;
    std::string out = ident(plan.out.getName());
    if (f.outInPlace) {
      // D1 rounded into the tile of the input it replaces, then stored from there.
      EpilogueInput replaced = tmaTiles()[f.outInPlace - 1];
      std::string tile = ident(replaced.name) + "_t";
      w.line(formatv("{0} *const out_t = const_cast<{0} *>({1});  // {2} in place of {3}'s tile",
                     outType(), tile, plan.d1, replaced.name)
                 .str());
      if (failed(emitSecondEpilogue("pass * NC1", /*perPass=*/true, TileSource::swizzled,
                                    "out_t + sketch::Swizzle128<BM, " + outType() +
                                        ">::offset(row, col0 - pass * NC1)")))
        return failure();
      w.line(kWgmmaConsumerBarrier);
      w.comment("Copy " + plan.d1 + " from register to global, this pass's NC1 columns: "
                "16-byte stores; rows past M are skipped.");
      w.line(formatv("sketch_b2b::store_swizzled_tile<BM, NC1, THREADS>({0} + pass * NC1, N1, m0, "
                     "m_size, out_t, tid);",
                     out)
                 .str());
      w.line("sketch::fence_async_shared();  // the tile's writes before TMA refills it");
      w.line(release + " (read by the store)");
    } else {
      bool tiles = f.tmaTiles > 0;
      if (!tiles)
        w.line(release);
      w.line(std::string(kWgmmaConsumerBarrier) + "  // the last pass's store has read out_s");
      if (failed(emitSecondEpilogue("pass * NC1", /*perPass=*/true,
                                    tiles ? TileSource::swizzled : TileSource::global)))
        return failure();
      if (tiles)
        w.line(release + " (the epilogue has read its tiles)");
      w.line(kWgmmaConsumerBarrier);
      w.comment("Copy " + plan.d1 + " from register to global, this pass's NC1 columns: 16-byte "
                "stores; rows past M are skipped.");
      w.line(formatv("sketch_b2b::store_tile<BM, NC1, OUT_LD, THREADS>({0} + pass * NC1, N1, m0, "
                     "m_size, out_s, tid);",
                     out)
                 .str());
    }
    w.close();
    w.close();
    return success();
  }

  /// Host lines: the wgmma form where TMA describes A0 (a convolution's X where C % 64
  /// == 0: a k-tile of 64 is one filter tap), B0 and B1, and the sizes fit its 32-bit
  /// coordinates; returns from the host function when it launches.
  void emitWgmmaLaunch() {
    const WgmmaForm &f = *plan.wgmma;
    WgmmaBlock b = wgmmaBlock();
    std::string a0 = ident(plan.a0.getName()), b0 = ident(plan.b0.getName()),
                b1 = ident(plan.b1.getName());
    w.comment("sm_90a: both GEMMs on wgmma where TMA describes " + plan.a0.getName().str() +
              (plan.conv ? " (C % 64 == 0: a k-tile is one filter tap), " : ", ") +
              plan.b0.getName().str() + " and " + plan.b1.getName().str());
    w.line("{");
    w.indentMore();
    std::string maps = "CUtensorMap " + a0Map() + "{}, " + b0Map() + "{}, b1_map{}";
    for (const EpilogueInput &input : tmaTiles())
      maps += ", " + ident(input.name) + "_map{}";
    w.line(maps + ";");
    std::vector<std::string> conditions = {
        "SKETCH_B2B_WGMMA", plan.conv ? "shape.c % 64 == 0" : "k0_size > 0",
        "m_size < INT32_MAX", "k0_size < INT32_MAX"};
    auto encode = [&](const std::string &map, const std::string &tensor, StringRef dims) {
      conditions.push_back("sketch::encode_tensor_map_2d(&" + map + ", " + tensor + ", " +
                           dims.str() + ")");
    };
    if (plan.conv)
      conditions.push_back(
          "sketch::encode_tensor_map_im2col(&x_map, " + a0 +
          ", 2, shape.n, shape.h, shape.w, shape.c, shape.pad_h, shape.pad_w, (shape.r - 1) * "
          "shape.dil_h, (shape.s - 1) * shape.dil_w, shape.stride_h, shape.stride_w, 64, " +
          str(f.tileM) + ")");
    else
      encode("a0_map", a0, "k0_size, m_size, k0_size * 2, 64, " + str(f.tileM) + ", 2");
    encode(b0Map(), b0, plan.b0KContiguous ? "k0_size, N0, k0_size * 2, 64, N0, 2"
                                           : "N0, k0_size, N0 * 2, 64, 64, 2");
    encode("b1_map", b1, plan.b1KContiguous ? "N0, N1, N0 * 2, 64, " + str(f.chunkN1) + ", 2"
                                            : std::string("N1, N0, N1 * 2, 64, N0, 2"));
    for (const EpilogueInput &input : tmaTiles())
      encode(ident(input.name) + "_map", ident(input.name),
             "N1, m_size, N1 * 2, 64, " + str(f.tileM) + ", 2");
    w.line("if (" + conditions[0] + " && " + conditions[1] + " && " + conditions[2] + " && " +
           conditions[3] + " &&");
    for (size_t i = 4; i < conditions.size(); ++i)
      w.line("    " + conditions[i] + (i + 1 == conditions.size() ? ") {" : " &&"));
    w.indentMore();
    w.line("const int smem_bytes = " + str(f.smemBytes(plan.n0, outBytes())) + ";");
    w.line("cudaError_t error = sketch::allow_dynamic_smem(" + wgmmaKernelName() +
           ", smem_bytes);");
    w.line("if (error != cudaSuccess)");
    w.line("  return error;");
    w.comment("persistent: a block a multiprocessor (at most one a row tile)");
    w.line("const int64_t grid = std::min<int64_t>(sketch::ceil_div(m_size, " + str(f.tileM) +
           "), std::max(sketch::sm_count(), 1));");
    w.line(wgmmaKernelName() + "<<<dim3(unsigned(grid)), " + str(b.launchThreads()) +
           ", smem_bytes, stream>>>(" + kernelArgumentList(sig) + (plan.conv ? ", shape" : "") +
           ", " + a0Map() + ", " + b0Map() + ", b1_map" + tileMapArgs() + ");");
    w.line("return cudaGetLastError();");
    w.indentLess();
    w.line("}");
    w.indentLess();
    w.line("}");
  }

  //===--------------------------------------------------------------------===//
  // Host function
  //===--------------------------------------------------------------------===//

  void emitHost() {
    CudaWriter::Block fn(w, hostPrototype(sig));
    w.line("using namespace " + ns + ";");
    std::string sizes, pointers;
    for (const std::string &symbol : sig.sizeSymbols)
      sizes += (sizes.empty() ? "" : ", ") + cIdent(symbol);
    for (const ParamInfo &param : sig.params)
      if (param.isTensor)
        pointers += (pointers.empty() ? "" : ", ") + param.cname;
    if (!sizes.empty() && !geometry) {
      w.line("if (!sketch::all_nonnegative(" + sizes + "))");
      w.line("  return cudaErrorInvalidValue;");
    }
    if (geometry) {
      emitConvHostShape(w, *geometry, sig, plan::tensorDims(kernel, plan.a0.getName()),
                        plan.out.getName(), {geometry->k, plan::tensorDims(kernel, plan.out.getName())[3]});
      w.line("if (" + sig.dim(geometry->c) + " % 8 != 0) // im2col copies 8 channels of " +
             plan.a0.getName().str() + " (16 bytes) at a time");
      w.line("  return cudaErrorInvalidValue;");
      w.line("const int64_t m_size = pixels;");
      if (plan.wgmma || plan.persistent) // the tensor maps and the prefetch rule read it
        w.line("const int64_t k0_size = " + std::string(kConvK0Size) + ";");
    } else {
      w.line("const int64_t m_size = " + mSize() + ", k0_size = " + size(plan.k0) + ";");
      w.line("if (k0_size % 8 != 0) // rows of " + plan.a0.getName().str() +
             " are copied in 16-byte chunks");
      w.line("  return cudaErrorInvalidValue;");
      w.line("if (m_size == 0)");
      w.line("  return cudaSuccess;");
      if (plan.batchSlices()) {
        w.line("const int64_t batch = " + sig.product(plan.batchDims) + "; // blockIdx.z");
        w.line("if (batch == 0)");
        w.line("  return cudaSuccess;");
        w.line("if (batch > 65535)");
        w.line("  return cudaErrorInvalidValue;");
      }
      w.line("if (!sketch::all_nonnull(" + pointers + "))");
      w.line("  return cudaErrorInvalidValue;");
    }
    std::string aligned;
    for (const ParamInfo &param : sig.params)
      if (param.isTensor)
        aligned += std::string(aligned.empty() ? "" : " ||\n      ") + "!sketch::aligned_to(" +
                   param.cname + ", 16)";
    w.line("if (" + aligned + ")");
    w.line("  return cudaErrorInvalidValue; // 16-byte vector accesses");
    if (plan.wgmma)
      emitWgmmaLaunch();
    w.line("int64_t blocks = sketch::ceil_div(m_size, BM);");
    w.line("if (blocks > 2147483647)");
    w.line("  return cudaErrorInvalidValue;");
    std::string launched = kernelName; // the kernel or its instantiation
    if (plan.persistent) {
      w.comment("The L2 prefetch hint when " + plan.a0.getName().str() +
                " streams: at least kStages K0 tiles a row tile (docs/backend.md);");
      w.comment("SKETCH_B2B_L2_PREFETCH = 0 or 256 forces it off or on.");
      w.line("const bool l2_prefetch = SKETCH_B2B_L2_PREFETCH < 0");
      w.line("                             ? sketch::ceil_div(k0_size, BK0) >= kStages");
      w.line("                             : SKETCH_B2B_L2_PREFETCH == 256;");
      if (tma()) {
        w.comment("A0 and B0 by TMA unless the driver cannot describe them (K0 = 0, row "
                  "coordinates past 2^31): then cp.async.");
        w.line("CUtensorMap a0_map{}, b0_map{};");
        w.line("const bool tma = SKETCH_B2B_TMA && m_size < (int64_t(1) << 31) &&");
        w.line(formatv("                 sketch::encode_tensor_map_2d(&a0_map, {0}, k0_size, "
                       "m_size, k0_size * sizeof(T0), 64, BM, sizeof(T0)) &&",
                       ident(plan.a0.getName()))
                   .str());
        w.line(formatv("                 sketch::encode_tensor_map_2d(&b0_map, {0}, N0, k0_size, "
                       "N0 * sizeof(T0), 64, BK0, sizeof(T0));",
                       ident(plan.b0.getName()))
                   .str());
        w.line("auto *const kernel_fn = tma           ? " + kernelName + "<false, true>");
        w.line("                        : l2_prefetch ? " + kernelName + "<true, false>");
        w.line("                                      : " + kernelName + "<false, false>;");
      } else {
        w.line("auto *const kernel_fn = l2_prefetch ? " + kernelName + "<true> : " + kernelName +
               "<false>;");
      }
      launched = "kernel_fn";
    }
    w.line("cudaError_t error = sketch::allow_dynamic_smem(" + launched + ", kSmemBytes);");
    w.line("if (error != cudaSuccess)");
    w.line("  return error;");
    if (plan.persistent) {
      w.comment("Persistent blocks: as many as fit the GPU at once, each looping over row tiles.");
      w.line("int device = 0, sms = 0, per_sm = 0;");
      w.line("if ((error = cudaGetDevice(&device)) != cudaSuccess ||");
      w.line(
          "    (error = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != "
          "cudaSuccess ||");
      w.line("    (error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, " + launched +
             ", kThreads, kSmemBytes)) != cudaSuccess)");
      w.line("  return error;");
      if (plan.batchSlices()) {
        w.comment("(a share of them for each batch index)");
        w.line("if (per_sm > 0 && blocks * batch > int64_t(per_sm) * sms)");
        w.line("  blocks = std::max<int64_t>(int64_t(per_sm) * sms / batch, 1);");
      } else {
        w.line("if (per_sm > 0 && blocks > int64_t(per_sm) * sms)");
        w.line("  blocks = int64_t(per_sm) * sms;");
      }
    }
    std::string grid =
        plan.batchSlices() ? "unsigned(blocks), 1, unsigned(batch)" : "unsigned(blocks)";
    w.line(launched + "<<<dim3(" + grid + "), kThreads, kSmemBytes, stream>>>(" + kernelArgs() +
           ");");
    w.line("return cudaGetLastError();");
  }

  // Ops are handles whose accessors are not const.
  mutable KernelOp kernel;
  mutable Plan plan;
  KernelSignature sig;
  std::optional<ConvGeometry> geometry; ///< back-to-back convolutions: the first one's sizes
  CudaWriter &w;
  std::string ns, kernelName;
};

} // namespace

KernelEmitterResult sketch::emitB2b(KernelOp kernel, const CudaEmitOptions &options,
                                    CudaWriter &w) {
  FailureOr<Plan> plan = planB2b(kernel, options.arch);
  if (failed(plan))
    return failure();
  std::optional<ConvGeometry> geometry;
  if (plan->conv)
    geometry = readConvGeometry(kernel, plan->firstConv(), *convShape(kernel, plan->firstConv()));
  // The host function computes derived output sizes (P, Q) instead of taking them.
  KernelSignature sig = analyzeSignature(kernel, geometry ? geometry->derived
                                                          : std::vector<std::string>());
  // A parameter spelled like a local of the generated code gets a trailing '_'.
  auto taken = [&](const std::string &name) {
    return isLocal(name) ||
           llvm::any_of(sig.params, [&](const ParamInfo &p) { return p.cname == name; });
  };
  for (ParamInfo &param : sig.params)
    if (isLocal(param.cname)) {
      std::string name = param.cname + "_";
      while (taken(name))
        name += "_";
      param.cname = name;
    }
  // The host function's conditions (emitHost), for callers that check first.
  sig.requireTensorAlignment(16);
  if (geometry)
    sig.requirements.push_back({geometry->c + " % 8 == 0", "im2col copies 8 channels of " +
                                                              plan->a0.getName().str() +
                                                              " (16 bytes) at a time"});
  else
    sig.requirements.push_back({plan->k0 + " % 8 == 0", "rows of " + plan->a0.getName().str() +
                                                            " are copied in 16-byte chunks"});
  B2bEmitter emitter(kernel, std::move(*plan), sig, std::move(geometry), w);
  if (failed(emitter.emit()))
    return failure();
  return sig;
}
