//===- ChooseDefaults.cpp - tile sizes, warps and stages ------------------===//
//
// Each of tile BM/BN/BK, warps and stages comes from, in order: the command
// line (the pass options), the program's directives, the default for the
// kernel's problem kind, element type and target (docs/passes.md has the
// table). The result is checked and stored on the kernel.
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/ChooseB2bResidency.h"
#include "lib/Passes/Passes.h"
#include "lib/Passes/SimtTile.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"

namespace sketch {
#define GEN_PASS_DEF_CHOOSEDEFAULTS
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;

namespace {

enum class ProblemKind { gemm, conv, b2b, attention };

StringRef spellKind(ProblemKind kind) {
  switch (kind) {
  case ProblemKind::gemm:
    return "GEMM";
  case ProblemKind::conv:
    return "convolution";
  case ProblemKind::b2b:
    return "back-to-back GEMM";
  case ProblemKind::attention:
    return "attention";
  }
  return "";
}

/// What the defaults depend on.
struct Problem {
  ProblemKind kind = ProblemKind::gemm;
  ElementType element = ElementType::f16;
  int64_t n0 = 0;      // b2b: the first GEMM's N (kept whole in registers)
  int64_t n1 = 0;      // b2b: the second GEMM's N
  int64_t headDim = 0; // attention: the first GEMM's K
  int64_t valueDim = 0; // attention: the second GEMM's N
  bool keysAlike = true; // attention: K and V both a key per row, one head dimension
  bool masked = false;   // attention: a Mask step (causal) between the GEMMs
  plan::ScoreWork scoreWork = plan::ScoreWork::scaling; // attention: the loop's statements
  bool rhsKMajor = false; // gemm: B written B^T (stored [N, K], K contiguous)
  bool lhsKMajor = true;  // gemm: A stored [M, K] (not written A^T)
  bool strided = false;   // conv: a stride above 1 (no halo form)
  bool gathersFilter = false; // conv: nhwc with a kcrs filter (the mma.sync kernel gathers it)
  /// f16 / bf16 operands on tensor cores; f32, and nchw convolutions of any type,
  /// run on the CUDA cores (the tensor-core convolution takes nhwc/krsc).
  bool tensorCores = true;
};

/// The five values, each with where it came from.
struct Config {
  int64_t values[5] = {0, 0, 0, 0, 0}; // BM, BN, BK, warps, stages
  StringRef from[5];
};
constexpr const char *kNames[5] = {"BM", "BN", "BK", "warps", "stages"};
enum { kBM, kBN, kBK, kWarps, kStages };

bool isTensorCoreType(ElementType type) { return type != ElementType::f32; }

/// An f32 GEMM: the SIMT path, whose tiles keep deriveSimtTile's rules.
bool isSimtGemm(const Problem &problem) {
  return problem.kind == ProblemKind::gemm && !problem.tensorCores;
}

ElementType elementOf(KernelOp kernel, ArrayRef<StringRef> names, ElementType fallback) {
  for (StringRef name : names)
    if (auto param = findTensorParam(kernel, name))
      return param.getElementType();
  return fallback;
}

Problem classifyOperands(KernelOp kernel);

/// True for a convolution whose activations are nhwc.
bool isNhwcConv(KernelOp kernel) {
  bool nhwc = false;
  kernel.walk([&](Conv2dOp conv) {
    if (auto shape = convShape(kernel, conv); shape && shape->input)
      nhwc = shape->input.getLayout() == Layout::nhwc;
  });
  return nhwc;
}

/// The problem kind and element type, and where it runs: an nchw convolution
/// of f16 / bf16 operands runs on the CUDA cores too.
Problem classify(KernelOp kernel) {
  Problem problem = classifyOperands(kernel);
  problem.tensorCores = isTensorCoreType(problem.element) &&
                        !(problem.kind == ProblemKind::conv && !isNhwcConv(kernel));
  return problem;
}

/// What the elementwise statement `op` does to each element: reads a global tensor (a
/// parameter that is no register tile there), calls a function, or only scales.
plan::ScoreWork scoreWorkOf(KernelOp kernel, Operation *op) {
  auto global = [&](StringRef name) {
    return isa_and_nonnull<TensorParamOp>(kernel.lookupTensorParam(name)) &&
           !isRegisterTile(kernel, name, op);
  };
  bool loads = false;
  if (auto ew = dyn_cast<ElementwiseOp>(op))
    loads = llvm::any_of(ew.getOperands(),
                         [&](Attribute a) { return global(cast<StringAttr>(a).getValue()); });
  else
    op->walk([&](RefOp ref) { loads |= global(ref.getName()); });
  return loads                      ? plan::ScoreWork::loads
         : plan::callsFunctions(op) ? plan::ScoreWork::functions
                                    : plan::ScoreWork::scaling;
}

Problem classifyOperands(KernelOp kernel) {
  Problem problem;
  auto params = kernel.getBodyBlock().getOps<TensorParamOp>();
  if (!params.empty())
    problem.element = (*params.begin()).getElementType();
  Conv2dOp conv;
  SmallVector<GemmOp> gemms;
  kernel.getBody().walk([&](Operation *op) {
    if (auto c = dyn_cast<Conv2dOp>(op); c && !conv)
      conv = c;
    if (auto g = dyn_cast<GemmOp>(op))
      gemms.push_back(g);
    if (isa<MaskOp>(op))
      problem.masked = true;
    if (isa<ElementwiseOp, AssignOp>(op) && isa<ForOp>(op->getParentOp()))
      problem.scoreWork = std::max(problem.scoreWork, scoreWorkOf(kernel, op));
  });
  if (conv) {
    problem.kind = ProblemKind::conv;
    problem.element = elementOf(kernel, {conv.getInput()}, problem.element);
    problem.strided = llvm::any_of(conv.getStride(), [](int64_t v) { return v > 1; });
    problem.gathersFilter = gathersConvFilter(kernel, conv);
    // Back-to-back convolutions: the b2b kernel over output pixels, N0 and N1 the filters' K.
    if (Conv2dOp second = consumingConv(kernel, conv)) {
      auto first = convDims(kernel, conv), next = convDims(kernel, second);
      problem.kind = ProblemKind::b2b;
      problem.n0 = first ? evaluateExpr(first->n).value_or(0) : 0;
      problem.n1 = next ? evaluateExpr(next->n).value_or(0) : 0;
    }
    return problem;
  }
  if (gemms.empty())
    return problem;
  problem.element = elementOf(kernel, {gemms[0].getLhs(), gemms[0].getRhs()}, problem.element);
  problem.rhsKMajor = gemms[0].getRhsTransposed();
  problem.lhsKMajor = !gemms[0].getLhsTransposed();
  for (GemmOp gemm : gemms) {
    GemmOp producer = chainedProducer(kernel, gemm);
    if (!producer)
      continue;
    auto first = gemmDims(kernel, producer), second = gemmDims(kernel, gemm);
    auto firstTile = gemmTiles(kernel, producer);
    if (!first || !second || !firstTile)
      continue;
    // The first GEMM's N covered by a loop (attention's keys) or owned whole (b2b).
    if (firstTile->loops[1]) {
      problem.kind = ProblemKind::attention;
      problem.headDim = evaluateExpr(first->k).value_or(0);
      problem.valueDim = evaluateExpr(second->n).value_or(0);
      problem.keysAlike = producer.getRhsTransposed() && !gemm.getRhsTransposed() &&
                          problem.headDim == problem.valueDim;
    } else {
      problem.kind = ProblemKind::b2b;
      problem.n0 = evaluateExpr(first->n).value_or(0);
      problem.n1 = evaluateExpr(second->n).value_or(0);
    }
    break;
  }
  return problem;
}

/// Rows of the first accumulator each warp owns in a b2b kernel: the most of
/// 32 or 16 that keeps both accumulators within 128 f32 registers per thread.
std::optional<int64_t> b2bRowsPerWarp(const Problem &problem) {
  // Widths this large fit no rows, and the sum below must not overflow.
  if (problem.n0 > 4096 || problem.n1 > 4096)
    return std::nullopt;
  for (int64_t rows : {32, 16})
    if (rows * (problem.n0 + problem.n1) / 32 <= 128)
      return rows;
  return std::nullopt;
}

/// The default table (docs/passes.md).
FailureOr<Config> defaultsFor(KernelOp kernel, const Problem &problem, StringRef arch) {
  bool tensorCores = problem.tensorCores;
  bool hopper = arch == "sm_90a";
  Config config;
  auto set = [&](int64_t bm, int64_t bn, int64_t bk, int64_t warps, int64_t stages) {
    int64_t values[5] = {bm, bn, bk, warps, stages};
    for (int i = 0; i < 5; ++i) {
      config.values[i] = values[i];
      config.from[i] = "the default";
    }
  };
  switch (problem.kind) {
  case ProblemKind::gemm:
    // sm_90a runs the wgmma path, whose k-tile is one 128-byte swizzle row (BK = 64);
    // 128x256 with 4 stages measured fastest there before its TMA pipeline (0.81-0.83x
    // cuBLAS on an H100); with it, best or within 6% of 3 stages (0.83-0.99x, RESULTS.md).
    // sm_90 (Hopper, mma.sync path): 128x256x32, 8 warps, 4 stages measured best or
    // within 1% at 8192^3 (-1% to +4% over 3 stages in two runs); 1-6% behind
    // 128x128x32 with 4 warps at 4096^3 (H100).
    if (tensorCores && hopper)
      set(128, 256, 64, 8, 4);
    else if (tensorCores && arch == "sm_90")
      set(128, 256, 32, 8, 4);
    else if (tensorCores)
      set(128, 128, 32, 4, 3);
    else if (plan::hasF64TensorCoreMma(arch)) // f32 on the f64 tensor cores (f64TensorCoreTile):
      set(64, 64, 16, 2, 2); // 4096^3 1.04x cuBLAS SGEMM, 128x128x16 0.92x (H200, sgemm_dmma lab)
    else // f32 SIMT: a k step of 16 measured 0.84x cuBLAS SGEMM at 4096^3, 8 0.74x (H100);
      set(128, 128, 16, 8, 2); // warps as given, else derived from the tile (chooseSimtWarps)
    break;
  case ProblemKind::conv:
    // sm_90a runs nhwc convolutions with wgmma, whose cp.async loop keeps STAGES - 2
    // k-tiles in flight: 4 stages measured 1.2-1.6x faster than 3 at 128x128 on the
    // 3x3 ResNet layers (H100, bench_conv.py, same run).
    if (tensorCores)
      set(128, 128, 32, 4, hopper ? 4 : 3);
    else if (plan::hasF64TensorCoreMma(arch)) // on the f64 tensor cores (f64TensorCoreTile):
      set(64, 128, 16, 4, 2); // 0.93x / 0.94x the CUDA-core default's time on the 1x1 and
                              // stride-2 layers (H200, bench/labs/conv_f32_dmma)
    else // f32 nchw: a k step of 16 measured 4-12% faster than 8 on all six ResNet layers (H100)
      set(128, 128, 16, 8, 2);
    break;
  case ProblemKind::b2b: {
    // Too wide for both accumulators at 32 rows per warp: 16 rows, and
    // sketch-choose-b2b-residency stages D0 in shared memory or reports what must hold.
    auto rows = b2bRowsPerWarp(problem).value_or(16);
    set(rows * 4, problem.n0, tensorCores ? 32 : 8, 4, tensorCores ? 3 : 2);
    break;
  }
  case ProblemKind::attention: {
    // 4 warps of 32 rows each where the accumulators fit (head dims up to 128):
    // measured 1.09x FlashAttention at d=128 on an H100, against 0.9x with 8 warps
    // of 16 rows (more K/V re-reads); 16 rows each above (plan::AttentionTiles).
    auto tiles = plan::AttentionTiles::defaults(problem.headDim, problem.valueDim,
                                                problem.keysAlike, problem.masked, arch,
                                                problem.scoreWork);
    set(tiles.bm, tiles.bn, problem.headDim, tiles.warps, tiles.stages);
    break;
  }
  }
  return config;
}

/// The attention tiles of `config` for `problem` (without wgmma set).
plan::AttentionTiles attentionTilesOf(const Problem &problem, const Config &config) {
  plan::AttentionTiles tiles{config.values[kBM], config.values[kBN], config.values[kWarps],
                             problem.headDim,    problem.valueDim,   problem.keysAlike};
  tiles.work = problem.scoreWork;
  tiles.stages = config.values[kStages];
  return tiles;
}

/// Attention tiles from the program without a stage count: the default's count where
/// the sm_90a kernel takes these tiles with it, else 2 (the fewest that kernel takes,
/// and all the mma.sync kernel does); the default count belongs to the default tiles.
void fitAttentionStages(const Problem &problem, Config &config, StringRef arch) {
  if (problem.kind != ProblemKind::attention || config.from[kStages] != "the default")
    return;
  if (!attentionTilesOf(problem, config).hopperTakes(arch))
    config.values[kStages] = 2;
}

/// The attention kernel's tiles where `arch` runs them on the sm_90a kernel
/// (AttentionTiles::hopperTakes), with wgmma set.
std::optional<plan::AttentionTiles> hopperAttentionTiles(const Problem &problem,
                                                         const Config &config, StringRef arch) {
  if (problem.kind != ProblemKind::attention)
    return std::nullopt;
  plan::AttentionTiles tiles = attentionTilesOf(problem, config);
  if (!tiles.hopperTakes(arch))
    return std::nullopt;
  tiles.wgmma = true;
  return tiles;
}

/// Marks the attention kernels sm_90a runs on its TMA and wgmma kernel
/// (kHopperAttentionAttr), and those of them that may split a row tile's keys over a
/// cluster (kKeySplitsAttr): the statements on the scores read no tensor (those index
/// absolute keys); of those, the unmasked ones of two consumer warpgroups whose short grids
/// may take the 64-row kernel (kShortGridRowsAttr).
void markHopperAttention(KernelOp kernel, const Problem &problem, const Config &config,
                         StringRef arch) {
  kernel->removeAttr(plan::kKeySplitsAttr);
  kernel->removeAttr(plan::kShortGridRowsAttr);
  kernel->removeAttr(plan::kHopperAttentionAttr);
  kernel->removeAttr(plan::kTwoBlocksPerSmAttr);
  std::optional<plan::AttentionTiles> tiles = hopperAttentionTiles(problem, config, arch);
  if (!tiles)
    return;
  bool loads = problem.scoreWork == plan::ScoreWork::loads;
  Builder builder(kernel.getContext());
  kernel->setAttr(plan::kHopperAttentionAttr, builder.getI64IntegerAttr(tiles->smemBytes()));
  if (tiles->blocksPerSm() == 2)
    kernel->setAttr(plan::kTwoBlocksPerSmAttr, builder.getUnitAttr());
  if (loads)
    return;
  kernel->setAttr(plan::kKeySplitsAttr, builder.getUnitAttr());
  if (!problem.masked && tiles->bm == 128 && tiles->sixtyFourRows().wgmmaFits(arch))
    kernel->setAttr(plan::kShortGridRowsAttr, builder.getUnitAttr());
}

/// Takes the program's directives over the defaults.
void applyDirectives(KernelOp kernel, Config &config) {
  std::optional<uint64_t> values[5] = {kernel.getTileM(), kernel.getTileN(), kernel.getTileK(),
                                       kernel.getWarps(), kernel.getStages()};
  for (int i = 0; i < 5; ++i)
    if (values[i]) {
      config.values[i] = static_cast<int64_t>(*values[i]);
      config.from[i] = "the program";
    }
}

/// Parses "BMxBNxBK".
std::optional<std::array<int64_t, 3>> parseTile(StringRef text) {
  SmallVector<StringRef> parts;
  text.split(parts, 'x');
  if (parts.size() != 3)
    return std::nullopt;
  std::array<int64_t, 3> tile;
  for (int i = 0; i < 3; ++i)
    if (parts[i].trim().getAsInteger(10, tile[i]))
      return std::nullopt;
  return tile;
}

InFlightDiagnostic invalid(KernelOp kernel, const Config &config, int index) {
  auto diag = emitError(kernel.getLoc());
  diag << (index < kWarps ? "tile " : "") << kNames[index] << (index < kWarps ? " = " : " ")
       << config.values[index] << " (from " << config.from[index] << ") ";
  return diag;
}

LogicalResult validate(KernelOp kernel, const Problem &problem, const Config &config) {
  for (int i = 0; i < 5; ++i)
    if (config.values[i] < 1)
      return invalid(kernel, config, i) << "must be positive";
  if (config.values[kWarps] > 32)
    return invalid(kernel, config, kWarps) << "is more than a block can hold (32)";
  // Far past any shared memory; the backend's sizes (tile x tile x stages) stay in range.
  for (int i : {kBM, kBN, kBK})
    if (config.values[i] > 65536)
      return invalid(kernel, config, i) << "is more than 65536";
  if (config.values[kStages] > 8)
    return invalid(kernel, config, kStages) << "is more than 8";
  int64_t granule = problem.tensorCores ? 16 : 8;
  for (int i : {kBM, kBN, kBK}) {
    if (i == kBK && granule == 8)
      continue; // CUDA-core tiles step K one element at a time
    if (config.values[i] % granule != 0)
      return invalid(kernel, config, i)
             << "must be a multiple of " << granule << " for " << spellElementType(problem.element)
             << (granule == 16 ? " on tensor cores" : " on CUDA cores");
  }
  if (problem.kind == ProblemKind::b2b) {
    if (problem.n0 % config.values[kBN] != 0)
      return invalid(kernel, config, kBN)
             << "must divide " << problem.n0 << ", the first GEMM's N: in a "
             << spellKind(problem.kind) << " each block computes whole rows of the first "
             << "result (BN = " << problem.n0 << " keeps them in registers, a divisor stages "
             << "them in shared memory BN columns at a time)";
    int64_t perWarp = config.values[kBM] / config.values[kWarps];
    if (config.values[kBM] % config.values[kWarps] != 0 || perWarp % granule != 0)
      return invalid(kernel, config, kBM)
             << "must be a multiple of " << granule << " x warps (" << config.values[kWarps]
             << "): in a " << spellKind(problem.kind) << " the warps split the rows only";
  }
  if (problem.kind == ProblemKind::attention && config.values[kBK] != problem.headDim)
    return invalid(kernel, config, kBK)
           << "must be " << problem.headDim << ", the head dimension: attention reduces over "
           << "it in one step";
  return success();
}

/// "tile BM = 64, BN = 64 (from the program), BK = 8 (from the command line),
/// warps 8, stages 2 (from the default)": each value, then where it came from.
std::string describeValues(const Config &config) {
  std::string text = "tile ";
  for (int i = 0; i < 5; ++i) {
    text += std::string(kNames[i]) + (i < kWarps ? " = " : " ") + std::to_string(config.values[i]);
    if (i == 4 || config.from[i] != config.from[i + 1])
      text += " (from " + config.from[i].str() + ")";
    text += i < 4 ? ", " : "";
  }
  return text;
}

/// An f32 GEMM or implicit-GEMM convolution (`what` names it in errors; with
/// `conv`, an nchw one: rows are the BN output channels, columns the BM pixels,
/// and rule 6 holds too; an nhwc one is dealt like the GEMM, rows the BM
/// pixels): warps the program and command line leave open are derived from the
/// tile (defaultSimtWarps); then the tile must keep the SIMT rules.
LogicalResult chooseSimtWarps(KernelOp kernel, Config &config, StringRef arch, bool conv,
                              StringRef what) {
  int64_t smemLimit = plan::smemLimitBytes(arch);
  int64_t rows = config.values[conv ? kBN : kBM], cols = config.values[conv ? kBM : kBN];
  if (config.from[kWarps] == "the default")
    config.values[kWarps] = defaultSimtWarps(rows, cols, config.values[kBK],
                                             config.values[kStages], smemLimit, conv);
  std::string broken;
  if (deriveSimtTile(rows, cols, config.values[kBK], config.values[kWarps],
                     config.values[kStages], smemLimit, broken, conv))
    return success();
  return emitError(kernel.getLoc()) << what << " " << describeValues(config) << ": " << broken;
}

/// A convolution whose tile has BN >= 128 output channels: a layer with few
/// (ResNet's 64) would leave half of each block's channels idle, so the host
/// function launches a tile of half the channels when K <= BN / 2 (same BK and
/// warps). The f32 SIMT path doubles the pixels (C256 56x56 K64 1x1 on an H100:
/// 0.157 ms at 256x64x16 against 0.301 ms at 128x128x16); the tensor-core path
/// keeps them (f16 nhwc C64 56x56 K64 3x3: 0.061 ms at 128x64 against 0.104 ms
/// at 128x128, C256 56x56 K64 1x1: 0.052 against 0.077; bench/RESULTS.md).
/// Recorded as kNarrowVariantAttr where that tile keeps the path's rules; a
/// function of the tile alone, so completing a completed program keeps it.
void chooseNarrowVariant(KernelOp kernel, const Config &config, StringRef arch, bool simt) {
  int64_t bm = config.values[kBM] * (simt ? 2 : 1), bn = config.values[kBN] / 2;
  int64_t bk = config.values[kBK], warps = config.values[kWarps];
  if (bn < 64)
    return;
  if (simt) {
    std::string broken;
    if (!deriveSimtTile(bn, bm, bk, warps, config.values[kStages], plan::smemLimitBytes(arch),
                        broken, true))
      return;
  } else {
    int64_t warpsM = 0, warpsN = 0;
    if (bn % 16 || !plan::chooseWarpGrid(bm, bn, warps, warpsM, warpsN))
      return;
    // sm_90a: a wgmma tile keeps a wgmma variant (the mma.sync one otherwise)
    if (arch == "sm_90a" && plan::wgmmaConvTileShape(bm, config.values[kBN]) &&
        !plan::wgmmaConvTileShape(bm, bn))
      return;
  }
  Builder b(kernel.getContext());
  kernel->setAttr(plan::kNarrowVariantAttr, b.getI64ArrayAttr({bm, bn, bk, warps}));
}

/// A strided f16/bf16 nhwc convolution on sm_90a whose tile has 128 pixels: its operands
/// take 32 KB a 64-deep k-tile for 128 x BN MMAs, the taller tile's 40 KB (BN = 128) 1.5x
/// those. The host function launches the taller tile's persistent kernel where it moves
/// fewer operand rows an SM (C128 56x56 K128 3x3 s2 at N = 64: 1-3% faster; ResNet's
/// strided layers at N = 128: 1-15%; H200, docs/backend.md). Stride 1 keeps 128 rows,
/// which the halo form needs. A function of the tile, like the narrow variant. (Not with a
/// kcrs filter: its kernels are mma.sync ones.)
void chooseTallVariant(KernelOp kernel, const Config &config, StringRef arch,
                       const Problem &problem) {
  int64_t bn = config.values[kBN];
  // (a 192 x BN wgmma tile has BN 64 or 128, which a 128-row one takes too)
  if (arch != "sm_90a" || !problem.strided || problem.gathersFilter || config.values[kBM] != 128 ||
      !plan::wgmmaConvTileShape(plan::kTallConvRows, bn))
    return;
  Builder b(kernel.getContext());
  kernel->setAttr(plan::kTallVariantAttr, b.getI64ArrayAttr({plan::kTallConvRows, bn}));
}

/// An f32 convolution the implicit GEMM computes (not Winograd: the
/// `algorithm` directive, else wherever Winograd does not apply).
bool isSimtConv(KernelOp kernel, const Problem &problem) {
  if (problem.kind != ProblemKind::conv || problem.tensorCores)
    return false;
  std::optional<StringRef> asked = kernel.getAlgorithm();
  if (asked)
    return *asked == "implicit_gemm";
  bool winograd = false;
  kernel.walk([&](Conv2dOp conv) { winograd = plan::winogradMismatch(kernel, conv).empty(); });
  return !winograd;
}

/// What a SIMT convolution's tile depends on besides its values (deriveSimtConvTile).
std::optional<SimtConvLoads> simtConvLoads(KernelOp kernel) {
  std::optional<ConvShape> shape;
  Conv2dOp first;
  kernel.walk([&](Conv2dOp conv) {
    if (!shape)
      shape = convShape(kernel, conv), first = conv;
  });
  if (!shape || !shape->input || !shape->output)
    return std::nullopt;
  return SimtConvLoads{shape->input.getLayout() == Layout::nhwc,
                       shape->input.getElementType() == ElementType::f32 &&
                           shape->output.getElementType() == ElementType::f32,
                       gathersConvFilter(kernel, first)};
}

/// `tile`'s warp grid on the f64 tensor cores as `name`, along M (a convolution's pixels)
/// and N (its output channels; `channelRows`: the tile's rows are those channels).
void setF64Grid(KernelOp kernel, StringRef name, const std::optional<SimtTile> &tile,
                bool channelRows) {
  if (!tile || !tile->onF64TensorCores())
    return;
  int64_t alongM = channelRows ? tile->mmaWarpsN : tile->mmaWarpsM;
  int64_t alongN = channelRows ? tile->mmaWarpsM : tile->mmaWarpsN;
  Builder b(kernel.getContext());
  kernel->setAttr(name, b.getI64ArrayAttr({alongM, alongN}));
}

/// An f32 GEMM or SIMT convolution whose tile multiplies on the f64 tensor cores (sm_90,
/// f64TensorCoreTile): its warp grid as kF64MmaAttr (and the narrow variant's as
/// kNarrowF64MmaAttr); a function of the completed directives and the target.
void recordF64Mma(KernelOp kernel, const Problem &problem, const Config &config,
                  StringRef arch) {
  kernel->removeAttr(plan::kF64MmaAttr);
  kernel->removeAttr(plan::kNarrowF64MmaAttr);
  const int64_t *v = config.values;
  if (isSimtGemm(problem)) {
    std::string broken;
    auto tile = deriveSimtTile(v[kBM], v[kBN], v[kBK], v[kWarps], v[kStages],
                               plan::smemLimitBytes(arch), broken);
    if (tile)
      setF64Grid(kernel, plan::kF64MmaAttr, simtTileForTarget(*tile, arch), false);
  } else if (auto loads = isSimtConv(kernel, problem) ? simtConvLoads(kernel) : std::nullopt) {
    // the kernel's tile and its narrow variant's (BM, BN, BK, warps), as the emitter
    // derives them (simtConvTile)
    auto grid = [&](StringRef name, ArrayRef<int64_t> values) {
      std::string broken;
      setF64Grid(kernel, name,
                 deriveSimtConvTile(values[0], values[1], values[2], values[3], v[kStages],
                                    *loads, arch, broken),
                 !loads->nhwc);
    };
    grid(plan::kF64MmaAttr, {v[kBM], v[kBN], v[kBK], v[kWarps]});
    if (auto narrow = plan::variantTile(kernel, plan::kNarrowVariantAttr, 4))
      grid(plan::kNarrowF64MmaAttr, *narrow);
  }
}

/// plan::kSimtAttr on a kernel whose GEMM or convolution runs the SIMT mainloop.
void markSimt(KernelOp kernel, const Problem &problem) {
  if (isSimtGemm(problem) || isSimtConv(kernel, problem))
    kernel->setAttr(plan::kSimtAttr, UnitAttr::get(kernel.getContext()));
  else
    kernel->removeAttr(plan::kSimtAttr);
}

/// Checks the `algorithm` directive: `winograd` and `winograd_2x2` only where
/// Winograd applies (plan::winogradMismatch). sketch-pipeline records the choice.
LogicalResult checkConvAlgorithm(KernelOp kernel) {
  std::optional<StringRef> asked = kernel.getAlgorithm();
  if (!asked || !plan::winogradOutputTile(*asked))
    return success();
  WalkResult walk = kernel.walk([&](Conv2dOp conv) {
    std::string mismatch = plan::winogradMismatch(kernel, conv);
    if (mismatch.empty())
      return WalkResult::advance();
    conv.emitError() << "algorithm " << *asked
                     << " needs an f32 convolution with a 3x3 filter, stride (1, 1) and "
                        "dilation (1, 1), but "
                     << mismatch;
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// An f32 GEMM's `split_k`: N at most SplitRule::maxSlices slices (a cluster's blocks).
/// Its tile needs no check: rule 4 of deriveSimtTile gives every thread an element of the
/// A tiles at least, through which sum_k_slices (simt.cuh) passes the slices' sums. Where
/// clusters are, the tile that splits is recorded (plan::kSimtSplitAttr): under `auto` the
/// small-grid tile where there is one (simtSmallGridTile), else the kernel's own.
LogicalResult checkSimtSplit(KernelOp kernel, const Config &config, StringRef asked,
                             StringRef arch) {
  kernel->removeAttr(plan::kSimtSplitAttr);
  int64_t slices = 0;
  if (asked != "auto" && !asked.getAsInteger(10, slices) && slices > plan::SplitRule::maxSlices)
    return kernel.emitError() << "split_k " << slices << " (from the program) is more than "
                              << plan::SplitRule::maxSlices
                              << " K slices (a portable cluster holds 8 blocks)";
  if (!plan::hasClusters(arch) || slices == 1)
    return success();
  std::string broken;
  std::optional<SimtTile> tile =
      deriveSimtTile(config.values[kBM], config.values[kBN], config.values[kBK],
                     config.values[kWarps], config.values[kStages], plan::smemLimitBytes(arch),
                     broken);
  if (!tile)
    return success(); // chooseSimtWarps reported it
  std::optional<SimtTile> small =
      asked == "auto" ? simtSmallGridTile(*tile, config.values[kStages], plan::smemLimitBytes(arch))
                      : std::nullopt;
  const SimtTile &splits = small ? *small : *tile;
  kernel->setAttr(plan::kSimtSplitAttr,
                  Builder(kernel.getContext()).getDenseI64ArrayAttr({splits.rows, splits.cols}));
  return success();
}

/// What a `split_k` directive cannot split, for its error ("" when it can): a GEMM's
/// (an f32 GEMM's only where clusters are: elsewhere it runs one slice).
std::string unsplittable(const Problem &problem) {
  if (problem.kind != ProblemKind::gemm)
    return "a " + spellKind(problem.kind).str();
  return "";
}

/// The `split_k` directive: checked, defaulted to `auto` for a GEMM whose BM and BN
/// are the defaults (an f32 one where clusters are), and a tensor-core GEMM's split form
/// recorded (plan::kSplitAttr; the f32 GEMM splits its own tile over a cluster,
/// EmitSimtGemm.cpp).
LogicalResult chooseSplit(KernelOp kernel, const Problem &problem, const Config &config,
                          StringRef arch) {
  kernel->removeAttr(plan::kSplitAttr);
  std::optional<StringRef> asked = kernel.getSplitK();
  std::string why = unsplittable(problem);
  if (asked && !why.empty())
    return kernel.emitError() << "directive 'split_k' splits the K loop of a GEMM, and '"
                              << kernel.getSymName() << "' is " << why;
  if (!asked) {
    bool defaultTile = config.from[kBM] == "the default" && config.from[kBN] == "the default";
    if (!why.empty() || !defaultTile || (!problem.tensorCores && !plan::hasClusters(arch)))
      return success();
    kernel.setSplitKAttr(Builder(kernel.getContext()).getStringAttr("auto"));
    asked = kernel.getSplitK();
  }
  if (!problem.tensorCores)
    return checkSimtSplit(kernel, config, *asked, arch);
  plan::SplitPlan split;
  split.stages = config.values[kStages];
  split.tileK = config.values[kBK];
  if (*asked == "auto") {
    using Rule = plan::SplitRule;
    split.tileM = std::min(Rule::tileM, config.values[kBM]);
    split.tileN = std::min(Rule::maxTileN, config.values[kBN]);
    split.warps = 4;
    split.cluster = arch == "sm_90a" &&
                    plan::wgmmaTileShape(split.tileM, split.tileN, problem.rhsKMajor);
    split.slices = split.cluster ? 0 : Rule::warpSlices;
    split.beside = true;
    if (split.cluster)
      split.stages = Rule::clusterStages(split.tileM, split.tileN, arch);
    if (plan::hasNarrowKernel(split, config.values[kBM], config.values[kBN],
                              config.values[kStages]))
      for (plan::SplitPlan::WaveTile tile : Rule::waveTiles(problem.rhsKMajor))
        if (tile.tileM * tile.tileN < config.values[kBM] * config.values[kBN])
          split.waveTiles.push_back(tile);
    if (!split.waveTiles.empty()) {
      split.tallStages = Rule::clusterStages(Rule::tallTile.tileM, Rule::tallTile.tileN, arch);
      split.squareStages =
          Rule::clusterStages(Rule::squareTile.tileM, Rule::squareTile.tileN, arch);
    }
  } else {
    int64_t slices = 0;
    asked->getAsInteger(10, slices);
    if (slices > plan::SplitRule::maxSlices)
      return kernel.emitError() << "split_k " << slices << " (from the program) is more than "
                                << plan::SplitRule::maxSlices
                                << " K slices (a portable cluster holds 8 blocks)";
    if (slices == 1)
      return success(); // one slice: the kernel as it is
    split.tileM = config.values[kBM];
    split.tileN = config.values[kBN];
    split.warps = config.values[kWarps];
    split.cluster = arch == "sm_90a" &&
                    plan::wgmmaTileShape(split.tileM, split.tileN, problem.rhsKMajor);
    split.slices = slices;
  }
  kernel->setAttr(plan::kSplitAttr, plan::toAttr(kernel.getContext(), split));
  return success();
}

/// sm_90a's wgmma GEMM runs BM / 16 warps (a warpgroup of 4 a 64 rows) whatever `warps`
/// says. Where the warps came from the default, the plan states that count, so that the
/// warp grid the analysis checks (warp tiles of multiples of 16 x 16) holds for every
/// wgmma tile: 64 x 16 does not split among the default's 8 warps.
void fitWgmmaWarps(const Problem &problem, Config &config, StringRef arch) {
  if (arch != "sm_90a" || problem.kind != ProblemKind::gemm || !problem.tensorCores)
    return;
  if (config.from[kWarps] != "the default" ||
      !plan::wgmmaTileShape(config.values[kBM], config.values[kBN], problem.rhsKMajor))
    return;
  config.values[kWarps] = config.values[kBM] / 16;
}

struct ChooseDefaultsPass : sketch::impl::ChooseDefaultsBase<ChooseDefaultsPass> {
  using ChooseDefaultsBase::ChooseDefaultsBase;

  /// Takes the command line over the rest.
  LogicalResult applyOverrides(KernelOp kernel, Config &config) {
    if (!tile.empty()) {
      auto values = parseTile(tile);
      if (!values)
        return emitError(kernel.getLoc(), "--tile ")
               << tile << ": expected BMxBNxBK, e.g. 128x128x32";
      for (int i = 0; i < 3; ++i) {
        config.values[i] = (*values)[i];
        config.from[i] = "the command line";
      }
    }
    if (warps != 0) {
      config.values[kWarps] = warps;
      config.from[kWarps] = "the command line";
    }
    if (stages != 0) {
      config.values[kStages] = stages;
      config.from[kStages] = "the command line";
    }
    return success();
  }

  /// b2b on sm_90: the configurations measured fastest on an H100 (BM 128, 8 warps
  /// of 16 rows, BK 64, 4 stages; BM 256 of 32-row warps first where D0 is staged
  /// in shared memory anyway), then smaller ones, the first whose plan
  /// (with the program's directives) fits shared memory; wide N0 staged in shared
  /// memory falls back to BM 64. None fitting (or the kernel not plannable yet): the
  /// table's default stays and sketch-choose-b2b-residency reports what must hold.
  void fitB2bDefaults(KernelOp kernel, const Problem &problem, Config &config) {
    if (!StringRef(arch).starts_with("sm_90") || !problem.tensorCores)
      return;
    // (5 stages measured no faster than 4, and where only 4 fit beside the persistent
    // blocks' own epilogue tiles it lost them: 8% slower at N0 = N1 = 128.)
    static constexpr int64_t kCandidates[][4] = {// BM, warps, BK, stages
                                                 {128, 8, 64, 4}, {128, 8, 64, 3}, {128, 8, 64, 2},
                                                 {64, 4, 64, 4},  {64, 4, 64, 3},  {64, 4, 64, 2}};
    // D0 staged at 16 rows a warp anyway, and GEMM-I still one pass at 32 rows: 256 rows
    // of 8 warps (32 rows each) first. Each B1 tile then serves twice the rows (measured on
    // an H100, back-to-back convolutions with N0 = 64, N1 = 256: 0.155 against 0.194 ms at
    // C64 56x56 3x3, 0.109 against 0.123 ms at C256 56x56 1x1; with N0 = 128, where GEMM-I
    // would run in two chunks, 0.177 against 0.133 ms; bench/bench_conv_b2b.py).
    static constexpr int64_t kStagedCandidates[][4] = {{256, 8, 64, 2}};
    if (!b2b::registersHold(16, problem.n0, problem.n1) &&
        b2b::stagedFirstGemmInOnePass(32, problem.n0) &&
        tryB2bCandidates(kernel, problem, config, kStagedCandidates))
      return;
    tryB2bCandidates(kernel, problem, config, kCandidates);
  }

  /// The first of `candidates` whose plan (with the program's directives) fits shared
  /// memory becomes `config`'s tile, warps and stages; false when none does.
  template <size_t N>
  bool tryB2bCandidates(KernelOp kernel, const Problem &problem, Config &config,
                        const int64_t (&candidates)[N][4]) {
    Builder b(kernel.getContext());
    ScopedDiagnosticHandler quiet(kernel.getContext(), [](Diagnostic &) { return success(); });
    // The trials set the kernel's attributes (the plan reads them); put back as found.
    std::optional<uint64_t> saved[5] = {kernel.getTileM(), kernel.getTileN(), kernel.getTileK(),
                                        kernel.getWarps(), kernel.getStages()};
    auto setAll = [&](const std::optional<uint64_t>(&values)[5]) {
      auto attr = [&](int i) {
        return values[i] ? b.getI64IntegerAttr(static_cast<int64_t>(*values[i])) : IntegerAttr();
      };
      kernel.setTileMAttr(attr(kBM));
      kernel.setTileNAttr(attr(kBN));
      kernel.setTileKAttr(attr(kBK));
      kernel.setWarpsAttr(attr(kWarps));
      kernel.setStagesAttr(attr(kStages));
    };
    for (const auto &candidate : candidates) {
      Config trial = config;
      int64_t values[5] = {candidate[0], problem.n0, candidate[2], candidate[1], candidate[3]};
      for (int i = 0; i < 5; ++i)
        trial.values[i] = values[i];
      applyDirectives(kernel, trial);
      if (failed(applyOverrides(kernel, trial)) || failed(validate(kernel, problem, trial)))
        continue;
      std::optional<uint64_t> tried[5];
      for (int i = 0; i < 5; ++i)
        tried[i] = static_cast<uint64_t>(trial.values[i]);
      setAll(tried);
      FailureOr<int64_t> bytes = b2b::b2bSharedMemoryBytes(kernel, arch);
      setAll(saved);
      if (succeeded(bytes) && *bytes <= plan::smemLimitBytes(arch)) {
        for (int i = 0; i < 5; ++i)
          config.values[i] = values[i];
        return true;
      }
    }
    return false;
  }

  LogicalResult choose(KernelOp kernel) {
    if (arch != "sm_80" && arch != "sm_90" && arch != "sm_90a")
      return emitError(kernel.getLoc(), "unknown target '")
             << arch << "': expected sm_80, sm_90 or sm_90a";
    Problem problem = classify(kernel);
    if (kernel.getAlgorithm() && problem.kind != ProblemKind::conv)
      return kernel.emitError() << "directive 'algorithm' picks a convolution's kernel, and '"
                                << kernel.getSymName() << "' has no Conv2d";
    if (problem.kind == ProblemKind::conv && failed(checkConvAlgorithm(kernel)))
      return failure();
    auto config = defaultsFor(kernel, problem, arch);
    if (failed(config))
      return failure();
    if (problem.kind == ProblemKind::b2b)
      fitB2bDefaults(kernel, problem, *config);
    applyDirectives(kernel, *config);
    if (failed(applyOverrides(kernel, *config)))
      return failure();
    // The program's values in range before the fits below compute with them (warps
    // 9223372036854775807 overflowed 16 x warps in an attention kernel's tile rule).
    if (failed(validate(kernel, problem, *config)))
      return failure();
    fitAttentionStages(problem, *config, arch);
    fitWgmmaWarps(problem, *config, arch);
    if (failed(validate(kernel, problem, *config)))
      return failure();
    if (isSimtGemm(problem) && failed(chooseSimtWarps(kernel, *config, arch, false, "f32 GEMM")))
      return failure();
    markSimt(kernel, problem);
    kernel->removeAttr(plan::kNarrowVariantAttr);
    kernel->removeAttr(plan::kTallVariantAttr);
    markHopperAttention(kernel, problem, *config, arch);
    if (isSimtConv(kernel, problem)) {
      bool nchw = !isNhwcConv(kernel); // nhwc tiles are dealt like the GEMM's, no narrow variant
      std::string what = (spellElementType(problem.element) + (nchw ? " nchw" : " nhwc") +
                          " convolution").str();
      if (failed(chooseSimtWarps(kernel, *config, arch, nchw, what)))
        return failure();
      if (nchw)
        chooseNarrowVariant(kernel, *config, arch, true);
    } else if (problem.kind == ProblemKind::conv && problem.tensorCores) {
      chooseNarrowVariant(kernel, *config, arch, false);
      chooseTallVariant(kernel, *config, arch, problem);
    }
    recordF64Mma(kernel, problem, *config, arch);
    Builder b(kernel.getContext());
    kernel.setTileMAttr(b.getI64IntegerAttr(config->values[kBM]));
    kernel.setTileNAttr(b.getI64IntegerAttr(config->values[kBN]));
    kernel.setTileKAttr(b.getI64IntegerAttr(config->values[kBK]));
    kernel.setWarpsAttr(b.getI64IntegerAttr(config->values[kWarps]));
    kernel.setStagesAttr(b.getI64IntegerAttr(config->values[kStages]));
    return chooseSplit(kernel, problem, *config, arch);
  }

  void runOnOperation() override {
    for (KernelOp kernel : getOperation().getOps<KernelOp>())
      if (failed(choose(kernel)))
        signalPassFailure();
  }
};

} // namespace
