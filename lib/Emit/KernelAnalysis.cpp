//===- KernelAnalysis.cpp - a completed kernel as plain data --------------===//
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Emit/CudaWriter.h"
#include "lib/Frontend/TakenNames.h"
#include "lib/Passes/ChooseB2bResidency.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace sketch {

//===----------------------------------------------------------------------===//
// Names and literals
//===----------------------------------------------------------------------===//

std::string cTypeOf(ElementType type) {
  switch (type) {
  case ElementType::f16:
    return "__half";
  case ElementType::bf16:
    return "__nv_bfloat16";
  case ElementType::f32:
    return "float";
  }
  return "float";
}

std::string cIdent(StringRef name) {
  static const llvm::StringSet<> reserved = {
      // CUDA built-ins
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "stream", "sketch", "min", "max",
      // names the generated code declares itself
      "smem", "smem_base", "tid", "lane", "warp", "warp_m", "warp_n", "acc", "a_frag", "b_frag",
      "a_frag_off", "b_frag_off", "a_frag_r", "b_frag_r", "a_frag_row", "b_frag_row", "a_frag_x",
      "b_frag_x", "staged", "vals", "a_smem", "b_smem", "k_tiles", "kt", "kk", "mi", "ni", "np",
      "i", "j", "h", "e", "s", "n", "step", "pred", "LD", "BM", "BN", "BK", "WM", "WN", "MI", "NI",
      "KI", "STAGES", "THREADS", "WARPS_M", "WARPS_N", "A_STAGE_BYTES", "B_STAGE_BYTES", "r", "c",
      "g", "t", "z", "row", "col", "idx", "size_m", "size_n", "size_k", "tiles_m", "tiles_n",
      "tile_m", "tile_n", "m0", "n0", "a_src", "b_src", "d_dst", "load_a", "load_b", "read_stage",
      "write_stage", "a_stage", "b_stage", "out", "src", "dst", "err", "vec", "kernel", "batch",
      "tiles", "smem_bytes", "group", "first", "rows", "next", "value",
      // the wgmma GEMM's TMA pipeline (WgmmaGemm.cpp)
      "a_map", "b_map", "maps", "bars", "load_stage", "full", "done",
      // the split-K kernels and their host dispatch (EmitGemm.cpp, TensorCoreGemm.cpp)
      "slice", "slices", "SLICES", "SLICE_SMEM_BYTES", "k_per", "k0", "k_len", "k_first",
      "partial", "slice_tile", "rows_in", "chunks", "chunk_end", "at", "sum", "q", "sms",
      "split_tiles",
      // names the SIMT and convolution kernels declare (EmitSimtGemm.cpp, EmitConv*.cpp)
      "micro", "batches", "shape", "pixel", "pixels", "image", "channel", "x_src", "w_src", "y_dst",
      "load_x", "load_w", "pq", "ROWS", "COLS", "DEPTH", "THREADS"};
  if (reserved.contains(name) || isCxxKeyword(name) || declaredByCudaHeaders(name) ||
      name.starts_with("v_") || name.starts_with("bidx") || name.starts_with("__"))
    return name.str() + "_";
  return name.str();
}

std::string floatLiteral(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  std::string text = buffer;
  if (text.find_first_of(".eEn") == std::string::npos) // inf/nan never reach here
    text += ".0";
  return text + "f";
}

//===----------------------------------------------------------------------===//
// Signature
//===----------------------------------------------------------------------===//

void KernelSignature::requireTensorAlignment(int64_t bytes) {
  for (ParamInfo &param : params)
    if (param.isTensor)
      param.alignment = std::max(param.alignment, bytes);
}

const ParamInfo *KernelSignature::find(StringRef name) const {
  for (const ParamInfo &param : params)
    if (param.name == name)
      return &param;
  return nullptr;
}

static bool isIdentifier(StringRef text) {
  return !text.empty() && (llvm::isAlpha(text[0]) || text[0] == '_') &&
         llvm::all_of(text, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

std::string KernelSignature::dim(StringRef dimension) const {
  auto it = bound.find(dimension);
  if (it != bound.end())
    return std::to_string(it->second);
  if (isIdentifier(dimension))
    return cIdent(dimension);
  return dimension.str();
}

std::string KernelSignature::product(ArrayRef<std::string> dims) const {
  if (dims.empty())
    return "1";
  std::string text;
  for (const std::string &d : dims)
    text += (text.empty() ? "" : " * ") + dim(d);
  return text;
}

/// Compile-time bindings recorded on the kernel or module as `sketch.bindings`.
static void readBindings(KernelOp kernel, llvm::StringMap<int64_t> &bound) {
  for (Operation *op = kernel; op; op = op->getParentOp())
    if (auto dict = op->getAttrOfType<DictionaryAttr>("sketch.bindings"))
      for (NamedAttribute entry : dict)
        if (auto value = dyn_cast<IntegerAttr>(entry.getValue()))
          bound.try_emplace(entry.getName().getValue(), value.getInt());
}

FailureOr<TileDirectives> readTileDirectives(KernelOp kernel) {
  auto tm = kernel.getTileM(), tn = kernel.getTileN(), tk = kernel.getTileK();
  auto warps = kernel.getWarps(), stages = kernel.getStages();
  if (!tm || !tn || !tk || !warps || !stages) {
    kernel.emitError() << "kernel '" << kernel.getSymName()
                       << "' has no tile, warps or stages directive; the compile pipeline "
                          "chooses them";
    return failure();
  }
  return TileDirectives{int64_t(*tm), int64_t(*tn), int64_t(*tk), int64_t(*warps),
                        int64_t(*stages)};
}

KernelSignature analyzeSignature(KernelOp kernel, ArrayRef<std::string> derived) {
  KernelSignature sig;
  sig.name = kernel.getSymName().str();
  if (auto publicName = kernel->getAttrOfType<mlir::StringAttr>(kVariantOfAttr)) {
    sig.exported = false;
    sig.variantOf = publicName.str();
  }
  readBindings(kernel, sig.bound);
  llvm::StringSet<> written, read;
  kernel.walk([&](CopyOp copy) {
    if (copy.getDestination() == MemorySpace::global)
      written.insert(copy.getName());
    if (copy.getSource() == MemorySpace::global)
      read.insert(copy.getName());
  });
  // Epilogue statements read the global tensors they index (sketch-fuse-epilogue).
  kernel.walk([&](Operation *op) {
    if (!op->hasAttr(plan::kIndexAttr))
      return;
    if (auto ref = dyn_cast<RefOp>(op))
      read.insert(ref.getName());
    else if (auto elementwise = dyn_cast<ElementwiseOp>(op); elementwise && !elementwise.getOperands().empty())
      read.insert(cast<StringAttr>(elementwise.getOperands()[0]).getValue());
  });
  llvm::StringSet<> seen;
  for (Operation &op : kernel.getBodyBlock()) {
    ParamInfo info;
    info.op = &op;
    if (auto tensor = dyn_cast<TensorParamOp>(op)) {
      info.name = tensor.getName().str();
      info.isTensor = true;
      info.type = tensor.getElementType();
      info.layout = tensor.getLayout();
      for (Attribute dim : tensor.getDims())
        info.dims.push_back(cast<StringAttr>(dim).str());
      info.written = written.contains(info.name);
      info.read = read.contains(info.name);
      for (const std::string &dim : info.dims)
        if (isIdentifier(dim) && !sig.bound.count(dim) && !llvm::is_contained(derived, dim) &&
            seen.insert(dim).second)
          sig.sizeSymbols.push_back(dim);
    } else if (auto scalar = dyn_cast<ScalarParamOp>(op)) {
      info.name = scalar.getName().str();
      info.scalar = scalar.getScalarType();
    } else {
      continue;
    }
    info.cname = cIdent(info.name);
    sig.params.push_back(std::move(info));
  }
  return sig;
}

ForOp loopedGemmChain(KernelOp kernel) {
  for (auto loop : kernel.getBodyBlock().getOps<ForOp>()) {
    llvm::SmallVector<GemmOp> gemms;
    loop.walk([&](GemmOp gemm) { gemms.push_back(gemm); });
    for (size_t i = 1; i < gemms.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (gemms[i].getLhs() == gemms[j].getResult() && !gemms[j].getAccumulate())
          return loop;
  }
  return nullptr;
}

KernelKind classifyKernel(KernelOp kernel) {
  int gemms = 0, convs = 0, softmaxes = 0;
  kernel.walk([&](Operation *op) {
    gemms += isa<GemmOp>(op);
    convs += isa<Conv2dOp>(op);
    softmaxes += isa<SoftmaxOp>(op);
  });
  if (convs)
    return b2b::isB2bKernel(kernel) ? KernelKind::B2b : KernelKind::Conv;
  // (a Softmax between back-to-back GEMMs, each in its own statement, is the b2b kernel's)
  if ((softmaxes && gemms && !b2b::isB2bKernel(kernel)) ||
      (gemms >= 2 && loopedGemmChain(kernel)))
    return KernelKind::Attention;
  if (gemms >= 2)
    return KernelKind::B2b;
  if (gemms == 1)
    return KernelKind::Gemm;
  return KernelKind::Unknown;
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

namespace {


struct GemmReader {
  KernelOp kernel;
  GemmAnalysis g;

  InFlightDiagnostic error(Operation *op) { return op->emitError(); }

  LogicalResult readDirectives() {
    auto tm = kernel.getTileM(), tn = kernel.getTileN(), tk = kernel.getTileK();
    auto warps = kernel.getWarps();
    if (!tm || !tn || !tk || !warps)
      return error(kernel) << "kernel '" << g.sig.name
                           << "' has no tile or warps directive; the compile pipeline chooses them";
    g.tileM = *tm;
    g.tileN = *tn;
    g.tileK = *tk;
    g.warps = *warps;
    if (g.tileK % 16 || g.tileM % 16 || g.tileN % 16)
      return error(kernel) << "tile " << g.tileM << "x" << g.tileN << "x" << g.tileK
                           << ": the tensor-core path needs multiples of 16 (mma m16n8k16)";
    if (!plan::chooseWarpGrid(g.tileM, g.tileN, g.warps, g.warpsM, g.warpsN))
      return error(kernel) << "tile " << g.tileM << "x" << g.tileN << " cannot be split among "
                           << g.warps << " warps into warp tiles that are multiples of 16x16";
    int64_t accumulators = (g.tileM / g.warpsM) * (g.tileN / g.warpsN) / 32;
    if (accumulators > 128)
      return error(kernel) << "warp tile " << g.tileM / g.warpsM << "x" << g.tileN / g.warpsN
                           << " needs " << accumulators
                           << " f32 accumulators per thread (at most 128 fit in registers): "
                              "use more warps or a smaller tile";
    return checkMmaSyncRegisters(kernel, g.warps, g.tileM / g.warpsM, g.tileN / g.warpsN);
  }

  LogicalResult readOperand(ForOp loop, GemmOp gemm, StringRef name, bool transposed, bool isA,
                            GemmOperand &operand) {
    operand.param = g.sig.find(name);
    if (!operand.param || !operand.param->isTensor || operand.param->dims.size() < 2)
      return error(gemm) << "GEMM operand '" << name
                         << "' must be a tensor parameter with at least two dimensions";
    // A [M, K] is K-contiguous; A^T [K, M] is not. B [K, N] is not; B^T [N, K] is.
    operand.kContiguous = isA ? !transposed : transposed;
    CopyOp copy;
    loop.walk([&](CopyOp c) {
      if (c.getName() == name && c.getDestination() == MemorySpace::shared)
        copy = c;
    });
    if (!copy)
      return error(gemm) << "GEMM operand '" << name
                         << "' is not copied from global to shared memory in the main loop";
    auto smem = plan::smemBufferFrom(copy->getAttr(plan::kSmemAttr));
    if (!smem)
      return error(copy) << "Copy " << name
                         << " has no shared-memory plan (run sketch-plan-shared-memory)";
    operand.smem = *smem;
    int64_t mn = isA ? g.tileM : g.tileN;
    int64_t rows = operand.kContiguous ? mn : g.tileK;
    int64_t cols = operand.kContiguous ? g.tileK : mn;
    if (smem->rows != rows || smem->cols != cols)
      return error(copy) << "Copy " << name << " stages a (" << smem->rows << ", " << smem->cols
                         << ") tile; the GEMM needs (" << rows << ", " << cols << ")";
    if (smem->elementBytes != 2 || (smem->layout == "xor" && smem->rowBytes % 16))
      return error(copy) << "Copy " << name << ": unsupported shared layout";
    return success();
  }

  /// Positions of a tensor's leading dims among the output's batch dims.
  LogicalResult readBatch(Operation *at, const ParamInfo &param, std::vector<int64_t> &out) {
    ArrayRef<std::string> dims(param.dims);
    auto leading = dims.drop_back(2);
    auto positions = plan::matchDims(leading, g.batchDims);
    if (!positions)
      return error(at) << "the leading dimensions of '" << param.name << "[" << joined(param.dims)
                       << "]' do not match the batch dimensions of '" << g.out->name << "["
                       << joined(g.out->dims) << "]'";
    out.assign(positions->begin(), positions->end());
    return success();
  }

  LogicalResult readSizes(GemmOp gemm) {
    const auto &ad = g.a.param->dims, &bd = g.b.param->dims, &od = g.out->dims;
    bool ta = !g.a.kContiguous, tb = g.b.kContiguous;
    std::string am = ta ? ad[ad.size() - 1] : ad[ad.size() - 2];
    std::string ak = ta ? ad[ad.size() - 2] : ad[ad.size() - 1];
    std::string bk = tb ? bd[bd.size() - 1] : bd[bd.size() - 2];
    std::string bn = tb ? bd[bd.size() - 2] : bd[bd.size() - 1];
    if (od.size() < 2)
      return error(g.store) << "'" << g.out->name << "' must have at least two dimensions";
    std::string om = od[od.size() - 2], on = od[od.size() - 1];
    if (ak != bk || am != om || bn != on)
      return error(gemm) << "GEMM sizes disagree: " << g.a.param->name << " is " << am << "x" << ak
                         << ", " << g.b.param->name << " is " << bk << "x" << bn << ", "
                         << g.out->name << " is " << om << "x" << on;
    g.m = om;
    g.n = on;
    g.k = ak;
    g.batchDims.assign(od.begin(), od.end() - 2);
    if (failed(readBatch(gemm, *g.a.param, g.a.batchPositions)) ||
        failed(readBatch(gemm, *g.b.param, g.b.batchPositions)))
      return failure();
    return success();
  }

  static constexpr KernelKindNames kNames = {"the GEMM main loop", "the tensor-core GEMM", "GEMM"};

  LogicalResult run() {
    g.kernel = kernel;
    g.sig = analyzeSignature(kernel);
    ForOp loop = plan::findMainLoop(kernel);
    if (!loop)
      return error(kernel) << "kernel '" << g.sig.name << "' has no main loop with a GEMM";
    FailureOr<GemmOp> found = readMainLoopOp<GemmOp>(kernel, loop, kNames, "GEMM");
    if (failed(found))
      return failure();
    GemmOp gemm = *found;
    g.accumulator = gemm.getResult().str();
    if (failed(readDirectives()) || failed(readEpilogueInto(g, kernel, loop, kNames)))
      return failure();
    auto store = cast<CopyOp>(g.store);
    g.out = g.sig.find(store.getName());
    if (!g.out || !g.out->isTensor)
      return error(store) << "'" << store.getName() << "' is stored but is no tensor parameter";
    if (failed(readOperand(loop, gemm, gemm.getLhs(), gemm.getLhsTransposed(), true, g.a)) ||
        failed(readOperand(loop, gemm, gemm.getRhs(), gemm.getRhsTransposed(), false, g.b)))
      return failure();
    if (g.a.param->type != g.b.param->type || g.a.param->type == ElementType::f32)
      return error(gemm) << "the tensor-core GEMM needs f16 or bf16 operands of one type";
    g.operandType = g.a.param->type;
    if (failed(readSizes(gemm)))
      return failure();
    auto pipeline = loop->getAttrOfType<StringAttr>(plan::kPipelineAttr);
    auto stages = loop->getAttrOfType<IntegerAttr>(plan::kStagesAttr);
    auto fragments = gemm->getAttrOfType<IntegerAttr>(plan::kFragmentBuffersAttr);
    if (!pipeline || !stages || !fragments)
      return error(loop) << "the main loop is not pipelined (run sketch-pipeline)";
    g.pipeline = pipeline.str();
    g.stages = stages.getInt();
    g.fragmentBuffers = fragments.getInt();
    auto staging = plan::stagingBufferFrom(store->getAttr(plan::kStagingAttr));
    auto smemBytes = kernel->getAttrOfType<IntegerAttr>(plan::kSmemBytesAttr);
    if (!staging || !smemBytes)
      return error(store) << "the store has no shared staging plan (run sketch-plan-shared-memory)";
    if (staging->rows != g.tileM || staging->cols != g.tileN)
      return error(store) << "the stored register tile must be (BM, BN) = (" << g.tileM << ", "
                          << g.tileN << ")";
    auto mode = store->getAttrOfType<StringAttr>(plan::kEpilogueModeAttr);
    if (!mode)
      return error(store) << "the store has no epilogue plan (run sketch-fuse-epilogue)";
    g.stagedEpilogue = mode.getValue() == "staged";
    int64_t stagedBytes = g.stagedEpilogue ? 4 : plan::elementBytes(g.out->type);
    if (staging->elementBytes != stagedBytes)
      return error(store) << "the staging plan does not match the epilogue plan";
    g.staging = *staging;
    g.smemBytes = smemBytes.getInt();
    g.split = plan::splitPlanFrom(kernel->getAttr(plan::kSplitAttr));
    return success();
  }
};

} // namespace

FailureOr<EpilogueStatements> readEpilogueStatements(KernelOp kernel, ForOp loop,
                                                     const KernelKindNames &names) {
  EpilogueStatements result;
  // A statement of another kind anywhere after the loop is what the user must
  // change (an elementwise statement before it was left unfused because of it).
  for (Operation *op = loop->getNextNode(); op; op = op->getNextNode())
    if (!isa<AllocateOp, CopyOp, ElementwiseOp, AssignOp>(op))
      return op->emitError() << "a " << names.kind
                             << " kernel ends with elementwise statements and one Copy to global";
  for (Operation *op = loop->getNextNode(); op; op = op->getNextNode()) {
    if (isa<AllocateOp>(op))
      continue; // completed Allocates: nothing to emit
    if (auto copy = dyn_cast<CopyOp>(op)) {
      if (copy.getSource() != MemorySpace::reg || copy.getDestination() != MemorySpace::global)
        return op->emitError() << "unexpected Copy after " << names.mainLoop;
      if (result.store)
        return op->emitError() << names.storer << " stores one result; '" << copy.getName()
                               << "' is a second";
      result.store = copy;
      continue;
    }
    if (isa<ElementwiseOp, AssignOp>(op)) {
      if (result.store)
        return op->emitError() << "statement after the store: the epilogue must precede it";
      if (!op->hasAttr(plan::kFusedAttr))
        return op->emitError()
               << "statement is not fused into the epilogue (run sketch-fuse-epilogue)";
      result.epilogue.push_back(op);
    }
  }
  if (!result.store)
    return kernel.emitError() << "kernel '" << kernel.getSymName()
                              << "' never stores its result (Copy X from register to global)";
  return result;
}

LogicalResult checkMmaSyncRegisters(Operation *at, int64_t warps, int64_t warpM,
                                    int64_t warpN) {
  int64_t registers = plan::mmaSyncThreadRegisters(warpM, warpN);
  if (registers * 32 * warps <= 65536)
    return success();
  return at->emitError() << warps << " warps of " << warpM << "x" << warpN << " tiles need about "
                         << registers << " registers a thread, more than a block of "
                         << 32 * warps << " threads can have (65536 in all): use fewer warps";
}

FailureOr<GemmAnalysis> analyzeGemm(KernelOp kernel) {
  GemmReader reader{kernel, {}};
  if (failed(reader.run()))
    return failure();
  return std::move(reader.g);
}

} // namespace sketch
