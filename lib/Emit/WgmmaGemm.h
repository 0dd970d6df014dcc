//===- WgmmaGemm.h - the Hopper (sm_90a) wgmma GEMM emitter ----*- C++ -*-===//
//
// For --arch=sm_90a, f16/bf16 GEMMs whose block tile plan::wgmmaTileShape takes
// (64, 128 or 192 rows by a multiple of 16 columns up to 256) are written with
// wgmma.mma_async (see WgmmaGemm.cpp);
// everything else keeps the mma.sync emitter (EmitGemm.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_WGMMAGEMM_H
#define SKETCH_EMIT_WGMMAGEMM_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Emit/EmitGemm.h"
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Emit/TensorCoreGemm.h"

#include <optional>

namespace sketch {

/// The wgmma path's k-tile: 64 f16/bf16, one 128-byte swizzle row.
inline constexpr int64_t kWgmmaTileK = 64;

/// The block of a wgmma main loop, which the GEMM and the nhwc convolution share:
/// BM / 64 warpgroups of 4 warps, warpgroup wg owning rows 64 wg .. 64 wg + 63 with
/// wgmma m64nBNk16; BK = 64 (one 128-byte swizzle row); STAGES operand stages.
struct WgmmaBlock {
  int64_t tileM = 128, tileN = 128, stages = 3;
  std::string operandType = "__half";
  /// K contiguous in the operand's shared rows (else 64-wide MN blocks of BK rows).
  bool aKMajor = true, bKMajor = true;
  /// Warp-specialized (the persistent TMA GEMM): a producer warpgroup (threads 0 .. 127)
  /// comes before the consumers, whose tid counts from 0 at thread 128.
  bool producer = false;
  /// The names emitAccumulatorStore reads (WN, warp_m, warp_n) are declared.
  bool storeNames = true;
  /// STAGES is the kernel's `stages` argument (a plan made at run time), not `stages`.
  bool runtimeStages = false;
  /// The consumer threads (every thread without a producer).
  int64_t threads() const { return tileM / 16 * 32; }
  int64_t launchThreads() const { return threads() + (producer ? 128 : 0); }
  /// Bytes of the operand stages, with the slack that aligns them to 1024.
  int64_t pipelineBytes() const;
  /// The mma.sync-shaped plan emitAccumulatorStore reads (WM = 16, MI = 1).
  TensorCoreConfig storeConfig() const;
};

/// A 128-byte-swizzled tile of `rows` rows of 64 two-byte elements (chunk c of
/// row r at c ^ (r & 7)): what wgmma's descriptors read.
plan::SmemBuffer wgmmaSwizzle128(int64_t rows);

/// The pieces of a wgmma kernel, in order: constants and per-thread indices
/// (expects `smem`); the stage buffers a_smem / b_smem, the accumulators and
/// k_tiles (expects size_k; `aLayout`/`bLayout` describe the tiles in a comment);
/// the cp.async pipeline whose loaders copy k-tile kt into `dst` in that layout,
/// each k-tile's wgmma group (emitWgmmaMultiply) in it; the final wait.
void emitWgmmaPreamble(CudaWriter &w, const WgmmaBlock &b);
/// A kernel's first statement where the host may launch it as a programmatic dependent
/// (sketch::launch_kernel): the wait for the previous kernel's writes.
void emitGridDependencyWait(CudaWriter &w);
/// acc[0][..][..] = 0 (a persistent block's next tile).
void emitWgmmaZeroAccumulators(CudaWriter &w);
void emitWgmmaBuffers(CudaWriter &w, const WgmmaBlock &b, llvm::StringRef aLayout,
                      llvm::StringRef bLayout, llvm::StringRef kSize = "size_k");
/// `barrier`: the block barrier among the threads that run the loop.
void emitWgmmaCpAsyncLoop(CudaWriter &w, const WgmmaBlock &b, const TileLoader &loadA,
                          const TileLoader &loadB, llvm::StringRef barrier = "__syncthreads();");
/// The wgmma group of the k-tile in stage `step` % STAGES (`step` a C++ int expression).
void emitWgmmaMultiply(CudaWriter &w, const WgmmaBlock &b, llvm::StringRef step = "kt");
void emitWgmmaDrain(CudaWriter &w);

/// The TMA pipeline of a block whose threads all multiply (one tile a block): thread 0
/// initialises full[STAGES] / empty[STAGES] mbarriers at smem_base + `barriersOffset`
/// and asks for each k-tile's boxes (`writeLoads`: the requests for k-tile `kt` into
/// stage kt % STAGES, completing on `full`), up to STAGES ahead of the wgmma groups.
/// `stageBytes`: the transaction bytes a stage's boxes bring (a C++ expression).
void emitWgmmaTmaLoop(CudaWriter &w, const WgmmaBlock &b, int64_t barriersOffset,
                      llvm::function_ref<void()> writeLoads,
                      llvm::StringRef stageBytes = "A_STAGE_BYTES + B_STAGE_BYTES");
/// Warp-specialized kernels (a producer warpgroup, then the consumers): the stage ring's
/// mbarriers at smem_base + `barriersOffset` (full[s]: the producer's boxes; empty[s]:
/// every consumer warp), initialised before the block barrier (`syncComment` after it).
void emitWgmmaStageBarriers(CudaWriter &w, int64_t barriersOffset, llvm::StringRef syncComment);
/// The same at the shared address `bars` (a C++ expression: a plan known at run time).
void emitWgmmaStageBarriersAt(CudaWriter &w, llvm::StringRef bars, llvm::StringRef syncComment);
/// The producer's requests for k-tile `step` of the ring (stage step % STAGES) once the
/// consumers are done with what the stage held: `writeLoads` asks for its boxes on `full`.
void emitWgmmaProducerStep(CudaWriter &w, llvm::StringRef step,
                           llvm::function_ref<void()> writeLoads,
                           llvm::StringRef stageBytes = "A_STAGE_BYTES + B_STAGE_BYTES");
/// The consumers' k-tiles of one output tile (counted on in `k_step` across tiles), the
/// drain, and the release of the last stage.
void emitWgmmaConsumerTile(CudaWriter &w, const WgmmaBlock &b);
/// Registers after setmaxnreg (multiples of 8, at most 256): the producer keeps
/// kWgmmaProducerRegisters, the consumers share what the block was launched with (65536
/// over its threads, at most 255 each, in steps of 8) less the producer's.
inline constexpr int64_t kWgmmaProducerRegisters = 40;
/// The consumers' block barrier in warp-specialized kernels (named barrier 1, without
/// the producer warpgroup).
inline constexpr const char *kWgmmaConsumerBarrier = "sketch::named_barrier_sync(1, THREADS);";
int64_t wgmmaConsumerRegisters(const WgmmaBlock &b);
/// The register handoff of a warp-specialized kernel (setmaxnreg): the producer warpgroup
/// keeps kWgmmaProducerRegisters, the consumers of `b` take wgmmaConsumerRegisters(b).
void emitProducerRegisters(CudaWriter &w);
void emitConsumerRegisters(CudaWriter &w, const WgmmaBlock &b);

/// A persistent kernel's split tail (docs/backend.md, sketch::tail_split): launched in
/// clusters of 2 to 8 blocks, the tiles past the last whole round of the grid are each
/// summed over K by the blocks of one cluster, a K slice a block.
/// `whole_tiles`: the tiles the block loop walks (all of them where `splitsWhen`, a C++
/// condition such as a cluster launch, does not hold).
void emitSplitTailWholeTiles(CudaWriter &w, llvm::StringRef splitsWhen);
/// `slices`, `slice`, this block's `split_tile` and whether it has one (`splits`).
void emitSplitTailTile(CudaWriter &w);
/// Warpgroup 0 of a persistent wgmma kernel (GEMM and convolution): setmaxnreg down, then the
/// thread where `thread` holds asks for every k-tile of the block's tiles below `wholeTiles`
/// and, where `tailWhen` is set (emitSplitTailWholeTiles's condition), of its K slice of the
/// split tile; `loadTile(tile, first, end)` writes a tile's origin and its k-tiles first .. end
/// - 1, counting `k_step`. The warpgroup then exits (PTX counts exited threads as arrived at
/// the split tail's block and cluster barriers).
void emitPersistentProducer(
    CudaWriter &w, llvm::StringRef thread, llvm::StringRef wholeTiles,
    std::optional<llvm::StringRef> tailWhen,
    llvm::function_ref<void(llvm::StringRef, llvm::StringRef, llvm::StringRef)> loadTile);
/// K slice `slice` of `slices` of the split tile: k-tiles kt_first .. kt_end - 1.
void emitSplitTailWindow(CudaWriter &w);
/// The split tail's f32 partial tile of a BM x BN block tile: at offset 0, over the stages.
plan::StagingBuffer splitTailPartialTile(const WgmmaBlock &b);
/// The consumers' K slice of the cluster's split tile (`emitOrigin` writes m0, n0 of
/// `split_tile`): from zero (the slices' sums are added in the reduction, which runs the
/// whole epilogue), then, after `beforeReduction`, the cluster's reduction and store of
/// `store` through the partial tile.
void emitSplitTailConsumer(CudaWriter &w, const WgmmaBlock &b, const EpilogueEmitter &epilogue,
                           StoreSpec store, llvm::function_ref<void()> emitOrigin,
                           llvm::function_ref<void()> beforeReduction);
/// The host's split of a persistent kernel's tail (sketch::tail_split, into `split`) for
/// `tiles` tiles of `kTiles` k-tiles each: the clusters' resident blocks of `kernel`
/// (`threads` a block, `smem` bytes), asked once a device.
void emitTailSplitRule(CudaWriter &w, llvm::StringRef tiles, llvm::StringRef kTiles,
                       llvm::StringRef kernel, int64_t threads, llvm::StringRef smem);

/// One k-tile of a TMA pipeline's consumers (`step`: its place in the stage ring): wait
/// for its stage, its wgmma group, then free the previous k-tile's stage.
void emitWgmmaTmaConsumerStep(CudaWriter &w, const WgmmaBlock &b, llvm::StringRef step);

/// Whether the wgmma path can write this GEMM (operand type, tile shape,
/// shared memory within the sm_90a limit).
bool wgmmaSupports(const GemmAnalysis &g);

/// Writes the kernel and its host function (same host signature and epilogue
/// as the mma.sync path).
void emitWgmmaGemm(const GemmAnalysis &g, const EpilogueEmitter &epilogue, CudaWriter &w);

/// The form of the kernel emitWgmmaGemm writes, in the words of its header comment.
struct WgmmaDescription {
  std::string plan, memory;
  int64_t smemBytes = 0;
};
WgmmaDescription describeWgmmaGemm(const GemmAnalysis &g, const EpilogueEmitter &epilogue);

/// Writes the kernel's header comment and the kernel (with `split`: `g` is one of its
/// split forms, split->g or split->tall, its K slices the blocks of a cluster); returns
/// its launch.
GemmLaunch emitWgmmaGemmKernel(const GemmAnalysis &g, const EpilogueEmitter &epilogue,
                               CudaWriter &w, const SplitForm *split = nullptr);

} // namespace sketch

#endif // SKETCH_EMIT_WGMMAGEMM_H
