//===- WgmmaGemm.cpp - the Hopper (sm_90a) wgmma GEMM emitter -------------===//
//
// D[batch..., M, N] = epilogue(A · B) for --arch=sm_90a: one block per
// (BM, BN) output tile, BM / 64 consumer warpgroups (4 warps each), warpgroup
// wg owning output rows 64 wg .. 64 wg + 63 with wgmma.mma_async m64nBNk16
// (operands from shared memory, f32 accumulators in registers). The k-loop is
// a cp.async multistage pipeline into 128-byte-swizzled tiles (BK = 64: one
// swizzle atom row), with STAGES from sketch-pipeline; one wgmma group stays in
// flight while the next k-tile is issued, so the copies run STAGES - 2 k-tiles
// ahead. This path plans its own operand buffers (the swizzle atoms wgmma
// reads); the epilogue's staging buffer and statements are the ones
// sketch-plan-shared-memory and sketch-fuse-epilogue planned, written by
// emitAccumulatorStore (the wgmma accumulators of a warp are the mma.sync
// m16n8 C fragments of its 16 rows). Any M, N, K: zero-filled copies outside
// the matrices and guarded stores, as on the mma.sync path.
// The 16-byte path loads its stages by TMA instead (tensor maps encoded by the
// host function, 3-D for batches; SWIZZLE_128B gives the same layout) unless an
// operand is broadcast over a batch dimension: thread 0
// asks for a stage's boxes, completing on the stage's full mbarrier; each warp
// arrives on the stage's empty mbarrier once its wgmma group on it is done, and
// thread 0 refills it then, STAGES - 1 k-tiles ahead, without a block barrier.
// Where the staging tile fits beside the stages, the TMA GEMM (not its split-K form)
// is persistent and warp-specialized instead (writePersistentBody): min(tiles, SMs)
// blocks loop over the tiles; a producer warpgroup's thread issues every k-tile's
// boxes through the stage ring, across tile boundaries, while the consumer
// warpgroups multiply and run the epilogue (named barrier 1; staging past the stages).
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/WgmmaGemm.h"

#include "lib/Emit/EmitGemm.h"
#include "lib/Emit/EmitHost.h"
#include "lib/Emit/TensorCoreGemm.h"

using namespace mlir;

namespace sketch {

namespace {

constexpr int64_t kTileK = kWgmmaTileK; // 64 f16/bf16 = one 128-byte swizzle row
constexpr int64_t kAtomBytes = 1024; // 8 rows of 128 bytes: the swizzle atom

} // namespace

plan::SmemBuffer wgmmaSwizzle128(int64_t rows) {
  plan::SmemBuffer s;
  s.layout = "xor";
  s.rows = rows;
  s.cols = kTileK;
  s.elementBytes = 2;
  s.rowBytes = 128;
  s.xorShift = 0;
  s.xorMask = 7;
  s.stageBytes = rows * 128;
  return s;
}

int64_t WgmmaBlock::pipelineBytes() const {
  return kAtomBytes + stages * (tileM + tileN) * kTileK * 2;
}

TensorCoreConfig WgmmaBlock::storeConfig() const {
  TensorCoreConfig config;
  config.tileM = tileM;
  config.tileN = tileN;
  config.tileK = kTileK;
  config.warpsM = tileM / 16; // warp w: rows 16 w .. 16 w + 15 (4 warps a warpgroup)
  config.warpsN = 1;
  config.stages = stages;
  config.operandType = operandType;
  return config;
}

void emitGridDependencyWait(CudaWriter &w) {
  w.line("sketch::grid_dependency_wait();  // under a dependent launch: until the previous kernel's "
         "writes are visible");
}

void emitWgmmaPreamble(CudaWriter &w, const WgmmaBlock &b) {
  w.line("constexpr int BM = " + str(b.tileM) + ", BN = " + str(b.tileN) + ", BK = " +
         str(kTileK) + ";");
  if (b.producer)
    w.line("constexpr int THREADS = " + str(b.threads()) + ";  // " + str(b.tileM / 64) +
           " consumer warpgroup(s) of 4 warps, after the producer warpgroup (128 threads)");
  else
    w.line("constexpr int THREADS = " + str(b.threads()) + ";  // " + str(b.tileM / 64) +
           " warpgroup(s) of 4 warps");
  if (b.storeNames)
    w.line("constexpr int WM = 16, WN = BN;  // a warp's accumulator rows inside its warpgroup");
  else
    w.line("constexpr int WM = 16;  // a warp's accumulator rows inside its warpgroup");
  w.line("constexpr int MI = 1, NI = BN / 8, KI = BK / 16;  // m16n8 fragments, k16 steps");
  if (b.runtimeStages)
    w.line("const int STAGES = stages;  // the host's plan");
  else
    w.line("constexpr int STAGES = " + str(b.stages) + ";");
  w.line("const uint32_t smem_base = sketch::smem_addr(smem);");
  if (b.producer)
    w.line("const int tid = (int)threadIdx.x - 128, lane = tid % 32, warp = tid / 32;  // consumers: 0 ..");
  else
    w.line("const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;");
  if (b.storeNames)
    w.line("const int warp_m = warp, warp_n = 0;");
  w.line("const int wg = warp / 4;  // warpgroup: output rows 64 wg .. 64 wg + 63");
}

void emitWgmmaZeroAccumulators(CudaWriter &w) {
  w.line("#pragma unroll");
  w.open("for (int ni = 0; ni < NI; ++ni)");
  w.line("#pragma unroll");
  w.line("for (int e = 0; e < 4; ++e) acc[0][ni][e] = 0.0f;");
  w.close();
}

void emitWgmmaBuffers(CudaWriter &w, const WgmmaBlock &b, llvm::StringRef aLayout,
                      llvm::StringRef bLayout, llvm::StringRef kSize) {
  w.comment("shared memory (sm_90a path, planned here): STAGES x (A " + str(b.tileM * kTileK * 2) +
            " + B " + str(b.tileN * kTileK * 2) + ") bytes, 1024-byte aligned,");
  w.comment("128-byte swizzle (chunk c of row r at c ^ (r & 7)); A" + aLayout.str() + "; B" +
            bLayout.str());
  w.line("constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2;");
  w.line("const uint32_t a_smem = (smem_base + 1023) & ~1023u;");
  w.line("const uint32_t b_smem = a_smem + STAGES * A_STAGE_BYTES;");
  w.line("float acc[MI][NI][4];");
  emitWgmmaZeroAccumulators(w);
  w.line("const int k_tiles = (int)sketch::ceil_div(" + kSize.str() + ", BK);");
}

namespace {

/// The descriptor of k16 step `kk` of operand A's or B's stage at `stage` (C++ expressions).
std::string descriptor(bool isA, bool kMajor, StringRef stage) {
  std::string wgOffset = isA ? (kMajor ? "wg * 64 * 128" : "wg * BK * 128") : "0";
  std::string start = stage.str() + " + " + wgOffset + " + kk * " + (kMajor ? "32" : "2048");
  std::string lbo = kMajor ? "16" : "BK * 128";
  return "sketch::wgmma_desc_sw128(" + start + ", " + lbo + ", 1024)";
}

} // namespace

void emitWgmmaMultiply(CudaWriter &w, const WgmmaBlock &b, StringRef step) {
  w.line("const uint32_t a_stage = a_smem + (" + step.str() + " % STAGES) * A_STAGE_BYTES;");
  w.line("const uint32_t b_stage = b_smem + (" + step.str() + " % STAGES) * B_STAGE_BYTES;");
  w.line("sketch::wgmma_fence_operands(acc[0]);");
  w.line("sketch::wgmma_fence();");
  w.line("#pragma unroll");
  w.open("for (int kk = 0; kk < KI; ++kk)");
  w.line("const uint64_t desc_a = " + descriptor(true, b.aKMajor, "a_stage") + ";");
  w.line("const uint64_t desc_b = " + descriptor(false, b.bKMajor, "b_stage") + ";");
  w.line("sketch::wgmma_m64n" + str(b.tileN) + "k16<" + b.operandType + ", " +
         (b.aKMajor ? "0" : "1") + ", " + (b.bKMajor ? "0" : "1") + ">(acc[0], desc_a, desc_b);");
  w.close();
  w.line("sketch::wgmma_commit();");
}

void emitWgmmaCpAsyncLoop(CudaWriter &w, const WgmmaBlock &b, const TileLoader &loadA,
                          const TileLoader &loadB, StringRef barrier) {
  // Without it ptxas ran the wgmma of some cp.async pipelines one after another (C7515:
  // the accumulators' start defined inside the pipeline; check_ptxas.sh fails on it).
  w.line("sketch::wgmma_fence_operands(acc[0]);  // the accumulators' start, before the pipeline");
  w.open("auto load_a = [&](int kt, uint32_t dst)");
  loadA.emitLoad(w);
  w.close(";");
  w.open("auto load_b = [&](int kt, uint32_t dst)");
  loadB.emitLoad(w);
  w.close(";");
  w.comment("prologue: k-tiles 0 .. STAGES - 3, one commit group each (rolled on the element");
  w.comment("path, where ptxas spilled up to 152 bytes overlapping the unrolled tiles' loads)");
  w.line("#pragma unroll(kVec ? STAGES - 2 : 1)");
  w.open("for (int s = 0; s < STAGES - 2; ++s)");
  w.open("if (s < k_tiles)");
  w.line("load_a(s, a_smem + s * A_STAGE_BYTES);");
  w.line("load_b(s, b_smem + s * B_STAGE_BYTES);");
  w.close();
  w.line("sketch::cp_async_commit();");
  w.close();
  w.comment("main loop: k-tile kt multiplies while kt + 1 .. kt + STAGES - 2 copy; wgmma group kt");
  w.comment("stays in flight until kt + 1 is issued");
  w.open("for (int kt = 0; kt < k_tiles; ++kt)");
  w.line("sketch::cp_async_wait<STAGES - 3>();  // k-tile kt has landed (this thread's copies)");
  w.line("sketch::fence_async_shared();         // ... visible to the tensor cores");
  w.line(barrier.str() + "  // ... everyone's; wgmma group kt - 2 is done");
  emitWgmmaMultiply(w, b);
  w.comment("refill while the tensor cores work: k-tile kt + STAGES - 2 into the stage of kt - 2");
  w.line("const int next = kt + STAGES - 2;");
  w.open("if (next < k_tiles)");
  w.line("const int s = next % STAGES;");
  w.line("load_a(next, a_smem + s * A_STAGE_BYTES);");
  w.line("load_b(next, b_smem + s * B_STAGE_BYTES);");
  w.close();
  w.line("sketch::cp_async_commit();");
  w.line("sketch::wgmma_fence_operands(acc[0]);");
  w.line("sketch::wgmma_wait<1>();  // group kt - 1 is done (its stage is refilled after the next barrier)");
  w.line("sketch::wgmma_fence_operands(acc[0]);");
  w.close();
}

void emitWgmmaDrain(CudaWriter &w) {
  w.line("sketch::wgmma_wait<0>();");
  w.line("sketch::wgmma_fence_operands(acc[0]);");
}

void emitWgmmaTmaConsumerStep(CudaWriter &w, const WgmmaBlock &b, StringRef step) {
  std::string k = step.str();
  w.line("sketch::mbarrier_wait(bars + 8 * (" + k + " % STAGES), (" + k +
         " / STAGES) & 1);  // k-tile kt has landed");
  emitWgmmaMultiply(w, b, k);
  w.line("sketch::wgmma_fence_operands(acc[0]);");
  w.line("sketch::wgmma_wait<1>();  // group kt - 1 is done: its stage may be refilled");
  w.line("sketch::wgmma_fence_operands(acc[0]);");
  w.line("if (kt > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (" + k +
         " - 1) % STAGES));");
}

void emitWgmmaStageBarriers(CudaWriter &w, int64_t barriersOffset, StringRef syncComment) {
  emitWgmmaStageBarriersAt(w, "smem_base + " + str(barriersOffset), syncComment);
}

void emitWgmmaStageBarriersAt(CudaWriter &w, StringRef bars, StringRef syncComment) {
  w.line("const uint32_t bars = " + bars.str() +
         ";  // full[s] at bars + 8 s, empty[s] at bars + 8 (STAGES + s)");
  w.open("if (threadIdx.x == 0)");
  w.open("for (int s = 0; s < STAGES; ++s)");
  w.line("sketch::mbarrier_init(bars + 8 * s, 1);");
  w.line("sketch::mbarrier_init(bars + 8 * (STAGES + s), THREADS / 32);  // every consumer warp");
  w.close();
  w.line("sketch::fence_mbarrier_init();");
  w.close();
  w.line("__syncthreads();" + syncComment.str());
}

void emitWgmmaProducerStep(CudaWriter &w, StringRef step, llvm::function_ref<void()> writeLoads,
                           StringRef stageBytes) {
  std::string k = step.str();
  w.line("const uint32_t full = bars + 8 * (" + k + " % STAGES);");
  w.line("if (" + k + " >= STAGES)  // the consumers are done with the stage's last k-tile");
  w.line("  sketch::mbarrier_wait(bars + 8 * (STAGES + " + k + " % STAGES), (" + k +
         " / STAGES - 1) & 1);");
  w.line("sketch::mbarrier_arrive_expect_tx(full, " + stageBytes.str() + ");");
  writeLoads();
}

void emitWgmmaConsumerTile(CudaWriter &w, const WgmmaBlock &b) {
  w.open("for (int kt = 0; kt < k_tiles; ++kt, ++k_step)");
  emitWgmmaTmaConsumerStep(w, b, "k_step");
  w.close();
  emitWgmmaDrain(w);
  w.line("if (k_tiles > 0) sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + (k_step - 1) % STAGES));");
}

int64_t wgmmaConsumerRegisters(const WgmmaBlock &b) {
  int64_t launched = std::min<int64_t>(65536 / b.launchThreads(), 255) / 8 * 8;
  int64_t left = launched * b.launchThreads() - 128 * kWgmmaProducerRegisters;
  return std::min<int64_t>(256, left / b.threads() / 8 * 8);
}

void emitProducerRegisters(CudaWriter &w) {
  w.line("sketch::setmaxnreg_dec<" + str(kWgmmaProducerRegisters) + ">();");
}

void emitConsumerRegisters(CudaWriter &w, const WgmmaBlock &b) {
  w.line("sketch::setmaxnreg_inc<" + str(wgmmaConsumerRegisters(b)) + ">();");
}

void emitSplitTailWholeTiles(CudaWriter &w, StringRef splitsWhen) {
  w.comment("the split tail (docs/backend.md): in clusters of 2 to 8 blocks, the tiles past the "
            "last whole round");
  w.comment("of the grid are each summed over K by the blocks of one cluster, a K slice a block");
  w.line("const int whole_tiles = " + splitsWhen.str() +
         " ? tile_count - tile_count % (int)gridDim.x : tile_count;");
}

void emitSplitTailTile(CudaWriter &w) {
  w.line("const int slices = (int)sketch::cluster_size(), slice = (int)sketch::cluster_rank();");
  w.line("const int split_tile = whole_tiles + (int)blockIdx.x / slices;  // the cluster's");
  w.line("const bool splits = slices > 1 && split_tile < tile_count;");
}

void emitPersistentProducer(CudaWriter &w, StringRef thread, StringRef wholeTiles,
                            std::optional<StringRef> tailWhen,
                            function_ref<void(StringRef, StringRef, StringRef)> loadTile) {
  w.open("if (threadIdx.x < 128)");
  w.comment("producer warpgroup: one thread asks for every k-tile's boxes by TMA, a stage as");
  w.comment("soon as the consumers have freed it (its empty barrier)");
  emitProducerRegisters(w);
  if (tailWhen)
    emitSplitTailWholeTiles(w, *tailWhen);
  w.open(("if (" + thread + ")").str());
  w.line("int k_step = 0;");
  w.open(("for (int tile = blockIdx.x; tile < " + wholeTiles + "; tile += gridDim.x)").str());
  loadTile("tile", "0", "k_tiles");
  w.close();
  if (tailWhen) {
    emitSplitTailTile(w);
    w.open("if (splits)");
    emitSplitTailWindow(w);
    loadTile("split_tile", "kt_first", "kt_end");
    w.close();
  }
  w.close();
  if (tailWhen)
    w.comment("exited threads count as arrived at the split tail's block and cluster barriers");
  w.line("return;");
  w.close();
}

void emitSplitTailWindow(CudaWriter &w) {
  w.line("const int k_per = (int)sketch::ceil_div(k_tiles, slices);");
  w.line("const int kt_first = min(slice * k_per, k_tiles), kt_end = min(kt_first + k_per, "
         "k_tiles);");
}

plan::StagingBuffer splitTailPartialTile(const WgmmaBlock &b) {
  return plan::StagingBuffer{0, b.tileM, b.tileN, plan::stagingLd(b.tileN, 4), 4};
}

void emitSplitTailConsumer(CudaWriter &w, const WgmmaBlock &b, const EpilogueEmitter &epilogue,
                           StoreSpec store, llvm::function_ref<void()> emitOrigin,
                           llvm::function_ref<void()> beforeReduction) {
  emitSplitTailTile(w);
  w.open("if (splits)");
  w.comment("this block's K slice of the cluster's split tile");
  emitOrigin();
  w.line("{");
  w.indentMore();
  emitSplitTailWindow(w);
  w.line("const int k_tiles = kt_end - kt_first;  // the slice's");
  emitWgmmaZeroAccumulators(w);
  emitWgmmaConsumerTile(w, b);
  w.close();
  beforeReduction();
  store.staging = splitTailPartialTile(b);
  emitSplitReduceStore(w, b.storeConfig(), epilogue, store, clusterSlices());
  w.close();
}

void emitTailSplitRule(CudaWriter &w, StringRef tiles, StringRef kTiles, StringRef kernel,
                       int64_t threads, StringRef smem) {
  w.line("static sketch::PerDevice resident[sketch::kMaxTailSlices + 1];  // a cluster size's");
  w.line("const sketch::TailSplit split = sketch::tail_split(" + tiles.str() + ", " + kTiles.str() +
         ", std::max(sketch::sm_count(), 1), [&](int cluster) {");
  w.line("  return sketch::cluster_resident_blocks(" + kernel.str() + ", " + str(threads) + ", " +
         smem.str() + ", cluster, resident[cluster]);");
  w.line("});");
}

void emitWgmmaTmaLoop(CudaWriter &w, const WgmmaBlock &b, int64_t barriersOffset,
                      llvm::function_ref<void()> writeLoads, StringRef stageBytes) {
  w.comment("TMA: thread 0 asks for a stage's boxes, which complete on its full barrier; each");
  w.comment("warp arrives on its empty barrier once the stage's wgmma group is done");
  emitWgmmaStageBarriers(w, barriersOffset, "");
  w.open("auto load_stage = [&](int kt)");
  w.line("const uint32_t full = bars + 8 * (kt % STAGES);");
  w.line("sketch::mbarrier_arrive_expect_tx(full, " + stageBytes.str() + ");");
  writeLoads();
  w.close(";");
  w.comment("prologue: k-tiles 0 .. STAGES - 1");
  w.open("if (tid == 0)");
  w.line("for (int kt = 0; kt < STAGES && kt < k_tiles; ++kt) load_stage(kt);");
  w.close();
  w.comment("main loop: k-tile kt multiplies while kt + 1 .. kt + STAGES - 1 load; wgmma group kt");
  w.comment("stays in flight until kt + 1 is issued");
  w.open("for (int kt = 0; kt < k_tiles; ++kt)");
  w.open("if (tid == 0 && kt >= 2 && kt - 2 + STAGES < k_tiles)");
  w.comment("refill the stage of k-tile kt - 2 (every warp arrived: its group is done)");
  w.line("const int done = kt - 2;");
  w.line("sketch::mbarrier_wait(bars + 8 * (STAGES + done % STAGES), (done / STAGES) & 1);");
  w.line("load_stage(done + STAGES);");
  w.close();
  emitWgmmaTmaConsumerStep(w, b, "kt");
  w.close();
}

namespace {

int64_t stagesOf(const GemmAnalysis &g) { return std::max<int64_t>(g.stages, 3); }

WgmmaBlock blockOf(const GemmAnalysis &g) {
  WgmmaBlock b;
  b.tileM = g.tileM;
  b.tileN = g.tileN;
  b.stages = stagesOf(g);
  b.operandType = cTypeOf(g.operandType);
  b.aKMajor = g.a.kContiguous;
  b.bKMajor = g.b.kContiguous;
  return b;
}

int64_t pipelineBytes(const GemmAnalysis &g) { return blockOf(g).pipelineBytes(); }

/// An operand that has every batch dimension of the output, in the output's order: its
/// matrices follow one another, matrix blockIdx.z being the block's.
bool hasWholeBatch(const GemmOperand &op, const GemmAnalysis &g) {
  if (op.batchPositions.size() != g.batchDims.size())
    return false;
  for (size_t i = 0; i < op.batchPositions.size(); ++i)
    if (op.batchPositions[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

/// The 16-byte path loads by TMA unless an operand is broadcast over a batch dimension
/// (its map would need a zero stride, which tensor maps do not take). Batched operands
/// get 3-D maps: (columns, rows, matrix).
bool usesTma(const GemmAnalysis &g) { return hasWholeBatch(g.a, g) && hasWholeBatch(g.b, g); }

/// The persistent kernel's staging tile follows the stages (the producer refills them
/// for the next tile while the consumers store this one); the planned one overlaps them.
/// It holds BM / `passes` rows when the epilogue stages the tile in passes.
plan::StagingBuffer persistentStaging(const GemmAnalysis &g, int64_t passes) {
  plan::StagingBuffer staging = g.staging;
  staging.offset = pipelineBytes(g); // a multiple of 1024
  staging.rows /= passes;
  return staging;
}

/// The TMA path's mbarriers (full[STAGES], empty[STAGES]) lie past both the pipeline
/// and the staging tile, so the epilogue never overwrites them. `passes`: the
/// persistent kernel's staging passes (0: the one-tile kernel).
int64_t barriersOffset(const GemmAnalysis &g, int64_t passes) {
  int64_t end = passes ? persistentStaging(g, passes).endBytes()
                       : std::max(pipelineBytes(g), g.staging.endBytes());
  return (end + 7) / 8 * 8;
}

int64_t smemBytesOf(const GemmAnalysis &g, int64_t passes = 0) {
  if (usesTma(g))
    return barriersOffset(g, passes) + 16 * stagesOf(g);
  return std::max(pipelineBytes(g), g.staging.endBytes());
}

/// The TMA GEMM runs persistent and warp-specialized where its staging tile fits in
/// shared memory beside the stages (else one block a tile, the staging over the stages):
/// the whole tile, or half or a quarter of its rows at a time where `inPasses`
/// (epilogueInPasses). The number of passes; 0 where none fits.
int64_t persistentPasses(const GemmAnalysis &g, bool inPasses) {
  if (!usesTma(g))
    return 0;
  for (int64_t passes : {1, 2, 4})
    if ((passes == 1 || inPasses) && smemBytesOf(g, passes) <= plan::smemLimitBytes("sm_90a"))
      return passes;
  return 0;
}

/// Whether the persistent kernel may stage its tile in passes (persistentPasses'
/// `inPasses`): a register epilogue (the 384-thread kernel's 168 registers then hold the
/// accumulators and the epilogue, docs/backend.md; its element path applies the statements
/// before the passes, applyEpilogueInPlace), but not
/// - one that calls functions on a whole [M, N] tensor's elements: that one keeps the
///   one-tile register form with the tensor's words preloaded (registerFormOf);
/// - one of an f32 output that reads a whole tensor or calls functions: in passes, the
///   element path of `exp` and `sigmoid` epilogues spilled (24 and 40 bytes), and passes of
///   f32 outputs with whole reads are unmeasured (docs/backend.md "Passes").
/// Not a staged one: in passes of BM / 4 rows, persistent, Y = silu(X W^T) * U ran 1-2%
/// slower than one tile a block (docs/backend.md).
bool epilogueInPasses(const GemmAnalysis &g, const EpilogueEmitter &epilogue) {
  int64_t outBytes = gemmStoreSpec(g).outBytes;
  bool wholeReads = epilogue.readsFullTensor(), functions = epilogue.callsFunctions();
  bool plainF32 = outBytes == 4 && !wholeReads && !functions;
  return !g.stagedEpilogue && (outBytes == 2 || plainF32) && !(functions && wholeReads);
}

/// Accumulator and epilogue-operand registers (epilogueOperandRegisters) a thread of the
/// one-tile kernel may hold where its whole operands are preloaded words (its 255
/// registers also hold addresses, descriptors and the statements' temporaries): 128
/// accumulators of a 64 x 256 warpgroup tile, 64 words of one 16-bit whole operand and a
/// few per-row or per-block values. With a per-column bias beside them (256), ptxas
/// spilled (examples/gemm_epilogue.sketch).
constexpr int64_t kPreloadRegisterBudget = 200;

/// Registers the statements' temporaries take a function call (plan::functionCalls: max and min
/// count, relu does not), and the most that accumulators, epilogue operands
/// (epilogueOperandRegisters) and calls may take together where whole operands are preloaded.
/// Fitted to ptxas (sm_90a, 255 registers; docs/backend.md "Functions beside preloaded words,
/// counted"): 128 accumulators, 64 words and one call (216) compiled clean, two calls (240) spilled
/// 32-76 bytes; 64 accumulators with 66 operand registers (a whole operand, a column bias, two
/// scalars) spilled 4-8 bytes at four and five calls (226, 250), and compiled clean up to three
/// calls (202) and, with 32 words alone, at five (216).
constexpr int64_t kFunctionCallRegisters = 24;
constexpr int64_t kPreloadFunctionBudget = 220;

/// Whether `preloaded` registers (accumulators and epilogue operands) leave too few for the
/// statements' functions.
bool functionsCrowdPreloads(const EpilogueEmitter &epilogue, int64_t preloaded) {
  return preloaded + kFunctionCallRegisters * epilogue.functionCalls() > kPreloadFunctionBudget;
}

/// The kernel of one tile slice (not a split form) for an epilogue staged in f32 because it
/// reads a whole [M, N] tensor (sketch.epilogue_mode = "staged") takes the register form
/// (docs/backend.md "Epilogues that read a whole [M, N] tensor"):
/// - where every such read folds into the accumulators' start (Y = Y + R) and that makes
///   it persistent: R loaded into the accumulators before each tile, the tile stored by TMA
///   (the f32 staging tile does not fit beside the stages: the staged kernel is one tile a
///   block);
/// - else, where the register form is one tile a block too, every whole operand is 16-bit
///   and its words fit kPreloadRegisterBudget beside the accumulators, and the functions
///   do not crowd them (functionsCrowdPreloads): each thread loads its words before the
///   main loop (StoreSpec::wholeInRegisters).
GemmAnalysis registerFormOf(const GemmAnalysis &g, const EpilogueEmitter &epilogue,
                            const SplitForm *split) {
  if (split || !g.stagedEpilogue)
    return g;
  GemmAnalysis form = g;
  form.stagedEpilogue = false;
  form.staging.elementBytes = plan::elementBytes(g.out->type);
  form.staging.ld = plan::stagingLd(form.staging.cols, form.staging.elementBytes);
  int64_t passes = persistentPasses(form, epilogueInPasses(form, epilogue));
  FoldedEpilogue folded(epilogue, /*fold=*/true);
  if (folded.folds() && !folded.rest().readsFullTensor())
    return passes > 0 ? form : g;
  int64_t accumulators = g.tileN / 2; // a warpgroup's 64 x BN over its 128 threads
  int64_t preloaded = accumulators + epilogueOperandRegisters(epilogue, accumulators);
  bool wordsFit = wholeOperandsAreWords(epilogue) && preloaded <= kPreloadRegisterBudget &&
                  !functionsCrowdPreloads(epilogue, preloaded);
  return passes == 0 && wordsFit ? form : g;
}

/// The one-tile kernel (not a split form) of an f32 output whose register epilogue's
/// functions crowd the accumulators (functionsCrowdAccumulators: a 64 x 256 warpgroup tile,
/// BN / 2 a thread) takes the staged form: the raw accumulators staged (the f32 staging
/// tile is the same), the statements run on its row-major chunks as they are stored.
/// Applied to the fragments, ptxas spilled 8-48 bytes at 255 registers (exp, tanh,
/// sigmoid, gelu + silu, with a row bias or none); with 64 accumulators (BN = 128) nothing.
GemmAnalysis stagedFormOf(const GemmAnalysis &g, const EpilogueEmitter &epilogue,
                          const SplitForm *split) {
  if (split || g.stagedEpilogue || gemmStoreSpec(g).outBytes != 4 ||
      !functionsCrowdAccumulators(epilogue, g.tileN / 2) ||
      persistentPasses(g, epilogueInPasses(g, epilogue)) > 0)
    return g;
  GemmAnalysis form = g;
  form.stagedEpilogue = true;
  return form;
}

/// One operand's shared tile and its wgmma descriptor.
struct OperandTile {
  const GemmOperand *op;
  bool isA;
  std::string mnSize, mnOrigin, mnTile; // "size_m", "m0", "BM"
  int64_t mnExtent;                     // BM or BN
  std::string kExtent = "size_k";       // "k_len" in a split-K slice
  bool kMajor() const { return op->kContiguous; }
};

/// A GEMM operand's k-tile copy into its 128-byte-swizzled stage. K-major: one
/// loader, rows along M/N. MN-major: one loader per 64-wide block of M/N, rows
/// along K, blocks BK * 128 bytes apart.
/// The element path's chunks in flight a consumer thread. Measured (H200, bf16 4096 x 4096 x
/// 4097, the 128 x 256 persistent kernel): 1 (a chunk at a time) 1.64 ms, 2 1.06, 4 0.79;
/// cuBLAS 1.05.
constexpr int64_t kWgmmaElementChunksInFlight = 4;

class OperandLoader : public TileLoader {
public:
  OperandLoader(OperandTile t, const WgmmaBlock &block) : t(t), threads(block.threads()) {}

  void emitLoad(CudaWriter &w) const override {
    MatrixTileLoader::Spec s;
    s.label = t.op->param->name;
    s.base = t.isA ? "a_src" : "b_src";
    s.threads = threads;
    s.chunksInFlight = kWgmmaElementChunksInFlight;
    if (t.kMajor()) {
      s.rows = t.mnSize, s.cols = t.kExtent, s.ld = "size_k";
      s.rowOrigin = t.mnOrigin, s.colOrigin = "(int64_t)kt * BK";
      s.smem = wgmmaSwizzle128(t.mnExtent);
      MatrixTileLoader(s).emitLoad(w);
      return;
    }
    s.rows = t.kExtent, s.cols = t.mnSize, s.ld = t.mnSize;
    s.rowOrigin = "(int64_t)kt * BK";
    s.smem = wgmmaSwizzle128(kTileK);
    for (int64_t j = 0; j < t.mnExtent / 64; ++j) {
      w.line("{");
      w.indentMore();
      w.comment(t.mnTile + " columns " + str(64 * j) + " .. " + str(64 * j + 63) + ": swizzle block " +
                str(j));
      w.line("const uint32_t block_dst = dst + " + str(j * kTileK * 128) + ";");
      w.line("{");
      w.indentMore();
      w.line("const uint32_t dst = block_dst;");
      s.colOrigin = t.mnOrigin + " + " + str(64 * j);
      MatrixTileLoader(s).emitLoad(w);
      w.close();
      w.close();
    }
  }

private:
  OperandTile t;
  int64_t threads;
};

class WgmmaWriter {
public:
  WgmmaWriter(const GemmAnalysis &given, const EpilogueEmitter &epilogue, CudaWriter &w,
              const SplitForm *split = nullptr)
      : g(stagedFormOf(registerFormOf(given, epilogue, split), epilogue, split)),
        epilogue(epilogue), w(w), block(blockOf(g)),
        split(split), folded(epilogue, false) {
    passes = split ? 0 : persistentPasses(g, epilogueInPasses(g, epilogue));
    block.producer = split ? usesTma(g) : passes > 0;
    folded = FoldedEpilogue(epilogue, persistent());
    wholeInRegisters = given.stagedEpilogue && !g.stagedEpilogue && !persistent();
  }

  void run() {
    GemmLaunch launch = writeKernelAndComment();
    w.line();
    emitGemmHost(w, g, &launch);
    w.line();
  }

  /// The header comment, includes and kernel; how the host function launches it.
  GemmLaunch writeKernelAndComment() {
    writeHeaderComment();
    w.line("#include \"sketch/wgmma.cuh\"");
    if (usesTma(g))
      w.line("#include \"sketch/tma.cuh\"  // tensor-map (TMA) loads and mbarriers");
    if (split)
      w.line("#include \"sketch/split.cuh\"  // the split-K reduction over a cluster");
    if (splitsTail())
      w.line("#include \"sketch/split.cuh\"  // the split tail's reduction over a cluster");
    w.line();
    writeKernel();
    GemmLaunch launch{kernelName(), block.launchThreads(), smemBytes(), tensorMaps(),
                      persistent(), /*waitsOnGrid=*/true};
    launch.splitTail = splitsTail();
    return launch;
  }

  /// The kernel's form (tiles, warpgroups, stages, loads) and its shared memory, as the
  /// header comment and --emit=sketch state them.
  std::string planText() const {
    std::string plan = "tile " + str(g.tileM) + " x " + str(g.tileN) + " x " + str(kTileK) +
                       ", " + str(g.tileM / 64) + " warpgroup(s) of 64 x " + str(g.tileN) +
                       " (wgmma m64n" + str(g.tileN) + "k16), " + str(block.stages) + " stages (" +
                       (usesTma(g) ? "TMA; element loads on the element path" : "cp.async") +
                       ", one wgmma group in flight)";
    if (block.producer)
      plan = std::string(persistent() ? "persistent, " : "") +
             "warp-specialized: a TMA producer warpgroup, " + str(g.tileM / 64) +
             " consumer warpgroup(s) of 64 x " + str(g.tileN) + " (wgmma m64n" + str(g.tileN) +
             "k16), tile " + str(g.tileM) + " x " + str(g.tileN) + " x " + str(kTileK) + ", " +
             str(block.stages) + " stages (element loads on the element path)" +
             (splitsTail() ? "; its tail split along K over clusters" : "");
    return plan;
  }
  std::string memoryText() const {
    return "shared memory " + str(smemBytes()) +
           " bytes: operand tiles 128-byte swizzled (planned here), then the " +
           (split ? "f32 partial tile" : "staging tile") +
           (usesTma(g) ? ", then the TMA mbarriers" : "");
  }
  int64_t smemBytes() const { return smemBytesOf(g, passes); }

private:
  const GemmAnalysis g; // registerFormOf's, then stagedFormOf's
  const EpilogueEmitter &epilogue;
  CudaWriter &w;
  WgmmaBlock block;
  const SplitForm *split;
  /// The persistent kernel's staging passes (persistentPasses; 0: not persistent).
  int64_t passes = 0;
  /// The one-tile register form of a whole-tensor epilogue: its operands' words loaded
  /// before the main loop (registerFormOf).
  bool wholeInRegisters = false;
  /// The epilogue's leading additive terms folded into the accumulators' start: in the
  /// persistent kernel (not in the split form, whose slices each hold a partial sum).
  FoldedEpilogue folded;

  void writeAccumulatorStart() {
    folded.emitStart(w, gemmStoreSpec(g), [&] { emitWgmmaZeroAccumulators(w); });
  }

  /// How an operand's stage tile is laid out, for the shared-memory comment.
  static std::string describeTile(const OperandTile &t) {
    return t.kMajor() ? " K-major: " + t.mnTile + " rows of BK, 128 bytes each"
                      : " MN-major: " + t.mnTile + " / 64 blocks of BK rows x 64, transposed in the instruction";
  }

  /// Persistent and warp-specialized (the TMA GEMM where its staging fits beside the stages;
  /// the split form on the TMA path is warp-specialized, one tile a block).
  bool persistent() const { return passes > 0; }
  /// Whether the persistent kernel splits its tail (emitSplitTailWholeTiles): one matrix
  /// (the host's split counts the tiles of one), loaded by TMA, and the f32 partial tile
  /// ends before the staging tile.
  bool splitsTail() const {
    return persistent() && g.batchDims.empty() && usesTma(g) &&
           splitTailPartialTile(block).endBytes() <= persistentStaging(g, passes).offset;
  }
  /// The persistent kernel's 16-byte path stores a register epilogue's tile by TMA.
  bool storesByTma() const { return persistent() && !g.stagedEpilogue && tmaSlots() > 0; }
  /// Each consumer warpgroup's staging slots for the TMA store (tmaStoreSlots).
  int64_t tmaSlots() const {
    return tmaStoreSlots(persistentStaging(g, passes), plan::elementBytes(g.out->type), g.tileM / 64);
  }
  std::string kernelName() const { return split ? splitKernelName(g) : g.sig.name + "_kernel"; }
  std::string kExtent() const { return split ? "k_len" : "size_k"; }
  /// The K coordinate of k-tile kt in the tensor maps (a split-K slice starts at k_first).
  std::string kCoord() const { return split ? "(k_first + kt) * BK" : "kt * BK"; }
  OperandTile tileA() const { return {&g.a, true, "size_m", "m0", "BM", g.tileM, kExtent()}; }
  OperandTile tileB() const { return {&g.b, false, "size_n", "n0", "BN", g.tileN, kExtent()}; }

  void writeHeaderComment() {
    std::string plan = planText(), memory = "  " + memoryText();
    if (split)
      emitGemmHeaderComment(w, g, epilogue,
                            {"  sm_90a split-K form: " + plan,
                             "  K split over the blocks of a cluster (" +
                                 (split->slices ? str(split->slices)
                                                : std::string("1 to 8, the host function's choice")) +
                                 "), partial tiles summed through distributed shared memory",
                             memory});
    else if (folded.folds())
      emitGemmHeaderComment(w, g, epilogue, {"  sm_90a: " + plan, "  " + folded.describe(), memory});
    else if (wholeInRegisters)
      emitGemmHeaderComment(w, g, epilogue,
                            {"  sm_90a: " + plan,
                             "  the epilogue's whole [M, N] operands: each thread's words loaded "
                             "before the main loop, in registers through it",
                             memory});
    else
      emitGemmHeaderComment(w, g, epilogue, {"  sm_90a: " + plan, memory});
  }

  /// The host's tensor maps: a K-major operand (rows along M or N, K contiguous) in
  /// boxes of 64 K-columns by the tile's rows; an MN-major one (stored K x M or K x N)
  /// in boxes of 64 columns by BK rows, one box a 64-column block.
  TensorMapArgs tensorMaps() const {
    TensorMapArgs maps;
    if (!usesTma(g))
      return maps;
    // the kernel's box coordinates are ints
    maps.encodes.push_back(g.sig.dim(g.m) + " < INT32_MAX && " + g.sig.dim(g.n) +
                           " < INT32_MAX && " + g.sig.dim(g.k) + " < INT32_MAX");
    for (const OperandTile &t : {tileA(), tileB()}) {
      std::string k = g.sig.dim(g.k), mn = g.sig.dim(t.isA ? g.m : g.n);
      std::string cols = t.kMajor() ? k : mn, rows = t.kMajor() ? mn : k;
      auto encode = [&](const std::string &name, const std::string &boxRows) {
        maps.names.push_back(name);
        std::string tensor = "&" + name + ", " + t.op->param->cname + ", " + cols + ", " + rows;
        if (g.batchDims.empty())
          maps.encodes.push_back("sketch::encode_tensor_map_2d(" + tensor + ", " + cols +
                                 " * 2, 64, " + boxRows + ", 2)");
        else
          maps.encodes.push_back("sketch::encode_tensor_map_3d(" + tensor + ", batch, " + cols +
                                 " * 2, " + cols + " * " + rows + " * 2, 64, " + boxRows + ", 2)");
      };
      encode(mapName(t), t.kMajor() ? str(t.mnExtent) : str(kTileK));
      if (t.kMajor())
        encode(tailMapName(t), "sketch::tma_tail_box_rows(" + mn + ", " + str(t.mnExtent) + ")");
    }
    if (storesByTma()) {
      maps.names.push_back("d_map");
      maps.storeEncode = outputMapEncode();
    }
    return maps;
  }

  /// The output's map for the TMA store: boxes of 128 bytes by a warpgroup's rows.
  std::string outputMapEncode() const {
    int64_t outBytes = plan::elementBytes(g.out->type);
    std::string m = g.sig.dim(g.m), n = g.sig.dim(g.n), ob = str(outBytes);
    std::string tensor = "&d_map, " + g.out->cname + ", " + n + ", " + m;
    std::string box = str(128 / outBytes) + ", " + str(kTmaStoreBoxRows) + ", " + ob;
    if (g.batchDims.empty())
      return "sketch::encode_tensor_map_2d(" + tensor + ", " + n + " * " + ob + ", " + box + ")";
    return "sketch::encode_tensor_map_3d(" + tensor + ", batch, " + n + " * " + ob + ", " + n + " * " +
           m + " * " + ob + ", " + box + ")";
  }

  static std::string mapName(const OperandTile &t) { return t.isA ? "a_map" : "b_map"; }
  /// A K-major operand's map for its last tile along M (N): boxes of the rows left there,
  /// rounded up to 8 (sketch::tma_box_rows: the copy engine's zero fill past the matrix is
  /// slow; the tile's other rows in the stage are never written and reach no stored element).
  static std::string tailMapName(const OperandTile &t) {
    return t.isA ? "a_tail_map" : "b_tail_map";
  }
  /// Whether the tile at `t.mnOrigin` is the last along M (N), which overhangs the matrix.
  static std::string overhangs(const OperandTile &t) {
    return t.mnOrigin + " + " + t.mnTile + " > " + t.mnSize;
  }

  /// The bytes one stage's boxes bring (its full mbarrier's transaction count): a K-major
  /// operand's box has the rows its tile has inside the matrix, rounded up to 8 (the tail
  /// map's on the last tile).
  std::string stageTxBytes() const {
    auto bytes = [](const OperandTile &t, StringRef stageBytes) {
      return t.kMajor() ? "sketch::tma_box_rows(" + t.mnSize + " - " + t.mnOrigin + ", " +
                              t.mnTile + ") * BK * 2"
                        : stageBytes.str();
    };
    return "(uint32_t)(" + bytes(tileA(), "A_STAGE_BYTES") + " + " +
           bytes(tileB(), "B_STAGE_BYTES") + ")";
  }

  /// Thread 0's requests for k-tile `kt`'s boxes of operand `t` into `dst`, completing
  /// on the mbarrier `full`.
  void writeTmaLoad(const OperandTile &t, StringRef dst) {
    std::string map = t.kMajor() ? overhangs(t) + " ? &" + tailMapName(t) + " : &" + mapName(t)
                                 : "&" + mapName(t);
    bool batched = !g.batchDims.empty();
    auto load = [&](const std::string &to, const std::string &x, const std::string &y) {
      w.line(std::string("sketch::tma_load_") + (batched ? "3d(" : "2d(") + to + ", " + map + ", " +
             x + ", " + y + (batched ? ", (int)blockIdx.z" : "") + ", full);");
    };
    if (t.kMajor()) {
      load(dst.str(), kCoord(), "(int)" + t.mnOrigin);
      return;
    }
    for (int64_t j = 0; j < t.mnExtent / 64; ++j) {
      auto plus = [&](int64_t offset) { return j == 0 ? std::string() : " + " + str(offset); };
      load(dst.str() + plus(j * kTileK * 128), "(int)" + t.mnOrigin + plus(64 * j), kCoord());
    }
  }

  void writeMainloop() {
    OperandTile a = tileA(), b = tileB();
    emitWgmmaBuffers(w, block, describeTile(a), describeTile(b), kExtent());
    if (usesTma(g)) {
      w.open("if constexpr (kVec)");
      writeTmaLoop(a, b);
      w.close();
      w.open("else");
      writeCpAsyncLoop(a, b);
      w.close();
    } else {
      writeCpAsyncLoop(a, b);
    }
    emitWgmmaDrain(w);
  }

  void writeCpAsyncLoop(const OperandTile &a, const OperandTile &b) {
    emitWgmmaCpAsyncLoop(w, block, OperandLoader(a, block),
                         OperandLoader(b, block));
  }

  void writeTmaLoop(const OperandTile &a, const OperandTile &b) {
    emitWgmmaTmaLoop(w, block, barriersOffset(g, 0), [&] {
      writeTmaLoad(a, "a_smem + (kt % STAGES) * A_STAGE_BYTES");
      writeTmaLoad(b, "b_smem + (kt % STAGES) * B_STAGE_BYTES");
    }, stageTxBytes());
  }

  void writeStageBarriers(StringRef syncComment) {
    emitWgmmaStageBarriers(w, barriersOffset(g, passes), syncComment);
  }

  /// The producer's requests for k-tile `step` of the stage ring.
  void writeProducerStep(const OperandTile &a, const OperandTile &b, StringRef step) {
    std::string k = step.str();
    emitWgmmaProducerStep(w, k, [&] {
      writeTmaLoad(a, "a_smem + (" + k + " % STAGES) * A_STAGE_BYTES");
      writeTmaLoad(b, "b_smem + (" + k + " % STAGES) * B_STAGE_BYTES");
    }, stageTxBytes());
  }

  void writeConsumerStep(StringRef step) { emitWgmmaTmaConsumerStep(w, block, step); }

  /// The split form's main loop, warp-specialized (one tile a block): warpgroup 0's
  /// thread 0 asks for the slice's k-tiles by TMA, a stage as soon as the consumers have
  /// freed it, then the producer joins the reduction's barriers and leaves; the consumer
  /// warpgroups run wgmma on each landed stage (the element path: their own cp.async
  /// pipeline on named barrier 1). The producer gives its registers to the consumers, as
  /// in the persistent kernel: at the launch's 168 a thread, the element path of the
  /// 128 x 128 split form spilled 4 bytes (test/Split/split-registers.test).
  void writeSpecializedMainloop(const SplitSlices &slices) {
    OperandTile a = tileA(), b = tileB();
    emitWgmmaBuffers(w, block, describeTile(a), describeTile(b), kExtent());
    writeStageBarriers("");
    w.open("if (threadIdx.x < 128)");
    w.comment("producer warpgroup: one thread asks for the slice's k-tiles by TMA, a stage as soon");
    w.comment("as the consumers have freed it (its empty barrier)");
    emitProducerRegisters(w);
    w.open("if (kVec && threadIdx.x == 0)");
    w.open("for (int kt = 0; kt < k_tiles; ++kt)");
    writeProducerStep(a, b, "kt");
    w.close();
    w.close();
    emitSplitReduceBarriers(w, slices);
    w.line("return;");
    w.close();
    w.comment("consumer warpgroups: wgmma on each landed stage");
    emitConsumerRegisters(w, block);
    w.open("if constexpr (kVec)");
    w.open("for (int kt = 0; kt < k_tiles; ++kt)");
    writeConsumerStep("kt");
    w.close();
    w.close();
    w.open("else");
    w.comment("element path: the consumers load the tiles themselves");
    emitWgmmaCpAsyncLoop(w, block, OperandLoader(a, block), OperandLoader(b, block),
                         kWgmmaConsumerBarrier);
    w.close();
    emitWgmmaDrain(w);
  }

  /// The tile rows of the persistent kernel's raster groups: 8, and 8 x BN / BM for
  /// tiles wider than tall. Same-run A/B (H100 and H200, 4096^3 and 8192^3): 128 x 256
  /// tiles 1-3% faster in groups of 16 rows than of 8, 128 x 128 tiles 4-6% slower at
  /// 8192^3 in groups of 11 than of 8 (docs/backend.md).
  static int64_t rasterRows(const WgmmaBlock &block) {
    return 8 * std::max<int64_t>(1, block.tileN / block.tileM);
  }

  /// The persistent, warp-specialized kernel: warpgroup 0 produces, warpgroups 1 ..
  /// consume; both walk the same tiles (blockIdx.x, + gridDim.x, ...) and the same
  /// k-tile sequence `k_step` through the stage ring, so the producer runs up to STAGES
  /// k-tiles ahead, across tile boundaries: the next tile's loads overlap this one's
  /// epilogue, whose staging tile lies past the stages.
  void writePersistentBody() {
    OperandTile a = tileA(), b = tileB();
    emitGemmSizes(w, g);
    emitBatchIndices(w, g.sig, g.batchDims);
    emitGemmOperandPointers(w, g);
    emitWgmmaBuffers(w, block, describeTile(a), describeTile(b));
    w.line("const int tile_count = (int)(sketch::ceil_div(size_m, BM) * sketch::ceil_div(size_n, BN));"
           "  // output tiles of a batch");
    writeStageBarriers("  // the last barrier the producer joins");
    w.comment("tiles: this block's are blockIdx.x, blockIdx.x + gridDim.x, ... (persistent), each");
    w.comment("in the rasterized order below; `k_step` counts the k-tiles of all of them: stage");
    w.comment("k_step % STAGES, phase (k_step / STAGES) & 1");
    writeProducer(a, b);
    writeConsumers(a, b);
  }

  void writeProducer(const OperandTile &a, const OperandTile &b) {
    auto loadTile = [&](StringRef tile, StringRef first, StringRef end) {
      emitGemmTileOrigin(w, tile, str(rasterRows(block)));
      w.open(("for (int kt = " + first + "; kt < " + end + "; ++kt, ++k_step)").str());
      writeProducerStep(a, b, "k_step");
      w.close();
    };
    emitPersistentProducer(w, "kVec && threadIdx.x == 0", wholeTiles(),
                           splitsTail() ? std::optional<StringRef>(kTailSplitWhen) : std::nullopt,
                           loadTile);
  }

  /// The split tail's launch condition in the kernel: only the 16-byte (TMA) path splits.
  static constexpr const char *kTailSplitWhen = "kVec && sketch::cluster_size() > 1";
  StringRef wholeTiles() const { return splitsTail() ? "whole_tiles" : "tile_count"; }

  /// The consumers' K slice of the split tile (the 16-byte path's: emitSplitTailConsumer).
  void writeSplitTailConsumer() {
    w.open("if constexpr (kVec)");
    emitSplitTailConsumer(
        w, block, epilogue, gemmStoreSpec(g),
        [&] { emitGemmTileOrigin(w, "split_tile", str(rasterRows(block))); }, [] {});
    w.close();
  }

  void writeConsumers(const OperandTile &a, const OperandTile &b) {
    w.comment("consumer warpgroups: wgmma on each landed stage, then the tile's epilogue (their");
    w.comment("block barrier is named barrier 1, without the producer)");
    emitConsumerRegisters(w, block);
    if (splitsTail())
      emitSplitTailWholeTiles(w, kTailSplitWhen);
    w.line("int k_step = 0;");
    w.open(("for (int tile = blockIdx.x; tile < " + wholeTiles() + "; tile += gridDim.x)").str());
    emitGemmTileOrigin(w, "tile", str(rasterRows(block)));
    writeAccumulatorStart();
    w.open("if constexpr (kVec)");
    emitWgmmaConsumerTile(w, block);
    w.close();
    w.open("else");
    w.comment("element path: the consumers load the tiles themselves (the producer has left)");
    emitWgmmaCpAsyncLoop(w, block, OperandLoader(a, block), OperandLoader(b, block),
                         kWgmmaConsumerBarrier);
    emitWgmmaDrain(w);
    w.close();
    StoreSpec store = gemmStoreSpec(g);
    store.staging = persistentStaging(g, passes);
    store.rowPasses = passes;
    store.barrier = kWgmmaConsumerBarrier;
    if (storesByTma()) {
      store.tmaMap = "d_map";
      store.tmaStaging = "b_smem + STAGES * B_STAGE_BYTES";
      store.tmaSlots = tmaSlots();
      if (!g.batchDims.empty())
        store.tmaBatch = "(int)blockIdx.z";
    }
    emitAccumulatorStore(w, block.storeConfig(), folded.rest(), store);
    w.close();
    if (splitsTail())
      writeSplitTailConsumer();
    if (storesByTma())
      emitTmaStoreDrain(w, store.storeVec, /*warpgroupSlots=*/true);
  }

  void writeKernel() {
    auto restrictPtr = [&](const ParamInfo &p) {
      return p.name == g.a.param->name || p.name == g.b.param->name;
    };
    w.line(std::string(kGemmTemplate));
    std::string params = kernelParameterList(g.sig, restrictPtr);
    for (const std::string &map : tensorMaps().names)
      params += ", const __grid_constant__ CUtensorMap " + map;
    w.line("__global__ void __launch_bounds__(" + str(block.launchThreads()) + ", 1) " +
           kernelName() + "(" + params + ") {");
    w.indentMore();
    w.line("extern __shared__ __align__(128) unsigned char smem[];  // tiles aligned below");
    emitGridDependencyWait(w);
    emitWgmmaPreamble(w, block);
    if (persistent()) {
      writePersistentBody();
    } else if (!split) {
      emitGemmBlockCoordinates(w, g);
      emitGemmOperandPointers(w, g);
      StoreSpec store = gemmStoreSpec(g);
      store.wholeInRegisters = wholeInRegisters;
      if (wholeInRegisters)
        emitWholeOperandPreloads(w, epilogue, store);
      writeMainloop();
      emitAccumulatorStore(w, block.storeConfig(), epilogue, store);
    } else {
      w.line("const int slices = (int)sketch::cluster_size(), slice = (int)sketch::cluster_rank();"
             "  // K slices: the blocks of this block's cluster");
      emitGemmBlockCoordinates(w, g, "(int)blockIdx.x / slices");
      emitGemmOperandPointers(w, g);
      emitSplitKWindow(w, g, "slices", "slice");
      if (usesTma(g)) // kCoord's
        w.line("const int k_first = (int)(k0 / BK);  // the slice's first k-tile (tensor-map coordinates)");
      SplitSlices slices = clusterSlices();
      if (block.producer)
        writeSpecializedMainloop(slices);
      else
        writeMainloop();
      emitSplitReduceStore(w, block.storeConfig(), epilogue, gemmStoreSpec(g), slices);
    }
    w.indentLess();
    w.line("}");
  }

};

} // namespace

bool wgmmaSupports(const GemmAnalysis &g) {
  if (g.operandType != ElementType::f16 && g.operandType != ElementType::bf16)
    return false;
  if (!plan::wgmmaTileShape(g.tileM, g.tileN, g.b.kContiguous))
    return false;
  if (g.staging.rows != g.tileM || g.staging.cols != g.tileN)
    return false;
  return smemBytesOf(g) <= plan::smemLimitBytes("sm_90a");
}

void emitWgmmaGemm(const GemmAnalysis &g, const EpilogueEmitter &epilogue, CudaWriter &w) {
  WgmmaWriter(g, epilogue, w).run();
}

WgmmaDescription describeWgmmaGemm(const GemmAnalysis &g, const EpilogueEmitter &epilogue) {
  DiscardingCudaWriter w;
  WgmmaWriter writer(g, epilogue, w);
  return {writer.planText(), writer.memoryText(), writer.smemBytes()};
}

GemmLaunch emitWgmmaGemmKernel(const GemmAnalysis &g, const EpilogueEmitter &epilogue,
                               CudaWriter &w, const SplitForm *split) {
  return WgmmaWriter(g, epilogue, w, split).writeKernelAndComment();
}

} // namespace sketch
