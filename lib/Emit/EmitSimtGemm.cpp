//===- EmitSimtGemm.cpp - f32 GEMM on the CUDA cores (SIMT) ---------------===//
//
// An f32 GEMM kernel (`Compute GEMM A, B` with f32 operands) becomes a block
// of 32 x warps threads, each accumulating a register micro-tile with FFMA
// (derived from BM, BN, BK and warps by deriveSimtTile, lib/Passes/SimtTile.h:
// 8x8 for the default 128x128 tile of 8 warps), over k tiles staged k-major in
// padded, double-buffered shared memory (runtime/include/sketch/simt.cuh holds
// the mainloop; this file writes the kernel around it). Operands may be
// transposed (`A^T`, `B^T`) and batched (leading dimensions, one block per
// batch element along grid z); every size is guarded, and 16-byte copies are
// taken where the contiguous extents are multiples of 4 and the pointers
// 16-byte aligned, A's decided apart from B's and the stores' (kVecA, kVec;
// where A and B^T both run along k, B's copies are always 4-byte cp.async).
// The fused epilogue (sketch-fuse-epilogue) runs on each accumulator before
// the store.
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Emit/EmitHost.h"
#include "lib/Emit/EmitSimt.h"
#include "lib/Emit/KernelEmitters.h"
#include "lib/Passes/BackendPlan.h"

#include <functional>

using namespace mlir;

namespace sketch {

//===----------------------------------------------------------------------===//
// Shared SIMT pieces (EmitSimt.h)
//===----------------------------------------------------------------------===//

void openSimtKernel(CudaWriter &w, StringRef name, const SimtTile &tile, StringRef params,
                    ArrayRef<SimtFlag> flags, bool scalarCopiesAsync, StringRef oneBlockWhen) {
  std::string threads = std::to_string(tile.threads());
  int64_t minBlocks = tile.minBlocksPerSm();
  std::string blocks = minBlocks == 1       ? "1"
                       : scalarCopiesAsync ? str(minBlocks)
                                           : "kVec ? " + str(minBlocks) + " : 1";
  if (!oneBlockWhen.empty() && minBlocks > 1)
    blocks = oneBlockWhen.str() + " ? 1 : " + blocks;
  std::string parameters = "bool kVec";
  for (const SimtFlag &flag : flags)
    parameters += ", bool " + flag.name;
  w.line("template <" + parameters + ">");
  w.line("__global__ void __launch_bounds__(" + threads + ", " + blocks + ")");
  w.open(name.str() + "(" + params.str() + ")");
}

void emitSimtConstants(CudaWriter &w, const SimtTile &tile, bool depth) {
  w.line("constexpr int ROWS = " + std::to_string(tile.rows) + ", COLS = " +
         std::to_string(tile.cols) +
         (depth ? ", DEPTH = " + std::to_string(tile.depth) : std::string()) +
         ", THREADS = " + std::to_string(tile.threads()) + ";");
}

void emitSimtLaunch(CudaWriter &w, StringRef name, StringRef grid, StringRef args,
                    StringRef dynamicBytes, ArrayRef<SimtFlag> flags, StringRef cluster) {
  bool dynamic = dynamicBytes != "0";
  if (flags.empty() && !dynamic && cluster.empty()) {
    std::string launch = "<<<" + grid.str() + ", THREADS, 0, stream>>>(" + args.str() + ");";
    w.line("if (vec)");
    w.line("  " + name.str() + "<true>" + launch);
    w.line("else");
    w.line("  " + name.str() + "<false>" + launch);
    return;
  }
  // NAME<chosen...>, each flag in turn a choice: (VALUE ? NAME<..., true> : NAME<..., false>)
  std::function<std::string(std::string, size_t)> instance = [&](std::string chosen, size_t i) {
    if (i == flags.size())
      return name.str() + "<" + chosen + ">";
    if (flags[i].hostValue == "false") // the host runs this kernel with the flag false only
      return instance(chosen + ", false", i + 1);
    return "(" + flags[i].hostValue + " ? " + instance(chosen + ", true", i + 1) + " : " +
           instance(chosen + ", false", i + 1) + ")";
  };
  if (dynamic)
    w.line("const int smem_bytes = " + dynamicBytes.str() +
           ";  // the shared tiles: dynamic, above 48 KB by opt-in");
  if (flags.size() < 2) {
    w.line("auto kernel = vec ? " + instance("true", 0) + " : " + instance("false", 0) + ";");
  } else { // a line each value of vec
    w.line("auto kernel = vec ? " + instance("true", 0));
    w.line("                  : " + instance("false", 0) + ";");
  }
  if (dynamic) {
    w.line("cudaError_t err = sketch::allow_dynamic_smem(kernel, smem_bytes);");
    w.line("if (err != cudaSuccess)");
    w.line("  return err;");
  }
  std::string smem = dynamic ? "smem_bytes" : "0";
  if (!cluster.empty()) {
    w.line("return sketch::launch_kernel(kernel, " + grid.str() + ", dim3(THREADS), " + smem + ", " +
           cluster.str() + ", false, stream, " + args.str() + ");");
    return;
  }
  w.line("kernel<<<" + grid.str() + ", THREADS, " + smem + ", stream>>>(" + args.str() + ");");
}

void emitSimtRowEpilogue(CudaWriter &w, const SimtTile &tile, const EpilogueEmitter &epilogue,
                         const SimtRowEpilogue &rows,
                         llvm::function_ref<std::string(const EpilogueOperand &)> value) {
  std::string cols = str(tile.microCols);
  w.line("#pragma unroll");
  w.open("for (int i = 0; i < " + str(tile.microRows) + "; ++i)");
  w.line("const int64_t " + rows.row + " = " + rows.origin + " + micro.row(i);");
  w.line("if (" + rows.row + " >= " + rows.rowCount + ")");
  w.line("  continue;");
  if (!rows.rowLine.empty())
    w.line(rows.rowLine);
  w.line("float out[" + cols + "];");
  w.line("#pragma unroll");
  w.open("for (int j = 0; j < " + cols + "; ++j)");
  if (!rows.columnLine.empty())
    w.line(rows.columnLine);
  epilogue.emitElement(w, "acc[i][j]", value, "out[j]");
  w.close();
  w.line(rows.store);
  w.close();
}

void emitSimtMainloop(CudaWriter &w, StringRef stages, const SimtLoader &a, const SimtLoader &b,
                      StringRef ktiles, llvm::function_ref<void()> setup, const SimtTile &tile,
                      StringRef first) {
  w.line("float acc[" + str(tile.microRows) + "][" + str(tile.microCols) + "];");
  w.line("{  // mainloop: the loaders live only here");
  w.indentMore();
  if (setup)
    setup();
  for (const SimtLoader *loader : {&a, &b})
    w.line(loader->type + " " + loader->name + "(" + loader->args + ");");
  w.line("sketch::simt::mainloop<ROWS, COLS, DEPTH, " + stages.str() + ">(" + a.name + ", " + b.name +
         ", " + ktiles.str() + ", micro, acc" + (first.empty() ? "" : ", " + first.str()) + ");");
  w.indentLess();
  w.line("}");
}

int64_t simtDynamicBytes(int64_t bytes) { return bytes > kStaticSharedBytes ? bytes : 0; }

void emitSimtMicroTile(CudaWriter &w, const SimtTile &tile) {
  std::string outputs = str(tile.microRows) + " x " + str(tile.microCols);
  if (tile.onF64TensorCores())
    w.line("const sketch::simt::DmmaTile<ROWS, COLS, " + str(tile.mmaWarpsM) + ", " +
           str(tile.mmaWarpsN) + "> micro;  // this thread's " + outputs + " outputs");
  else
    w.line("const sketch::simt::MicroTile<ROWS, COLS, " + str(tile.microRows) + ", " +
           str(tile.microCols) + "> micro;  // this thread's " + outputs + " outputs");
}

std::string simtUnits(const SimtTile &tile) {
  return tile.onF64TensorCores() ? "the f64 tensor cores" : "the CUDA cores";
}

std::string simtMmaDescription(const SimtTile &tile) {
  if (!tile.onF64TensorCores())
    return "";
  return " (warps " + str(tile.mmaWarpsM) + " x " + str(tile.mmaWarpsN) +
         " of m16n8k4 f64 MMAs: f32 operands widened, exact products, f64 sums rounded once)";
}

void emitSimtIncludes(CudaWriter &w) {
  w.line("#include \"sketch/simt.cuh\"  // the SIMT mainloop (the file prologue has the rest)");
}

namespace {

//===----------------------------------------------------------------------===//
// Reading the kernel
//===----------------------------------------------------------------------===//

/// One operand of the SIMT GEMM.
struct SimtOperand {
  const ParamInfo *param = nullptr;
  /// Rows (along M for A, N for B) contiguous along K: A [M, K] and B^T [N, K].
  bool kContiguous = false;
  /// Position among the output's batch dims of each leading dim of the tensor.
  std::vector<int64_t> batchPositions;
};

struct SimtGemmPlan {
  KernelSignature sig;
  SimtOperand a, b;
  const ParamInfo *out = nullptr;
  std::string accumulator;
  std::string m, n, k;
  std::vector<std::string> batchDims;
  SimtTile tile; // derived from the directives (deriveSimtTile)
  int64_t stages = 2;
  int64_t smemLimit = 0; // bytes a block may use on the target
  std::vector<Operation *> epilogue;
  mutable CopyOp store; // op handle: its accessors are not const
  /// `split_k` ("auto" or a count) where sketch-choose-defaults found it splits over a
  /// cluster (plan::kSimtSplitAttr), else empty.
  std::string splitK;
  /// The tile whose kernel splits (plan::kSimtSplitAttr: BM, BN), when splitK is set.
  int64_t splitRows = 0, splitCols = 0;
  /// The slices the host runs, from `split_k`: 0 for auto (its rule), else the count.
  int64_t fixedSlices() const {
    int64_t slices = 0;
    return splitK != "auto" && !StringRef(splitK).getAsInteger(10, slices) ? slices : 0;
  }
};

struct SimtGemmReader {
  KernelOp kernel;
  StringRef arch;
  SimtGemmPlan p;

  /// The tile by deriveSimtTile's rules (sketch-choose-defaults checked them
  /// already, naming where each value came from).
  LogicalResult readDirectives() {
    FailureOr<TileDirectives> d = readTileDirectives(kernel);
    if (failed(d))
      return failure();
    p.stages = simtStages(d->stages);
    p.smemLimit = plan::smemLimitBytes(arch);
    auto splits = kernel->getAttrOfType<DenseI64ArrayAttr>(plan::kSimtSplitAttr);
    if (splits && splits.size() == 2 && kernel.getSplitK()) {
      p.splitK = kernel.getSplitK()->str();
      p.splitRows = splits[0];
      p.splitCols = splits[1];
    }
    std::string broken;
    auto tile = deriveSimtTile(d->tileM, d->tileN, d->tileK, d->warps, p.stages,
                               plan::smemLimitBytes(arch), broken);
    if (!tile)
      return kernel.emitError() << "f32 GEMM tile " << d->tileM << "x" << d->tileN << "x"
                                << d->tileK << " with " << d->warps << " warps: " << broken;
    p.tile = simtTileForTarget(*tile, arch);
    return success();
  }

  static constexpr KernelKindNames kNames = {"the GEMM main loop", "the f32 GEMM", "GEMM"};

  LogicalResult readLoop(ForOp loop, GemmOp &gemm) {
    FailureOr<GemmOp> found = readMainLoopOp<GemmOp>(kernel, loop, kNames, "GEMM");
    if (failed(found))
      return failure();
    gemm = *found;
    return success();
  }

  LogicalResult readEpilogue(ForOp loop) {
    if (failed(readEpilogueInto(p, kernel, loop, kNames)))
      return failure();
    p.out = p.sig.find(p.store.getName());
    if (!p.out || !p.out->isTensor || p.out->dims.size() < 2)
      return p.store.emitError() << "'" << p.store.getName()
                                 << "' is stored but is no tensor parameter of two or more "
                                    "dimensions";
    return success();
  }

  LogicalResult readOperand(ForOp loop, GemmOp gemm, StringRef name, bool transposed, bool isA,
                            SimtOperand &operand) {
    operand.param = p.sig.find(name);
    if (!operand.param || !operand.param->isTensor || operand.param->dims.size() < 2)
      return gemm.emitError() << "GEMM operand '" << name
                              << "' must be a tensor parameter with at least two dimensions";
    if (operand.param->type != ElementType::f32)
      return gemm.emitError() << "the f32 GEMM needs f32 operands; '" << name << "' is "
                              << stringifyElementType(operand.param->type);
    operand.kContiguous = isA ? !transposed : transposed;
    bool staged = false;
    loop.walk([&](CopyOp copy) {
      staged |= copy.getName() == name && copy.getSource() == MemorySpace::global &&
                copy.getDestination() == MemorySpace::shared;
    });
    if (!staged)
      return gemm.emitError() << "GEMM operand '" << name
                              << "' is not copied from global to shared memory in the main loop";
    return success();
  }

  LogicalResult readBatch(GemmOp gemm, SimtOperand &operand) {
    ArrayRef<std::string> dims(operand.param->dims);
    auto positions = plan::matchDims(dims.drop_back(2), p.batchDims);
    if (!positions)
      return gemm.emitError() << "the leading dimensions of '" << operand.param->name << "["
                              << joined(dims) << "]' do not match the batch dimensions of '"
                              << p.out->name << "[" << joined(p.out->dims) << "]'";
    operand.batchPositions.assign(positions->begin(), positions->end());
    return success();
  }

  LogicalResult readSizes(GemmOp gemm) {
    const auto &ad = p.a.param->dims, &bd = p.b.param->dims, &od = p.out->dims;
    auto last = [](const std::vector<std::string> &d, int back) { return d[d.size() - back]; };
    std::string am = p.a.kContiguous ? last(ad, 2) : last(ad, 1);
    std::string ak = p.a.kContiguous ? last(ad, 1) : last(ad, 2);
    std::string bk = p.b.kContiguous ? last(bd, 1) : last(bd, 2);
    std::string bn = p.b.kContiguous ? last(bd, 2) : last(bd, 1);
    std::string om = last(od, 2), on = last(od, 1);
    if (ak != bk || am != om || bn != on)
      return gemm.emitError() << "GEMM sizes disagree: " << p.a.param->name << " is " << am
                              << "x" << ak << ", " << p.b.param->name << " is " << bk << "x"
                              << bn << ", " << p.out->name << " is " << om << "x" << on;
    p.m = om;
    p.n = on;
    p.k = ak;
    p.batchDims.assign(od.begin(), od.end() - 2);
    return failure(failed(readBatch(gemm, p.a)) || failed(readBatch(gemm, p.b)));
  }

  LogicalResult run() {
    p.sig = analyzeSignature(kernel);
    ForOp loop = plan::findMainLoop(kernel);
    if (!loop)
      return kernel.emitError() << "kernel '" << p.sig.name << "' has no main loop with a GEMM";
    GemmOp gemm;
    if (failed(readLoop(loop, gemm)) || failed(readDirectives()) || failed(readEpilogue(loop)))
      return failure();
    p.accumulator = gemm.getResult().str();
    if (failed(readOperand(loop, gemm, gemm.getLhs(), gemm.getLhsTransposed(), true, p.a)) ||
        failed(readOperand(loop, gemm, gemm.getRhs(), gemm.getRhsTransposed(), false, p.b)))
      return failure();
    return readSizes(gemm);
  }
};

//===----------------------------------------------------------------------===//
// Writing the kernel
//===----------------------------------------------------------------------===//

/// One kernel of an f32 GEMM: its tile, name suffix, and whether it takes kSplit.
struct SimtGemmKernel {
  SimtTile tile;
  std::string suffix; // "" or "_small"
  bool split = false;
};

struct SimtGemmWriter {
  const SimtGemmPlan &p;
  const EpilogueEmitter &epilogue;
  CudaWriter &w;
  SimtGemmKernel kernel;                 // the one emitKernel writes
  std::optional<SimtGemmKernel> small;   // split_k auto's tile for small grids (emitHost)

  std::string kernelName() const { return nameOf(kernel); }
  std::string nameOf(const SimtGemmKernel &k) const { return p.sig.name + "_simt" + k.suffix; }
  const SimtTile &tile() const { return kernel.tile; }
  std::string microTile() const { return str(tile().microRows) + " x " + str(tile().microCols); }
  std::string dim(StringRef d) const { return p.sig.dim(d); }

  void emitHeaderComment() {
    std::string a = p.a.param->name + (p.a.kContiguous ? "" : "^T");
    std::string b = p.b.param->name + (p.b.kContiguous ? "^T" : "");
    w.comment("Kernel " + p.sig.name + ": f32 GEMM on " + simtUnits(tile()) + ", " +
              p.accumulator + "[" + p.m + ", " + p.n + "] = " + a + " . " + b + " over " + p.k +
              (p.batchDims.empty() ? "" : ", one block per batch element of [" +
                                                  joined(p.batchDims) + "]"));
    w.comment("Block tile " + str(tile().rows) + " x " + str(tile().cols) + " x " +
              str(tile().depth) + ", " + str(tile().threads()) + " threads, " + microTile() +
              " accumulators per thread" + simtMmaDescription(tile()) +
              "; shared tiles k-major, padded, " +
              (p.stages == 2 ? "double-buffered" : "single-buffered") +
              (pipelines(kernel) ? ", 3 stages where every copy is a cp.async (!kVecA" +
                                       std::string(kernel.split ? ", !kSplit)" : ")")
                                 : "") +
              " (sketch/simt.cuh).");
    for (const std::string &line : epilogue.describe())
      w.comment("Epilogue: " + line);
  }

  /// The batch indices bidx0... of this block. `again`: after the mainloop, from
  /// a fresh read of blockIdx.z (sketch::simt::block_z), so that they are not
  /// kept in registers across it.
  void emitBatchIndices(bool again) {
    if (p.batchDims.empty())
      return;
    std::string z = again ? "sketch::simt::block_z()" : "blockIdx.z";
    if (p.batchDims.size() == 1) {
      w.line("const int64_t bidx0 = " + z + ";  // batch index");
      return;
    }
    w.line("int64_t batch = " + z + ";");
    for (size_t i = p.batchDims.size(); i-- > 1;) {
      std::string extent = dim(p.batchDims[i]);
      w.line("const int64_t bidx" + str(i) + " = batch % (" + extent + ");");
      w.line("batch /= (" + extent + ");");
    }
    w.line("const int64_t bidx0 = batch;");
  }

  /// `vec`: the template flag of the loader's 16-byte path (kVecA for A, kVec for B).
  std::string loaderType(bool kContiguous, StringRef extent, StringRef vec) const {
    return std::string("sketch::simt::") +
           (kContiguous ? "KContiguousLoader<" : "RowContiguousLoader<") + extent.str() +
           ", DEPTH, THREADS, " + vec.str() + ">";
  }

  void emitMainloop() {
    std::string aSrc = batchOffset(p.sig, *p.a.param, p.a.batchPositions);
    std::string bSrc = batchOffset(p.sig, *p.b.param, p.b.batchPositions);
    // A [M, K]: rows along M, ld K; A^T [K, M]: ld M. B [K, N]: ld N; B^T [N, K]: ld K.
    SimtLoader a{loaderType(p.a.kContiguous, "ROWS", "kVecA"), "load_a",
                 aSrc + ", " + (p.a.kContiguous ? "size_k" : "size_m") + ", m0, size_m, size_k"};
    SimtLoader b{loaderType(p.b.kContiguous, "COLS", bCopiesAsync() ? "false" : "kVec"), "load_b",
                 bSrc + ", " + (p.b.kContiguous ? "size_k" : "size_n") + ", n0, size_n, size_k"};
    bool split = kernel.split;
    emitSimtMainloop(
        w, pipelines(kernel) ? "STAGES" : str(p.stages), a, b,
        split ? "kt_end - kt_begin" : "(size_k + DEPTH - 1) / DEPTH",
        [&] { emitBatchIndices(false); }, tile(), split ? "kt_begin" : "");
  }

  /// split_k: the blocks of a cluster along x share an output tile, each a run of its
  /// k tiles (kSplit; without it one slice).
  void emitSliceBounds() {
    w.comment("split-K (kSplit): the blocks of a cluster along x share one output tile, each");
    w.comment("summing a run of its k tiles; the first adds the others' sums after the mainloop");
    w.line("const int slices = kSplit ? (int)sketch::cluster_size() : 1;");
    w.line("const int slice = kSplit ? (int)sketch::cluster_rank() : 0;");
    w.line("const int m0 = blockIdx.y * ROWS, n0 = blockIdx.x / slices * COLS;");
    w.line("const int ktiles = (size_k + DEPTH - 1) / DEPTH;");
    w.line("const int kt_begin = slice * ktiles / slices, kt_end = (slice + 1) * ktiles / slices;");
  }

  void emitSliceSums() {
    w.open("if constexpr (kSplit)");
    w.line("if (!sketch::simt::sum_k_slices<ROWS, COLS, DEPTH, " + str(p.stages) +
           ", THREADS>(acc))");
    w.line("  return;  // a slice after the first: its sums are in the first's accumulators");
    w.close();
  }

  ElementIndex elementIndex() const {
    ElementIndex at{"row", "col", "size_m", "size_n", {}};
    for (size_t i = 0; i < p.batchDims.size(); ++i)
      at.batch.push_back("bidx" + str(i));
    return at;
  }

  /// Operands indexed by column only, row only, or neither are loaded before the element loop.
  void emitOperandPreloads() {
    ElementIndex at = elementIndex();
    for (const EpilogueOperand &operand : epilogue.operands()) {
      if (operand.whole())
        continue;
      if (operand.usesRow || operand.usesCol) {
        bool col = operand.usesCol;
        std::string count = str(col ? tile().microCols : tile().microRows);
        w.line("float " + operand.var + "[" + count + "];  // " + operand.param->name +
               (col ? ": per column" : ": per row"));
        w.line("#pragma unroll");
        w.open(std::string("for (int ") + (col ? "j" : "i") + " = 0; " + (col ? "j" : "i") + " < " +
               count + "; ++" + (col ? "j" : "i") + ")");
        w.line(col ? "const int64_t col = n0 + micro.col(j);" : "const int64_t row = m0 + micro.row(i);");
        w.line(operand.var + (col ? "[j]" : "[i]") + " = " + epilogue.loadExpr(operand, at) + ";");
        w.close();
        continue;
      }
      w.line("const float " + operand.var + " = " + epilogue.loadExpr(operand, at) + ";  // " +
             operand.param->name + ": per block");
    }
  }

  std::string operandValue(const EpilogueOperand &operand) const {
    if (operand.whole())
      return epilogue.loadExpr(operand, elementIndex());
    if (operand.usesCol)
      return operand.var + "[j]";
    if (operand.usesRow)
      return operand.var + "[i]";
    return operand.var;
  }

  void emitEpilogueAndStore() {
    int64_t vector = tile().storeVector();
    w.comment("Epilogue on each accumulator, then the store" +
              (vector > 1 ? " (" + str(4 * vector) + "-byte where " + str(vector) +
                                " columns fit)"
                          : std::string()));
    emitOperandPreloads();
    std::string outType = cTypeOf(p.out->type);
    // the output's leading dims are the batch, in order
    auto outPositions = llvm::to_vector(llvm::seq<int64_t>(0, p.batchDims.size()));
    w.line(outType + " *d_dst = " + batchOffset(p.sig, *p.out, outPositions) + ";");
    SimtRowEpilogue rows{"row", "m0", "size_m",
                         epilogue.readsFullTensor() ? "const int64_t col = n0 + micro.col(j);" : "",
                         "sketch::simt::store_row<kVec>(d_dst + row * size_n, micro, n0, size_n, out);"};
    emitSimtRowEpilogue(w, tile(), epilogue, rows,
                        [&](const EpilogueOperand &operand) { return operandValue(operand); });
  }

  void emitKernel() {
    emitHeaderComment();
    auto restrictRead = [](const ParamInfo &param) { return !param.written; };
    bool split = kernel.split;
    // the f32 loaders' scalar copies are 4-byte cp.async (simt.cuh): no staging registers;
    // the split instances with any scalar copies ask for one block an SM (at more, ptxas
    // spilled in the split-sweep's 64 x 64 x 16 tile of 8 warps)
    std::string oneBlockWhen = !split          ? ""
                               : bCopiesAsync() ? "kSplit"
                                                : "kSplit && !(kVec && kVecA)";
    openSimtKernel(w, kernelName(), tile(), kernelParameterList(p.sig, restrictRead),
                   flags(kernel), /*scalarCopiesAsync=*/true, oneBlockWhen);
    emitSimtConstants(w, tile(), true);
    if (pipelines(kernel))
      w.line(std::string("constexpr int STAGES = kVecA") + (split ? " || kSplit" : "") + " ? " +
             str(p.stages) + " : " + str(kSimtPipelinedStages) +
             ";  // every copy a cp.async: a deeper pipeline");
    w.line("const int size_m = static_cast<int>(" + dim(p.m) + "), size_n = static_cast<int>(" +
           dim(p.n) + "), size_k = static_cast<int>(" + dim(p.k) + ");");
    if (split)
      emitSliceBounds();
    else
      w.line("const int m0 = blockIdx.y * ROWS, n0 = blockIdx.x * COLS;");
    emitSimtMicroTile(w, tile());
    emitMainloop();
    if (split)
      emitSliceSums();
    emitBatchIndices(true);
    emitEpilogueAndStore();
    w.close();
  }

  /// The template flags beside kVec: A's 16-byte copies (kVecA), and the split-K form.
  static SmallVector<SimtFlag, 2> flags(const SimtGemmKernel &k) {
    SmallVector<SimtFlag, 2> list{{"kVecA", "vec_a"}};
    if (k.split)
      list.push_back({"kSplit", "slices > 1"});
    return list;
  }

  /// Whether an operand's rows are whole 16-byte chunks: its contiguous extent.
  static std::string rowsAligned(const SimtOperand &o, StringRef mn) {
    return o.kContiguous ? "size_k % 4 == 0" : mn.str() + " % 4 == 0";
  }

  /// Whether kernel `k`'s instances without A's 16-byte copies (!kVecA) run the pipelined
  /// mainloop (kSimtPipelinedStages): A's rows run along k, so those instances copy A by
  /// 4-byte cp.async, and B's copies are cp.async in every instance; the kernel is double-
  /// buffered (a split kernel's kSplit instances stay so: sum_k_slices reads their 2 stages'
  /// A tiles); and its tile pipelines (simtTilePipelines: 16 or more deep, the deeper tiles
  /// fit). Sizes without 16-byte rows on an H200 at 128 x 128 x 16: 4095^3 3.475 -> 3.347 ms,
  /// 3001^3 1.614 -> 1.554 (bench/labs/sgemm_pipeline); 64 x 64 x 16 on the f64 tensor cores
  /// (the split-K form), 4095^3 3.34 -> 2.98 (bench/labs/sgemm_dmma).
  bool pipelines(const SimtGemmKernel &k) const {
    return p.a.kContiguous && p.stages == 2 && simtTilePipelines(k.tile, p.smemLimit);
  }

  /// The host's dynamic shared-memory bytes for kernel `k` (static tiles: 0), by instance
  /// where the pipelined ones differ.
  std::string dynamicBytes(const SimtGemmKernel &k) const {
    int64_t bytes = simtDynamicBytes(k.tile.sharedBytes(p.stages));
    if (!pipelines(k))
      return str(bytes);
    int64_t pipelined = simtDynamicBytes(k.tile.stageBytes(kSimtPipelinedStages));
    if (pipelined == bytes)
      return str(bytes);
    return std::string(k.split ? "vec_a || slices > 1" : "vec_a") + " ? " + str(bytes) + " : " +
           str(pipelined);
  }

  /// Whether B's copies are 4-byte cp.async whatever its alignment: where A's and B's rows
  /// both run along k, only A's 16-byte copies are staged through registers. Staging both
  /// (16 floats a thread at 128 registers) made ptxas sink the next tile's loads to the end
  /// of the FFMAs, their latency exposed: W [N, K] 4096^3 3.36 -> 3.17 ms on an H200 with
  /// B's copies by cp.async, 4000 x 3000 x 2000 1.227 -> 1.156 (bench/labs/sgemm_stash).
  bool bCopiesAsync() const { return p.a.kContiguous && p.b.kContiguous; }

  /// The host's condition for kVec: the 16-byte path of the stores and of B's copies
  /// (unless bCopiesAsync).
  std::string vecCondition() const {
    SmallVector<std::string, 4> terms;
    std::string bRows = rowsAligned(p.b, "size_n");
    if (!bCopiesAsync())
      terms.push_back(bRows);
    if (bCopiesAsync() || bRows != "size_n % 4 == 0")
      terms.push_back("size_n % 4 == 0"); // output rows
    if (!bCopiesAsync())
      terms.push_back("sketch::aligned_to(" + p.b.param->cname + ", 16)");
    terms.push_back("sketch::aligned_to(" + p.out->cname + ", 16)");
    return joined(terms, " && ");
  }

  /// The host's condition for A's 16-byte copies (kVecA): A's rows alone decide, so
  /// one operand's odd extent leaves the other's copies 16-byte.
  std::string vecACondition() const {
    return rowsAligned(p.a, "size_m") + " && sketch::aligned_to(" + p.a.param->cname + ", 16)";
  }

  void emitHost() {
    w.open(hostPrototype(p.sig));
    emitHostChecks(w, p.sig);
    // DEPTH: the rule of split_k auto on this kernel's own tile
    emitSimtConstants(w, tile(), kernel.split && !p.fixedSlices());
    w.line("const int64_t size_m = " + dim(p.m) + ", size_n = " + dim(p.n) + ", size_k = " +
           dim(p.k) + ";");
    w.line("const int64_t batches = " + p.sig.product(p.batchDims) + ";");
    w.line("if (size_m == 0 || size_n == 0 || batches == 0)");
    w.line("  return cudaSuccess;  // nothing to compute");
    w.comment("32-bit indices inside one matrix; grid limits");
    w.line("if (size_m * size_k > INT32_MAX || size_k * size_n > INT32_MAX || size_m * size_n > "
           "INT32_MAX)");
    w.line("  return cudaErrorInvalidValue;");
    if (small)
      emitSmallGridLaunch();
    emitLaunch(kernel);
    w.close();
  }

  /// split_k auto with a tile for small grids: where this kernel's tiles are under 3/4
  /// of its blocks resident at once, the small tile's kernel runs instead, split.
  void emitSmallGridLaunch() {
    int64_t blocks = tile().minBlocksPerSm();
    w.comment("split_k auto (docs/backend.md \"f32 split-K\"): a grid under 3/4 of the blocks resident");
    w.comment("at once (" + str(blocks) + " an SM) runs the " + str(small->tile.rows) + " x " +
              str(small->tile.cols) + " tile, K split over a cluster of min(8, its resident");
    w.comment("blocks / its tiles, k tiles / 4) blocks");
    w.line("const int64_t tiles = sketch::ceil_div(size_n, COLS) * sketch::ceil_div(size_m, ROWS) * "
           "batches;");
    w.open("if (tiles * 4 < (int64_t)sketch::sm_count() * " + str(blocks) + " * 3)");
    emitSimtConstants(w, small->tile, true);
    emitLaunch(*small);
    w.close();
  }

  /// The slices of a split kernel: split_k N, auto's rule on this kernel's tile, or (the
  /// small tile's kernel, launched on small grids only) as many as its rule gives.
  void emitSlices(const SimtGemmKernel &k) {
    if (int64_t fixed = p.fixedSlices()) {
      w.line("const int slices = " + str(fixed) + ";  // split_k " + str(fixed) +
             ": K over a cluster of " + str(fixed) + " blocks");
      return;
    }
    int64_t blocks = k.tile.minBlocksPerSm();
    bool own = !small; // auto on this kernel's tile: only where its grid is small
    if (own) {
      w.comment("split_k auto (docs/backend.md \"f32 split-K\"): a grid under 3/4 of the blocks");
      w.comment("resident at once (" + str(blocks) + " an SM) splits K over a cluster of min(8, "
                "resident / tiles, k tiles / 4) blocks");
    }
    std::string tiles = own ? "tiles" : "small_tiles";
    w.line("const int64_t " + tiles + " = sketch::ceil_div(size_n, COLS) * sketch::ceil_div(size_m, "
           "ROWS) * batches;");
    w.line("const int resident = sketch::sm_count() * " + str(blocks) + ";");
    std::string rule = "sketch::split_slices(resident, " + tiles +
                       ", sketch::ceil_div(size_k, DEPTH), 8, 4)";
    w.line("const int slices = " +
           (own ? "tiles * 4 < (int64_t)resident * 3 ? " + rule + " : 1" : rule) + ";");
  }

  /// The grid, the 16-byte condition and the launch of kernel `k` (ROWS, COLS, THREADS
  /// its tile's); returns from the host function.
  void emitLaunch(const SimtGemmKernel &k) {
    std::string columns = k.split ? "column_blocks" : "sketch::ceil_div(size_n, COLS)";
    if (k.split) {
      emitSlices(k);
      w.line("const int64_t column_blocks = sketch::ceil_div(size_n, COLS) * slices;");
    }
    w.line("const dim3 grid(unsigned(" + columns + "), "
           "unsigned(sketch::ceil_div(size_m, ROWS)), unsigned(batches));");
    w.line("if (" + columns + " > INT32_MAX || grid.y > 65535 || batches > 65535)");
    w.line("  return cudaErrorInvalidValue;");
    w.line("const bool vec = " + vecCondition() + ";  // " +
           (bCopiesAsync() ? "the stores" : "B's copies and the stores"));
    w.line("const bool vec_a = " + vecACondition() + ";  // A's copies");
    if (k.split) { // in clusters of `slices` blocks: returns the launch's error
      emitSimtLaunch(w, nameOf(k), "grid", kernelArgumentList(p.sig), dynamicBytes(k), flags(k),
                     "slices");
      return;
    }
    emitSimtLaunch(w, nameOf(k), "grid", kernelArgumentList(p.sig), dynamicBytes(k), flags(k));
    w.line("return cudaGetLastError();");
  }
};

/// split_k auto's tile for small grids beside the kernel's own, where the tile that splits
/// (plan::kSimtSplitAttr) is another than the kernel's: simtSmallGridTile's, which
/// sketch-choose-defaults recorded.
std::optional<SimtTile> smallGridTile(const SimtGemmReader &reader) {
  const SimtGemmPlan &p = reader.p;
  if (p.splitK.empty() || (p.splitRows == p.tile.rows && p.splitCols == p.tile.cols))
    return std::nullopt;
  auto small = simtSmallGridTile(p.tile, p.stages, plan::smemLimitBytes(reader.arch));
  return small ? std::optional(simtTileForTarget(*small, reader.arch)) : std::nullopt;
}

} // namespace

KernelEmitterResult emitSimtGemm(KernelOp kernel, const CudaEmitOptions &options, CudaWriter &w) {
  SimtGemmReader reader{kernel, options.arch, {}};
  if (failed(reader.run()))
    return failure();
  const SimtGemmPlan &p = reader.p;
  auto epilogue = EpilogueEmitter::createFor(p);
  if (failed(epilogue))
    return failure();
  emitSimtIncludes(w);
  w.line();
  std::optional<SimtTile> smallTile = smallGridTile(reader);
  // the kernel's own tile splits under split_k N, or under auto without a small tile
  SimtGemmWriter writer{p, *epilogue, w, {p.tile, "", !p.splitK.empty() && !smallTile}, {}};
  if (smallTile) {
    SimtGemmWriter smallWriter{p, *epilogue, w, {*smallTile, "_small", true}, {}};
    smallWriter.emitKernel();
    w.line();
    writer.small = smallWriter.kernel;
  }
  return emitKernelAndHost(writer, w, p.sig);
}

} // namespace sketch
