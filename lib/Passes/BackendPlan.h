//===- BackendPlan.h - what the backend passes decide ----------*- C++ -*-===//
//
// The backend passes (sketch-fuse-epilogue, sketch-pipeline,
// sketch-plan-shared-memory) record their decisions as discardable attributes
// on the sketch ops; the CUDA emitters read them back through this header and
// never recompute them. docs/backend.md describes each attribute.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_PASSES_BACKENDPLAN_H
#define SKETCH_PASSES_BACKENDPLAN_H

#include "dialect/SketchDialect.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace sketch::plan {

// sketch-pipeline
/// On a `for` that stages tiles: "none" (1 stage), "double_buffer" (2) or "multistage" (3+).
constexpr llvm::StringLiteral kPipelineAttr = "sketch.pipeline";
/// On that `for`: the number of shared-memory stages (I64).
constexpr llvm::StringLiteral kStagesAttr = "sketch.stages";
/// On each global->shared Copy in that loop: copied with cp.async (unit).
constexpr llvm::StringLiteral kAsyncAttr = "sketch.async";
/// On each GEMM in that loop: register fragment buffers between shared memory and the MMAs (I64).
constexpr llvm::StringLiteral kFragmentBuffersAttr = "sketch.fragment_buffers";

// sketch-pipeline (the `algorithm` directive is checked by sketch-choose-defaults)
/// On a Conv2d: the kernel that computes it, "winograd" (F(4x4, 3x3), f32 nchw 3x3
/// stride 1 dilation 1), "winograd_2x2" (F(2x2, 3x3)) or "implicit_gemm"; from the kernel's `algorithm`
/// directive, else chosen (docs/passes.md).
constexpr llvm::StringLiteral kConvAlgorithmAttr = "sketch.conv_algorithm";

// sketch-choose-defaults (the `split_k` directive)
/// On a GEMM kernel whose K loop is split (`split_k auto` or N >= 2): the split
/// form's tile and slices (a dictionary, see SplitPlan).
constexpr llvm::StringLiteral kSplitAttr = "sketch.split";
/// On an f32 GEMM whose K loop splits over a cluster (`split_k`, sm_90): the tile whose
/// kernel splits (I64 array: BM, BN): under `auto` the small-grid tile beside the
/// kernel's own (simtSmallGridTile), else the kernel's own tile.
constexpr llvm::StringLiteral kSimtSplitAttr = "sketch.simt_split";

/// On an f32 implicit-GEMM convolution whose tile is the default: the tile the
/// host function launches instead when the output channels fit half the
/// default's BN (I64 array: BM pixels, BN channels, BK, warps).
constexpr llvm::StringLiteral kNarrowVariantAttr = "sketch.narrow_variant";

/// On an sm_90a f16/bf16 nhwc convolution with a stride above 1 (no halo form) and a tile of
/// 128 pixels: the taller tile (I64 array: BM pixels, BN channels) whose persistent TMA
/// kernel the host function launches where it moves fewer operand rows an SM
/// (sketch::wave_rows; docs/backend.md).
constexpr llvm::StringLiteral kTallVariantAttr = "sketch.tall_variant";
/// The tall variant's pixels: three consumer warpgroups.
inline constexpr int64_t kTallConvRows = 192;
/// On an f32 GEMM whose tile multiplies on the f64 tensor cores (sm_90, SimtTile.h's
/// f64TensorCoreTile): its warp grid (I64 array: warps along M, along N), which
/// `--emit=sketch` states.
constexpr llvm::StringLiteral kF64MmaAttr = "sketch.f64_mma";
/// The same for the narrow variant's tile (kNarrowVariantAttr) of an f32 convolution.
constexpr llvm::StringLiteral kNarrowF64MmaAttr = "sketch.narrow_f64_mma";
/// On a kernel whose GEMM or implicit-GEMM convolution runs the SIMT mainloop (an f32
/// GEMM, an f32 convolution or an nchw one of any type; sketch-choose-defaults):
/// sketch-plan-shared-memory plans its operand tiles as that kernel holds them
/// (simtOperandLayout), with no staging tile (its threads store their outputs).
constexpr llvm::StringLiteral kSimtAttr = "sketch.simt";
/// A variant's tile on `kernel` (the I64 array attribute `name`: kNarrowVariantAttr,
/// kTallVariantAttr, kF64MmaAttr) where it holds `size` values; else none.
std::optional<llvm::SmallVector<int64_t, 4>> variantTile(mlir::Operation *kernel,
                                                         llvm::StringRef name, size_t size);

/// On an attention kernel whose sm_90a kernel may share a row tile's key tiles among the
/// blocks of a cluster where the grid is short of the SMs (EmitAttention.cpp's splitsKeys,
/// the host's sketch::key_splits): the Hopper kernel takes its tiles and the statements on
/// the scores read no tensor (unit).
constexpr llvm::StringLiteral kKeySplitsAttr = "sketch.key_splits";
/// On an attention kernel whose tiles sm_90a runs on its warp-specialized TMA and wgmma
/// kernel (AttentionTiles::hopperTakes): that kernel's shared memory in bytes, without
/// the tiles of tensors on the scores it may stage (I64; --emit=sketch states it).
constexpr llvm::StringLiteral kHopperAttentionAttr = "sketch.hopper_attention";
/// With kHopperAttentionAttr, where that kernel runs two blocks an SM
/// (AttentionTiles::blocksPerSm; unit).
constexpr llvm::StringLiteral kTwoBlocksPerSmAttr = "sketch.two_blocks_per_sm";
/// With kKeySplitsAttr, on a kernel without a mask whose blocks have two consumer warpgroups
/// (BM = 128) and whose tiles also fit with 64 rows: where its grid splits the keys, the host
/// calls the 64-row kernel of the same statements if that splits them as many ways (twice
/// the blocks; EmitAttention.cpp's writeShortGridCall; unit).
constexpr llvm::StringLiteral kShortGridRowsAttr = "sketch.short_grid_rows64";
/// Set by sketchc for --emit=sketch (markBackendForms, from the emitter's analysis), on a
/// GEMM or nhwc convolution kernel whose tile sm_90a runs on its wgmma kernel (not the
/// split-K forms): [its form, its shared memory's parts or "" (strings), its shared memory
/// in bytes (I64)], in the words of the CUDA header comment.
constexpr llvm::StringLiteral kHopperGemmAttr = "sketch.hopper_gemm";

// sketch-plan-shared-memory
/// On each global->shared Copy: the tensor's shared buffer (a dictionary, see SmemBuffer).
constexpr llvm::StringLiteral kSmemAttr = "sketch.smem";
/// On the register->global Copy of a GEMM result: its staging buffer for coalesced stores.
constexpr llvm::StringLiteral kStagingAttr = "sketch.smem_staging";
/// On the kernel: the dynamic shared memory a block needs, in bytes (I64).
constexpr llvm::StringLiteral kSmemBytesAttr = "sketch.smem_bytes";

// sketch-fuse-epilogue
/// On each elementwise / assign statement applied in registers before the store (unit).
constexpr llvm::StringLiteral kFusedAttr = "sketch.fused";
/// On a Bias / Add statement with a global tensor operand, and on each `sketch.ref` of a
/// global tensor inside a fused assign: how each dimension of that tensor is indexed,
/// one entry per dimension: "row", "col" or "batchI" (the I-th batch dimension of the output).
constexpr llvm::StringLiteral kIndexAttr = "sketch.index";
/// On the register->global Copy: the number of statements fused into it (I64).
constexpr llvm::StringLiteral kEpilogueAttr = "sketch.epilogue";
/// On the register->global Copy: where the fused statements run. "registers": on
/// the accumulator fragments (operands per row, per column or per block are
/// preloaded), then the result is staged in the output type; "staged": a tensor
/// indexed by row and column is read, so the f32 accumulators are staged first
/// and the statements run on row-major chunks, with coalesced operand loads.
constexpr llvm::StringLiteral kEpilogueModeAttr = "sketch.epilogue_mode";

/// One tensor's shared-memory buffer: `stages` copies of a rows x cols tile.
/// Row r of stage s starts at offset + s * stageBytes + r * rowBytes. With
/// layout "xor", the 16-byte chunk c of row r is stored at chunk position
/// c ^ ((r >> xorShift) & xorMask); with "pad", rowBytes includes the padding.
struct SmemBuffer {
  std::string layout; // "xor", "pad" or "k_major" (simtOperandLayout)
  int64_t offset = 0;
  int64_t stageBytes = 0;
  int64_t stages = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t elementBytes = 2;
  int64_t rowBytes = 0;
  int64_t xorShift = 0;
  int64_t xorMask = 0;
};

/// An operand tile of the SIMT mainloop (sketch/simt.cuh) in shared memory: f32 (the
/// loaders convert 16-bit operands), k-major, `depth` rows of `extent` floats padded by 4
/// (layout "k_major": rows = depth, cols = extent).
SmemBuffer simtOperandLayout(int64_t depth, int64_t extent);

mlir::DictionaryAttr toAttr(mlir::MLIRContext *context, const SmemBuffer &buffer);
std::optional<SmemBuffer> smemBufferFrom(mlir::Attribute attr);

/// The staging buffer of a stored result: rows x cols elements, `ld` elements a row.
struct StagingBuffer {
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
  int64_t elementBytes = 2;
  /// The shared-memory bytes a kernel needs up to the tile's end.
  int64_t endBytes() const { return offset + rows * ld * elementBytes; }
};

mlir::DictionaryAttr toAttr(mlir::MLIRContext *context, const StagingBuffer &buffer);
std::optional<StagingBuffer> stagingBufferFrom(mlir::Attribute attr);

/// The split-K form of a GEMM (docs/backend.md "Split-K"): its block tile, and
/// `slices` K slices whose f32 partial tiles are summed in slice order. `cluster`:
/// the slices are the blocks of a thread-block cluster (sm_90a's wgmma path),
/// else warp groups of one block. slices == 0: chosen at run time (`split_k auto`
/// on a cluster). `beside`: the kernel also keeps its own tile, and the host
/// function picks one of the two by SplitRule. `waveTiles` (not empty): `auto` on a cluster
/// also has kernels of other tiles (SplitRule::waveTiles), which one slice takes by waves.
/// `tallStages`, `squareStages` (not 0): and split forms over all the SMs
/// (SplitRule::tallTile, squareTile), of those stages, for M over and up to
/// SplitRule::narrowRows.
struct SplitPlan {
  /// A kernel of tileM x tileN tiles beside the split form, `stages` stages.
  struct WaveTile {
    int64_t tileM = 0, tileN = 0, stages = 0;
  };
  int64_t tileM = 0, tileN = 0, tileK = 0, warps = 0, stages = 0;
  int64_t slices = 0;
  bool cluster = false;
  bool beside = false;
  llvm::SmallVector<WaveTile, 8> waveTiles;
  int64_t tallStages = 0, squareStages = 0;
  /// Whether `auto` has the split forms over all the SMs (with the wave tiles' kernels),
  /// which stand in for this tile's own split form.
  bool fillForms() const { return !waveTiles.empty() && tallStages && squareStages; }
};

mlir::DictionaryAttr toAttr(mlir::MLIRContext *context, const SplitPlan &split);
std::optional<SplitPlan> splitPlanFrom(mlir::Attribute attr);

/// Whether `split_k auto` on a cluster also has the split tile as a kernel of its own
/// (SplitRule::narrowRows): where that tile differs from the kernel's (tileM x tileN,
/// `stages`).
bool hasNarrowKernel(const SplitPlan &split, int64_t tileM, int64_t tileN, int64_t stages);

/// The host function's rule for `split_k auto` (the generated code and
/// `--emit=sketch` state it): the kernel's own tile when its grid covers at
/// least fillNum / fillDen of the SMs; else the split form, on a cluster with
/// slices = min(maxSlices, (sliceFillNum / sliceFillDen of the SMs) / its tiles, K's
/// k-tiles / minKTiles), at least 1: the split grid fills at most half the machine (a
/// cluster of 2 over 64 tiles of 64 x 128 on 132 SMs ran M = 128, N = 4096 slower than
/// one slice; over 48 tiles, M = 16, N = 6144, 2 slices ran 7% slower than one in three
/// runs, over 32 tiles faster; measured, docs/backend.md).
struct SplitRule {
  static constexpr int64_t fillNum = 3, fillDen = 4;
  static constexpr int64_t sliceFillNum = 1, sliceFillDen = 2;
  static constexpr int64_t maxSlices = 8;  // a portable cluster's blocks
  static constexpr int64_t minKTiles = 4;  // k-tiles a slice should get at least
  static constexpr int64_t warpSlices = 2; // slices of the warp-group form (`auto`)
  /// On a cluster (`auto`), the split tile also runs as a kernel of its own, without
  /// slices, where the rule gives one slice or M is at most this: H100, same run, the
  /// plain 64 x 128 8-stage kernel ran M = 128, N = 4096, K = 4096 in 18.1-19.1 us
  /// against 19.1-19.7 for one slice of the split form, and M = 1, N = 28672 in
  /// 80.4-80.6 us against 86.4-86.7 for the 128 x 256 tile (cuBLAS 81.5-82.1).
  static constexpr int64_t narrowRows = 64;
  /// The split form's tile for `split_k auto`: 64 rows (wgmma m64), at most 128 columns.
  static constexpr int64_t tileM = 64, maxTileN = 128;
  /// Where the narrow kernel runs, kernels of other tiles run instead when their
  /// waves move fewer operand rows: ceil(tiles / SMs) x (BM + BN) smaller (ties keep
  /// the first: the narrow kernel, then these in order). 128 x 96 (7 stages; 128 x 128
  /// where B is MN-major, whose wgmma tiles are multiples of 64 wide): H100, same run,
  /// 64 x 128 against 128 x 96: M = 264, N = 4096, K = 4096 0.0298 against 0.0230 ms
  /// (2 rounds of 160 tiles against 1 of 129), M = 136, N = 6144 0.0332 against 0.0254;
  /// M = 264, N = 6144 (2 rounds each, 384 against 448 rows) 0.0323 against 0.0324.
  /// And 128 x 48 (8 stages; B K-major): H200, same run, M = 128, N = 6144 0.0181 ms
  /// against 0.0203 for 64 x 128 (128 tiles, 176 rows, against 96 tiles, 192 rows;
  /// docs/backend.md). And 64 x 48 (8 stages; B K-major), which takes 128 x 48's place at
  /// M <= 64 (as many tiles, fewer rows): H200, same run, M = 1 and 16, N = 6144, K = 4096
  /// 0.0162 / 0.0163 ms against 0.0168 / 0.0170 for 128 x 48 (cuBLAS 0.0165 / 0.0161).
  /// And 64 x 112 (8 stages; B K-major), where N is a little under SMs x 128: H200, same
  /// run, M = 1, 16, 64, N = 14336, K = 4096 0.0308 / 0.0312 / 0.0319 ms against
  /// 0.0331 / 0.0334 / 0.0340 for 64 x 128 (128 tiles, 176 rows, against 112, 192; cuBLAS
  /// 0.0305 / 0.0306 / 0.0316). Last, so that ties keep 128 x 48.
  /// And 128 x 112 (6 stages; B K-major), where 64 x 112 takes two rounds and it one (M =
  /// 65-128, N = 12680-14784; M = 129-256, N = 6344-7392; ...): H200, same run, M = 128,
  /// N = 14336, K = 4096 0.0339 ms (f16) / 0.0343 (bf16) against 0.0355 / 0.0355 for the
  /// default then (cuBLAS 0.0335 / 0.0333); 7 stages 0.035.
  /// And 128 x 144 (5 stages; B K-major), one round where 128 x 96 takes two (M = 384,
  /// N = 6144: 129 tiles, 272 rows, against 192, 448): H200, same run, K = 4096 0.0316 ms
  /// against 0.0374 for 128 x 96 (cuBLAS 0.0311); 256 x 9216 0.0336 against 0.0390
  /// (bench/labs/wave_width); 6 stages 2-6% slower, 128 x 160 / 176 slower.
  /// And 192 x 128 (4 stages; B K-major), three consumer warpgroups, taller than the own
  /// tile (tallWaveRows): where 128-row tiles leave rows empty or take a round more. H100,
  /// same run, graphs (bench/labs/tall_wave_tiles), the default with it against the default
  /// before: in the persistent choice 1536 x 14336 x 4096 0.2728 ms against 0.2976 (cuBLAS
  /// 0.2959), 1.06-1.32x at the 42 rows it moves there; by wave rows (one round where 128 x 96
  /// takes two) 576 x 4096 0.0359 against 0.0421, 1152 x 2048 0.0336 against 0.0393, 1.02-1.31x
  /// at 32 rows. 192 x 112 ran as fast but spilled 4-16 bytes in its element path beside a
  /// whole [M, N] epilogue operand.
  static llvm::SmallVector<SplitPlan::WaveTile, 8> waveTiles(bool bKMajor) {
    if (!bKMajor)
      return {{128, 128, 7}};
    return {{128, 96, 7}, {128, 48, 8}, {64, 48, 8}, {64, 112, 8}, {128, 112, 6}, {128, 144, 5},
            {192, 128, 4}};
  }
  /// The wave tiles of this height count in the choice by wave rows only where M is over it
  /// (two row tiles or more): at one row tile, 144 x 11008 x 4096 ran 0.0432 ms against the
  /// narrow kernel's 0.0387 (H100, same run). In the persistent choice beside any own tile.
  static constexpr int64_t tallWaveRows = 192;
  /// Where the kernel's own grid covers fillNum / fillDen of the SMs (persistent, M over
  /// narrowRows), a wave tile of the own tile's height or of tallWaveRows runs instead where
  /// sketch::persistent_cost (runtime host.h: whole rounds, the split tail's share, a tile's
  /// area and edge) puts it under persistentNum / persistentDen of the own tile's. H200,
  /// the mid-M sweep (docs/backend.md, "Persistent tiles"): it picks 128 x 112 at each of
  /// the rows where that ran faster than 128 x 256 and keeps 128 x 256 at the other 23.
  static constexpr int64_t persistentNum = 19, persistentDen = 20;
  /// Beside those kernels, split forms on a cluster over all the SMs, which the host
  /// function runs first where they take 2 slices or more: slices = min(autoSlices, SMs /
  /// its tiles, k-tiles / minKTiles). A tile, its name and the rows it serves.
  struct FillTile {
    int64_t tileM, tileN;
    const char *name;
  };
  /// The tall form (128 x 64 tiles), for M over narrowRows: 64-row tiles read each column
  /// of B once for every 64 rows of M, these once for 128. H200, same run, M = 128: N = K
  /// = 4096 0.0139 ms with 2 slices against 0.0152 for the narrow kernel (cuBLAS 0.0142);
  /// N = 4096, K = 14336 0.0377 against 0.0443 (cuBLAS 0.0373). Where M is at most
  /// narrowRows, 64 x 128 tiles ran faster (M = 16, N = 6144: 2 slices of 128 x 64 0.024
  /// ms, 64 x 128 0.019).
  static constexpr FillTile tallTile{128, 64, "tall"};
  /// The square form (64 x 64 tiles), for M at most narrowRows, where its slices fill the
  /// SMs and the 64 x 128 form's half of them: H200, same run, M = 1 and 16, N = 4096,
  /// 2 slices of 64 x 64 against 2 of 64 x 128: K = 4096 0.0118 against 0.0121 ms,
  /// K = 14336 0.0316 against 0.0327 (docs/backend.md).
  static constexpr FillTile squareTile{64, 64, "square"};
  /// Over narrowRows and up to this many rows, the square form where its blocks (tiles x
  /// slices) outnumber the tall form's: H200, same run, M = 77, N = 2048, 2 slices of
  /// 64 x 64 (128 blocks) against the tall form's 64: K = 2048 0.0068 against 0.0082 ms,
  /// K = 5632 0.0128 against 0.0153 (docs/backend.md).
  static constexpr int64_t squareBlocksRows = 128;
  /// Its stages on a cluster (sm_90a): as many k-tiles of 64 as fit in shared memory,
  /// at most 8. A small-M GEMM streams B from memory; more bytes in flight per SM
  /// measured faster (H100, M = 128, N = 6144, K = 4096, 64 x 128: 8 stages 0.0252 ms,
  /// 4 stages 0.0336 ms).
  static int64_t clusterStages(int64_t tileM, int64_t tileN, llvm::StringRef arch);
  /// The most slices `auto` takes for a split form of `stages` stages: at most 16
  /// k-tiles in flight for one output tile (8 stages: 2 slices). With 8 stages, 4
  /// slices ran M = 1, N = 4096, K = 14336 in 0.060 ms against 0.048 ms with 4 stages
  /// (H100, same run).
  static int64_t autoSlices(int64_t stages) {
    return std::clamp<int64_t>(16 / std::max<int64_t>(stages, 1), 1, maxSlices);
  }
};

/// Splits `warps` into warpsM x warpsN so that the warp tile is a multiple of
/// 16 x 16 and as square as possible; false when no split works.
bool chooseWarpGrid(int64_t tileM, int64_t tileN, int64_t warps, int64_t &warpsM, int64_t &warpsN);

/// The registers a thread of an mma.sync kernel needs for a warp tile of warpM x warpN:
/// its f32 accumulators (warpM warpN / 32), two buffers of A and B fragments (4 registers
/// a 16-row tile, 2 a 8-column one) and about 40 of addresses and indices. A block of
/// `warps` such warps fits when 32 warps times this is at most 65536.
int64_t mmaSyncThreadRegisters(int64_t warpM, int64_t warpN);

/// Whether sm_90a's wgmma path takes a GEMM of this block tile: 64, 128 or 192 rows (a
/// consumer warpgroup's m64 each 64) by a multiple of 16 columns from 16 to 256 (wgmma's
/// N), of 64 where B is MN-major (`bKMajor` false: B stored [K, N], read as 64-column
/// swizzle blocks). 192 rows where a consumer thread's tileN / 2 accumulators and
/// kWgmmaConvReservedRegisters fit the persistent kernel's 512 threads and the GEMM
/// analysis's grid of 12 warps keeps the mma.sync register rules: up to 144 columns.
/// Shared memory is its emitter's check.
bool wgmmaTileShape(int64_t tileM, int64_t tileN, bool bKMajor);
/// Registers a consumer thread of the nhwc convolution's wgmma kernels needs beside its
/// tileN / 2 f32 accumulators (addresses, descriptors, the epilogue's values): 256 x 128
/// (96 registers at 640 threads) spilled 16 bytes, 128 x 256 (168 at 384) none.
inline constexpr int64_t kWgmmaConvReservedRegisters = 40;
/// Whether the nhwc convolution's wgmma block takes this tile: 64 to 256 pixels in steps
/// of 64 (a consumer warpgroup each) by 64, 128 or 256 output channels, whose
/// accumulators and kWgmmaConvReservedRegisters fit the registers a thread of the
/// warp-specialized kernel gets.
bool wgmmaConvTileShape(int64_t tileM, int64_t tileN);

/// Elements a staging row holds (`cols` and padding), so that a warp's fragment
/// writes (4-byte pairs of 16-bit outputs, 8-byte pairs of f32) hit distinct banks.
int64_t stagingLd(int64_t cols, int64_t elementBytes);

/// The XOR swizzle (or padding) that makes both 16-byte row-chunk stores and
/// ldmatrix reads of 8 consecutive rows free of bank conflicts, for a tile
/// whose rows are `rowBytes` long.
SmemBuffer chooseLayout(int64_t rows, int64_t cols, int64_t elementBytes);

/// Bytes of one element.
int64_t elementBytes(ElementType type);

/// Evaluates a tile dimension: integer literals, BM, BN, BK (from the kernel's
/// directives) and products of those. nullopt when it is not a constant.
std::optional<int64_t> evalTileDim(KernelOp kernel, llvm::StringRef expr);

/// The most dynamic shared memory one block may use on `arch`.
int64_t smemLimitBytes(llvm::StringRef arch);

/// Whether `arch` has thread-block clusters (sm_90), over whose blocks an f32 GEMM
/// splits K (`split_k`; EmitSimtGemm.cpp).
inline bool hasClusters(llvm::StringRef arch) { return arch == "sm_90" || arch == "sm_90a"; }

/// Whether `arch` has the m16n8k4 f64 MMA (sm_90), on which an f32 GEMM multiplies
/// (SimtTile.h's f64TensorCoreTile, EmitSimtGemm.cpp).
inline bool hasF64TensorCoreMma(llvm::StringRef arch) {
  return arch == "sm_90" || arch == "sm_90a";
}

/// Matches the dimensions of a tensor to the output's, right-aligned by symbol:
/// the last dimension of `dims` is matched to the right-most equal dimension of
/// `target`, the one before it to an equal dimension further left, and so on.
/// Returns the target position of each dimension, or nullopt when one has none.
std::optional<llvm::SmallVector<int64_t>> matchDims(llvm::ArrayRef<std::string> dims,
                                                    llvm::ArrayRef<std::string> target);

/// matchDims for an operand broadcast to an output (an epilogue's tensor, attention's
/// mask): a dimension `1` that matches none of the output's is read at index 0
/// (position kUnitDim), so [B, 1, 1, L] broadcasts over [B, H, S, L].
constexpr int64_t kUnitDim = -1;
std::optional<llvm::SmallVector<int64_t>> matchBroadcastDims(llvm::ArrayRef<std::string> dims,
                                                             llvm::ArrayRef<std::string> target);

/// The "row"/"col"/"batchI" names of a match against an output with `targetRank` dims
/// ("unit" for kUnitDim: index 0).
llvm::SmallVector<std::string> indexNames(llvm::ArrayRef<int64_t> positions, int64_t targetRank);

/// Whether an elementwise statement calls a function beyond ReLU and LeakyReLU (GELU,
/// SiLU, sigmoid, tanh, exp, max, min): code whose temporaries need registers.
bool callsFunctions(mlir::Operation *statement);
/// How many such function calls the statement evaluates an element (each call counted).
int64_t functionCalls(mlir::Operation *statement);

/// The dims of a tensor parameter as strings (empty when `name` is no tensor parameter).
std::vector<std::string> tensorDims(KernelOp kernel, llvm::StringRef name);

/// A Winograd F(m x m, 3x3) kernel's block (docs/backend.md): `tiles` output tiles of
/// m x m by `channels` output channels, `depth` input channels a step; each of the
/// `warps` warps computes (m + 2)^2 / warps of the component GEMMs, a thread
/// channels / 8 x tiles / 4 outputs of each (the warp 8 x 4 threads).
struct WinogradBlock {
  int64_t m = 4, tiles = 16, channels = 64, depth = 8, warps = 12;
  bool nhwc = false; // nhwc activations: a warp's transforms store 8 channels x 4 tiles
  /// The block for tiles of m x m outputs (2 or 4).
  static WinogradBlock forOutputTile(int64_t m, bool nhwc);
  int64_t alpha() const { return m + 2; }
  int64_t components() const { return alpha() * alpha(); }
  int64_t threads() const { return 32 * warps; }
  int64_t componentsPerWarp() const { return components() / warps; }
  /// Padded rows of U (the transposed filter stores hit every bank).
  int64_t ldU() const { return channels + 4; }
  /// Rows of V. nhwc: a warp's transforms store 8 channel rows x 4 tiles, and winograd.cuh's
  /// v_column swizzles rows that start at the same bank; rows of 32 tiles are padded to 40
  /// (4 bank offsets, so a swizzle of one bit: the readers keep 2 addresses, not 4; without
  /// padding, or at 36 or 44, ptxas spilled 24 bytes of the 128-register F(2x2) kernel on
  /// sm_80). 16 tiles: no padding (F(4x4) fills the shared memory).
  int64_t ldV() const { return nhwc && tiles % 32 == 0 ? tiles + 8 : tiles; }
  /// The epilogue exchanges the components of 16 tiles at a time, rows padded to 20.
  static constexpr int64_t epilogueTiles = 16, ldE = epilogueTiles + 4;
  /// Floats of shared memory: U and V twice (double-buffered), the raw copies of one
  /// step (patches, filters); the epilogue's exchange buffer reuses U and V.
  int64_t smemFloats() const {
    return 2 * components() * depth * (ldU() + ldV()) + components() * tiles * depth +
           9 * channels * depth;
  }
  int64_t smemBytes() const { return 4 * smemFloats(); }
};

/// An attention kernel's tiles on mma.sync (EmitAttention.cpp; sketch-choose-defaults
/// picks its defaults by the same rules): BM query rows a block split among `warps`
/// warps, BN keys a step, head dimensions dqk (Q K^T) and dv (V, O). `alike`: K and
/// V are stored alike, a key per row, with dqk = dv (the kernel's least other state).
///
/// On sm_90a (`wgmma`) a block is one producer warpgroup (TMA loads) and bm / 64
/// consumer warpgroups of 64 query rows (16 a warp: warps = bm / 16), both GEMMs on
/// wgmma; it takes K and V in either storage order (a key per row or per column),
/// head dimensions multiples of 16 up to 256 (wgmma's k16 steps and N) and bn 64 or 128. Its shared tiles are panels of
/// 64 columns (128-byte swizzle): a head dimension that is not a multiple of 64 fills
/// its last panel partly (TMA zero-fills the columns past it; no MMA reads them).
/// What the statements between attention's GEMMs do to each score, for the default
/// tiles: scale it (folded into the softmax), call functions on it (registers for their
/// temporaries: the mma.sync kernel then gives each warp 16 rows, ptxas spilled at 32 on
/// sm_80), or load global tensors (also the sm_90a kernel then takes 64 keys a step: its
/// consumers spilled at 128).
enum class ScoreWork { scaling, functions, loads };

struct AttentionTiles {
  int64_t bm = 0, bn = 0, warps = 0, dqk = 0, dv = 0;
  bool alike = true;
  bool wgmma = false;
  /// Stages of K and V: 2 (mma.sync), 2 or more (sm_90a) within shared memory.
  int64_t stages = 2;
  /// sm_90a: tensors of the statements on the scores staged by TMA beside each K stage,
  /// a bm x bn tile of 2-byte elements each.
  int64_t scoreTiles = 0;
  /// What the statements between the GEMMs do to each score (blocksPerSm).
  ScoreWork work = ScoreWork::scaling;

  /// Whether the sm_90a kernel takes these head dimensions.
  static bool wgmmaTakes(int64_t dqk, int64_t dv);
  /// The columns of the sm_90a kernel's shared tiles for head dimension d: whole
  /// 64-column panels.
  static int64_t panelColumns(int64_t d);
  /// Whether the tiles are the sm_90a kernel's: bm = 16 x warps in whole warpgroups,
  /// bn a multiple of 64 whose scores take at most kAttentionScoreRegisters of a
  /// consumer thread (bn <= 128: ptxas spilled every wider tile measured, d = 64 and
  /// 128 at bn = 192 included), shared memory and the consumers' registers fit.
  bool wgmmaFits(llvm::StringRef arch) const;
  /// Whether `arch` runs these tiles, at their stage count, on the sm_90a kernel: its
  /// head dimensions (wgmmaTakes), at least 2 stages, and wgmmaFits.
  bool hopperTakes(llvm::StringRef arch) const;
  /// Registers a consumer thread gets with setmaxnreg (the producer keeps
  /// kAttentionProducerRegisters); what it needs: O (dv / 2), the scores (bn / 2),
  /// the probabilities as A fragments (bn / 4) and kAttentionAddressRegisters.
  int64_t consumerRegisters() const;
  int64_t consumerRegistersNeeded() const { return dv / 2 + bn / 2 + bn / 4 + 32; }
  /// sm_90a: blocks of these tiles resident on an SM: 2 where a block is one consumer
  /// warpgroup (bm = 64) that only scales the scores (functions and loads need registers
  /// the estimate does not count: a loaded bias spilled at 232), whose shared memory fits
  /// half the SM's (less the 1 KB the SM keeps a block) and whose consumers' registers fit
  /// half the register file; else 1. Two such blocks overlap one's loads, first scores and
  /// store with the other's key loop.
  int64_t blocksPerSm() const;

  /// f32 registers each thread keeps through a step for its share of O (bm /
  /// warps rows x dv, over 32 lanes) and of the scores P (rows x bn).
  int64_t outputRegisters() const { return bm / warps * dv / 32; }
  int64_t scoreRegisters() const { return bm / warps * bn / 32; }
  /// The register rule (any tiles): O and P within kAttentionAccumulatorRegisters,
  /// P within kAttentionScoreRegisters.
  bool fitsRegisters() const;
  /// Bytes of shared memory (2-byte elements): Q's tile (bm x dqk) and K's and V's
  /// (bn keys), two stages each; O's bm x dv staging tile reuses them after the loop.
  /// sm_90a: the tiles in whole panels (`stages` of K and V; O's staging tile reuses
  /// them), the staged score tensors' tiles, 1024 bytes to align them for the swizzle,
  /// the mbarriers (1 + 4 a stage) and 8 bytes to spare.
  int64_t smemBytes() const {
    if (wgmma)
      return std::max(2 * (bm * panelColumns(dqk) +
                           stages * (bn * (panelColumns(dqk) + panelColumns(dv)) +
                                     scoreTiles * bm * bn)),
                      2 * bm * dv) +
             1024 + 8 * (2 + 4 * stages);
    return std::max(2 * (bm * dqk + 2 * bn * (dqk + dv)), 2 * bm * dv);
  }
  /// The default: 4 warps, 64 keys a step and 32 rows per warp where the
  /// accumulators take at most kAttentionAlikeRegisters (K and V alike) or
  /// kAttentionOtherRegisters (other forms) and shared memory fits; 16 rows else, and
  /// then 32 keys a step for other forms above kAttentionOtherNarrowRegisters.
  /// `masked`: a Mask step (causal) between the GEMMs; `work`: what the statements
  /// between them do to each score (ScoreWork).
  static AttentionTiles defaults(int64_t dqk, int64_t dv, bool alike, bool masked,
                                 llvm::StringRef arch, ScoreWork work = ScoreWork::scaling);
  /// sm_90a: these tiles with the most K/V stages up to kAttentionMostStages that
  /// still fit (wgmmaFits), at least `stages`.
  AttentionTiles withMostStages(llvm::StringRef arch) const;
  /// These tiles on one consumer warpgroup: 64 rows, 4 warps (the host's 64-row kernel of
  /// the same statements; whether it fits is wgmmaFits).
  AttentionTiles sixtyFourRows() const {
    AttentionTiles rows = *this;
    rows.bm = 64;
    rows.warps = 4;
    return rows;
  }
};

/// Of the 255 registers a thread can have, those the accumulators (O and P) may
/// take, and those the scores P may take (they stay f32 through the softmax and
/// are packed for P V); the rest holds operand fragments, addresses and the
/// softmax state. Measured with ptxas (docs/backend.md): 32 rows a warp, bn = 64
/// fits 255 registers without spills up to dv = 128 (192) with K and V alike, up
/// to dv = 96 (160) in every form; bn = 128 at dv = 64 (P 128) spills.
constexpr int64_t kAttentionAccumulatorRegisters = 192;
constexpr int64_t kAttentionAlikeRegisters = 192;
constexpr int64_t kAttentionOtherRegisters = 160;
/// Other forms at 16 rows a warp (bm = 64, 4 warps): O and P within this, else 32 keys a
/// step; at 64 keys ptxas spilled 60-104 bytes from dv = 224 (O 112 registers) on sm_80
/// and sm_90a, nothing at 208 (104) or with 32 keys.
constexpr int64_t kAttentionOtherNarrowRegisters = 136;
constexpr int64_t kAttentionScoreRegisters = 64;
/// sm_90a: the producer warpgroup's registers after setmaxnreg; a consumer's at most.
constexpr int64_t kAttentionProducerRegisters = 24;
constexpr int64_t kAttentionConsumerRegisters = 240;
/// sm_90a: the default K/V stages where shared memory holds them (FlashAttention-3
/// keeps 2; a third hides more TMA latency, and with one block an SM the shared
/// memory is there: d = 64 and 128 at BN = 128, d = 192 at BN = 64 take 3).
constexpr int64_t kAttentionMostStages = 3;

/// The output tile side of a convolution algorithm: "winograd" 4 (F(4x4, 3x3)),
/// "winograd_2x2" 2; 0 for the implicit GEMM.
int64_t winogradOutputTile(llvm::StringRef algorithm);

/// Why `conv` cannot run as Winograd; empty when it can: f32 input, filter and output
/// (nchw or nhwc, the filter kcrs or krsc), whose sizes are 3x3 when compiling, stride
/// (1, 1), dilation (1, 1) (any padding, batch and channel counts).
std::string winogradMismatch(KernelOp kernel, Conv2dOp conv);

/// The kernel for `conv` (kConvAlgorithmAttr): the kernel's `algorithm`
/// directive, else "winograd" wherever it applies, "implicit_gemm" elsewhere.
llvm::StringRef convAlgorithm(KernelOp kernel, Conv2dOp conv);

/// The block of a convolution that sketch-pipeline planned as Winograd.
WinogradBlock winogradBlockOf(Conv2dOp conv);

/// The convolution of `kernel` that sketch-pipeline planned as Winograd
/// (kConvAlgorithmAttr), if any: its kernel has no implicit-GEMM staging.
std::optional<Conv2dOp> winogradConv(KernelOp kernel);

/// The top-level `for` of `kernel` holding a GEMM or Conv2d (the main loop), if any.
ForOp findMainLoop(KernelOp kernel);

/// The `Copy X from register to global` statements of `kernel`, in order.
llvm::SmallVector<CopyOp> findResultStores(KernelOp kernel);

} // namespace sketch::plan

#endif // SKETCH_PASSES_BACKENDPLAN_H
