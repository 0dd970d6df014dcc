//===- BackendPlan.cpp - attributes of the backend passes -----------------===//
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/SimtTile.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace sketch::plan {

static NamedAttribute named(Builder &b, StringRef name, int64_t value) {
  return b.getNamedAttr(name, b.getI64IntegerAttr(value));
}

static std::optional<int64_t> getInt(DictionaryAttr dict, StringRef name) {
  if (auto attr = dict.getAs<IntegerAttr>(name))
    return attr.getInt();
  return std::nullopt;
}

/// An integer field of a plan struct and its attribute's name: each struct's list below
/// serves both its toAttr and its ...From.
template <typename Struct>
struct IntField {
  const char *name;
  int64_t Struct::*member;
};

constexpr IntField<SmemBuffer> kSmemBufferFields[] = {
    {"offset", &SmemBuffer::offset},       {"stage_bytes", &SmemBuffer::stageBytes},
    {"stages", &SmemBuffer::stages},       {"rows", &SmemBuffer::rows},
    {"cols", &SmemBuffer::cols},           {"element_bytes", &SmemBuffer::elementBytes},
    {"row_bytes", &SmemBuffer::rowBytes},  {"xor_shift", &SmemBuffer::xorShift},
    {"xor_mask", &SmemBuffer::xorMask}};

constexpr IntField<StagingBuffer> kStagingBufferFields[] = {
    {"offset", &StagingBuffer::offset}, {"rows", &StagingBuffer::rows},
    {"cols", &StagingBuffer::cols},     {"ld", &StagingBuffer::ld},
    {"element_bytes", &StagingBuffer::elementBytes}};

constexpr IntField<SplitPlan> kSplitPlanFields[] = {
    {"tile_m", &SplitPlan::tileM},   {"tile_n", &SplitPlan::tileN},
    {"tile_k", &SplitPlan::tileK},   {"warps", &SplitPlan::warps},
    {"stages", &SplitPlan::stages},  {"slices", &SplitPlan::slices},
    {"tall_stages", &SplitPlan::tallStages}, {"square_stages", &SplitPlan::squareStages}};

template <typename Struct, size_t N>
static SmallVector<NamedAttribute> intFields(Builder &b, const Struct &value,
                                             const IntField<Struct> (&fields)[N]) {
  SmallVector<NamedAttribute> attrs;
  for (const IntField<Struct> &field : fields)
    attrs.push_back(named(b, field.name, value.*field.member));
  return attrs;
}

/// Whether `dict` has every field; reads them into `value`.
template <typename Struct, size_t N>
static bool readIntFields(DictionaryAttr dict, const IntField<Struct> (&fields)[N],
                          Struct &value) {
  for (const IntField<Struct> &field : fields) {
    std::optional<int64_t> read = getInt(dict, field.name);
    if (!read)
      return false;
    value.*field.member = *read;
  }
  return true;
}

DictionaryAttr toAttr(MLIRContext *context, const SmemBuffer &buffer) {
  Builder b(context);
  SmallVector<NamedAttribute> fields = intFields(b, buffer, kSmemBufferFields);
  fields.push_back(b.getNamedAttr("layout", b.getStringAttr(buffer.layout)));
  return b.getDictionaryAttr(fields);
}

std::optional<SmemBuffer> smemBufferFrom(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  SmemBuffer buffer;
  if (!dict || !readIntFields(dict, kSmemBufferFields, buffer))
    return std::nullopt;
  auto layout = dict.getAs<StringAttr>("layout");
  if (!layout)
    return std::nullopt;
  buffer.layout = layout.str();
  return buffer;
}

DictionaryAttr toAttr(MLIRContext *context, const StagingBuffer &buffer) {
  Builder b(context);
  return b.getDictionaryAttr(intFields(b, buffer, kStagingBufferFields));
}

std::optional<StagingBuffer> stagingBufferFrom(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  StagingBuffer buffer;
  if (!dict || !readIntFields(dict, kStagingBufferFields, buffer))
    return std::nullopt;
  return buffer;
}

DictionaryAttr toAttr(MLIRContext *context, const SplitPlan &split) {
  Builder b(context);
  SmallVector<NamedAttribute> fields = intFields(b, split, kSplitPlanFields);
  fields.push_back(named(b, "cluster", split.cluster));
  fields.push_back(named(b, "beside", split.beside));
  SmallVector<int64_t> waveM, waveN, waveStages;
  for (const SplitPlan::WaveTile &tile : split.waveTiles) {
    waveM.push_back(tile.tileM);
    waveN.push_back(tile.tileN);
    waveStages.push_back(tile.stages);
  }
  fields.push_back(b.getNamedAttr("wave_m", b.getDenseI64ArrayAttr(waveM)));
  fields.push_back(b.getNamedAttr("wave_n", b.getDenseI64ArrayAttr(waveN)));
  fields.push_back(b.getNamedAttr("wave_stages", b.getDenseI64ArrayAttr(waveStages)));
  return b.getDictionaryAttr(fields);
}

std::optional<SplitPlan> splitPlanFrom(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  SplitPlan split;
  if (!dict || !readIntFields(dict, kSplitPlanFields, split))
    return std::nullopt;
  auto cluster = getInt(dict, "cluster"), beside = getInt(dict, "beside");
  auto waveM = dict.getAs<DenseI64ArrayAttr>("wave_m"),
       waveN = dict.getAs<DenseI64ArrayAttr>("wave_n"),
       waveStages = dict.getAs<DenseI64ArrayAttr>("wave_stages");
  if (!cluster || !beside || !waveM || !waveN || !waveStages || waveM.size() != waveN.size() ||
      waveN.size() != waveStages.size())
    return std::nullopt;
  split.cluster = *cluster != 0;
  split.beside = *beside != 0;
  for (auto [tileM, tileN, stages] :
       llvm::zip_equal(waveM.asArrayRef(), waveN.asArrayRef(), waveStages.asArrayRef()))
    split.waveTiles.push_back({tileM, tileN, stages});
  return split;
}

bool hasNarrowKernel(const SplitPlan &split, int64_t tileM, int64_t tileN, int64_t stages) {
  return split.cluster && split.beside &&
         (split.tileM != tileM || split.tileN != tileN || split.stages != stages);
}

int64_t SplitRule::clusterStages(int64_t tileM, int64_t tileN, llvm::StringRef arch) {
  constexpr int64_t kWgmmaTileK = 64, kReserve = 2048; // alignment, mbarriers
  int64_t perStage = (tileM + tileN) * kWgmmaTileK * 2;
  return std::clamp<int64_t>((smemLimitBytes(arch) - kReserve) / perStage, 3, 8);
}

bool chooseWarpGrid(int64_t tileM, int64_t tileN, int64_t warps, int64_t &warpsM, int64_t &warpsN) {
  int64_t best = -1;
  for (int64_t wm = 1; wm <= warps; ++wm) {
    if (warps % wm)
      continue;
    int64_t wn = warps / wm;
    if (tileM % (16 * wm) || tileN % (16 * wn))
      continue;
    int64_t imbalance = std::abs(tileM / wm - tileN / wn);
    if (best < 0 || imbalance < best) {
      best = imbalance;
      warpsM = wm;
      warpsN = wn;
    }
  }
  return best >= 0;
}

int64_t mmaSyncThreadRegisters(int64_t warpM, int64_t warpN) {
  int64_t accumulators = warpM * warpN / 32;
  int64_t fragments = 2 * ((warpM / 16) * 4 + (warpN / 8) * 2);
  return accumulators + fragments + 40;
}

namespace {

/// Whether a consumer thread's tileN / 2 f32 accumulators and kWgmmaConvReservedRegisters
/// fit the registers ptxas gives the warp-specialized kernel of a tileM-row tile (a
/// producer warpgroup beside tileM / 64 consumer ones; 65536 over its threads, at most 255
/// each, in steps of 8).
bool warpSpecializedAccumulatorsFit(int64_t tileM, int64_t tileN) {
  int64_t threads = tileM * 2 + 128;
  int64_t cap = std::min<int64_t>(65536 / threads, 255) / 8 * 8;
  return tileN / 2 + kWgmmaConvReservedRegisters <= cap;
}

} // namespace

bool wgmmaTileShape(int64_t tileM, int64_t tileN, bool bKMajor) {
  int64_t step = bKMajor ? 16 : 64;
  if (tileM < 64 || tileM > 192 || tileM % 64 != 0 || tileN < step || tileN > 256 ||
      tileN % step != 0)
    return false;
  if (tileM <= 128)
    return true;
  // 192 rows, a consumer warpgroup per 64: a consumer thread's accumulators and the rest
  // fit the persistent kernel's 512 threads (128 registers each) ... (256 rows, 96 registers
  // at 640 threads: a batched element path of 256 x 64 spilled 4 bytes)
  if (!warpSpecializedAccumulatorsFit(tileM, tileN))
    return false;
  // ... and the GEMM analysis's warp grid of tileM / 16 warps keeps the mma.sync rules it
  // checks for every kernel (analyzeGemm)
  int64_t warps = tileM / 16, warpsM = 0, warpsN = 0;
  if (!chooseWarpGrid(tileM, tileN, warps, warpsM, warpsN))
    return false;
  int64_t warpM = tileM / warpsM, warpN = tileN / warpsN;
  return warpM * warpN / 32 <= 128 && mmaSyncThreadRegisters(warpM, warpN) * 32 * warps <= 65536;
}

std::optional<SmallVector<int64_t, 4>> variantTile(Operation *kernel, StringRef name, size_t size) {
  auto variant = kernel->getAttrOfType<ArrayAttr>(name);
  if (!variant || variant.size() != size)
    return std::nullopt;
  SmallVector<int64_t, 4> values;
  for (Attribute value : variant)
    values.push_back(cast<IntegerAttr>(value).getInt());
  return values;
}

bool wgmmaConvTileShape(int64_t tileM, int64_t tileN) {
  if (tileM < 64 || tileM > 256 || tileM % 64 != 0)
    return false;
  if (tileN != 64 && tileN != 128 && tileN != 256)
    return false;
  return warpSpecializedAccumulatorsFit(tileM, tileN);
}

int64_t stagingLd(int64_t cols, int64_t elementBytes) {
  int64_t rowWords = cols * elementBytes / 4;
  int64_t target = elementBytes == 2 ? 4 : 8;
  int64_t padWords = ((target - rowWords % 32) % 32 + 32) % 32;
  return cols + padWords * 4 / elementBytes;
}

SmemBuffer chooseLayout(int64_t rows, int64_t cols, int64_t elementBytes) {
  SmemBuffer buffer;
  buffer.rows = rows;
  buffer.cols = cols;
  buffer.elementBytes = elementBytes;
  int64_t bytes = cols * elementBytes;
  int64_t chunks = bytes / 16;
  bool powerOfTwo = chunks > 0 && (chunks & (chunks - 1)) == 0;
  if (bytes % 16 == 0 && powerOfTwo && elementBytes == 2) {
    // 8 consecutive rows read by ldmatrix (same logical chunk) must land in 8
    // different 16-byte bank groups of a 128-byte line.
    buffer.layout = "xor";
    buffer.rowBytes = bytes;
    if (chunks >= 8) {
      buffer.xorShift = 0;
      buffer.xorMask = 7;
    } else {
      int64_t rowsPerLine = 8 / chunks; // rows sharing one 128-byte line
      buffer.xorShift = llvm::Log2_64(rowsPerLine);
      buffer.xorMask = chunks - 1;
    }
  } else {
    // One 16-byte chunk of padding a row shifts consecutive rows by one bank group.
    buffer.layout = "pad";
    buffer.rowBytes = (bytes + 15) / 16 * 16 + 16;
  }
  buffer.stageBytes = buffer.rowBytes * rows;
  return buffer;
}

SmemBuffer simtOperandLayout(int64_t depth, int64_t extent) {
  SmemBuffer buffer;
  buffer.layout = "k_major";
  buffer.rows = depth;
  buffer.cols = extent;
  buffer.elementBytes = 4;
  buffer.rowBytes = simtPaddedRow(extent) * 4;
  buffer.stageBytes = buffer.rowBytes * depth;
  return buffer;
}

int64_t elementBytes(ElementType type) { return type == ElementType::f32 ? 4 : 2; }

std::optional<int64_t> evalTileDim(KernelOp kernel, StringRef expr) {
  int64_t product = 1;
  SmallVector<StringRef> factors;
  expr.split(factors, '*');
  for (StringRef factor : factors) {
    factor = factor.trim();
    int64_t value = 0;
    if (!factor.getAsInteger(10, value)) {
      product *= value;
      continue;
    }
    std::optional<uint64_t> directive;
    if (factor == "BM")
      directive = kernel.getTileM();
    else if (factor == "BN")
      directive = kernel.getTileN();
    else if (factor == "BK")
      directive = kernel.getTileK();
    if (!directive)
      return std::nullopt;
    product *= static_cast<int64_t>(*directive);
  }
  return product;
}

int64_t smemLimitBytes(StringRef arch) {
  if (arch == "sm_90a" || arch == "sm_90")
    return 232448; // 227 KB
  if (arch == "sm_80")
    return 166912; // 163 KB
  return 49152;
}

bool AttentionTiles::fitsRegisters() const {
  return outputRegisters() + scoreRegisters() <= kAttentionAccumulatorRegisters &&
         scoreRegisters() <= kAttentionScoreRegisters;
}

bool AttentionTiles::wgmmaTakes(int64_t dqk, int64_t dv) {
  return dqk % 16 == 0 && dv % 16 == 0 && dqk <= 256 && dv <= 256;
}

int64_t AttentionTiles::panelColumns(int64_t d) { return (d + 63) / 64 * 64; }

/// What setmaxnreg may give each of `consumers` threads of a block when `blocks` blocks share
/// the SM's 65536 registers (the producer warpgroup keeping kAttentionProducerRegisters).
static int64_t consumerShare(int64_t consumers, int64_t blocks) {
  int64_t share = (65536 / blocks - kAttentionProducerRegisters * 128) / consumers / 8 * 8;
  return std::min(share, kAttentionConsumerRegisters);
}

int64_t AttentionTiles::blocksPerSm() const {
  constexpr int64_t kReservePerBlock = 1024, kSmemPerSm = 233472; // sm_90a: 228 KB
  bool two = wgmma && bm == 64 && work == ScoreWork::scaling &&
             smemBytes() <= kSmemPerSm / 2 - kReservePerBlock &&
             consumerRegistersNeeded() <= consumerShare(128, 2);
  return two ? 2 : 1;
}

int64_t AttentionTiles::consumerRegisters() const {
  return consumerShare(std::max<int64_t>(1, bm / 64) * 128, blocksPerSm());
}

bool AttentionTiles::wgmmaFits(StringRef arch) const {
  return bm > 0 && bm % 64 == 0 && bm == 16 * warps && bn > 0 && bn % 64 == 0 &&
         bn / 2 <= kAttentionScoreRegisters && smemBytes() <= smemLimitBytes(arch) &&
         consumerRegistersNeeded() <= consumerRegisters();
}

bool AttentionTiles::hopperTakes(StringRef arch) const {
  AttentionTiles hopper = *this;
  hopper.wgmma = true;
  return arch == "sm_90a" && wgmmaTakes(dqk, dv) && stages >= 2 &&
         hopper.wgmmaFits(arch);
}

AttentionTiles AttentionTiles::withMostStages(StringRef arch) const {
  AttentionTiles best = *this, more = *this;
  for (more.stages = stages + 1; more.stages <= kAttentionMostStages && more.wgmmaFits(arch) &&
                                 more.blocksPerSm() >= blocksPerSm();
       ++more.stages)
    best = more;
  return best;
}

AttentionTiles AttentionTiles::defaults(int64_t dqk, int64_t dv, bool alike, bool masked,
                                        StringRef arch, ScoreWork work) {
  const bool loads = work == ScoreWork::loads;
  // sm_90a (FlashAttention-3's tiles): 128 keys a step where O and the scores fit the
  // consumers' registers, else 64; three consumer warpgroups while the estimate also
  // stays within 65536 / threads (128 at 512 threads), stricter than the 160 setmaxnreg
  // gives them there (ptxas allocates the consumers' code by it): with the scores of the
  // next key tile in flight beside P V (the pipelined loop), d = 64 at 192 x 128 spills
  // 316 bytes at 160 registers, while two warpgroups (240) do not.
  if (arch == "sm_90a" && wgmmaTakes(dqk, dv)) {
    // One consumer warpgroup of 128 keys a step, two blocks an SM, where those fit (d <= 64)
    // and the scores GEMM is more than one k16 step (d_qk = 16 is the softmax's pace, which
    // three warpgroups of one block kept better: 7% at 192 x 64). H200, 2026-11-29, against
    // the previous defaults: d = 64 4.5% faster, causal 8%; d = 32 5% and 8%; d = 48 0.5% and
    // 7%; d = 16 7% and 2% slower.
    AttentionTiles two{64, 128, 4, dqk, dv, alike, true};
    two.work = work;
    if (dqk > 16 && two.wgmmaFits(arch) && two.blocksPerSm() == 2)
      return two.withMostStages(arch);
    AttentionTiles tiles{128, 128, 8, dqk, dv, alike, true};
    if (!tiles.wgmmaFits(arch) || loads)
      tiles.bn = 64;
    // A load a score (d = 64 and 128 spilled 150-190 bytes at 128 x 128; 2026-11-29).
    if (loads && tiles.wgmmaFits(arch))
      return tiles.withMostStages(arch);
    AttentionTiles three = tiles;
    three.bm = 192;
    three.warps = 12;
    auto threeFit = [&] {
      return three.wgmmaFits(arch) &&
             three.consumerRegistersNeeded() <= 65536 / (128 * (1 + three.bm / 64));
    };
    if (threeFit())
      return three.withMostStages(arch);
    // Without a mask, three warpgroups at 64 keys a step where 128 keys do not fit them:
    // d = 64 ran 192 x 64 2-4% faster than 128 x 128 (three H100 runs), while with a
    // causal mask 128 x 128 stayed 5% faster (its diagonal tiles are masked per key).
    three.bn = 64;
    if (!masked && tiles.bn == 128 && threeFit())
      return three.withMostStages(arch);
    if (tiles.wgmmaFits(arch))
      return tiles.withMostStages(arch);
  }
  // Functions or loads a score: 16 rows a warp (8 warps; at 32 rows sm_80 spilled 56 bytes
  // with soft-capping at d = 128, 168 with three tensors at d = 64).
  AttentionTiles tiles{128, 64, work == ScoreWork::scaling ? 4 : 8, dqk, dv, alike};
  int64_t budget = alike ? kAttentionAlikeRegisters : kAttentionOtherRegisters;
  if (tiles.outputRegisters() + tiles.scoreRegisters() > budget || !tiles.fitsRegisters() ||
      tiles.smemBytes() > smemLimitBytes(arch)) {
    tiles.bm = 64;
    tiles.warps = 4;
  }
  if (!alike && tiles.bm == 64 &&
      tiles.outputRegisters() + tiles.scoreRegisters() > kAttentionOtherNarrowRegisters)
    tiles.bn = 32;
  return tiles;
}

namespace {
std::optional<SmallVector<int64_t>> matchDimsImpl(ArrayRef<std::string> dims,
                                                  ArrayRef<std::string> target, bool units) {
  SmallVector<int64_t> positions(dims.size(), -1);
  int64_t limit = static_cast<int64_t>(target.size());
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    int64_t found = -1;
    for (int64_t j = limit - 1; j >= 0 && found < 0; --j)
      if (target[j] == dims[i])
        found = j;
    if (found < 0 && units && dims[i] == "1") {
      positions[i] = kUnitDim;
      continue;
    }
    if (found < 0)
      return std::nullopt;
    positions[i] = found;
    limit = found;
  }
  return positions;
}
} // namespace

std::optional<SmallVector<int64_t>> matchDims(ArrayRef<std::string> dims,
                                              ArrayRef<std::string> target) {
  return matchDimsImpl(dims, target, false);
}

std::optional<SmallVector<int64_t>> matchBroadcastDims(ArrayRef<std::string> dims,
                                                       ArrayRef<std::string> target) {
  return matchDimsImpl(dims, target, true);
}

SmallVector<std::string> indexNames(ArrayRef<int64_t> positions, int64_t targetRank) {
  SmallVector<std::string> names;
  for (int64_t p : positions) {
    if (p == kUnitDim)
      names.push_back("unit");
    else if (p == targetRank - 1)
      names.push_back("col");
    else if (p == targetRank - 2)
      names.push_back("row");
    else
      names.push_back("batch" + std::to_string(p));
  }
  return names;
}

bool callsFunctions(Operation *statement) { return functionCalls(statement) > 0; }

int64_t functionCalls(Operation *statement) {
  if (auto elementwise = dyn_cast<ElementwiseOp>(statement)) {
    ElementwiseKind kind = elementwise.getKind();
    return kind == ElementwiseKind::gelu || kind == ElementwiseKind::silu ||
           kind == ElementwiseKind::sigmoid || kind == ElementwiseKind::tanh;
  }
  int64_t calls = 0;
  statement->walk([&](CallOp call) {
    calls += call.getCallee() != CallKind::relu && call.getCallee() != CallKind::leaky_relu;
  });
  return calls;
}

std::vector<std::string> tensorDims(KernelOp kernel, StringRef name) {
  std::vector<std::string> dims;
  if (auto param = dyn_cast_or_null<TensorParamOp>(kernel.lookupTensorParam(name)))
    for (Attribute dim : param.getDims())
      dims.push_back(cast<StringAttr>(dim).str());
  return dims;
}

ForOp findMainLoop(KernelOp kernel) {
  for (Operation &op : kernel.getBodyBlock()) {
    auto loop = dyn_cast<ForOp>(op);
    if (!loop)
      continue;
    bool computes = false;
    loop.walk([&](Operation *inner) { computes |= isa<GemmOp, Conv2dOp>(inner); });
    if (computes)
      return loop;
  }
  return nullptr;
}

SmallVector<CopyOp> findResultStores(KernelOp kernel) {
  SmallVector<CopyOp> stores;
  kernel.walk([&](CopyOp copy) {
    if (copy.getSource() == MemorySpace::reg && copy.getDestination() == MemorySpace::global)
      stores.push_back(copy);
  });
  return stores;
}

WinogradBlock WinogradBlock::forOutputTile(int64_t m, bool nhwc) {
  WinogradBlock block;
  block.m = m;
  block.nhwc = nhwc;
  if (m == 2) // 16 components: a warp each, 32 tiles x 64 channels (8 x 8 a thread)
    block.tiles = 32, block.warps = 16;
  return block;
}

WinogradBlock winogradBlockOf(Conv2dOp conv) {
  auto algorithm = conv->getAttrOfType<StringAttr>(kConvAlgorithmAttr);
  bool nhwc = false;
  if (auto kernel = conv->getParentOfType<KernelOp>())
    if (auto shape = convShape(kernel, conv); shape && shape->input)
      nhwc = shape->input.getLayout() == Layout::nhwc;
  return WinogradBlock::forOutputTile(algorithm ? winogradOutputTile(algorithm.getValue()) : 4,
                                      nhwc);
}

int64_t winogradOutputTile(llvm::StringRef algorithm) {
  return llvm::StringSwitch<int64_t>(algorithm)
      .Case("winograd", 4)
      .Case("winograd_2x2", 2)
      .Default(0);
}

std::string winogradMismatch(KernelOp kernel, Conv2dOp conv) {
  auto shape = convShape(kernel, conv);
  if (!shape || !shape->input || !shape->output)
    return "its input and output are not 4-D tensor parameters";
  for (TensorParamOp param : {shape->input, shape->filter, shape->output})
    if (param.getElementType() != ElementType::f32)
      return "'" + param.getName().str() + "' is " +
             stringifyElementType(param.getElementType()).str() + ", not f32";
  // (either activation layout with either filter layout; the output takes the input's)
  auto layoutOf = [](TensorParamOp param) { return param.getLayout().value_or(Layout::nchw); };
  if (layoutOf(shape->output) != layoutOf(shape->input))
    return "its output's layout is not its input's";
  if (evaluateExpr(shape->r) != 3 || evaluateExpr(shape->s) != 3)
    return "the filter is " + shape->r + "x" + shape->s + ", not 3x3 (write its sizes as 3)";
  auto stride = conv.getStride(), dil = conv.getDilation();
  if (stride[0] != 1 || stride[1] != 1)
    return "its stride is (" + std::to_string(stride[0]) + ", " + std::to_string(stride[1]) + ")";
  if (dil[0] != 1 || dil[1] != 1)
    return "its dilation is (" + std::to_string(dil[0]) + ", " + std::to_string(dil[1]) + ")";
  return "";
}

llvm::StringRef convAlgorithm(KernelOp kernel, Conv2dOp conv) {
  if (std::optional<llvm::StringRef> asked = kernel.getAlgorithm())
    return *asked;
  return winogradMismatch(kernel, conv).empty() ? "winograd" : "implicit_gemm";
}

std::optional<Conv2dOp> winogradConv(KernelOp kernel) {
  std::optional<Conv2dOp> found;
  kernel.walk([&](Conv2dOp conv) {
    if (auto algorithm = conv->getAttrOfType<StringAttr>(kConvAlgorithmAttr);
        algorithm && winogradOutputTile(algorithm.getValue()))
      found = conv;
  });
  return found;
}

} // namespace sketch::plan
