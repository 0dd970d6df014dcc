//===- EmitGemm.h - what the two f16/bf16 GEMM emitters share --*- C++ -*-===//
//
// The mma.sync GEMM (EmitGemm.cpp) and the sm_90a wgmma GEMM (WgmmaGemm.cpp)
// write the same block coordinates, operand pointers, output store and host
// function; only their constants, main loops and header comments differ.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_EMITGEMM_H
#define SKETCH_EMIT_EMITGEMM_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Emit/TensorCoreGemm.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace sketch {

/// "A[M, K]": a parameter and its dims, for header comments.
std::string gemmDimsOf(const ParamInfo &param);

/// The kernel's header comment: what it computes, the `plan` lines (the last one
/// continued with the epilogue), then one line per epilogue statement.
void emitGemmHeaderComment(CudaWriter &w, const GemmAnalysis &g, const EpilogueEmitter &epilogue,
                           llvm::ArrayRef<std::string> plan);

/// size_m/n/k, the block's output tile (m0, n0; groups of 8 tile rows, for L2
/// reuse) and its batch indices (bidx0, ...). Expects BM and BN declared. `block`
/// is the index of the block's tile (a split-K cluster's blocks share one).
void emitGemmBlockCoordinates(CudaWriter &w, const GemmAnalysis &g,
                              llvm::StringRef block = "(int)blockIdx.x");
/// Its pieces: size_m/n/k; m0, n0 of tile `block` in raster groups of `groupRows`
/// tile rows (a persistent block's loop runs it per tile); the batch indices of
/// blockIdx.z.
void emitGemmSizes(CudaWriter &w, const GemmAnalysis &g);
void emitGemmTileOrigin(CudaWriter &w, llvm::StringRef block, llvm::StringRef groupRows = "8");

/// Batch indices bidx0, ... of blockIdx.z over `batchDims` (none when empty); any
/// kernel whose grid's z runs over an output's leading dims.
void emitBatchIndices(CudaWriter &w, const KernelSignature &sig,
                      llvm::ArrayRef<std::string> batchDims);
/// `param` at the block's batch: its pointer plus, for each of its leading dims, that
/// dim's batch index (bidx<position>) times the size of the dims after it.
std::string batchOffset(const KernelSignature &sig, const ParamInfo &param,
                        llvm::ArrayRef<int64_t> positions);

/// a_src, b_src and d_dst: the operands at the block's batch index.
void emitGemmOperandPointers(CudaWriter &w, const GemmAnalysis &g);

/// The output tile for emitAccumulatorStore (d_dst at m0, n0; the planned staging).
StoreSpec gemmStoreSpec(const GemmAnalysis &g);

/// The GEMM kernels' template: kVec, the operands' 16-byte loads (TMA, cp.async), and
/// kVecStore, the output's 16-byte (TMA) stores; <true, false> where only the output's
/// rows are not whole 16-byte chunks (an odd N: the loads stay fast).
inline constexpr const char *kGemmTemplate = "template <bool kVec, bool kVecStore = kVec>";

/// Tensor maps (TMA descriptors, sketch/tma.cuh) a kernel takes after its parameters:
/// each map's name and the host's encode call (a bool expression).
struct TensorMapArgs {
  std::vector<std::string> names, encodes;
  /// The output's map (the last of `names`) for TMA stores: its encode, kept apart from
  /// the operands' (the kernel<true, false> loads by TMA without it); empty where none.
  std::string storeEncode;
};

/// One GEMM kernel as its host function launches it: `kernel`<true> when the
/// 16-byte path's conditions hold (and the `maps` encode), <true, false> when they hold
/// for the operands but not the output, else <false>; blocks of
/// `threads`, `smemBytes` of dynamic shared memory.
struct GemmLaunch {
  std::string kernel;
  int64_t threads = 0, smemBytes = 0;
  TensorMapArgs maps;
  /// Persistent blocks: min(tiles, SMs / batch) of them each loop over the tiles.
  bool persistent = false;
  /// The kernel starts with sketch::grid_dependency_wait(): the host may launch it as a
  /// programmatic dependent of the stream's previous kernel.
  bool waitsOnGrid = false;
  /// The persistent kernel splits its tail along K over clusters (sketch::tail_split).
  bool splitTail = false;
};

/// The split-K form of a GEMM (g.split; docs/backend.md "Split-K GEMM"): the GEMM at
/// the split tile, its result staged as an f32 partial tile, and how its K slices run.
struct SplitForm {
  GemmAnalysis g;
  /// The slices are the blocks of a cluster (sm_90a, wgmma), counted at run time;
  /// else warp groups of one block (mma.sync), `slices` of them.
  bool cluster = false;
  int64_t slices = 0; // fixed (`split_k N`); 0 on a cluster: SplitRule's, at run time
  bool beside = false; // the kernel's own tile stays, the host function picks (`auto`)
  /// `auto` on a cluster: the split tile as a kernel of its own, without slices or
  /// reduction (NAME_narrow_kernel), which the host function runs where the rule
  /// gives one slice or M is at most SplitRule::narrowRows (docs/backend.md).
  std::optional<GemmAnalysis> narrow;
  /// Beside `narrow`, kernels of other tiles (NAME_MxN_kernel; SplitPlan::waveTiles), which
  /// the host function runs instead of it where SplitRule's wave count favours one.
  std::vector<GemmAnalysis> waveTiles;
  /// Beside those kernels, split forms on a cluster over all the SMs (SplitRule::tallTile,
  /// squareTile: NAME_tall_splitk_kernel, NAME_square_splitk_kernel), which the host
  /// function runs where they take 2 slices or more: square up to SplitRule::narrowRows
  /// rows, and up to squareBlocksRows where its blocks outnumber tall's; tall the rest.
  std::optional<GemmAnalysis> tall, square;
  /// Whether the tall and square forms stand in for the split tile's own split form: the
  /// two fill the SMs where it fills half, so it would never take more slices than they
  /// do, and the host function then runs a kernel without slices (no NAME_splitk_kernel).
  bool fillForms() const { return tall && square; }
};

/// The launches the host function dispatches to beside the kernel's own (`own`):
/// the split form's and, where the split form has them, its narrow, wave-tile, tall and
/// square kernels' (SplitForm).
struct SplitLaunches {
  /// The split tile's split form (none where SplitForm::fillForms).
  const GemmLaunch *split = nullptr, *narrow = nullptr, *tall = nullptr, *square = nullptr;
  llvm::ArrayRef<GemmLaunch> waveTiles; // one for each of SplitForm::waveTiles
};

/// The split form of `g`: its tile and warps, operand buffers planned as
/// sketch-plan-shared-memory plans them, the f32 partial tile as its staging.
/// A located error when its block does not fit the architecture.
mlir::FailureOr<SplitForm> splitFormOf(const GemmAnalysis &g, llvm::StringRef arch);

/// The K slice `slice` of `count` (C++ expressions) of a split-K block: k-tiles
/// slice * k_per .., its operands (a_src, b_src) moved to column k0 of K, its K
/// extent k_len (the last slices may get fewer k-tiles, or none).
void emitSplitKWindow(CudaWriter &w, const GemmAnalysis &g, llvm::StringRef count,
                      llvm::StringRef slice);

/// The split kernel's name: NAME_splitk_kernel.
std::string splitKernelName(const GemmAnalysis &g);

/// The host function: argument checks, one block per output tile and batch index;
/// with `split`, its dispatch to the split form (always, or by SplitRule beside
/// `own`, and to its narrow, wave-tile or tall kernel), each written before it as a static
/// launch function.
void emitGemmHost(CudaWriter &w, const GemmAnalysis &g, const GemmLaunch *own,
                  const SplitForm *split = nullptr, const SplitLaunches &launches = {});

} // namespace sketch

#endif // SKETCH_EMIT_EMITGEMM_H
