//===- SimtTile.h - the f32 SIMT block and its rules -------------*- C++ -*-===//
//
// The f32 CUDA-core mainloop (runtime/include/sketch/simt.cuh) computes a
// block tile of rows x cols outputs with k steps of `depth`; each thread owns
// a microRows x microCols tile of accumulators. deriveSimtTile finds that
// micro-tile for a block of 32 x warps threads, or names the rule the block
// breaks (docs/language.md, "f32 GEMM tiles"); sketch-choose-defaults reports
// it at the kernel and the SIMT GEMM emitter derives the same tile.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_PASSES_SIMTTILE_H
#define SKETCH_PASSES_SIMTTILE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace sketch {

/// The SIMT block tile: `rows` x `cols` outputs, reduction steps of `depth`,
/// microRows x microCols accumulators a thread. With mmaWarpsM x mmaWarpsN set (an f32
/// GEMM on sm_90, f64TensorCoreTile) the block multiplies on the f64 tensor cores
/// (sketch/dmma.cuh's DmmaTile): its warps form that grid, each owning whole m16n8 tiles,
/// and a thread's outputs are microRows (2 per m16 tile) x microCols (2 per n8 tile).
struct SimtTile {
  int64_t rows = 128, cols = 128, depth = 8;
  int64_t microRows = 8, microCols = 8;
  int64_t mmaWarpsM = 0, mmaWarpsN = 0;
  /// Registers a thread's loaders need beyond the plan's 3 a copy (the f32 nhwc
  /// convolution's im2col loader finds each chunk's window and (r, s, c) anew).
  int64_t loaderRegisters = 0;

  int64_t threads() const { return rows * cols / (microRows * microCols); }
  bool onF64TensorCores() const { return mmaWarpsM > 0; }
  /// Adjacent output columns a thread stores at once: simtVectorWidth(microCols) on the
  /// CUDA cores, 2 on the f64 tensor cores (an m16n8 tile's column pairs).
  int64_t storeVector() const;
  int64_t accumulators() const { return microRows * microCols; }
  /// Floats of both operand tiles a thread holds between a k tile's global
  /// loads and its shared stores (at most: cp.async copies need none).
  int64_t stagedFloats() const { return (rows + cols) * depth / threads(); }
  /// The copies (chunks of 4, 2 or 1 floats, simt.cuh's ChunkDeal) a thread
  /// issues a k tile for both operand tiles, at the narrower chunks of either
  /// operand layout.
  int64_t copyChunks() const;
  /// The registers a thread is planned with: accumulators, the micro-tile's
  /// operands (microRows + microCols), staged floats, 3 a copy for its address
  /// and guard, loaderRegisters, kSimtOtherRegisters for indices and pointers
  /// (128x128x16 with 8 warps: 64 + 16 + 16 + 12 + 20 = 128). On the f64 tensor cores
  /// the accumulators and operands are doubles: 2 x accumulators, 2 x microRows +
  /// microCols (64x64x16 with 2 warps: 128 + 24 + 32 + 24 + 20 = 228), and at least 64.
  int64_t registers() const;
  /// The same for the scalar kernel (unaligned operands), whose copies guard
  /// each element: half a register more a staged float.
  int64_t scalarRegisters() const;
  /// The blocks per SM the 16-byte kernel asks ptxas for (__launch_bounds__):
  /// the most whose warps leave registers() a thread (rule 3 with that many
  /// blocks), at least 1.
  int64_t minBlocksPerSm() const;
  /// Bytes of shared memory: `stages` (1 or 2) copies of both k-major tiles,
  /// rows padded by 4 floats.
  int64_t sharedBytes(int64_t stages) const;
  /// The same at any stage count (the pipelined mainloop's 3 and more).
  int64_t stageBytes(int64_t stages) const;
};

/// Floats a row of a k-major shared tile of `extent` columns takes: 4 of padding
/// (sketch::simt::padded).
inline int64_t simtPaddedRow(int64_t extent) { return extent + 4; }

/// Floats one shared-memory access moves along a micro-tile side of `n`: 4, 2
/// or 1, the widest dividing n (simt.cuh's vector_width).
int64_t simtVectorWidth(int64_t n);

/// Registers a SIMT thread needs besides its accumulators, operands and copies.
constexpr int64_t kSimtOtherRegisters = 20;
/// Most accumulators a SIMT thread holds.
constexpr int64_t kSimtMaxAccumulators = 128;
/// Static shared memory a block may declare; the SIMT tiles above it are dynamic.
constexpr int64_t kStaticSharedBytes = 48 * 1024;

/// The tile a block of 32 x `warps` threads computes rows x cols x depth with
/// on the SIMT mainloop (stages >= 3 act as 2), when it keeps every rule:
///   1. the threads divide the rows x cols outputs evenly (a micro-tile each);
///   2. at most kSimtMaxAccumulators accumulators a thread;
///   3. scalarRegisters() a thread fit the SM's register file with one block on it
///      (4 partitions of 16384 registers, each running a quarter of the
///      warps; at most 255 a thread);
///   4. the threads divide each operand tile's rows x depth and cols x depth
///      elements evenly (every thread copies as many);
///   5. the shared tiles fit `smemLimit` bytes;
///   6. (with `im2col`, see below).
/// Otherwise nullopt, with the broken rule in `broken`. The micro-tile is the
/// factorisation of the outputs a thread that needs the fewest shared-memory
/// loads a k step (4-float pieces), then the squarest.
std::optional<SimtTile> deriveSimtTile(int64_t rows, int64_t cols, int64_t depth, int64_t warps,
                                       int64_t stages, int64_t smemLimit, std::string &broken,
                                       bool im2col = false);

/// `tile` (keeping the rules above) on the f64 tensor cores, for an f32 GEMM on sm_90 /
/// sm_90a: where depth is a multiple of 4, the warps form a grid whose pieces are whole
/// m16n8 tiles (the one needing the fewest fragment loads a k step, 2 an m16 tile and 1
/// an n8 tile, then the most rows), and the doubled registers fit rule 3; none otherwise
/// (the CUDA cores run it). H200, 4096^3: 64 x 64 x 16 with 2 warps 1.04x cuBLAS SGEMM,
/// the CUDA cores' best 0.93x (bench/labs/sgemm_dmma).
std::optional<SimtTile> f64TensorCoreTile(const SimtTile &tile);

/// `tile` as `arch` runs it: on the f64 tensor cores where the target has them
/// (plan::hasF64TensorCoreMma) and f64TensorCoreTile gives a grid, else as it is.
SimtTile simtTileForTarget(const SimtTile &tile, llvm::StringRef arch);

/// Registers the nhwc im2col loader, the 16-bit nchw loaders (element loads converted to
/// f32) and a 16-bit output's stores (f32 converted and packed) need beyond a plain
/// copy's (SimtTile::loaderRegisters).
constexpr int64_t kConvLoaderRegisters = 8;
/// Registers a kcrs filter's gather beside nhwc input needs beyond a plain copy's (its
/// reduction offset and row offset; a 64 x 32 x 8 tile of 4 warps spilled 4 bytes at the 64
/// registers of eight blocks an SM without them, sm_80).
constexpr int64_t kGatheredFilterRegisters = 4;

/// What a SIMT convolution's tile depends on besides its values: nhwc activations, whether
/// its input and output are f32 (no converting loads or stores), and whether it gathers a
/// kcrs filter (beside nhwc activations).
struct SimtConvLoads {
  bool nhwc = false, f32InputAndOutput = true, gathersFilter = false;
};

/// An implicit-GEMM convolution's SIMT tile of `pixels` (BM) x `channels` (BN) x `depth`
/// by deriveSimtTile's rules: nchw rows are the channels, columns the pixels, and rule 6
/// holds for its input loader; nhwc rows are the pixels (the im2col operand dealt like a
/// row-major A). Loads or stores that convert (nhwc, or not f32InputAndOutput: a 16-bit
/// input or output) add kConvLoaderRegisters, a gathered filter kGatheredFilterRegisters.
/// Then as `arch` runs it (simtTileForTarget).
std::optional<SimtTile> deriveSimtConvTile(int64_t pixels, int64_t channels, int64_t depth,
                                           int64_t warps, int64_t stages,
                                           const SimtConvLoads &loads, llvm::StringRef arch,
                                           std::string &broken);

/// `split_k auto`'s tile for small grids beside an f32 GEMM's `tile`: min(rows, 64) x
/// min(cols, 64), 8 x 8 accumulators a thread, the same depth; none where that is `tile`
/// itself or breaks a rule above.
std::optional<SimtTile> simtSmallGridTile(const SimtTile &tile, int64_t stages,
                                          int64_t smemLimit);

/// With `im2col` (the f32 nchw convolution: rows are output channels, cols
/// output pixels), rule 6 too: its input loader (Im2colNchwLoader,
/// sketch/conv.cuh) gives each thread one pixel column and chunks of 4
/// reduction indices, so the threads are a multiple of the pixel columns and
/// divide the input tile's 4-index chunks evenly.

/// The stages the SIMT mainloop's shared tiles keep of `stages` (the directive's): 1 or
/// double-buffered (2); the pipelined instances' deeper tiles are kSimtPipelinedStages.
inline int64_t simtStages(int64_t stages) { return stages < 2 ? stages : 2; }

/// The stages of the pipelined SIMT mainloop (simt.cuh's mainloop_pipelined), which the
/// instances whose every copy is a cp.async run.
constexpr int64_t kSimtPipelinedStages = 3;

/// Whether `tile` may run kSimtPipelinedStages: 16 or more deep (as measured), and that
/// many stages' tiles leave its blocks an SM (minBlocksPerSm) `smemLimit` bytes each.
bool simtTilePipelines(const SimtTile &tile, int64_t smemLimit);

/// The warps of an f32 GEMM block that `warps` does not set: the most (at most
/// 32) that leave each thread at least 64 accumulators (8 x 8) and keep the
/// rules (at least 1; with `im2col`, rule 6 too); when none does, that most
/// (the rules then report it).
int64_t defaultSimtWarps(int64_t rows, int64_t cols, int64_t depth, int64_t stages,
                         int64_t smemLimit, bool im2col = false);

} // namespace sketch

#endif // SKETCH_PASSES_SIMTTILE_H
