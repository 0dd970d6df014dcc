//===- EmitGemm.cpp - the tensor-core GEMM kernel and its host function ---===//
//
// D[batch..., M, N] = epilogue(A[batch..., M, K] · B[batch..., K, N]) with
// f16/bf16 operands and f32 accumulation: one block per (BM, BN) output tile
// (blocks ordered in groups of 8 tile rows for L2 reuse) and per batch index
// (blockIdx.z), warps of (BM / WARPS_M, BN / WARPS_N) mma.sync tiles, the
// k-loop pipelined as sketch-pipeline planned, the epilogue fused as
// sketch-fuse-epilogue planned. Three instantiations (kGemmTemplate): <true> when
// every row is whole 16-byte chunks on aligned bases (cp.async, 16-byte stores),
// <true, false> when the operands' are and the output's are not (an odd N: 16-byte
// loads, element stores), <false> otherwise (element loads and stores; any size).
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/EmitGemm.h"

#include "lib/Emit/EmitHost.h"
#include "lib/Emit/KernelEmitters.h"
#include "lib/Emit/TensorCoreGemm.h"
#include "lib/Emit/WgmmaGemm.h"

#include <algorithm>

using namespace mlir;

namespace sketch {

namespace {

std::string batchVar(int64_t position) { return "bidx" + str(position); }

} // namespace

std::string batchOffset(const KernelSignature &sig, const ParamInfo &param,
                        ArrayRef<int64_t> positions) {
  std::string pointer = param.cname;
  for (size_t i = 0; i < positions.size(); ++i) {
    std::vector<std::string> after(param.dims.begin() + i + 1, param.dims.end());
    pointer += " + " + batchVar(positions[i]) + " * (" + sig.product(after) + ")";
  }
  return pointer;
}

std::string gemmDimsOf(const ParamInfo &param) {
  return param.name + "[" + joined(param.dims) + "]";
}

void emitGemmHeaderComment(CudaWriter &w, const GemmAnalysis &g, const EpilogueEmitter &epilogue,
                           llvm::ArrayRef<std::string> plan) {
  std::string a = gemmDimsOf(*g.a.param) + (g.a.kContiguous ? "" : "^T");
  std::string b = gemmDimsOf(*g.b.param) + (g.b.kContiguous ? "^T" : "");
  w.comment("kernel " + g.sig.name + ": " + gemmDimsOf(*g.out) + " = epilogue(" + a + " * " + b +
            "), " + cTypeOf(g.operandType) + " operands, f32 accumulators");
  std::vector<std::string> described = epilogue.describe();
  for (size_t i = 0; i < plan.size(); ++i)
    w.comment(plan[i] + (i + 1 < plan.size() ? ""
                                              : std::string("; epilogue:") +
                                                    (described.empty() ? " none" : "")));
  for (const std::string &line : described)
    w.comment("    " + line);
}

void emitGemmSizes(CudaWriter &w, const GemmAnalysis &g) {
  w.line("const int64_t size_m = " + g.sig.dim(g.m) + ", size_n = " + g.sig.dim(g.n) +
         ", size_k = " + g.sig.dim(g.k) + ";");
}

void emitGemmTileOrigin(CudaWriter &w, StringRef block, StringRef groupRows) {
  w.comment(("block -> output tile: groups of " + groupRows +
             " tile rows, column by column inside a group (L2 reuse)")
                .str());
  w.line("const int tiles_m = (int)sketch::ceil_div(size_m, BM), tiles_n = "
         "(int)sketch::ceil_div(size_n, BN);");
  std::string b = block.str(), g = groupRows.str();
  w.line("const int group = " + g + " * tiles_n, first = " + b + " / group * " + g + ";");
  w.line("const int rows = min(tiles_m - first, " + g + ");");
  w.line("const int tile_m = first + " + b + " % group % rows, tile_n = " + b + " % group / rows;");
  w.line("const int64_t m0 = (int64_t)tile_m * BM, n0 = (int64_t)tile_n * BN;");
}

void emitBatchIndices(CudaWriter &w, const KernelSignature &sig, ArrayRef<std::string> batchDims) {
  if (batchDims.empty())
    return;
  w.comment("batch: blockIdx.z runs over (" + joined(batchDims) + ")");
  w.line("int64_t z = blockIdx.z;");
  for (int64_t i = static_cast<int64_t>(batchDims.size()) - 1; i > 0; --i)
    w.line("const int64_t " + batchVar(i) + " = z % " + sig.dim(batchDims[i]) + "; z /= " +
           sig.dim(batchDims[i]) + ";");
  w.line("const int64_t " + batchVar(0) + " = z;");
}

void emitGemmBlockCoordinates(CudaWriter &w, const GemmAnalysis &g, StringRef block) {
  emitGemmSizes(w, g);
  emitGemmTileOrigin(w, block);
  emitBatchIndices(w, g.sig, g.batchDims);
}

void emitGemmOperandPointers(CudaWriter &w, const GemmAnalysis &g) {
  // the output's leading dims are the batch, in order
  auto outPositions = llvm::to_vector(llvm::seq<int64_t>(0, g.batchDims.size()));
  std::string ct = cTypeOf(g.operandType);
  w.line("const " + ct + " *a_src = " + batchOffset(g.sig, *g.a.param, g.a.batchPositions) + ";");
  w.line("const " + ct + " *b_src = " + batchOffset(g.sig, *g.b.param, g.b.batchPositions) + ";");
  w.line(cTypeOf(g.out->type) + " *d_dst = " + batchOffset(g.sig, *g.out, outPositions) + ";");
}

StoreSpec gemmStoreSpec(const GemmAnalysis &g) {
  StoreSpec s;
  s.outType = cTypeOf(g.out->type);
  s.dst = "d_dst";
  s.rows = "size_m";
  s.cols = "size_n";
  s.ld = "size_n";
  s.m0 = "m0";
  s.n0 = "n0";
  for (size_t i = 0; i < g.batchDims.size(); ++i)
    s.batch.push_back(batchVar(i));
  s.staging = g.staging;
  s.outBytes = plan::elementBytes(g.out->type);
  s.stagedEpilogue = g.stagedEpilogue;
  s.storeVec = "kVecStore";
  return s;
}

namespace {

/// The C++ expression of a matrix parameter's row length (its last dim).
std::string rowOf(const GemmAnalysis &g, const ParamInfo &p) { return g.sig.dim(p.dims.back()); }

/// The 16-byte loads' conditions: the operands' rows of whole chunks on 16-byte aligned
/// bases, shorter than 2^24 elements (32-bit steps between the rows one thread copies).
std::string operandVecCondition(const GemmAnalysis &g) {
  std::vector<std::string> terms;
  auto add = [&](const std::string &term) {
    if (!llvm::is_contained(terms, term))
      terms.push_back(term);
  };
  for (const ParamInfo *p : {g.a.param, g.b.param})
    add(rowOf(g, *p) + " % 8 == 0");
  for (const ParamInfo *p : {g.a.param, g.b.param})
    add(rowOf(g, *p) + " < (1 << 24)");
  for (const ParamInfo *p : {g.a.param, g.b.param})
    add("sketch::aligned_to(" + p->cname + ", 16)");
  return joined(terms, " && ");
}

/// The 16-byte stores' conditions beside those: the output's rows of whole chunks on a
/// 16-byte aligned base.
std::string storeVecCondition(const GemmAnalysis &g) {
  int64_t outChunk = 16 / plan::elementBytes(g.out->type);
  return rowOf(g, *g.out) + " % " + str(outChunk) + " == 0 && sketch::aligned_to(" +
         g.out->cname + ", 16)";
}

} // namespace

namespace {

/// The sizes and the number of output tiles at `g`'s tile.
void emitGemmTiles(CudaWriter &w, const GemmAnalysis &g) {
  w.line("const int64_t size_m = " + g.sig.dim(g.m) + ", size_n = " + g.sig.dim(g.n) + ";");
  w.line("const int64_t batch = " + g.sig.product(g.batchDims) + ";");
  w.line("const int64_t tiles = sketch::ceil_div(size_m, " + str(g.tileM) +
         ") * sketch::ceil_div(size_n, " + str(g.tileN) + ");");
}

/// From the 16-byte path's choice to the launch: `blocks` along x, in clusters of
/// `slices` blocks when `cluster`. A kernel that waits on the previous grid
/// (GemmLaunch::waitsOnGrid) is launched as a programmatic dependent where `oneWave`, an
/// expression, holds: the grid is one wave of blocks of one tile each.
void emitGemmLaunch(CudaWriter &w, const GemmAnalysis &g, const GemmLaunch &launch,
                    const std::string &blocks, bool cluster, const std::string &oneWave) {
  w.line("const bool vec = " + operandVecCondition(g) + ";");
  w.line("const bool vec_store = vec && " + storeVecCondition(g) + ";");
  std::string args = kernelArgumentList(g.sig);
  const TensorMapArgs &maps = launch.maps;
  std::string vecStore = "vec_store";
  if (!maps.names.empty()) {
    w.comment("the 16-byte path loads by TMA: its tensor maps (the element path ignores them)");
    w.line("CUtensorMap " + joined(maps.names, "{}, ") + "{};");
    w.line("const bool maps = vec &&");
    for (size_t i = 0; i < maps.encodes.size(); ++i)
      w.line("    " + maps.encodes[i] + (i + 1 < maps.encodes.size() ? " &&" : ";"));
    if (!maps.storeEncode.empty()) {
      w.line("const bool store_map = maps && vec_store && " + maps.storeEncode + ";");
      vecStore = "store_map";
    }
    args += ", " + joined(maps.names, ", ");
  }
  std::string vec = maps.names.empty() ? "vec" : "maps";
  w.comment("<true, false>: 16-byte loads, element stores (rows of the output not whole chunks)");
  w.line("auto kernel = !" + vec + " ? " + launch.kernel + "<false> : " + vecStore + " ? " +
         launch.kernel + "<true> : " + launch.kernel + "<true, false>;");
  w.line("const int smem_bytes = " + str(launch.smemBytes) + ";  // dynamic; above 48 KB by opt-in");
  w.line("cudaError_t err = sketch::allow_dynamic_smem(kernel, smem_bytes);");
  w.line("if (err != cudaSuccess) return err;");
  std::string grid = "dim3(" + blocks + ", 1, (unsigned)batch)";
  if (launch.waitsOnGrid) {
    w.comment("one wave of one-tile blocks: a programmatic dependent launch, its preamble");
    w.comment("overlapping the previous kernel's end (docs/backend.md)");
    w.line("const bool dependent = " + oneWave + ";");
  }
  if (cluster || launch.waitsOnGrid) {
    w.line("return sketch::launch_kernel(kernel, " + grid + ", " + str(launch.threads) +
           ", smem_bytes, " + (cluster ? "slices" : "1") + ", " +
           (launch.waitsOnGrid ? "dependent" : "false") + ", stream, " + args + ");");
    return;
  }
  w.line("kernel<<<" + grid + ", " + str(launch.threads) + ", smem_bytes, stream>>>(" + args + ");");
  w.line("return cudaGetLastError();");
}

std::string splitLauncherName(const GemmAnalysis &g) { return g.sig.name + "_splitk_launch"; }
/// A kernel of its own beside the split form (SplitForm::narrow, ::waveTiles): NAME_narrow_launch.
std::string tileLauncherName(const GemmAnalysis &kernel) { return kernel.sig.name + "_launch"; }
/// The host function's call of that launch, with `g`'s arguments.
std::string tileLaunchCall(const GemmAnalysis &kernel, const GemmAnalysis &g) {
  return tileLauncherName(kernel) + "(" + kernelArgumentList(g.sig) + ", stream)";
}

/// K's k-tiles of the wgmma split forms and split tails, a C++ expression.
std::string kTilesOf(const GemmAnalysis &g) {
  return "sketch::ceil_div(" + g.sig.dim(g.k) + ", " + str(kWgmmaTileK) + ")";
}

/// NAME_tail_split: a persistent kernel's split tail on the current device.
std::string tailSplitName(const GemmAnalysis &g) { return g.sig.name + "_tail_split"; }

/// Whether `launch` is persistent with a split tail (a NAME_tail_split function of its own).
bool hasSplitTail(const GemmLaunch &launch) { return launch.persistent && launch.splitTail; }

/// NAME_tail_split(tiles, k_tiles), a static function: sketch::tail_split with the blocks
/// of `launch`'s kernel resident in each cluster size, cached a device.
void emitTailSplitFunction(CudaWriter &w, const GemmAnalysis &g, const GemmLaunch &launch) {
  w.comment("the split tail of " + str(g.tileM) + " x " + str(g.tileN) +
            " tiles on the current device: its slices and grid");
  w.open("static sketch::TailSplit " + tailSplitName(g) + "(int64_t tiles, int64_t k_tiles)");
  emitTailSplitRule(w, "tiles", "k_tiles", launch.kernel + "<true>", launch.threads,
                    str(launch.smemBytes));
  w.line("return split;");
  w.close();
  w.line();
}

/// The declaration of `split`, the split tail of `g`'s own tiles of `kTiles` k-tiles.
void declareOwnTailSplit(CudaWriter &w, const GemmAnalysis &g, const std::string &kTiles) {
  w.line("const sketch::TailSplit split = " + tailSplitName(g) + "(tiles, " + kTiles + ");");
}

/// The persistent kernel of one matrix with its split tail (sketch::tail_split): at most
/// one block an SM, in clusters of 2 to 8 blocks where sharing the tiles past the last
/// whole round along K ends sooner (docs/backend.md). `splitDeclared`: the host function
/// has declared `split` already (emitPersistentTileChoice).
void emitSplitTailLaunch(CudaWriter &w, const GemmAnalysis &g, const GemmLaunch &launch,
                         bool splitDeclared) {
  w.comment("persistent: one block an SM at most, each looping over tiles; the tiles past the");
  w.comment("last whole round split along K over clusters of 2 to 8 blocks where that ends sooner");
  if (!splitDeclared)
    declareOwnTailSplit(w, g, kTilesOf(g));
  w.line("const int slices = (int)split.slices;");
  w.line("const int64_t blocks = split.grid;");
  emitGemmLaunch(w, g, launch, "(unsigned)blocks", /*cluster=*/true, "tiles <= blocks");
}

/// The launch of a kernel without slices: persistent (at most one block an SM, shared
/// by the batch, each looping over tiles) or one block a tile.
void emitTileLaunch(CudaWriter &w, const GemmAnalysis &g, const GemmLaunch &launch,
                    bool splitDeclared = false) {
  if (!launch.persistent) {
    emitGemmLaunch(w, g, launch, "(unsigned)tiles", /*cluster=*/false,
                   "tiles * batch <= sketch::sm_count()");
    return;
  }
  if (launch.splitTail) {
    emitSplitTailLaunch(w, g, launch, splitDeclared);
    return;
  }
  w.comment("persistent: one block an SM (shared by the batch) at most, each looping over tiles");
  w.line("const int64_t per_batch = sketch::sm_count() / batch;");
  w.line("const int64_t blocks = per_batch < 1 ? 1 : per_batch < tiles ? per_batch : tiles;");
  emitGemmLaunch(w, g, launch, "(unsigned)blocks", /*cluster=*/false, "tiles <= per_batch");
}

/// The launch of a kernel of its own beside the split form (SplitForm::narrow, ::waveTiles),
/// a static function the host calls.
void emitTileLauncher(CudaWriter &w, const GemmAnalysis &kernel, const GemmLaunch &launch,
                      const GemmAnalysis &g, StringRef what) {
  if (hasSplitTail(launch))
    emitTailSplitFunction(w, kernel, launch);
  w.comment(what.str() + " (" + str(kernel.tileM) + " x " + str(kernel.tileN) + ", " +
            str(kernel.stages) + " stages): no slices, no reduction");
  w.open("static cudaError_t " + tileLauncherName(kernel) + "(" + hostParameterList(g.sig) +
         ", cudaStream_t stream)");
  emitGemmTiles(w, kernel);
  w.line("if (tiles > INT32_MAX) return cudaErrorInvalidValue;");
  emitTileLaunch(w, kernel, launch);
  w.close();
  w.line();
}

/// The split form's launch, a static function the host function calls.
void emitSplitLauncher(CudaWriter &w, const GemmAnalysis &g, const SplitForm &split,
                       const GemmLaunch &launch) {
  w.comment("the split-K form: tiles of " + str(g.tileM) + " x " + str(g.tileN) + ", K split over " +
            (split.cluster ? "`slices` blocks of a cluster" : str(split.slices) + " warp groups a block"));
  w.open("static cudaError_t " + splitLauncherName(g) + "(" + hostParameterList(g.sig) +
         (split.cluster ? ", int slices" : "") + ", cudaStream_t stream)");
  emitGemmTiles(w, g);
  std::string blocks = split.cluster ? "tiles * slices" : "tiles";
  w.line("if (" + blocks + " > INT32_MAX || batch > 65535) return cudaErrorInvalidValue;");
  emitGemmLaunch(w, g, launch, "(unsigned)(" + blocks + ")", split.cluster,
                 blocks + " * batch <= sketch::sm_count()");
  w.close();
  w.line();
}

/// A tile's variable name: PREFIX_MxN.
std::string tileVariable(StringRef prefix, const GemmAnalysis &kernel) {
  return prefix.str() + "_" + str(kernel.tileM) + "x" + str(kernel.tileN);
}

/// One `if` for each of `others` that returns its launch where its value (a variable,
/// `valueOf`) is under `first` and the least of theirs; ties keep the earlier.
template <typename ValueOf, typename LaunchOf>
void emitLeastReturns(CudaWriter &w, StringRef first, ArrayRef<const GemmAnalysis *> others,
                      ValueOf valueOf, LaunchOf launchOf) {
  for (auto [i, kernel] : llvm::enumerate(others)) {
    std::string value = valueOf(*kernel), condition = value + " < " + first.str();
    for (auto [j, other] : llvm::enumerate(others))
      if (j != i)
        condition += " && " + value + (j < i ? " < " : " <= ") + valueOf(*other);
    w.line("if (" + condition + ")");
    w.line("  return " + launchOf(*kernel) + ";");
  }
}

/// Where the split form takes one slice: of the narrow kernel and the wave tiles' ones (those
/// of SplitRule::tallWaveRows where M is over it), the one whose waves move the fewest
/// operand rows, ceil(tiles / SMs) x (BM + BN) (SplitRule; ties keep the first, the narrow
/// kernel first).
template <typename LaunchOf>
void emitFewestWaveRows(CudaWriter &w, const GemmAnalysis &narrow, ArrayRef<GemmAnalysis> others,
                        LaunchOf launchOf) {
  w.comment("one slice: a kernel without the reduction, of these tiles the one whose waves");
  w.comment("move the fewest operand rows, ceil(tiles / SMs) x (BM + BN); ties keep the first");
  auto rowsOf = [](const GemmAnalysis &kernel) { return tileVariable("rows", kernel); };
  std::vector<const GemmAnalysis *> kernels = {&narrow};
  for (const GemmAnalysis &kernel : others)
    kernels.push_back(&kernel);
  for (const GemmAnalysis *kernel : kernels) {
    std::string rows = "sketch::wave_rows(size_m, size_n, batch, sms, " + str(kernel->tileM) +
                       ", " + str(kernel->tileN) + ")";
    bool tall = kernel->tileM == plan::SplitRule::tallWaveRows;
    if (tall)
      rows = "size_m > " + str(kernel->tileM) + " ? " + rows + " : INT64_MAX";
    w.line("const int64_t " + rowsOf(*kernel) + " = " + rows + ";" +
           (tall ? "  // not at one row tile" : ""));
  }
  emitLeastReturns(w, rowsOf(narrow), ArrayRef(kernels).drop_front(), rowsOf, launchOf);
  w.line("return " + launchOf(narrow) + ";");
}

/// `split_k auto` where the kernel's own grid covers the SMs (persistent, with its split
/// tail): of its tile and the wave tiles of its height or SplitRule::tallWaveRows
/// (persistent too), the one sketch::persistent_cost puts lowest, another only under
/// SplitRule::persistentNum / persistentDen of the own tile's. Returns whether it declared
/// the own tile's `split`.
bool emitPersistentTileChoice(CudaWriter &w, const GemmAnalysis &g, const GemmLaunch *own,
                              const SplitForm &split, const SplitLaunches &launches) {
  using Rule = plan::SplitRule;
  std::vector<const GemmAnalysis *> others;
  for (auto [kernel, launch] : llvm::zip_equal(split.waveTiles, launches.waveTiles))
    if (hasSplitTail(launch) && (kernel.tileM == g.tileM || kernel.tileM == Rule::tallWaveRows))
      others.push_back(&kernel);
  if (!own || !hasSplitTail(*own) || !split.fillForms() || others.empty())
    return false;
  auto costOf = [](const GemmAnalysis &kernel) { return tileVariable("cost", kernel); };
  auto costCall = [](const GemmAnalysis &kernel, const std::string &tiles, const std::string &split) {
    return "sketch::persistent_cost(" + tiles + ", " + split + ", " + str(kernel.tileM) + ", " +
           str(kernel.tileN) + ", k_tiles)";
  };
  w.comment("persistent tiles (docs/backend.md): " + str(g.tileM) + " x " + str(g.tileN) +
            ", or of these tiles the one whose rounds and split tail");
  w.comment("cost least (sketch::persistent_cost) where that is under " + str(Rule::persistentNum) +
            "/" + str(Rule::persistentDen) + " of its cost; ties keep the first");
  w.line("const int64_t k_tiles = " + kTilesOf(g) + ";");
  declareOwnTailSplit(w, g, "k_tiles");
  w.line("const double own_limit = (double)" + str(Rule::persistentNum) + " / " +
         str(Rule::persistentDen) + " * " + costCall(g, "tiles", "split") + ";");
  for (const GemmAnalysis *kernel : others) {
    std::string tiles = tileVariable("tiles", *kernel);
    w.line("const int64_t " + tiles + " = sketch::ceil_div(size_m, " + str(kernel->tileM) +
           ") * sketch::ceil_div(size_n, " + str(kernel->tileN) + ");");
    w.line("const double " + costOf(*kernel) + " = " +
           costCall(*kernel, tiles, tailSplitName(*kernel) + "(" + tiles + ", k_tiles)") + ";");
  }
  emitLeastReturns(w, "own_limit", others, costOf,
                   [&](const GemmAnalysis &kernel) { return tileLaunchCall(kernel, g); });
  return true;
}

/// `split_k auto`'s test of the kernel's own grid: `if` it covers under fillNum / fillDen of
/// the SMs (read once a device), opened for the split forms' dispatch.
void openSmallGrid(CudaWriter &w) {
  using Rule = plan::SplitRule;
  w.line("const int sms = sketch::sm_count();  // the current device's, read once");
  w.open("if (tiles * batch * " + str(Rule::fillDen) + " < (int64_t)sms * " + str(Rule::fillNum) + ")");
}

/// A split form over all the SMs (SplitForm::tall, ::square): its tiles and slices, as
/// `NAME_tiles` and `NAME_slices`.
void declareFillForm(CudaWriter &w, const GemmAnalysis &g, const GemmAnalysis &form,
                     plan::SplitRule::FillTile tile) {
  using Rule = plan::SplitRule;
  std::string name = tile.name;
  w.line("const int64_t " + name + "_tiles = sketch::ceil_div(size_m, " + str(form.tileM) +
         ") * sketch::ceil_div(size_n, " + str(form.tileN) + ") * batch;");
  w.line("const int " + name + "_slices = sketch::split_slices(sms, " + name + "_tiles, " +
         kTilesOf(g) + ", " + str(Rule::autoSlices(form.stages)) + ", " + str(Rule::minKTiles) +
         ");");
}

/// The launch of a split form over all the SMs where it takes 2 slices or more.
void emitFillLaunch(CudaWriter &w, const GemmAnalysis &g, const GemmAnalysis &form,
                    plan::SplitRule::FillTile tile, const std::string &condition) {
  std::string name = tile.name;
  w.line("if (" + condition + name + "_slices > 1)");
  w.line("  return " + splitLauncherName(form) + "(" + kernelArgumentList(g.sig) + ", " + name +
         "_slices, stream);");
}

/// `split_k auto` with the split forms over all the SMs (SplitForm::fillForms): under
/// fillNum / fillDen of the SMs, the square form (up to narrowRows rows, and up to
/// squareBlocksRows where its blocks outnumber the tall form's) or the tall form, where it
/// takes 2 slices or more, else the kernel of the fewest wave rows.
template <typename LaunchOf>
void emitFillFormsDispatch(CudaWriter &w, const GemmAnalysis &g, const SplitForm &split,
                           LaunchOf launchOf) {
  using Rule = plan::SplitRule;
  const GemmAnalysis &tall = *split.tall, &square = *split.square;
  w.comment("split_k auto (docs/backend.md): a grid under " + str(Rule::fillNum) + "/" +
            str(Rule::fillDen) + " of the SMs runs a split form over all the SMs,");
  w.comment("K split over the blocks of a cluster, where it takes 2 slices or more, else a kernel");
  w.comment("of another tile without slices");
  openSmallGrid(w);
  w.comment("the split forms: K over min(their most, the SMs / their tiles, k-tiles / " +
            str(Rule::minKTiles) + ") slices");
  declareFillForm(w, g, tall, Rule::tallTile);
  declareFillForm(w, g, square, Rule::squareTile);
  w.comment("tiles of " + str(square.tileM) + " x " + str(square.tileN) +
            " (more blocks to stream B) up to " + str(Rule::narrowRows) + " rows, and up to " +
            str(Rule::squareBlocksRows) + " where");
  w.comment("their blocks outnumber those of " + str(tall.tileM) + " x " + str(tall.tileN) +
            " (B read once for " + str(tall.tileM) + " rows), which run the rest");
  w.line("const bool square = size_m <= " + str(Rule::narrowRows) + " || (size_m <= " +
         str(Rule::squareBlocksRows) + " && square_tiles * square_slices > tall_tiles * tall_slices);");
  emitFillLaunch(w, g, square, Rule::squareTile, "square && ");
  emitFillLaunch(w, g, tall, Rule::tallTile, "!square && ");
  emitFewestWaveRows(w, *split.narrow, split.waveTiles, launchOf);
  w.close();
}

/// `split_k auto` with the split tile's own split form: under fillNum / fillDen of the SMs,
/// it with SplitRule's slices (on a cluster, the narrow kernel where that is 1).
template <typename LaunchOf>
void emitSplitFormDispatch(CudaWriter &w, const GemmAnalysis &g, const SplitForm &split,
                           LaunchOf launchOf) {
  using Rule = plan::SplitRule;
  std::string call = splitLauncherName(g) + "(" + kernelArgumentList(g.sig);
  std::string tile = str(split.g.tileM) + " x " + str(split.g.tileN);
  std::string maxSlices = str(Rule::autoSlices(split.g.stages));
  w.comment("split_k auto (docs/backend.md): a grid under " + str(Rule::fillNum) + "/" +
            str(Rule::fillDen) + " of the SMs runs the split form instead,");
  if (split.cluster)
    w.comment("tiles of " + tile + " with K split over min(" + maxSlices +
              ", " + str(Rule::sliceFillNum) + "/" + str(Rule::sliceFillDen) +
              " of the SMs / its tiles, k-tiles / " + str(Rule::minKTiles) +
              ") blocks of a cluster, at least 1");
  else
    w.comment("tiles of " + tile + " with K split over " + str(split.slices) +
              " warp groups a block");
  openSmallGrid(w);
  if (split.cluster) {
    w.line("const int64_t split_tiles = sketch::ceil_div(size_m, " + str(split.g.tileM) +
           ") * sketch::ceil_div(size_n, " + str(split.g.tileN) + ") * batch;");
    w.line("const int slices = sketch::split_slices(sms * " + str(Rule::sliceFillNum) + " / " +
           str(Rule::sliceFillDen) + ", split_tiles, " + kTilesOf(g) + ", " + maxSlices + ", " +
           str(Rule::minKTiles) + ");");
    if (split.narrow) {
      w.line("if (slices == 1)  // one slice: the narrow kernel, without the reduction");
      w.line("  return " + launchOf(*split.narrow) + ";");
    }
    w.line("return " + call + ", slices, stream);");
  } else {
    w.line("return " + call + ", stream);");
  }
  w.close();
}

/// The host function's choice of the split form: always (`split_k N`), or by
/// plan::SplitRule beside the kernel's own tile (`split_k auto`).
void emitSplitDispatch(CudaWriter &w, const GemmAnalysis &g, const SplitForm &split) {
  using Rule = plan::SplitRule;
  std::string call = splitLauncherName(g) + "(" + kernelArgumentList(g.sig);
  auto launchOf = [&](const GemmAnalysis &kernel) { return tileLaunchCall(kernel, g); };
  if (!split.beside) {
    w.comment("split_k " + str(split.slices) + ": K split over " + str(split.slices) + " slices");
    w.line("return " + call + (split.cluster ? ", " + str(split.slices) : "") + ", stream);");
    return;
  }
  if (split.fillForms())
    emitFillFormsDispatch(w, g, split, launchOf);
  else
    emitSplitFormDispatch(w, g, split, launchOf);
  if (split.narrow) {
    w.comment("at most " + str(Rule::narrowRows) + " rows: the narrow kernel streams B with more "
              "stages a block than the tile above");
    w.line("if (size_m <= " + str(Rule::narrowRows) + ")");
    w.line("  return " + launchOf(*split.narrow) + ";");
  }
}

} // namespace

void emitGemmHost(CudaWriter &w, const GemmAnalysis &g, const GemmLaunch *own,
                  const SplitForm *split, const SplitLaunches &launches) {
  if (split && launches.split)
    emitSplitLauncher(w, split->g, *split, *launches.split);
  if (split && split->narrow)
    emitTileLauncher(w, *split->narrow, *launches.narrow, g, "the split form's tile as a kernel of its own");
  if (split)
    for (auto [kernel, launch] : llvm::zip_equal(split->waveTiles, launches.waveTiles))
      emitTileLauncher(w, kernel, launch, g, "a kernel of another tile");
  if (split && split->tall)
    emitSplitLauncher(w, *split->tall, *split, *launches.tall);
  if (split && split->square)
    emitSplitLauncher(w, *split->square, *split, *launches.square);
  if (own && hasSplitTail(*own))
    emitTailSplitFunction(w, g, *own);
  w.open(hostPrototype(g.sig));
  emitHostChecks(w, g.sig);
  emitGemmTiles(w, g);
  w.line("if (tiles == 0 || batch == 0) return cudaSuccess;  // empty output: nothing to do");
  w.line("if (tiles > INT32_MAX || batch > 65535) return cudaErrorInvalidValue;");
  bool splitDeclared = false;
  if (split) {
    emitSplitDispatch(w, g, *split);
    splitDeclared = emitPersistentTileChoice(w, g, own, *split, launches);
  }
  if (own)
    emitTileLaunch(w, g, *own, splitDeclared);
  w.close();
}

std::string splitKernelName(const GemmAnalysis &g) { return g.sig.name + "_splitk_kernel"; }

void emitSplitKWindow(CudaWriter &w, const GemmAnalysis &g, StringRef count, StringRef slice) {
  std::string n = count.str(), q = slice.str();
  w.comment("K slice `" + q + "` of `" + n + "`: k-tiles " + q + " * k_per .. + k_per - 1 (the last slices");
  w.comment("may get fewer or none), its operands seen from column k0 of K on, k_len columns");
  w.line("const int k_per = (int)sketch::ceil_div(sketch::ceil_div(size_k, BK), " + n + ");");
  w.line("const int64_t k0 = min((int64_t)" + q + " * k_per * BK, size_k);");
  w.line("const int64_t k_len = min(size_k - k0, (int64_t)k_per * BK);");
  w.line(std::string("a_src += ") + (g.a.kContiguous ? "k0" : "k0 * size_m") + ";");
  w.line(std::string("b_src += ") + (g.b.kContiguous ? "k0" : "k0 * size_n") + ";");
}

namespace {

TensorCoreConfig configOf(const GemmAnalysis &g) {
  TensorCoreConfig c;
  c.tileM = g.tileM;
  c.tileN = g.tileN;
  c.tileK = g.tileK;
  c.warpsM = g.warpsM;
  c.warpsN = g.warpsN;
  c.stages = g.stages;
  c.pipeline = g.pipeline;
  c.fragmentBuffers = g.fragmentBuffers;
  c.operandType = cTypeOf(g.operandType);
  c.a = MmaOperandPlan{g.a.smem, g.a.kContiguous};
  c.b = MmaOperandPlan{g.b.smem, g.b.kContiguous};
  return c;
}

/// The mma.sync GEMM kernel; with a SplitForm (its `g` given as the GEMM), the split
/// kernel whose K slices are warp groups of one block.
class GemmWriter {
public:
  GemmWriter(const GemmAnalysis &g, const EpilogueEmitter &epilogue, CudaWriter &w,
             const SplitForm *split = nullptr)
      : g(g), epilogue(epilogue), w(w), config(configOf(g)), split(split) {
    if (split) {
      config.slices = split->slices;
      config.sliceSmemBytes = sliceSmemBytes(g);
    }
  }

  void run() {
    GemmLaunch launch = writeKernelAndComment();
    w.line();
    emitGemmHost(w, g, &launch);
    w.line();
  }

  /// The output tile; an f32 output whose statements call two functions or more over
  /// 128 accumulators a thread or more stages the accumulators first (the epilogue then
  /// runs on each staged chunk: in place, ptxas spilled 96-924 bytes on sm_80).
  StoreSpec storeSpec() const {
    StoreSpec s = gemmStoreSpec(g);
    int64_t accumulators = config.tileM * config.tileN / config.threads();
    if (s.outBytes == 4 && functionsCrowdAccumulators(epilogue, accumulators, /*calls=*/2))
      s.stagedEpilogue = true;
    return s;
  }

  /// The header comment and the kernel; how the host function launches it.
  GemmLaunch writeKernelAndComment() {
    writeHeaderComment();
    if (split)
      w.line("#include \"sketch/split.cuh\"  // the split-K reduction");
    writeKernel();
    return {kernelName(), config.threads() * config.slices, smemBytes(), {}};
  }

  /// Shared memory of one K slice: its pipeline, the f32 partial tile reusing it.
  static int64_t sliceSmemBytes(const GemmAnalysis &g) {
    int64_t bytes = std::max(g.smemBytes, g.staging.endBytes());
    return (bytes + 127) / 128 * 128;
  }

private:
  const GemmAnalysis &g;
  const EpilogueEmitter &epilogue;
  CudaWriter &w;
  TensorCoreConfig config;
  const SplitForm *split;

  std::string kernelName() const { return split ? splitKernelName(g) : g.sig.name + "_kernel"; }
  int64_t smemBytes() const { return split ? config.slices * config.sliceSmemBytes : g.smemBytes; }
  std::string kExtent() const { return split ? "k_len" : "size_k"; }

  void writeHeaderComment() {
    std::string warps = str(g.warps) + " warps as " + str(g.warpsM) + " x " + str(g.warpsN) +
                        " of " + str(g.tileM / g.warpsM) + " x " + str(g.tileN / g.warpsN) +
                        " (mma.sync m16n8k16), " + str(g.stages) + " stages (" + g.pipeline + ")";
    if (split) {
      emitGemmHeaderComment(
          w, g, epilogue,
          {"  split-K form: tile " + str(g.tileM) + " x " + str(g.tileN) + " x " + str(g.tileK) +
               ", K split over " + str(config.slices) + " slices a block, each " + warps,
           "  shared memory " + str(smemBytes()) + " bytes: " + str(config.sliceSmemBytes) +
               " a slice (its pipeline, then its f32 partial tile)"});
      return;
    }
    emitGemmHeaderComment(
        w, g, epilogue,
        {"  tile " + str(g.tileM) + " x " + str(g.tileN) + " x " + str(g.tileK) + ", " + warps,
         "  shared memory " + str(g.smemBytes) + " bytes"});
  }

  MatrixTileLoader::Spec loaderSpec(const GemmOperand &op, bool isA) const {
    MatrixTileLoader::Spec s;
    s.label = op.param->name;
    s.base = isA ? "a_src" : "b_src";
    s.smem = op.smem;
    s.threads = config.threads();
    std::string mn = isA ? "size_m" : "size_n", origin = isA ? "m0" : "n0";
    std::string k = "(int64_t)kt * BK";
    if (op.kContiguous) {
      s.rows = mn, s.cols = kExtent(), s.ld = "size_k", s.rowOrigin = origin, s.colOrigin = k;
    } else {
      s.rows = kExtent(), s.cols = mn, s.ld = mn, s.rowOrigin = k, s.colOrigin = origin;
    }
    // The 16-byte path's addresses and bounds set up once before the main loop, and
    // k-tiles wholly inside the matrix copied without bounds: 3-5% faster on an
    // H100 (mma.sync, sm_90, same run, f16 and bf16 4096^3 and 8192^3, best
    // configurations) than per-copy 64-bit bounds and addresses each k-tile.
    s.hoist = isA ? "a" : "b";
    s.kAlongRows = !op.kContiguous;
    return s;
  }

  void writeKernel() {
    auto restrictPtr = [&](const ParamInfo &p) {
      return p.name == g.a.param->name || p.name == g.b.param->name;
    };
    w.line(std::string(kGemmTemplate));
    // a minimum of 1 block an SM: without it ptxas caps the registers for the occupancy it
    // guesses and spills (a 64 x 128 tile at 168, 4 and 8 bytes; a 2-slice split block at 128)
    std::string bounds = str(config.threads() * (split ? config.slices : 1)) + ", 1";
    w.line("__global__ void __launch_bounds__(" + bounds + ") " + kernelName() + "(" +
           kernelParameterList(g.sig, restrictPtr) + ") {");
    w.indentMore();
    w.line("extern __shared__ __align__(128) unsigned char smem[];");
    emitTensorCorePreamble(w, config);
    emitGemmBlockCoordinates(w, g);
    emitGemmOperandPointers(w, g);
    if (split)
      emitSplitKWindow(w, g, "SLICES", "slice");
    MatrixTileLoader::Spec as = loaderSpec(g.a, true), bs = loaderSpec(g.b, false);
    // Over 4 copies a thread, the main loop spreads the refill between its MMAs
    // (emitTensorCoreMainloop), one copy at a time: there the set-up form was 0-8%
    // slower (H100, 128x256x64 and 256x128x64, 8 warps), so both keep the per-copy form.
    int64_t copies =
        std::max(MatrixTileLoader(as).copiesPerThread(), MatrixTileLoader(bs).copiesPerThread());
    if (copies > 4) {
      as.hoist.clear();
      bs.hoist.clear();
    }
    // Source pointers kept in registers across the loop when they cost at most 12
    // (H100, mma.sync, same runs, 128x256x32 8 warps: 0-4% faster, bf16 8192^3 the
    // most; with 8 copies a thread, 128x128x32 4 warps, the registers cost 5-10%).
    bool persistent = MatrixTileLoader(as).copiesPerThread() +
                          MatrixTileLoader(bs).copiesPerThread() <= 6;
    as.persistentSources = bs.persistentSources = persistent;
    MatrixTileLoader a(as), b(bs);
    // Every slice runs k_per k-tiles (zero-filled past its K window): their barriers meet.
    emitTensorCoreMainloop(w, config, a, b, split ? "k_per" : "(int)sketch::ceil_div(size_k, BK)");
    if (split)
      emitSplitReduceStore(w, config, epilogue, gemmStoreSpec(g),
                           {"SLICES", "slice", "slice * SLICE_SMEM_BYTES",
                            "sketch::smem_addr(smem) + q * SLICE_SMEM_BYTES",
                            "sketch::ld_shared_128", "__syncthreads();", false});
    else
      emitAccumulatorStore(w, config, epilogue, storeSpec());
    w.indentLess();
    w.line("}");
  }
};

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

} // namespace

/// The tile `s` as a kernel of its own, NAME`suffix`: its operand buffers and stages,
/// the GEMM's epilogue and staging element (SplitForm::narrow, ::waveTiles).
static GemmAnalysis ownKernelOf(const GemmAnalysis &g, const GemmAnalysis &s, StringRef suffix) {
  GemmAnalysis own = s;
  own.sig.name = g.sig.name + suffix.str();
  own.split.reset();
  own.stagedEpilogue = g.stagedEpilogue;
  int64_t bytes = g.staging.elementBytes;
  own.staging = plan::StagingBuffer{0, s.tileM, s.tileN, plan::stagingLd(s.tileN, bytes), bytes};
  return own;
}

/// `g` at another block tile: its warps and warp grid, and its operand buffers as
/// sketch-plan-shared-memory plans them, one after the other. A located error when the
/// warps do not split into warp tiles of multiples of 16 x 16.
static FailureOr<GemmAnalysis> retiled(const GemmAnalysis &g, StringRef what, int64_t tileM,
                                       int64_t tileN, int64_t warps, int64_t stages) {
  GemmAnalysis s = g;
  s.tileM = tileM;
  s.tileN = tileN;
  s.tileK = g.split->tileK;
  s.warps = warps;
  s.stages = stages;
  if (!plan::chooseWarpGrid(s.tileM, s.tileN, s.warps, s.warpsM, s.warpsN))
    return KernelOp(g.kernel).emitError()
           << "split_k: " << what << " " << s.tileM << "x" << s.tileN << " cannot be split among "
           << s.warps << " warps into warp tiles that are multiples of 16x16";
  int64_t offset = 0;
  for (GemmOperand *op : {&s.a, &s.b}) {
    int64_t mn = op == &s.a ? s.tileM : s.tileN;
    plan::SmemBuffer buffer = plan::chooseLayout(op->kContiguous ? mn : s.tileK,
                                                 op->kContiguous ? s.tileK : mn, 2);
    buffer.stages = op->smem.stages;
    buffer.offset = offset;
    offset = alignUp(offset + buffer.stages * buffer.stageBytes, 128);
    op->smem = buffer;
  }
  s.smemBytes = offset;
  return s;
}

/// `s` as a split form's tile: its f32 partial tile staged before the epilogue.
static GemmAnalysis asSplitTile(GemmAnalysis s) {
  s.staging = plan::StagingBuffer{0, s.tileM, s.tileN, plan::stagingLd(s.tileN, 4), 4};
  s.stagedEpilogue = true;
  return s;
}

/// A split form over all the SMs (SplitForm::tall, ::square): `tile` with `stages`
/// stages, NAME_<tile.name>_splitk_kernel.
static LogicalResult fillSplitForm(const GemmAnalysis &g, plan::SplitRule::FillTile tile,
                                   int64_t stages, std::optional<GemmAnalysis> &form) {
  std::string what = "the " + std::string(tile.name) + " split form's tile";
  FailureOr<GemmAnalysis> s = retiled(g, what, tile.tileM, tile.tileN, tile.tileM / 16, stages);
  if (failed(s))
    return failure();
  form = asSplitTile(*s);
  form->sig.name = g.sig.name + "_" + tile.name;
  if (!wgmmaSupports(*form))
    return KernelOp(g.kernel).emitError()
           << "split_k auto: " << what << " " << tile.tileM << "x" << tile.tileN << " with "
           << stages << " stages does not fit the shared memory of sm_90a's wgmma path";
  return success();
}

FailureOr<SplitForm> splitFormOf(const GemmAnalysis &g, StringRef arch) {
  const plan::SplitPlan &plan = *g.split;
  SplitForm split;
  split.beside = plan.beside;
  FailureOr<GemmAnalysis> tiled =
      retiled(g, "the split form's tile", plan.tileM, plan.tileN, plan.warps, plan.stages);
  if (failed(tiled))
    return failure();
  GemmAnalysis &s = split.g;
  s = asSplitTile(*tiled);
  KernelOp kernel = g.kernel;
  split.cluster = plan.cluster;
  split.slices = plan.slices;
  if (plan.cluster) {
    if (arch != "sm_90a" || !wgmmaSupports(s))
      return kernel.emitError() << "split_k: the split form's tile " << s.tileM << "x" << s.tileN
                                << " with " << s.stages
                                << " stages does not fit the shared memory of sm_90a's wgmma "
                                   "path, whose blocks are a cluster's K slices: use fewer stages";
    if (plan::hasNarrowKernel(plan, g.tileM, g.tileN, g.stages))
      split.narrow = ownKernelOf(g, s, "_narrow");
    if (split.narrow)
      for (plan::SplitPlan::WaveTile tile : plan.waveTiles) {
        FailureOr<GemmAnalysis> other = retiled(g, "the wave tile's kernel", tile.tileM,
                                                tile.tileN, tile.tileM / 16, tile.stages);
        if (failed(other))
          return failure();
        split.waveTiles.push_back(ownKernelOf(
            g, *other, "_" + std::to_string(tile.tileM) + "x" + std::to_string(tile.tileN)));
        if (!wgmmaSupports(split.waveTiles.back()))
          return kernel.emitError() << "split_k auto: the kernel of tile " << tile.tileM << "x"
                                    << tile.tileN << " with " << tile.stages
                                    << " stages does not fit the shared memory of sm_90a's wgmma path";
      }
    if (split.narrow && plan.fillForms()) {
      using Rule = plan::SplitRule;
      if (failed(fillSplitForm(g, Rule::tallTile, plan.tallStages, split.tall)) ||
          failed(fillSplitForm(g, Rule::squareTile, plan.squareStages, split.square)))
        return failure();
    }
    return split;
  }
  if (!split.slices)
    split.slices = plan::SplitRule::warpSlices;
  // warp groups of one block: the block's warps, registers and shared memory
  int64_t warps = s.warps * split.slices;
  int64_t registers = plan::mmaSyncThreadRegisters(s.tileM / s.warpsM, s.tileN / s.warpsN);
  if (warps > 32 || registers * 32 * warps > 65536)
    return kernel.emitError() << "split_k: " << split.slices << " K slices of " << s.warps
                              << " warps in one block are " << warps << " warps of about "
                              << registers << " registers a thread, more than a block can have "
                              << "(32 warps, 65536 registers): use fewer slices or warps";
  int64_t bytes = split.slices * GemmWriter::sliceSmemBytes(s);
  if (bytes > plan::smemLimitBytes(arch))
    return kernel.emitError() << "split_k: " << split.slices << " K slices need " << bytes
                              << " bytes of shared memory (a pipeline and an f32 partial tile "
                                 "each), more than the "
                              << plan::smemLimitBytes(arch) << " bytes a block can use on " << arch
                              << ": use fewer slices or stages";
  return split;
}

std::optional<WgmmaDescription> wgmmaFormOf(KernelOp kernel, StringRef arch) {
  if (arch != "sm_90a")
    return std::nullopt;
  FailureOr<GemmAnalysis> g = analyzeGemm(kernel);
  if (failed(g) || !wgmmaSupports(*g))
    return std::nullopt;
  if (g->split) { // the tile's own kernel, where the split form has it beside
    FailureOr<SplitForm> split = splitFormOf(*g, arch);
    if (failed(split) || !split->beside)
      return std::nullopt;
  }
  auto epilogue = EpilogueEmitter::createFor(*g);
  if (failed(epilogue))
    return std::nullopt;
  return describeWgmmaGemm(*g, *epilogue);
}

KernelEmitterResult emitTensorCoreGemm(KernelOp kernel, const CudaEmitOptions &options,
                                       CudaWriter &w) {
  auto analysis = analyzeGemm(kernel);
  if (failed(analysis))
    return failure();
  const GemmAnalysis &g = *analysis;
  auto epilogue = EpilogueEmitter::createFor(g);
  if (failed(epilogue))
    return failure();
  bool wgmma = options.arch == "sm_90a" && wgmmaSupports(g);
  if (!g.split) {
    if (wgmma)
      emitWgmmaGemm(g, *epilogue, w); // Hopper: wgmma (WgmmaGemm.cpp)
    else
      GemmWriter(g, *epilogue, w).run();
    return g.sig;
  }
  FailureOr<SplitForm> split = splitFormOf(g, options.arch);
  if (failed(split))
    return failure();
  std::optional<GemmLaunch> own;
  if (split->beside) {
    own = wgmma ? emitWgmmaGemmKernel(g, *epilogue, w)
                : GemmWriter(g, *epilogue, w).writeKernelAndComment();
    w.line();
  }
  std::optional<GemmLaunch> launch; // the split tile's split form, which fill forms replace
  if (!split->fillForms()) {
    launch = split->cluster ? emitWgmmaGemmKernel(split->g, *epilogue, w, &*split)
                            : GemmWriter(split->g, *epilogue, w, &*split).writeKernelAndComment();
    w.line();
  }
  std::optional<GemmLaunch> narrow, tall, square;
  std::vector<GemmLaunch> waveTiles;
  if (split->narrow) {
    narrow = emitWgmmaGemmKernel(*split->narrow, *epilogue, w);
    w.line();
  }
  for (const GemmAnalysis &kernel : split->waveTiles) {
    waveTiles.push_back(emitWgmmaGemmKernel(kernel, *epilogue, w));
    w.line();
  }
  for (auto [form, emitted] : {std::pair(&split->tall, &tall), std::pair(&split->square, &square)})
    if (*form) {
      *emitted = emitWgmmaGemmKernel(**form, *epilogue, w, &*split);
      w.line();
    }
  auto pointer = [](const std::optional<GemmLaunch> &l) { return l ? &*l : nullptr; };
  emitGemmHost(w, g, pointer(own), &*split,
               SplitLaunches{pointer(launch), pointer(narrow), pointer(tall), pointer(square),
                             waveTiles});
  w.line();
  return g.sig;
}

} // namespace sketch
