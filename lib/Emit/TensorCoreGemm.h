//===- TensorCoreGemm.h - pieces of the mma.sync GEMM emitter --*- C++ -*-===//
//
// The tensor-core GEMM kernel is written in four pieces that other kernel
// emitters reuse (implicit-GEMM convolution, back-to-back GEMMs):
//   emitTensorCorePreamble   constants (BM, BN, BK, warps, MI, NI, KI, STAGES)
//                            and per-thread indices (tid, lane, warp_m, warp_n)
//   emitTensorCoreMainloop   accumulators, the pipelined loop over k-tiles with
//                            cp.async stages and register-double-buffered
//                            ldmatrix fragments feeding mma.sync m16n8k16;
//                            each operand's global->shared copy is a TileLoader
//   emitAccumulatorStore     the fused epilogue on each accumulator element,
//                            staged through shared memory, then 16-byte
//                            coalesced, guarded stores
// The names the pieces declare and expect are listed in docs/backend.md.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_TENSORCOREGEMM_H
#define SKETCH_EMIT_TENSORCOREGEMM_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Passes/BackendPlan.h"

#include <optional>
#include <string>

namespace sketch {

/// One MMA operand's shared tile: its plan and which way it is stored.
struct MmaOperandPlan {
  plan::SmemBuffer smem;
  /// Rows of the shared tile run along M (A) or N (B) and 16-byte chunks along
  /// K (ldmatrix without .trans); otherwise rows run along K (ldmatrix .trans).
  bool kContiguous = true;
};

/// The block-level plan of a tensor-core GEMM mainloop.
struct TensorCoreConfig {
  int64_t tileM = 128, tileN = 128, tileK = 32;
  int64_t warpsM = 2, warpsN = 2;
  int64_t stages = 3;
  std::string pipeline = "multistage"; // none | double_buffer | multistage
  int64_t fragmentBuffers = 2;
  /// cp.async a thread issues per k-tile and operand when the loaders offer single
  /// copies (TileLoader::copiesPerThread), else 0: the refill is then one block.
  int64_t copiesA = 0, copiesB = 0;
  std::string operandType = "__half"; // __half or __nv_bfloat16
  MmaOperandPlan a, b;
  /// K slices in one block (split-K, docs/backend.md): SLICES warp groups of
  /// threads() threads, each with its own SLICE_SMEM_BYTES of shared memory.
  int64_t slices = 1, sliceSmemBytes = 0;
  int64_t threads() const { return 32 * warpsM * warpsN; }
};

/// Writes the global->shared copy of one operand's k-tile. The mainloop wraps
/// emitLoad's statements in `auto load_X = [&](int kt, uint32_t dst) {...};`:
/// they copy k-tile `kt` into the stage whose shared address is `dst`, laid out
/// as the operand's SmemBuffer says (swizzleOffset below), with cp.async so that
/// the pipeline's commit/wait groups cover them. `kVec` (a template parameter of
/// the kernel) selects the 16-byte fast path.
class TileLoader {
public:
  virtual ~TileLoader() = default;
  /// Per-thread setup before the main loop (base pointers, coordinates).
  virtual void emitSetup(CudaWriter &w) const {}
  virtual void emitLoad(CudaWriter &w) const = 0;
  /// The 16-byte path one copy at a time, so that the main loop can spread a
  /// refill between its MMAs: the number of cp.async a thread issues a k-tile
  /// (0: not offered), and the statements of copy `i` of them, which the
  /// mainloop wraps in `auto copy_X = [&](int kt, uint32_t dst, int i) {...};`
  /// and calls under `if constexpr (kVec)` only.
  virtual int64_t copiesPerThread() const { return 0; }
  virtual void emitCopy(CudaWriter &w) const {}
};

/// A dense row-major matrix: tile row r, chunk c of k-tile kt is element
/// (rowOrigin + r, colOrigin + 8c) of a rows x cols matrix with `ld` elements
/// a row. The origins are C++ expressions that may use `kt`.
class MatrixTileLoader : public TileLoader {
public:
  struct Spec {
    std::string label; // "A", for comments
    std::string base;  // pointer expression (batch offset applied)
    std::string rows, cols, ld;
    std::string rowOrigin, colOrigin;
    plan::SmemBuffer smem;
    int64_t threads = 128;
    /// Not empty: the 16-byte path's per-thread addresses and bounds are set up
    /// once before the main loop (emitSetup), in variables named `<hoist>_copy_*`,
    /// so that a refill is a few adds. The k-tile's origin is then kt * BK along
    /// the rows (`kAlongRows`) or the columns, the other origin independent of kt.
    std::string hoist;
    bool kAlongRows = false;
    /// With `hoist` (and at most 4 copies a thread): each copy row's source lives in
    /// a register across the main loop (`<hoist>_copy_ptr[i]`), advanced one k-tile
    /// right before its copy, so a refill computes no address and writes no
    /// register that an earlier cp.async may still be reading.
    bool persistentSources = false;
    /// Chunks a thread of the element path loads before it stores them (a divisor of its
    /// count where this is not), each holding 5 registers meanwhile: 1 where the loads sit
    /// between MMAs whose fragments are live (mma.sync: 2 spilled in 6 of the GPU suite's
    /// sm_80 kernels, 4 in 2 more), 4 beside wgmma (kWgmmaElementChunksInFlight).
    int64_t chunksInFlight = 1;
  };
  explicit MatrixTileLoader(Spec spec) : spec(std::move(spec)) {}
  void emitSetup(CudaWriter &w) const override;
  void emitLoad(CudaWriter &w) const override;
  int64_t copiesPerThread() const override;
  void emitCopy(CudaWriter &w) const override;

private:
  Spec spec;
  bool hoisted() const;
  void emitPersistentSources(CudaWriter &w, int64_t iterations) const;
  void emitElementLoads(CudaWriter &w, const std::string &rowStep, int64_t iterations) const;
};

/// The XOR applied to the chunk index of row `row` ("0" without a swizzle).
std::string swizzleBits(const plan::SmemBuffer &smem, llvm::StringRef row);

/// The byte offset inside one stage of chunk `chunk` of row `row` (C++ expressions).
std::string swizzleOffset(const plan::SmemBuffer &smem, llvm::StringRef row, llvm::StringRef chunk);

/// Constants and per-thread indices; expects `smem` (extern shared bytes) declared.
void emitTensorCorePreamble(CudaWriter &w, const TensorCoreConfig &config);

/// The accumulators `float acc[MI][NI][4]` and the pipelined main loop over
/// `kTiles` (a C++ int expression) k-tiles.
void emitTensorCoreMainloop(CudaWriter &w, const TensorCoreConfig &config, const TileLoader &a,
                            const TileLoader &b, llvm::StringRef kTiles);

/// Where and how the accumulator tile is stored.
struct StoreSpec {
  std::string outType;            // C++ element type of the output
  std::string dst;                // pointer expression to element (0, 0) of the block's batch
  std::string rows, cols, ld;     // output matrix extent and row stride (C++ expressions)
  std::string m0, n0;             // the block tile's origin (int64_t expressions)
  std::vector<std::string> batch; // batch index expressions, for the epilogue operands
  plan::StagingBuffer staging;
  int64_t outBytes = 2;        // bytes of one output element
  bool stagedEpilogue = false; // epilogue after staging the f32 accumulators (see BackendPlan.h)
  /// The block barrier among the threads that store (the consumer warpgroups' named
  /// barrier in a warp-specialized kernel, whose producer warpgroup does not join).
  std::string barrier = "__syncthreads();";
  /// The register epilogue stages the tile in this many passes of BM / rowPasses rows
  /// (`staging` holds one pass; each warp's rows lie in one pass), so a persistent
  /// kernel's staging tile takes less shared memory beside its stages.
  int64_t rowPasses = 1;
  /// Where set (the persistent wgmma GEMM and nhwc convolution), the 16-byte path
  /// (`kVec`) of a register epilogue stores by TMA through the tensor map `tmaMap` (boxes
  /// of 128 bytes by rows; matrix `tmaBatch` of a 3-D map where that is set), staging at
  /// the 1024-byte aligned shared address `tmaStaging` (128B-swizzled, sketch::Swizzle128).
  /// With `tmaSlots` (the GEMM): each consumer warpgroup stages its kTmaStoreBoxRows rows a
  /// box at a time in its own tmaSlots slots and its first thread stores each box; the
  /// warpgroups never wait for each other. Without (the convolution): each pass staged
  /// densely, then thread `tid` 0 stores its boxes (boxes of the pass's rows). The
  /// element path keeps the chunk store.
  std::string tmaMap, tmaStaging, tmaBatch;
  int64_t tmaSlots = 0;
  /// Where set (the halo convolution: a rank-4 map of the output), the block tile's
  /// coordinates after the column ("w, h, n"), in place of the row and tmaBatch; rowPasses 1.
  std::string tmaTileCoords;
  /// The register epilogue's whole [M, N] operands are words each thread loaded before
  /// the main loop (emitWholeOperandPreloads: `pre_VAR[MI][NI][2]`), not loads of its own.
  bool wholeInRegisters = false;
  /// The kernel's template flag under which the output's rows take 16-byte (or TMA)
  /// stores: `kVec`, or the GEMMs' `kVecStore` (false where the operands' rows are whole
  /// 16-byte chunks and the output's are not: 16-byte loads, element stores).
  std::string storeVec = "kVec";
  bool storesByTma() const { return !tmaMap.empty(); }
  /// Each consumer warpgroup stores its own rows by TMA (tmaSlots), not the block its tile.
  bool storesByWarpgroup() const { return storesByTma() && tmaSlots > 0; }
};

/// Whether `epilogue` calls functions (GELU, SiLU, sigmoid, tanh, exp) over 128 or more
/// accumulators a thread: applied to the fragments while the staging loop runs, their
/// temporaries beside the accumulators spilled at 255 registers (mma.sync's 64 x 64 warp
/// tiles on sm_80: exp(-D * D) * tanh(D), 236-244 bytes; the wgmma one-tile kernel's
/// 64 x 256 warpgroup tiles with an f32 output: 8-48 bytes), so those kernels apply them
/// apart from the staging (appliesEpilogueFirst, stagedFormOf). `calls`: the fewest function
/// calls (EpilogueEmitter::functionCalls) that count as crowding.
bool functionsCrowdAccumulators(const EpilogueEmitter &epilogue, int64_t accumulatorsPerThread,
                                int64_t calls = 1);
/// Whether every whole [M, N] operand of `epilogue` is 16-bit: a word a column pair of a
/// fragment row, which emitWholeOperandPreloads can load before the main loop.
bool wholeOperandsAreWords(const EpilogueEmitter &epilogue);
/// The registers a thread's register epilogue holds beside its accumulators where the
/// whole operands are preloaded words: half the accumulators for each whole operand (a
/// word a column pair of rows g and g + 8) and each per-column one (emitOperandPreloads'
/// floats), 2 for each per-row one, 1 for each per-block one.
int64_t epilogueOperandRegisters(const EpilogueEmitter &epilogue, int64_t accumulatorsPerThread);
/// Before the main loop (origin `store.m0`, `store.n0`): each thread loads its fragments'
/// words of the epilogue's whole [M, N] operands into `pre_VAR[MI][NI][2]` (rows g and
/// g + 8), in flight through the main loop (StoreSpec::wholeInRegisters).
void emitWholeOperandPreloads(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s);
/// The register epilogue stored by TMA alone (StoreSpec::storesByTma without tmaSlots):
/// for a kernel the host launches only where the output's rows are whole 16-byte chunks.
void emitRegisterEpilogueByTma(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s);

/// The rows of a TMA store's box: one consumer warpgroup's accumulator rows.
inline constexpr int64_t kTmaStoreBoxRows = 64;

/// Whether a persistent kernel's register epilogue can store its tile by TMA from one
/// dense 128B-swizzled staging tile (StoreSpec::storesByTma without tmaSlots) placed where
/// `padded` (its padded staging, which starts at the end of the stages plus the up to 1023
/// bytes that align them) lies: 2- or 4-byte outputs, whole 128-byte boxes a row, whole
/// 8-row swizzle groups, and the dense tile no larger than the padded one.
bool denseStagingFits(const plan::StagingBuffer &padded, int64_t outBytes);

/// The slots (1 or 2) each of `warpgroups` consumer warpgroups stages its output boxes
/// in for the TMA store (StoreSpec::tmaSlots), 0 where it cannot store by TMA: 2- or
/// 4-byte outputs, whole 128-byte boxes a row, and the slots (64 rows x 128 bytes each,
/// from the 1024-byte aligned end of the stages) within the end of the padded staging tile
/// `padded`, which starts up to 1024 bytes after that address; no more slots than boxes.
int64_t tmaStoreSlots(const plan::StagingBuffer &padded, int64_t outBytes, int64_t warpgroups);

/// Before a kernel whose tiles are stored by TMA leaves (or reuses) the staging tile's
/// shared memory: each warpgroup's first thread (thread 0 alone where one thread stores)
/// waits until its last stores have read it. Their writes to global memory need no wait:
/// they complete with the grid. `storeVec`: the template flag of the TMA stores
/// (StoreSpec::storeVec).
void emitTmaStoreDrain(CudaWriter &w, llvm::StringRef storeVec, bool warpgroupSlots = false,
                       llvm::StringRef why = "the last stores have read the staging tile");

/// The epilogue as a tensor-core kernel runs it: where `fold` and the first statement
/// adds a global tensor to the accumulator (EpilogueEmitter::splitStart), the accumulators
/// start from that operand instead of zero and the rest runs after the main loop. Several
/// such terms fold where each is 16-bit and per column (one word a column pair) or full
/// (a word a column pair of each of the thread's two rows), within the 4 accumulator
/// registers of a fragment; any other operand folds alone, element by element.
/// The persistent warp-specialized kernels fold (their 168 registers a thread leave the
/// epilogue's loads few registers beside the accumulators, docs/backend.md); the
/// one-tile kernels do not (the loaded accumulators would stay live across the pipeline's
/// prologue, where zeros cost no register: the GELU example spilled 20 bytes).
class FoldedEpilogue {
public:
  FoldedEpilogue(const EpilogueEmitter &epilogue, bool fold);
  /// The accumulators' first values at the start of a tile (origin `store.m0`,
  /// `store.n0`): each thread loads its fragments' elements of the folded operands, or
  /// `zero` writes zeros where nothing is folded.
  void emitStart(CudaWriter &w, const StoreSpec &store, llvm::function_ref<void()> zero) const;
  /// A line for the kernel's header comment (empty where nothing is folded).
  std::string describe() const;
  bool folds() const { return !terms.empty(); }
  /// The statements that run after the main loop.
  const EpilogueEmitter &rest() const { return after ? *after : *whole; }

private:
  struct Term {
    AccumulatorStart start;
    int64_t words;  // accumulator registers a fragment its words take (0: element loads)
    int64_t slot;   // the first of them
  };
  void emitElementStart(CudaWriter &w, const Term &term, const ElementIndex &at,
                        const StoreSpec &s) const;
  void emitWordLoads(CudaWriter &w, const Term &term, const ElementIndex &at,
                     const StoreSpec &s) const;
  void emitWiden(CudaWriter &w) const;

  const EpilogueEmitter *whole;
  std::vector<Term> terms;
  std::optional<EpilogueEmitter> after; // the epilogue after the last term
};

/// Waits for the pipeline, applies the epilogue in registers, stages the tile
/// in shared memory and stores it with 16-byte coalesced, guarded stores.
void emitAccumulatorStore(CudaWriter &w, const TensorCoreConfig &config,
                          const EpilogueEmitter &epilogue, const StoreSpec &store);

/// Where the K slices of a split-K block tile live (C++ expressions of the kernel):
/// their count and this thread's slice, this slice's partial tile (a byte offset into
/// `smem`), slice q's partial tile as a shared address (uses `q`), the 16-byte load of
/// such an address, and the barrier between all slices of the tile.
struct SplitSlices {
  std::string count, slice;
  std::string partialOffset, sliceTile, load;
  std::string barrier;
  /// The slices are other blocks (a cluster): none may leave while another reads its
  /// shared memory, so the reduction ends with the barrier too.
  bool otherBlocks = false;
};

/// K slices that are the blocks of this block's thread-block cluster (`slices`, `slice`:
/// cluster_size(), cluster_rank()), each partial tile at offset 0 of its block's shared
/// memory, read across the cluster (distributed shared memory).
SplitSlices clusterSlices();

/// The split-K store: waits for the pipeline, stages this slice's f32 accumulators
/// (store.staging: f32, offset 0 of the slice's shared memory), then this slice sums
/// its share of the output chunks over slices 0, 1, ... in that order, applies the
/// epilogue and stores them (16-byte coalesced, guarded).
void emitSplitReduceStore(CudaWriter &w, const TensorCoreConfig &config,
                          const EpilogueEmitter &epilogue, const StoreSpec &store,
                          const SplitSlices &slices);

/// The barriers of emitSplitReduceStore alone, in its order: what a warp-specialized
/// split kernel's producer warpgroup, which has no share of the reduction, runs instead.
void emitSplitReduceBarriers(CudaWriter &w, const SplitSlices &slices);

} // namespace sketch

#endif // SKETCH_EMIT_TENSORCOREGEMM_H
