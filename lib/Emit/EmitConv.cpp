//===- EmitConv.cpp - implicit-GEMM forward convolution -------------------===//
//
// `Compute Conv2d X, W and get Y with stride (u, v) pad (p, q) dilation (d, e)`
// is a GEMM over output pixels (N*P*Q) and output channels (K), reduced over
// C*R*S, whose A operand is never materialized: the global->shared copy of X
// computes each element's input position (im2col) and zero-fills the padding.
// P and Q follow from the other sizes; the host function computes them.
//
//   nchw X, kcrs or krsc W  the SIMT mainloop (sketch/simt.cuh): block rows are
//                           output channels (the filter, K-contiguous: reduced over
//                           (c, r, s), or (r, s, c) for krsc), columns output
//                           pixels (Im2colNchwLoader), 8x8 per thread.
//   nhwc X, krsc W, f16/bf16  the tensor-core mainloop (TensorCoreGemm.h) with
//                           an im2col TileLoader for A (16-byte chunks of 8
//                           channels) and the filter as a K-contiguous B.
//   nchw X, kcrs 3x3 W, f32, stride 1, dilation 1, where sketch-choose-defaults
//                           chose "winograd" or "winograd_2x2" (plan::kConvAlgorithmAttr):
//                           Winograd F(4x4 or 2x2, 3x3) instead of the implicit GEMM
//                           (EmitWinograd.cpp).
// The epilogue (bias per output channel, activations, expressions, tensors of
// the output's shape) is fused before the store, in the output's layout.
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/ConvGeometry.h"
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Emit/EmitHost.h"
#include "lib/Emit/EmitSimt.h"
#include "lib/Emit/EmitWinograd.h"
#include "lib/Emit/KernelEmitters.h"
#include "lib/Emit/WgmmaGemm.h"
#include "lib/Emit/TensorCoreGemm.h"
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/SketchAnalysis.h"

using namespace mlir;

namespace sketch {

namespace {

//===----------------------------------------------------------------------===//
// Reading the kernel
//===----------------------------------------------------------------------===//

/// How an epilogue tensor is read: one value per output channel, or one per
/// output element (a tensor of the output's shape).
enum class ConvOperandKind { PerChannel, Full };

struct ConvPlan : ConvGeometry {
  KernelSignature sig;
  mutable Conv2dOp conv; // op handles: their accessors are not const
  const ParamInfo *x = nullptr, *w = nullptr, *y = nullptr;
  bool nhwc = false;
  bool krsc = false;    // the filter's layout
  bool outNhwc = false; // the output's layout (the input's, or either on the CUDA cores)
  bool simt = false; // the CUDA-core mainloop: f32 operands, or any nchw; else tensor cores
  int64_t tileM = 128, tileN = 128, tileK = 8, warps = 8, stages = 2;
  /// The SIMT mainloop's stages: double-buffered at most.
  int64_t simtStages() const { return sketch::simtStages(stages); }
  std::string pipeline;
  std::vector<Operation *> epilogue;
  mutable CopyOp store;
  std::string accumulator;
  llvm::StringMap<ConvOperandKind> operandKinds;
  plan::StagingBuffer staging;
  bool stagedEpilogue = false; // sketch.epilogue_mode = "staged" (tensor-core path)
};

struct ConvReader {
  KernelOp kernel;
  ConvPlan p;

  static constexpr KernelKindNames kNames = {"the convolution's main loop", "the convolution",
                                             "convolution"};

  LogicalResult readLoop(ForOp loop) {
    FailureOr<Conv2dOp> conv = readMainLoopOp<Conv2dOp>(kernel, loop, kNames, "Conv2d");
    if (failed(conv))
      return failure();
    p.conv = *conv;
    for (StringRef name : {p.conv.getInput(), p.conv.getFilter()}) {
      bool staged = false;
      loop.walk([&](CopyOp copy) {
        staged |= copy.getName() == name && copy.getSource() == MemorySpace::global &&
                  copy.getDestination() == MemorySpace::shared;
      });
      if (!staged)
        return p.conv.emitError() << "Conv2d operand '" << name
                                  << "' is not copied from global to shared memory in the main "
                                     "loop";
    }
    return success();
  }

  LogicalResult readEpilogue(ForOp loop) {
    return readEpilogueInto(p, kernel, loop, kNames);
  }

  /// Layouts and element types: nchw (SIMT) or nhwc (f32: SIMT, f16/bf16: tensor cores)
  /// activations, with a kcrs or krsc filter.
  LogicalResult readLayouts() {
    Conv2dOp conv = p.conv;
    auto layoutOf = [](const ParamInfo *param, Layout fallback) {
      return param->layout ? *param->layout : fallback;
    };
    Layout xl = layoutOf(p.x, Layout::nchw);
    Layout wl = layoutOf(p.w, xl == Layout::nhwc ? Layout::krsc : Layout::kcrs);
    Layout yl = layoutOf(p.y, xl);
    if (xl != Layout::nchw && xl != Layout::nhwc)
      return conv.emitError() << "input '" << p.x->name << "' has the filter layout "
                              << stringifyLayout(xl) << "; use nchw or nhwc";
    if (wl != Layout::kcrs && wl != Layout::krsc)
      return conv.emitError() << "filter '" << p.w->name << "' has the activation layout "
                              << stringifyLayout(wl) << "; use kcrs or krsc";
    p.nhwc = xl == Layout::nhwc;
    p.krsc = wl == Layout::krsc;
    if (yl != Layout::nchw && yl != Layout::nhwc)
      return conv.emitError() << "output '" << p.y->name << "' has the filter layout "
                              << stringifyLayout(yl) << "; use nchw or nhwc";
    p.outNhwc = yl == Layout::nhwc;
    ElementType xt = p.x->type, wt = p.w->type;
    if (xt != wt)
      return conv.emitError() << "input and filter element types differ ("
                              << stringifyElementType(xt) << ", " << stringifyElementType(wt)
                              << ")";
    // The tensor-core path reads nhwc; nchw convolutions of f16 / bf16 operands
    // run on the CUDA cores (converted to f32 on load).
    p.simt = xt == ElementType::f32 || !p.nhwc;
    if (yl != xl && !p.simt)
      return conv.emitError() << "output '" << p.y->name << "' is " << stringifyLayout(yl)
                              << " but the input is " << stringifyLayout(xl)
                              << ": the tensor-core kernels store their tile as rows of the "
                                 "[N*P*Q, K] matrix (nhwc); an nchw output takes f32 operands "
                                 "(the CUDA-core kernels store either layout)";
    return success();
  }

  LogicalResult readShape() {
    auto shape = convShape(kernel, p.conv);
    if (!shape || !shape->output)
      return p.conv.emitError() << "Conv2d needs 4-dimensional tensor parameters for the input, "
                                   "filter and output";
    p.x = p.sig.find(shape->input.getName());
    p.w = p.sig.find(shape->filter.getName());
    p.y = p.sig.find(shape->output.getName());
    if (p.y->name != p.store.getName())
      return p.store.emitError() << "the stored tensor '" << p.store.getName()
                                 << "' must be the convolution's output '" << p.y->name << "'";
    if (failed(readLayouts()))
      return failure();
    static_cast<ConvGeometry &>(p) = readConvGeometry(kernel, p.conv, *shape);
    // The filter's C and the output's N, K must be the input's.
    const auto &wd = p.w->dims, &yd = p.y->dims;
    std::string filterC = p.krsc ? wd[3] : wd[1];
    std::string outN = yd[0], outK = p.outNhwc ? yd[3] : yd[1];
    if (filterC != p.c)
      return p.conv.emitError() << "filter '" << p.w->name << "' has " << filterC
                                << " channels, the input '" << p.x->name << "' " << p.c;
    if (outN != p.n || outK != p.k)
      return p.conv.emitError() << "output '" << p.y->name << "[" << joined(yd)
                                << "]' must have the input's batch " << p.n
                                << " and the filter's " << p.k << " channels";
    return success();
  }

  LogicalResult readDirectives(ForOp loop) {
    FailureOr<TileDirectives> tile = readTileDirectives(kernel);
    if (failed(tile))
      return failure();
    p.tileM = tile->tileM, p.tileN = tile->tileN, p.tileK = tile->tileK, p.warps = tile->warps,
    p.stages = tile->stages;
    if (auto pipeline = loop->getAttrOfType<StringAttr>(plan::kPipelineAttr))
      p.pipeline = pipeline.str();
    else
      p.pipeline = p.stages == 1 ? "none" : p.stages == 2 ? "double_buffer" : "multistage";
    return success();
  }

  /// Epilogue tensors must be per output channel ([K]) or of the output's shape.
  LogicalResult readOperands() {
    auto check = [&](Operation *at, StringRef name) -> LogicalResult {
      const ParamInfo *param = p.sig.find(name);
      if (!param || !param->isTensor || p.operandKinds.count(name))
        return success();
      if (param->dims == std::vector<std::string>{p.k}) {
        p.operandKinds[name] = ConvOperandKind::PerChannel;
        return success();
      }
      if (param->dims == p.y->dims) {
        p.operandKinds[name] = ConvOperandKind::Full;
        return success();
      }
      return at->emitError() << "the convolution's epilogue reads '" << name << "["
                             << joined(param->dims) << "]': only per-channel tensors [" << p.k
                             << "] and tensors of the output's shape [" << joined(p.y->dims)
                             << "] are supported";
    };
    for (Operation *op : p.epilogue) {
      if (auto ew = dyn_cast<ElementwiseOp>(op)) {
        if (op->hasAttr(plan::kIndexAttr) &&
            failed(check(op, cast<StringAttr>(ew.getOperands()[0]).getValue())))
          return failure();
        continue;
      }
      WalkResult walk = op->walk([&](RefOp ref) {
        if (ref->hasAttr(plan::kIndexAttr) && failed(check(ref, ref.getName())))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return failure();
    }
    return success();
  }

  LogicalResult run() {
    ForOp loop = plan::findMainLoop(kernel);
    if (!loop)
      return kernel.emitError() << "kernel '" << kernel.getSymName()
                                << "' has no main loop with a Conv2d";
    p.sig = analyzeSignature(kernel);
    if (failed(readLoop(loop)) || failed(readEpilogue(loop)) || failed(readShape()) ||
        failed(readDirectives(loop)))
      return failure();
    // The host function does not take the derived P, Q: read the signature again.
    std::string x = p.x->name, w = p.w->name, y = p.y->name;
    p.sig = analyzeSignature(kernel, p.derived);
    p.x = p.sig.find(x), p.w = p.sig.find(w), p.y = p.sig.find(y);
    p.accumulator = p.conv.getResult().str();
    if (p.nhwc && !p.simt) {
      auto staging = plan::stagingBufferFrom(p.store->getAttr(plan::kStagingAttr));
      if (!staging)
        return p.store.emitError()
               << "the store has no shared staging plan (run sketch-plan-shared-memory)";
      if (staging->rows != p.tileM || staging->cols != p.tileN)
        return p.store.emitError() << "the stored register tile must be (BM, BN) = ("
                                   << p.tileM << ", " << p.tileN << ")";
      p.staging = *staging;
      auto mode = p.store->getAttrOfType<StringAttr>(plan::kEpilogueModeAttr);
      p.stagedEpilogue = mode && mode.getValue() == "staged";
    }
    return readOperands();
  }
};

//===----------------------------------------------------------------------===//
// Shared by both paths: sizes, host function
//===----------------------------------------------------------------------===//

/// What the host function needs of a tensor-core kernel to launch it.
struct TensorCoreLaunch {
  std::string name;
  int64_t tileM = 0, tileN = 0, threads = 0, smemBytes = 0;
  /// The sm_90a kernel: `template <bool kVec, bool kTma>`, with tensor maps of X
  /// (im2col boxes of tileM pixels) and of the filter (boxes of tileN rows).
  bool tma = false;
  /// The persistent, warp-specialized TMA kernel (empty where it does not fit): its
  /// threads and shared memory.
  std::string persistentName;
  int64_t persistentThreads = 0, persistentSmemBytes = 0;
  /// The persistent kernel splits its tail along K over clusters (sketch::tail_split).
  bool splitTail = false;
  /// The persistent kernel stores its tiles by TMA through `y_map` (boxes of 128 bytes by
  /// tileM pixels of the output as the matrix [N*P*Q, K]).
  bool storesByTma = false;
  /// The halo form of this kernel (HaloConvWriter; empty where the sketch does not allow
  /// it) and its staging tile's bytes.
  std::string haloName;
  int64_t haloThreads = 0, haloStagingBytes = 0;
};

struct ConvWriterBase {
  const ConvPlan &p;
  const EpilogueEmitter &epilogue;
  CudaWriter &w;

  std::string dim(StringRef d) const { return p.sig.dim(d); }
  /// `&&` the 16-byte alignment of a krsc filter (the nhwc kernels copy whole chunks of its
  /// rows); nothing for a kcrs one, which they gather.
  std::string filterAlignment() const {
    return p.krsc ? " && sketch::aligned_to(" + p.w->cname + ", 16)" : "";
  }
  /// True for an epilogue tensor of one value per output channel ([K]).
  bool perChannel(const EpilogueOperand &operand) const {
    return p.operandKinds.lookup(operand.param->name) == ConvOperandKind::PerChannel;
  }
  std::string dimsOf(const ParamInfo &param) const {
    return param.name + "[" + joined(param.dims) + "] " +
           (param.layout ? stringifyLayout(*param.layout).str() : std::string());
  }

  void emitHeaderComment(StringRef path, bool implicitGemm = true) {
    w.comment("Kernel " + p.sig.name + ": " + dimsOf(*p.y) + " = conv2d(" + dimsOf(*p.x) +
              ", " + dimsOf(*p.w) + "), stride (" + str(p.strideH) + ", " + str(p.strideW) +
              ") pad (" + str(p.padH) + ", " + str(p.padW) + ") dilation (" + str(p.dilH) +
              ", " + str(p.dilW) + ")");
    if (implicitGemm)
      w.comment("Implicit GEMM: M = " + p.n + "*" + p.p + "*" + p.q + " output pixels, N = " +
                p.k + " channels, reduced over " + p.c + "*" + p.r + "*" + p.s + "; " +
                path.str());
    else
      w.comment(path);
    for (const std::string &line : epilogue.describe())
      w.comment("Epilogue: " + line);
  }

  /// `const int64_t P = shape.p, Q = shape.q;` for derived sizes the epilogue may name.
  void emitDerivedSizes() {
    for (const std::string &d : p.derived)
      w.line("[[maybe_unused]] const int64_t " + cIdent(d) + " = shape." +
             (d == p.p ? "p" : "q") + ";");
  }

  std::string kernelParams() const {
    auto restrictRead = [](const ParamInfo &param) { return !param.written; };
    return kernelParameterList(p.sig, restrictRead) +
           ", const __grid_constant__ sketch::ConvShape shape";
  }

  std::string kernelArgs() const { return kernelArgumentList(p.sig) + ", shape"; }

  /// `template <bool kVec, bool kVecStore = kVec> __global__ void __launch_bounds__(BOUNDS)
  /// NAME(...) {` (kTma between them for the sm_90a kernel) and the
  /// dynamic shared memory (`smemNote` a trailing comment).
  void openTensorCoreKernel(const std::string &name, const std::string &bounds,
                            const std::string &smemNote, bool tma = false) {
    // kVecStore: 16-byte stores of the output (false where only its rows are not whole chunks)
    w.line(tma ? "template <bool kVec, bool kTma, bool kVecStore = kVec>"
               : "template <bool kVec, bool kVecStore = kVec>");
    std::string maps = tma ? ", const __grid_constant__ CUtensorMap x_map, const "
                             "__grid_constant__ CUtensorMap w_map"
                           : "";
    w.line("__global__ void __launch_bounds__(" + bounds + ") " + name + "(" + kernelParams() +
           maps + ") {");
    w.indentMore();
    w.line("extern __shared__ __align__(128) unsigned char smem[];" + smemNote);
  }

  /// The implicit GEMM's sizes and this block's tile (m0 pixels, n0 channels); expects
  /// BM, BN and the derived sizes' `shape`.
  void emitImplicitGemmBlock() {
    emitImplicitGemmSizes();
    w.comment("block: channel tiles fastest, so neighbouring blocks read the same input pixels");
    w.line("const int tiles_n = (int)sketch::ceil_div(size_n, BN);");
    emitTileOrigin("blockIdx.x");
  }

  /// The implicit GEMM's sizes (and the derived sizes the epilogue may name).
  void emitImplicitGemmSizes() {
    emitDerivedSizes();
    w.line("const int64_t size_m = (int64_t)shape.n * shape.p * shape.q, size_n = shape.k, "
           "size_k = (int64_t)shape.c * shape.r * shape.s;");
  }

  /// Output tile `tile` (channel tiles fastest: `tiles_n` of them a row of pixel tiles):
  /// its first pixel m0 and channel n0.
  void emitTileOrigin(StringRef tile) {
    w.line(("const int64_t m0 = (int64_t)(" + tile + " / tiles_n) * BM, n0 = (int64_t)(" + tile +
            " % tiles_n) * BN;")
               .str());
  }

  /// A launch of `kernel` (a kernel or the name of a variable holding one) on `grid` blocks
  /// (a variable), then its error; with `maps` the TMA tensor maps follow the arguments.
  /// `dependent` (a kernel that starts with emitGridDependencyWait): an expression, where
  /// it holds a programmatic dependent launch (docs/backend.md).
  void emitLaunch(const std::string &kernel, const std::string &grid, int64_t threads,
                  int64_t smemBytes, bool maps, const std::string &dependent = "") {
    emitAllowSmem(kernel, smemBytes);
    emitLaunchCall(kernel, grid, threads, maps, dependent);
  }

  /// The launch itself, after emitAllowSmem; `cluster`: blocks a cluster (an expression).
  void emitLaunchCall(const std::string &kernel, const std::string &grid, int64_t threads,
                      bool maps, const std::string &dependent, const std::string &cluster = "1",
                      bool outputMap = false, const std::string &moreArgs = "") {
    std::string args = kernelArgs() + (maps ? ", x_map, w_map" : "") + (outputMap ? ", y_map" : "") +
                       moreArgs;
    if (!dependent.empty()) {
      w.comment("one wave of one-tile blocks: a programmatic dependent launch");
      w.line("return sketch::launch_kernel(" + kernel + ", dim3(unsigned(" + grid + ")), " +
             str(threads) + ", smem_bytes, " + cluster + ", " + dependent + ", stream, " + args +
             ");");
      return;
    }
    w.line(kernel + "<<<dim3(unsigned(" + grid + ")), " + str(threads) + ", smem_bytes, stream>>>(" +
           args + ");");
    w.line("return cudaGetLastError();");
  }

  /// `smem_bytes` and the kernel's dynamic shared-memory limit.
  void emitAllowSmem(const std::string &kernel, int64_t smemBytes) {
    w.line("const int smem_bytes = " + str(smemBytes) + ";");
    w.line("cudaError_t err = sketch::allow_dynamic_smem(" + kernel + ", smem_bytes);");
    w.line("if (err != cudaSuccess)");
    w.line("  return err;");
  }

  /// The persistent kernel's launch with its split tail (sketch::tail_split): clusters of
  /// `slices` blocks share the tiles past the last whole round, where that is faster.
  void emitTailSplitLaunch(const TensorCoreLaunch &l) {
    const std::string &kernel = l.persistentName;
    emitAllowSmem(kernel, l.persistentSmemBytes);
    w.comment("the tiles past the last whole round of SMs split along K over clusters of 2 to 8 "
              "blocks where that ends sooner");
    emitTailSplitRule(w, "blocks", "sketch::ceil_div(depth, 64)", kernel, l.persistentThreads,
                      "smem_bytes");
    w.line("const int64_t grid = split.grid;");
    emitLaunchCall(kernel, "grid", l.persistentThreads, true, "blocks <= grid", "split.slices",
                   l.storesByTma);
  }

  /// The filter's k-tile copy: krsc rows of C*R*S, one per output channel.
  MatrixTileLoader::Spec filterLoaderSpec(const plan::SmemBuffer &smem, int64_t threads) const {
    MatrixTileLoader::Spec bs;
    bs.label = p.w->name + " (krsc: rows of C*R*S)";
    bs.base = p.w->cname;
    bs.rows = "size_n", bs.cols = "size_k", bs.ld = "size_k";
    bs.rowOrigin = "n0", bs.colOrigin = "(int64_t)kt * BK";
    bs.smem = smem;
    bs.threads = threads;
    return bs;
  }

  /// The output tile for emitAccumulatorStore (the tensor-core paths).
  StoreSpec storeSpec() const {
    StoreSpec s;
    s.outType = cTypeOf(p.y->type);
    s.dst = p.y->cname;
    s.rows = "size_m";
    s.cols = "size_n";
    s.ld = "size_n";
    s.m0 = "m0";
    s.n0 = "n0";
    // The output [N, P, Q, K] is the matrix [N*P*Q, K]: an output-shaped operand's
    // offset is row * K + col, so its batch indices (N, P) are folded into the row.
    s.batch = {"0", "0"};
    s.staging = p.staging;
    s.outBytes = plan::elementBytes(p.y->type);
    s.stagedEpilogue = p.stagedEpilogue;
    s.storeVec = "kVecStore";
    return s;
  }

  /// `blocks`: the (tileM, tileN) tiles of the output.
  void emitBlockCount(const TensorCoreLaunch &l) {
    w.line("const int64_t blocks = sketch::ceil_div(pixels, " + str(l.tileM) +
           ") * sketch::ceil_div(" + dim(p.k) + ", " + str(l.tileN) + ");");
    w.line("if (blocks > INT32_MAX)");
    w.line("  return cudaErrorInvalidValue;");
  }

  /// The launch of one tensor-core kernel (in the host function, after `vec`): one
  /// block of `threads` per (tileM, tileN) tile, kernel<true> on whole 16-byte chunks.
  void emitTensorCoreLaunch(const TensorCoreLaunch &l) {
    emitBlockCount(l);
    if (l.tma)
      emitTensorMaps(l);
    else
      w.line("auto kernel = !vec ? " + l.name + "<false> : vec_store ? " + l.name + "<true> : " +
             l.name + "<true, false>;");
    emitLaunch("kernel", "blocks", l.threads, l.smemBytes, l.tma);
  }

  /// The sm_90a kernel's choice: TMA (kTma) where a k-tile is 64 channels of one filter
  /// tap and the driver takes both tensor maps, else its cp.async paths.
  void emitTensorMaps(const TensorCoreLaunch &l) {
    emitOperandMaps(l);
    if (!l.persistentName.empty())
      emitPersistentLaunch(l);
    const std::string &name = l.name;
    w.comment("<kVec, kTma, kVecStore>: kVecStore false where only the output's rows are not "
              "whole chunks");
    w.line("auto kernel = !vec ? " + name + "<false, false>");
    w.line("              : !vec_store ? (tma ? " + name + "<true, true, false> : " + name +
           "<true, false, false>)");
    w.line("              : tma ? " + name + "<true, true> : " + name + "<true, false>;");
  }

  /// `x_map`, `w_map` and whether TMA applies (`tma`).
  void emitOperandMaps(const TensorCoreLaunch &l) {
    w.comment("TMA: X in im2col boxes of " + str(l.tileM) +
              " pixels x 64 channels (C % 64 == 0: a k-tile is one filter tap), the filter as "
              "the matrix [K, C*R*S] in boxes of " + str(l.tileN) + " rows x 64");
    w.line("CUtensorMap x_map{}, w_map{};");
    w.line("const int64_t depth = (int64_t)shape.c * shape.r * shape.s;");
    w.line("const bool tma = vec && shape.c % 64 == 0 && depth < INT32_MAX &&");
    w.line("    sketch::encode_tensor_map_im2col(&x_map, " + p.x->cname +
           ", 2, shape.n, shape.h, shape.w, shape.c, shape.pad_h, shape.pad_w, (shape.r - 1) * "
           "shape.dil_h, (shape.s - 1) * shape.dil_w, shape.stride_h, shape.stride_w, 64, " +
           str(l.tileM) + ") &&");
    w.line("    sketch::encode_tensor_map_2d(&w_map, " + p.w->cname + ", depth, shape.k, depth * "
           "2, 64, " + str(l.tileN) + ", 2);");
  }

  /// The persistent kernel's launch where TMA applies and the output's rows are whole
  /// chunks (after emitOperandMaps); else the code after it runs.
  void emitPersistentLaunch(const TensorCoreLaunch &l) {
    w.comment("persistent and warp-specialized: a block a multiprocessor (at most one a tile)");
    if (l.storesByTma) {
      int64_t outBytes = plan::elementBytes(p.y->type);
      std::string ob = str(outBytes);
      w.comment("its tiles stored by TMA: the output as the matrix [N*P*Q, K] in boxes of " +
                str(l.tileM) + " pixels x 128 bytes");
      w.line("CUtensorMap y_map{};");
      w.open("if (tma && vec_store && sketch::encode_tensor_map_2d(&y_map, " + p.y->cname + ", shape.k, pixels, shape.k * " +
             ob + ", " + str(128 / outBytes) + ", " + str(l.tileM) + ", " + ob + "))");
    } else {
      w.open("if (tma && vec_store)");
    }
    if (l.splitTail)
      emitTailSplitLaunch(l);
    else {
      w.line("const int64_t grid = std::min<int64_t>(blocks, std::max(sketch::sm_count(), 1));");
      emitAllowSmem(l.persistentName, l.persistentSmemBytes);
      emitLaunchCall(l.persistentName, "grid", l.persistentThreads, true, "blocks <= grid", "1",
                     l.storesByTma);
    }
    w.close();
  }

  /// The tensor-core paths' host function: the `narrow` kernel (the variant of half
  /// the channels) where the output channels fit its tile, else the `tall` one's
  /// persistent kernel where it moves fewer operand rows an SM, else the `wide` one.
  void emitTensorCoreHost(const TensorCoreLaunch &wide, const TensorCoreLaunch *narrow,
                          const TensorCoreLaunch *tall) {
    w.open(hostPrototype(p.sig));
    emitHostShape();
    int64_t outChunk = 16 / plan::elementBytes(p.y->type);
    w.comment(p.krsc ? "16-byte loads: whole chunks of 8 channels (input, filter rows); 16-byte "
                       "stores: the output's rows too"
                     : "16-byte input loads: whole chunks of 8 channels (the kcrs filter is "
                       "gathered); 16-byte stores: the output's rows too");
    w.line("const bool vec = " + dim(p.c) + " % 8 == 0 && sketch::aligned_to(" + p.x->cname +
           ", 16)" + filterAlignment() + ";");
    w.line("const bool vec_store = vec && " + dim(p.k) + " % " + str(outChunk) +
           " == 0 && sketch::aligned_to(" + p.y->cname + ", 16);");
    if (narrow) {
      w.comment("few output channels: the " + str(narrow->tileM) + " x " + str(narrow->tileN) +
                " tile, so no block's channel columns sit idle");
      w.open("if (" + dim(p.k) + " <= " + str(narrow->tileN) + ")");
      if (!narrow->haloName.empty())
        emitHaloLaunch(*narrow);
      emitTensorCoreLaunch(*narrow);
      w.close();
    }
    if (tall)
      emitTallLaunch(*tall, wide);
    emitTensorCoreLaunch(wide);
    w.close();
  }

  /// The tall variant (kTallVariantAttr): its persistent TMA kernel where its tiles move
  /// fewer operand rows an SM than the wide kernel's (sketch::wave_rows); else the code
  /// after it runs.
  void emitTallLaunch(const TensorCoreLaunch &tall, const TensorCoreLaunch &wide) {
    auto rows = [&](const TensorCoreLaunch &l) {
      return "sketch::wave_rows(pixels, " + dim(p.k) + ", 1, sms, " + str(l.tileM) + ", " +
             str(l.tileN) + ")";
    };
    w.comment("a stride above 1: tiles of " + str(tall.tileM) + " x " + str(tall.tileN) +
              " where they move fewer operand rows an SM than " + str(wide.tileM) + " x " +
              str(wide.tileN) + " (docs/backend.md)");
    w.open("if (vec_store)");
    w.line("const int sms = std::max(sketch::sm_count(), 1);");
    w.open("if (" + rows(tall) + " < " + rows(wide) + ")");
    emitBlockCount(tall);
    emitOperandMaps(tall);
    emitPersistentLaunch(tall);
    w.close();
    w.close();
  }

  /// The halo form's launch (HaloConvWriter), where sketch::halo_stages finds it room and
  /// the driver takes its three tensor maps; else the code after it runs.
  void emitHaloLaunch(const TensorCoreLaunch &l) {
    int64_t outBytes = plan::elementBytes(p.y->type);
    std::string bn = str(l.tileN), bm = str(l.tileM), staging = str(l.haloStagingBytes);
    w.comment("stride 1: the halo form (docs/backend.md) where its filter, two patches and its "
              "staging tile fit in shared memory");
    w.open("if (vec_store && shape.r * shape.s > 1)");
    w.line("const int halo_stages = sketch::halo_stages(shape, " + bm + ", " + bn + ", " + staging +
           ", " + str(plan::smemLimitBytes("sm_90a")) + ", 4);");
    w.line("const sketch::HaloPlan halo(shape, " + bm + ", " + bn + ", " + staging + ", halo_stages);");
    w.line("const int64_t tiles = (int64_t)shape.n * halo.row_tiles, depth = (int64_t)shape.c * "
           "shape.r * shape.s;");
    w.line("CUtensorMap x_map{}, w_map{}, y_map{};");
    w.line("const bool halo_maps = halo_stages > 0 && tiles <= INT32_MAX && depth < INT32_MAX &&");
    w.line("    sketch::halo_pays(shape, halo, " + bm + ", " + bn + ", sketch::sm_count()) &&");
    w.line("    sketch::encode_tensor_map_nhwc(&x_map, " + p.x->cname + ", 2, shape.n, shape.h, "
           "shape.w, shape.c, 64, halo.slots, halo.patch_rows) &&");
    w.line("    sketch::encode_tensor_map_2d(&w_map, " + p.w->cname + ", depth, shape.k, depth * 2, "
           "64, " + bn + ", 2) &&");
    w.line("    sketch::encode_tensor_map_nhwc(&y_map, " + p.y->cname + ", " + str(outBytes) +
           ", shape.n, shape.p, shape.q, shape.k, " + str(128 / outBytes) + ", halo.slots, "
           "halo.tile_rows);");
    w.open("if (halo_maps)");
    w.line("const int64_t grid = std::min<int64_t>(tiles, std::max(sketch::sm_count(), 1));");
    w.line("const int smem_bytes = (int)halo.smem_bytes;");
    w.line("cudaError_t err = sketch::allow_dynamic_smem(" + l.haloName + ", smem_bytes);");
    w.line("if (err != cudaSuccess)");
    w.line("  return err;");
    emitLaunchCall(l.haloName, "grid", l.haloThreads, true,
                   "tiles <= grid", "1", true, ", halo_stages");
    w.close();
    w.close();
  }

  /// Host-side checks and the ConvShape; leaves `shape`, `pixels` in scope.
  void emitHostShape() { emitConvHostShape(w, p, p.sig, p.x->dims, p.y->name, {p.k}); }
};

//===----------------------------------------------------------------------===//
// f32 (nchw or nhwc) and f16 / bf16 nchw: the SIMT path
//===----------------------------------------------------------------------===//

/// The SIMT block of an implicit-GEMM f32 convolution (deriveSimtConvTile;
/// sketch-choose-defaults checked its rules, a located error otherwise), on the f64
/// tensor cores where the target and the tile allow, as the f32 GEMM's.
FailureOr<SimtTile> simtConvTile(KernelOp kernel, const ConvPlan &p, StringRef arch) {
  std::string broken;
  SimtConvLoads loads{p.nhwc, p.x->type == ElementType::f32 && p.y->type == ElementType::f32,
                      gathersConvFilter(kernel, p.conv)};
  if (auto tile =
          deriveSimtConvTile(p.tileM, p.tileN, p.tileK, p.warps, p.simtStages(), loads, arch, broken))
    return *tile;
  return kernel.emitError() << stringifyElementType(p.x->type) << " "
                            << (p.nhwc ? "nhwc" : "nchw") << " convolution tile BM = "
                            << p.tileM
                            << " (pixels), BN = " << p.tileN << " (channels), BK = " << p.tileK
                            << " with " << p.warps << " warps: " << broken;
}

struct SimtConvWriter : ConvWriterBase {
  SimtTile simt; // nchw: rows BN channels, columns BM pixels; nhwc the other way (simtConvTile)
  /// The tile the host launches when the output channels fit its rows
  /// (sketch-choose-defaults' narrow variant), with the same pointwise flag.
  std::optional<SimtTile> narrow;
  std::string kernelName(bool narrowKernel = false) const {
    return p.sig.name + (narrowKernel ? "_simt_narrow" : "_simt");
  }

  /// The value of an epilogue tensor at the element (channel, pixel), offset y_at.
  std::string operandValue(const EpilogueOperand &operand) const {
    if (perChannel(operand))
      return operand.var;
    return "(y_at >= 0 ? sketch::to_float(" + operand.param->cname + "[y_at]) : 0.0f)";
  }

  /// True when an epilogue tensor has the output's shape (read per element).
  bool hasFullOperand() const {
    return llvm::any_of(epilogue.operands(), [&](const EpilogueOperand &operand) {
      return p.operandKinds.lookup(operand.param->name) == ConvOperandKind::Full;
    });
  }

  void emitEpilogue(const SimtTile &t) {
    w.comment("Epilogue: output channel k0 + micro.row(i), pixel pix0 + micro.col(j)" +
              std::string(p.outNhwc ? "; the output nhwc" : ""));
    if (!p.outNhwc)
      w.line("const bool out_vec = shape.p * shape.q % 4 == 0 && sketch::aligned_to_device(" +
             p.y->cname + ", 16);");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < " + str(t.microRows) + "; ++i)");
    w.line("const int channel = k0 + micro.row(i);");
    w.line("if (channel >= shape.k)");
    w.line("  continue;");
    for (const EpilogueOperand &operand : epilogue.operands())
      if (perChannel(operand))
        w.line("const float " + operand.var + " = sketch::to_float(" + operand.param->cname +
               "[channel]);  // per output channel");
    w.line("float out[" + str(t.microCols) + "];");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < " + str(t.microCols) + "; ++j)");
    if (hasFullOperand())
      w.line(std::string("const int y_at = sketch::") + (p.outNhwc ? "nhwc" : "nchw") +
             "_offset(shape, pix0 + micro.col(j), channel);");
    epilogue.emitElement(
        w, "acc[i][j]", [&](const EpilogueOperand &operand) { return operandValue(operand); },
        "out[j]");
    w.close();
    if (p.outNhwc)
      w.line("sketch::store_nhwc_channel(" + p.y->cname + ", shape, micro, pix0, channel, out);");
    else
      w.line("sketch::store_nchw_row<kVec>(" + p.y->cname +
             ", shape, micro, pix0, channel, out, out_vec);");
    w.close();
  }

  /// "kPointwise" when a 1x1 filter would make the input tile rows of whole
  /// 16-byte chunks (stride 1, pad 0, and a tile PointwiseNchwLoader can deal);
  /// the host picks that instantiation when R = S = 1 at run time.
  std::string pointwiseFlag(const SimtTile &t) const {
    if (p.nhwc || p.x->type != ElementType::f32)
      return ""; // the nchw f32 input loader's alternative (16-byte cp.async)
    bool dealFits = t.cols % 4 == 0 && t.threads() % (t.cols / 4) == 0 &&
                    t.depth * (t.cols / 4) % t.threads() == 0;
    bool unitWindow = p.strideH == 1 && p.strideW == 1 && p.padH == 0 && p.padW == 0;
    auto mayBeOne = [](const std::string &dim) {
      return dim == "1" || !std::isdigit(static_cast<unsigned char>(dim[0]));
    };
    return dealFits && unitWindow && mayBeOne(p.r) && mayBeOne(p.s) ? "kPointwise" : "";
  }

  /// pointwiseFlag's template flag, chosen by the host's `pointwise`, or none.
  SmallVector<SimtFlag, 1> pointwiseFlags(const SimtTile &t) const {
    std::string flag = pointwiseFlag(t);
    if (flag.empty())
      return {};
    return {{flag, "pointwise"}};
  }

  void emitKernel() {
    emitKernelOf(simt, kernelName());
    if (narrow) {
      w.line();
      emitKernelOf(*narrow, kernelName(true));
    }
  }

  /// The kernel's head: header comment (`math` on the CUDA cores or the f64 tensor cores,
  /// block tile of `rows` x `cols`), signature, tile constants, derived sizes.
  void openKernelOf(const SimtTile &t, const std::string &name, const std::string &math,
                    const std::string &rows, const std::string &cols) {
    emitHeaderComment(math + " on " + simtUnits(t) + ": block tile " + str(t.rows) + " " + rows +
                      " x " + str(t.cols) + " " + cols + " x " + str(t.depth) + ", " +
                      str(t.threads()) + " threads, " + str(t.microRows) + " x " +
                      str(t.microCols) + " accumulators each" + simtMmaDescription(t) +
                      ", shared tiles double-buffered (sketch/simt.cuh, sketch/conv.cuh)");
    openSimtKernel(w, name, t, kernelParams(), pointwiseFlags(t));
    emitSimtConstants(w, t, true);
    emitDerivedSizes();
  }

  void emitKernelOf(const SimtTile &t, const std::string &name) {
    if (p.nhwc)
      return emitNhwcKernelOf(t, name);
    openKernelOf(t, name, p.x->type == ElementType::f32 ? "f32" : "f32 math", "channels",
                 "pixels");
    w.line("const int k0 = blockIdx.y * ROWS, pix0 = blockIdx.x * COLS;  // first channel, pixel");
    w.line(p.krsc ? "const int depth = shape.r * shape.s * shape.c;  // reduction: (r, s, c), c "
                    "fastest (the krsc filter's rows)"
                  : "const int depth = shape.c * shape.r * shape.s;  // reduction: (c, r, s), s "
                    "fastest");
    emitSimtMicroTile(w, t);
    // f16 / bf16 operands: the loaders convert them to f32 (the element type argument)
    std::string element =
        p.x->type == ElementType::f32 ? "" : ", " + cTypeOf(p.x->type);
    SimtLoader filter{"sketch::simt::KContiguousLoader<ROWS, DEPTH, THREADS, kVec" + element + ">",
                      "load_w", p.w->cname + ", depth, k0, shape.k, depth"};
    // a krsc filter: the loader's Krsc flag after its (then explicit) element type
    std::string krsc = p.krsc ? ", " + cTypeOf(p.x->type) + ", true" : element;
    std::string im2col = "sketch::simt::Im2colNchwLoader<COLS, DEPTH, THREADS" + krsc + ">";
    if (!pointwiseFlag(t).empty()) {
      w.comment("kPointwise (R = S = 1, H * W % 4 == 0, X 16-byte aligned): 16-byte input copies");
      w.line("using InputLoader = std::conditional_t<kPointwise, "
             "sketch::simt::PointwiseNchwLoader<COLS, DEPTH, THREADS>, " + im2col + ">;");
      im2col = "InputLoader";
    }
    SimtLoader input{im2col, "load_x", p.x->cname + ", shape, pix0"};
    emitSimtMainloop(w, str(p.simtStages()), filter, input, "(depth + DEPTH - 1) / DEPTH", {}, t);
    emitEpilogue(t);
    w.close();
  }

  /// nhwc: out[pixel][channel] = im2col(X)[pixel][(r, s, c)] . W[channel][(r, s, c)]:
  /// rows are pixels (Im2colNhwcLoader), columns channels (a krsc filter as a K-contiguous
  /// B operand, a kcrs one gathered), the output a row-major [N*P*Q, K] matrix.
  void emitNhwcKernelOf(const SimtTile &t, const std::string &name) {
    openKernelOf(t, name, "f32 nhwc", "pixels", "channels");
    w.line("const int pix0 = blockIdx.x * ROWS, k0 = blockIdx.y * COLS;  // first pixel, channel");
    w.line("const int depth = shape.r * shape.s * shape.c;  // reduction: (r, s, c), c fastest");
    emitSimtMicroTile(w, t);
    SimtLoader input{"sketch::Im2colNhwcLoader<ROWS, DEPTH, THREADS, kVec>", "load_x",
                     p.x->cname + ", shape, pix0"};
    SimtLoader krsc{"sketch::simt::KContiguousLoader<COLS, DEPTH, THREADS, kVec>", "load_w",
                    p.w->cname + ", depth, k0, shape.k, depth"};
    SimtLoader kcrs{"sketch::simt::KcrsFilterLoader<COLS, DEPTH, THREADS>", "load_w",
                    p.w->cname + ", shape, k0"};
    if (!p.krsc)
      w.comment("a kcrs filter: its (r, s, c) elements gathered a float at a time");
    emitSimtMainloop(w, str(p.simtStages()), input, p.krsc ? krsc : kcrs,
                     "(depth + DEPTH - 1) / DEPTH", {}, t);
    emitNhwcEpilogue(t);
    w.close();
  }

  /// Epilogue of the nhwc kernel: per-channel operands once a column, then each row
  /// (pixel) of the micro-tile through the fused statements and `store_row`.
  void emitNhwcEpilogue(const SimtTile &t) {
    const std::string cols = str(t.microCols);
    w.comment("Epilogue: pixel pix0 + micro.row(i), output channel k0 + micro.col(j)");
    w.line("const int64_t pixels = int64_t(shape.n) * shape.p * shape.q;");
    for (const EpilogueOperand &operand : epilogue.operands()) {
      if (!perChannel(operand))
        continue;
      w.line("float " + operand.var + "[" + cols + "];  // per output channel");
      w.line("#pragma unroll");
      w.line("for (int j = 0; j < " + cols + "; ++j)");
      w.line("  " + operand.var + "[j] = k0 + micro.col(j) < shape.k ? sketch::to_float(" +
             operand.param->cname + "[k0 + micro.col(j)]) : 0.0f;");
    }
    // (an nchw output: the pixel's channel 0 found once a row, its channels P*Q apart)
    std::string columnLine = hasFullOperand() ? "const int channel = k0 + micro.col(j);" : "";
    std::string store = p.outNhwc ? "sketch::simt::store_row<kVec>(" + p.y->cname +
                                        " + pixel * shape.k, micro, k0, shape.k, out);"
                                  : "sketch::store_nchw_pixel(" + p.y->cname +
                                        ", shape, micro, y_row, k0, out);";
    std::string rowLine =
        p.outNhwc ? "" : "const int y_row = sketch::nchw_offset(shape, int(pixel), 0);";
    SimtRowEpilogue rows{"pixel", "pix0", "pixels", columnLine, store, rowLine};
    std::string at =
        p.outNhwc ? "pixel * shape.k + channel" : "y_row + channel * shape.p * shape.q";
    emitSimtRowEpilogue(w, t, epilogue, rows, [&](const EpilogueOperand &operand) -> std::string {
      if (perChannel(operand))
        return operand.var + "[j]";
      return "(channel < shape.k ? sketch::to_float(" + operand.param->cname + "[" + at +
             "]) : 0.0f)";
    });
  }

  void emitHost() {
    w.open(hostPrototype(p.sig));
    emitHostShape();
    if (p.nhwc) {
      w.comment(p.krsc
                    ? "16-byte loads (4 channels of one filter tap) and stores: C, K multiples of 4"
                    : "16-byte input loads (4 channels of one tap) and stores: C, K multiples of "
                      "4 (the kcrs filter is gathered)");
      w.line("const bool vec = " + dim(p.c) + " % 4 == 0 && " + dim(p.k) +
             " % 4 == 0 && sketch::aligned_to(" + p.x->cname + ", 16)" + filterAlignment() +
             (p.outNhwc ? " && sketch::aligned_to(" + p.y->cname + ", 16)" : std::string()) +
             ";");
      emitLaunch(simt, kernelName());
      w.close();
      return;
    }
    w.comment("16-byte filter loads and output stores when rows are whole float4s");
    w.line("const bool vec = (" + p.sig.product({p.c, p.r, p.s}) +
           ") % 4 == 0 && sketch::aligned_to(" + p.w->cname + ", 16);");
    if (!pointwiseFlag(simt).empty()) {
      w.comment("a 1x1 filter: the input tile is H * W-contiguous rows of channels");
      w.line("const bool pointwise = " + dim(p.r) + " == 1 && " + dim(p.s) + " == 1 && (" +
             dim(p.h) + " * " + dim(p.wd) + ") % 4 == 0 && sketch::aligned_to(" + p.x->cname +
             ", 16);");
    }
    if (narrow) {
      w.comment("few output channels: the " + str(narrow->rows) + "-channel x " +
                str(narrow->cols) + "-pixel tile, so no block's channel rows sit idle");
      w.open("if (" + dim(p.k) + " <= " + str(narrow->rows) + ")");
      emitLaunch(*narrow, kernelName(true));
      w.close();
    }
    emitLaunch(simt, kernelName());
    w.close();
  }

  /// The grid of tile `t` and the launch of kernel `name` (its constants in scope):
  /// pixel tiles along x, channel tiles along y.
  void emitLaunch(const SimtTile &t, const std::string &name) {
    emitSimtConstants(w, t, false);
    const char *pixelTile = p.nhwc ? "ROWS" : "COLS", *channelTile = p.nhwc ? "COLS" : "ROWS";
    w.line("const dim3 grid(unsigned(sketch::ceil_div(pixels, " + std::string(pixelTile) +
           ")), unsigned(sketch::ceil_div(" + dim(p.k) + ", " + channelTile + ")));");
    w.line("if (sketch::ceil_div(pixels, " + std::string(pixelTile) +
           ") > INT32_MAX || grid.y > 65535)");
    w.line("  return cudaErrorInvalidValue;");
    emitSimtLaunch(w, name, "grid", kernelArgs(),
                   str(simtDynamicBytes(t.sharedBytes(p.simtStages()))), pointwiseFlags(t));
    w.line("return cudaGetLastError();");
  }
};

//===----------------------------------------------------------------------===//
// nhwc / krsc, f16 / bf16: the tensor-core path
//===----------------------------------------------------------------------===//

/// A loader of a (rows, BK) 16-bit tile in which each thread copies one 16-byte chunk
/// column (`chunk`) of tile rows tid / chunksPerRow() + i * rowStep(): the geometry and
/// the loop over a thread's rows.
class ChunkColumnLoader : public TileLoader {
public:
  ChunkColumnLoader(const plan::SmemBuffer &smem, int64_t threads) : smem(smem), threads(threads) {}

  int64_t chunksPerRow() const { return smem.cols / 8; }
  int64_t iterations() const { return (smem.rows * chunksPerRow() + threads - 1) / threads; }
  int64_t rowStep() const { return threads / chunksPerRow(); }

protected:
  /// `pragma`, then the loop over this thread's rows r (those past the tile skipped),
  /// `copy(dst)` in it with `dst` its chunk `chunk`'s shared address.
  void emitRows(CudaWriter &w, const std::string &pragma, StringRef chunk,
                llvm::function_ref<void(const std::string &)> copy) const {
    w.line(pragma);
    w.open("for (int i = 0; i < " + str(iterations()) + "; ++i)");
    w.line("const int r = tid / " + str(chunksPerRow()) + " + i * " + str(rowStep()) + ";");
    bool guarded = iterations() * rowStep() > smem.rows;
    if (guarded)
      w.open("if (r < " + str(smem.rows) + ")");
    copy("dst + " + swizzleOffset(smem, "r", chunk));
    if (guarded)
      w.close();
    w.close();
  }

  plan::SmemBuffer smem;
  int64_t threads;
};

/// The A operand of an nhwc convolution: tile row r is output pixel m0 + r, its
/// 16-byte chunk c holds reduction indices kt * BK + 8c .. +7 (8 channels of one
/// filter tap when C % 8 == 0). Each thread's chunks share one c, so the
/// reduction split is computed once per k-tile; the pixels' windows once, where a thread
/// has at most kMostKeptWindows of them (3 registers each, held across the main loop: 16
/// beside 64 x 64 warp tiles spilled 48-68 bytes), else again at every k-tile.
class Im2colNhwcLoader : public ChunkColumnLoader {
public:
  static constexpr int64_t kMostKeptWindows = 8;

  Im2colNhwcLoader(const plan::SmemBuffer &smem, int64_t threads, std::string x)
      : ChunkColumnLoader(smem, threads), x(std::move(x)) {}

  bool keepsWindows() const { return iterations() <= kMostKeptWindows; }

  void emitSetup(CudaWriter &w) const override {
    std::string rows = "im2col: this thread copies chunk x_chunk of tile rows tid / " +
                       str(chunksPerRow()) + " + i * " + str(rowStep());
    w.comment(keepsWindows() ? rows + "; their input windows:"
                             : rows + " (" + str(iterations()) +
                                   " windows, found again at every k-tile: fewer registers)");
    w.line("const int x_chunk = tid % " + str(chunksPerRow()) + ";");
    if (!keepsWindows())
      return;
    w.line("sketch::WindowNhwc x_win[" + str(iterations()) + "];");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < " + str(iterations()) + "; ++i)");
    w.line("x_win[i] = sketch::window_nhwc(shape, m0 + tid / " + str(chunksPerRow()) + " + i * " +
           str(rowStep()) + ");");
    w.close();
  }

  void emitLoad(CudaWriter &w) const override {
    w.comment("X (im2col): a (" + str(smem.rows) + ", " + str(smem.cols) +
              ") tile, zero in the padding; one (r, s, c) split per k-tile");
    w.line("const int k = kt * BK + x_chunk * 8;");
    w.line("const sketch::ReductionNhwc x_red = sketch::reduction_nhwc(shape, k);");
    w.comment("(the element path stays rolled and finds each window again: fewer registers)");
    emitRows(w, "#pragma unroll(kVec ? " + str(iterations()) + " : 1)", "x_chunk",
             [&](const std::string &dst) {
               w.line("if constexpr (kVec)");
               w.line("  sketch::load_im2col_nhwc_16<true>(" + dst + ", " + x + ", shape, " +
                      (keepsWindows() ? "x_win[i]" : "sketch::window_nhwc(shape, m0 + r)") +
                      ", x_red, k);");
               w.line("else");
               w.line("  sketch::load_im2col_nhwc_16<false>(" + dst + ", " + x +
                      ", shape, sketch::window_nhwc(shape, m0 + r), x_red, k);");
             });
  }

private:
  std::string x;
};

/// The B operand of an nhwc convolution with a kcrs filter: tile row r is output channel
/// n0 + r, its 16-byte chunk c holds reduction indices kt * BK + 8c .. +7 in the input's
/// (r, s, c) order, which a kcrs filter row holds apart (R*S elements between channels):
/// element loads, one 16-byte store a chunk (sketch::load_filter_kcrs_16). Each thread's
/// chunks share one c, so the reduction split is computed once per k-tile.
class KcrsFilterLoader : public ChunkColumnLoader {
public:
  KcrsFilterLoader(const plan::SmemBuffer &smem, int64_t threads, std::string filter)
      : ChunkColumnLoader(smem, threads), filter(std::move(filter)) {}

  void emitSetup(CudaWriter &w) const override {
    w.line("const int w_chunk = tid % " + str(chunksPerRow()) +
           ";  // the filter chunk this thread gathers, of rows tid / " + str(chunksPerRow()) +
           " + i * " + str(rowStep()));
  }

  void emitLoad(CudaWriter &w) const override {
    w.comment(filter + " (kcrs, gathered): a (" + str(smem.rows) + ", " + str(smem.cols) +
              ") tile of filter rows n0 + r; one (r, s, c) split per k-tile");
    w.line("const int k = kt * BK + w_chunk * 8;");
    w.line("const sketch::ReductionIndex w_at = sketch::reduction_index(shape, k);");
    emitRows(w, "#pragma unroll 1", "w_chunk", [&](const std::string &dst) {
      w.line("sketch::load_filter_kcrs_16<kVec>(" + dst + ", " + filter +
             ", shape, int(n0) + r, w_at, k);");
    });
  }

private:
  std::string filter;
};

struct TensorCoreConvWriter : ConvWriterBase {
  std::string suffix; // "" or "_narrow"
  TensorCoreConfig config;
  int64_t smemBytes = 0;

  std::string kernelName() const { return p.sig.name + "_tc" + suffix; }

  /// Shared buffers: both operand tiles K-contiguous (X rows are pixels, W rows
  /// output channels, 16-byte chunks along C*R*S), `stages` each, then the
  /// staging tile of the result over them.
  LogicalResult plan(int64_t smemLimit) {
    config.tileM = p.tileM, config.tileN = p.tileN, config.tileK = p.tileK;
    if (p.tileK % 16 || p.tileM % 16 || p.tileN % 16)
      return p.conv.emitError() << "tile " << p.tileM << "x" << p.tileN << "x" << p.tileK
                                << ": the tensor-core path needs multiples of 16 (mma m16n8k16)";
    if (!plan::chooseWarpGrid(p.tileM, p.tileN, p.warps, config.warpsM, config.warpsN))
      return p.conv.emitError() << "tile " << p.tileM << "x" << p.tileN
                                << " cannot be split among " << p.warps
                                << " warps into warp tiles that are multiples of 16x16";
    int64_t accumulators = (p.tileM / config.warpsM) * (p.tileN / config.warpsN) / 32;
    if (accumulators > 128)
      return p.conv.emitError() << "warp tile " << p.tileM / config.warpsM << "x"
                                << p.tileN / config.warpsN << " needs " << accumulators
                                << " f32 accumulators per thread (at most 128 fit): use more "
                                   "warps or a smaller tile";
    if (failed(checkMmaSyncRegisters(p.conv, p.warps, p.tileM / config.warpsM,
                                     p.tileN / config.warpsN)))
      return failure();
    if (config.threads() % (p.tileK / 8))
      return p.conv.emitError() << "BK = " << p.tileK << " gives " << p.tileK / 8
                                << " 16-byte chunks a row, which must divide the block's "
                                << config.threads() << " threads: use BK = 16, 32 or 64";
    config.stages = p.stages;
    config.pipeline = p.pipeline;
    config.fragmentBuffers = p.tileK >= 32 ? 2 : 1;
    config.operandType = cTypeOf(p.x->type);
    plan::SmemBuffer a = plan::chooseLayout(p.tileM, p.tileK, 2);
    plan::SmemBuffer b = plan::chooseLayout(p.tileN, p.tileK, 2);
    a.stages = b.stages = p.stages;
    a.offset = 0;
    b.offset = (a.stages * a.stageBytes + 127) / 128 * 128;
    config.a = MmaOperandPlan{a, true};
    config.b = MmaOperandPlan{b, true};
    int64_t pipelineBytes = b.offset + b.stages * b.stageBytes;
    int64_t stagingBytes = p.staging.endBytes();
    smemBytes = std::max(pipelineBytes, stagingBytes);
    if (smemBytes > smemLimit)
      return p.conv.emitError() << "the convolution needs " << smemBytes
                                << " bytes of shared memory, more than the " << smemLimit
                                << " a block can use: use a smaller tile or fewer stages";
    return success();
  }

  void emitKernel() {
    emitHeaderComment(config.operandType + " on tensor cores (mma.sync m16n8k16): tile " +
                      str(p.tileM) + " x " + str(p.tileN) + " x " + str(p.tileK) + ", " +
                      str(p.warps) + " warps as " + str(config.warpsM) + " x " +
                      str(config.warpsN) + ", " + str(p.stages) + " stages (" + p.pipeline +
                      "), " + str(smemBytes) + " bytes of shared memory");
    // a minimum of 1 block an SM, as EmitGemm's (ptxas capped a 64 x 128 tile at 96 and spilled)
    openTensorCoreKernel(kernelName(), str(config.threads()) + ", 1", "");
    emitTensorCorePreamble(w, config);
    emitImplicitGemmBlock();
    Im2colNhwcLoader a(config.a.smem, config.threads(), p.x->cname);
    MatrixTileLoader krsc(filterLoaderSpec(config.b.smem, config.threads()));
    KcrsFilterLoader kcrs(config.b.smem, config.threads(), p.w->cname);
    const TileLoader &b = p.krsc ? static_cast<const TileLoader &>(krsc) : kcrs;
    emitTensorCoreMainloop(w, config, a, b, "(int)sketch::ceil_div(size_k, BK)");
    emitAccumulatorStore(w, config, epilogue, storeSpec());
    w.indentLess();
    w.line("}");
  }

  TensorCoreLaunch launch() const {
    return {kernelName(), p.tileM, p.tileN, config.threads(), smemBytes};
  }
};


/// nhwc/krsc f16/bf16 on sm_90a: the same implicit GEMM with wgmma (WgmmaGemm.h's
/// block). Both operand tiles are K-major (im2col rows of pixels, filter rows of
/// channels), 128-byte swizzled, BK = 64, loaded by the cp.async pipeline; BM / 64
/// warpgroups (the warps directive does not apply, as for the wgmma GEMM).
struct WgmmaConvWriter : ConvWriterBase {
  std::string suffix; // "" or "_narrow"
  WgmmaBlock block;
  int64_t smemBytes = 0;
  int64_t persistentStages = 0; // the persistent kernel's (block.stages, or more: plan)
  bool persistentOnly = false;  // the tall variant: its persistent kernel alone

  std::string kernelName() const { return p.sig.name + "_wg" + suffix; }

  /// Whether the wgmma block applies: plan::wgmmaConvTileShape (BM 64 to 256, BN 64, 128
  /// or 256, the accumulators within the registers), the planned
  /// staging tile BM x BN, and the stages and staging within `smemLimit`. `deepest` (the
  /// narrow variant, the compiler's own choice): its persistent kernel takes as many
  /// stages as fit beside its staging tile, so that the loads run further ahead of a
  /// short reduction (C64 3x3: 9 k-tiles a tile; docs/backend.md).
  bool plan(int64_t smemLimit, bool deepest) {
    if (!plan::wgmmaConvTileShape(p.tileM, p.tileN))
      return false;
    if (p.staging.rows != p.tileM || p.staging.cols != p.tileN)
      return false;
    block.tileM = p.tileM;
    block.tileN = p.tileN;
    block.stages = std::max<int64_t>(p.stages, 3);
    block.operandType = cTypeOf(p.x->type);
    persistentStages = block.stages;
    while (deepest) { // one stage more, while it still fits
      ++persistentStages;
      if (!persistentFits()) {
        --persistentStages;
        break;
      }
    }
    smemBytes = barriersOffset() + 16 * block.stages;
    return smemBytes <= smemLimit;
  }

  /// The TMA path's mbarriers (full[STAGES], empty[STAGES]) lie past the stages and the
  /// staging tile.
  int64_t barriersOffset() const {
    return (std::max(block.pipelineBytes(), p.staging.endBytes()) + 7) / 8 * 8;
  }

  /// The persistent kernel's staging tile follows the stages (the producer refills them
  /// for the next tile while the consumers store this one), then the mbarriers.
  plan::StagingBuffer persistentStaging() const {
    plan::StagingBuffer staging = p.staging;
    staging.offset = persistentBlock().pipelineBytes();
    return staging;
  }
  int64_t persistentBarriersOffset() const { return (persistentStaging().endBytes() + 7) / 8 * 8; }
  int64_t persistentSmemBytes() const {
    return persistentBarriersOffset() + 16 * persistentStages;
  }
  bool persistentFits() const { return persistentSmemBytes() <= plan::smemLimitBytes("sm_90a"); }
  /// The persistent kernel stores a register epilogue's tiles by TMA (denseStagingFits).
  bool persistentStoresByTma() const {
    return !p.stagedEpilogue && denseStagingFits(persistentStaging(), plan::elementBytes(p.y->type));
  }
  std::string persistentName() const { return p.sig.name + "_ws" + suffix; }

  /// The persistent, warp-specialized TMA kernel (the GEMM's form): warpgroup 0's thread
  /// 0 asks for every k-tile of the block's tiles (blockIdx.x, + gridDim.x, ...) through
  /// the stage ring, up to STAGES ahead and across tiles; the consumer warpgroups run
  /// wgmma on each landed stage and store each tile through a staging tile past the
  /// stages, so the next tile's loads overlap this one's epilogue.
  /// The persistent kernel's block: the producer warpgroup before the consumers.
  WgmmaBlock persistentBlock() const {
    WgmmaBlock ws = block;
    ws.producer = true;
    ws.stages = persistentStages;
    return ws;
  }

  /// The split tail's f32 partial tile (a K slice's sums, read by the cluster's other
  /// blocks): at offset 0, over the stages.
  plan::StagingBuffer partialTile() const { return splitTailPartialTile(block); }
  /// Whether the persistent kernel splits its tail: the partial tile ends before the
  /// staging tile (the stages are free once the tail's k-tiles are multiplied).
  bool splitsTail() const { return partialTile().endBytes() <= persistentStaging().offset; }

  void emitPersistentKernel() {
    WgmmaBlock ws = persistentBlock();
    bool tail = splitsTail();
    std::string wholeTiles = tail ? "whole_tiles" : "tile_count";
    // the epilogue's leading additive terms start the accumulators (docs/backend.md)
    FoldedEpilogue folded(epilogue, true);
    if (tail) {
      w.line("#include \"sketch/split.cuh\"  // the split tail's reduction over a cluster");
      w.line();
    }
    w.comment((persistentOnly ? "The taller tile's persistent, warp-specialized TMA kernel "
                              : "The persistent, warp-specialized form of " + kernelName() +
                                    "<true, true> ") +
              persistentText());
    if (folded.folds())
      w.comment(folded.describe());
    w.line("__global__ void __launch_bounds__(" + str(ws.launchThreads()) + ", 1) " +
           persistentName() + "(" + kernelParams() +
           ", const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap "
           "w_map" + std::string(persistentStoresByTma() ? ", const __grid_constant__ CUtensorMap y_map" : "") +
           ") {");
    w.indentMore();
    w.line("extern __shared__ __align__(128) unsigned char smem[];  // tiles aligned below");
    emitGridDependencyWait(w);
    w.line("[[maybe_unused]] constexpr bool kVec = true, kVecStore = true;  // launched on the "
           "TMA path only: whole 16-byte chunks");
    emitWgmmaPreamble(w, ws);
    emitImplicitGemmSizes();
    w.line("const int tiles_n = (int)sketch::ceil_div(size_n, BN);");
    w.line("const int tile_count = (int)sketch::ceil_div(size_m, BM) * tiles_n;  // channel "
           "tiles fastest");
    emitWgmmaBuffers(w, ws, " K-major: BM pixels (im2col rows) of BK, 128 bytes each",
                     " K-major: BN channels (filter rows) of BK");
    emitWgmmaStageBarriers(w, persistentBarriersOffset(), "  // the last barrier the producer joins");
    emitPersistentProducer(wholeTiles, tail);
    w.comment("consumer warpgroups: wgmma on each landed stage, then the tile's epilogue (their "
              "block barrier is named barrier 1, without the producer)");
    emitConsumerRegisters(w, ws);
    if (tail)
      emitSplitTailWholeTiles(w, "sketch::cluster_size() > 1");
    w.line("int k_step = 0;");
    w.open("for (int tile = blockIdx.x; tile < " + wholeTiles + "; tile += gridDim.x)");
    emitTileOrigin("tile");
    folded.emitStart(w, storeSpec(), [&] { emitWgmmaZeroAccumulators(w); });
    emitWgmmaConsumerTile(w, ws);
    StoreSpec store = storeSpec();
    store.staging = persistentStaging();
    store.barrier = kWgmmaConsumerBarrier;
    if (persistentStoresByTma()) {
      store.tmaMap = "y_map";
      store.tmaStaging = "b_smem + STAGES * B_STAGE_BYTES";
    }
    emitAccumulatorStore(w, ws.storeConfig(), folded.rest(), store);
    w.close();
    if (tail)
      emitSplitTileConsumer(ws);
    if (persistentStoresByTma())
      emitTmaStoreDrain(w, store.storeVec);
    w.indentLess();
    w.line("}");
  }

  /// Warpgroup 0 (emitPersistentProducer): a tile's k-tiles by im2col and filter boxes.
  void emitPersistentProducer(StringRef wholeTiles, bool tail) {
    auto loadTile = [&](StringRef tile, StringRef first, StringRef end) {
      emitTileOrigin(tile);
      emitConvTmaWindowStart(w);
      emitConvTapStart(w, first);
      w.open(("for (int kt = " + first + "; kt < " + end + "; ++kt, ++k_step)").str());
      emitWgmmaProducerStep(w, "k_step", [&] {
        emitConvTmaLoads(w, "k_step", "w_map", "(int)n0");
      });
      w.close();
    };
    sketch::emitPersistentProducer(
        w, "threadIdx.x == 0", wholeTiles,
        tail ? std::optional<StringRef>("sketch::cluster_size() > 1") : std::nullopt, loadTile);
  }

  /// The consumers' K slice of the split tile (emitSplitTailConsumer); a tile stored by
  /// TMA before it drains first.
  void emitSplitTileConsumer(const WgmmaBlock &ws) {
    StoreSpec store = storeSpec();
    emitSplitTailConsumer(w, ws, epilogue, store, [&] { emitTileOrigin("split_tile"); }, [&] {
      if (!persistentStoresByTma())
        return;
      w.comment("the partial tile may reach the staging tile's first bytes");
      emitTmaStoreDrain(w, store.storeVec);
    });
  }

  /// The kernel's form, as its header comment and --emit=sketch state it.
  std::string formText() const {
    return block.operandType + " on tensor cores (sm_90a: wgmma m64n" + str(block.tileN) +
           "k16): tile " + str(block.tileM) + " x " + str(block.tileN) + " x 64, " +
           str(block.tileM / 64) + " warpgroup(s), " + str(block.stages) +
           " stages (TMA, im2col mode for X; cp.async where TMA does not apply), " +
           str(smemBytes) + " bytes of shared memory";
  }
  /// The persistent form's (where it fits), after its kernel's name.
  std::string persistentText() const {
    WgmmaBlock ws = persistentBlock();
    return "(X by TMA in im2col mode): a producer warpgroup, " + str(ws.tileM / 64) +
           " consumer warpgroup(s), " + str(ws.stages) + " stages, " +
           str(persistentSmemBytes()) + " bytes of shared memory (the staging tile past the "
           "stages)" + (splitsTail() ? "; its tail split along K over clusters" : "");
  }

  void emitKernel() {
    emitHeaderComment(formText());
    openTensorCoreKernel(kernelName(), str(block.threads()) + ", 1", "  // tiles aligned below",
                         true);
    emitWgmmaPreamble(w, block);
    emitImplicitGemmBlock();
    emitWgmmaBuffers(w, block, " K-major: BM pixels (im2col rows) of BK, 128 bytes each",
                     " K-major: BN channels (filter rows) of BK");
    w.open("if constexpr (kTma)");
    emitTmaLoop();
    w.close();
    w.open("else");
    Im2colNhwcLoader a(wgmmaSwizzle128(block.tileM), block.threads(), p.x->cname);
    MatrixTileLoader b(filterLoaderSpec(wgmmaSwizzle128(block.tileN), block.threads()));
    a.emitSetup(w);
    emitWgmmaCpAsyncLoop(w, block, a, b);
    w.close();
    emitWgmmaDrain(w);
    emitAccumulatorStore(w, block.storeConfig(), epilogue, storeSpec());
    w.indentLess();
    w.line("}");
    if (persistentFits()) {
      w.line();
      emitPersistentKernel();
    }
  }

  /// Thread 0 loads each k-tile by TMA (the one-tile pipeline: where the persistent
  /// kernel does not fit).
  void emitTmaLoop() {
    emitConvTmaWindowStart(w);
    emitConvTapStart(w, "0");  // thread 0 calls load_stage in k order
    emitWgmmaTmaLoop(w, block, barriersOffset(),
                     [&] { emitConvTmaLoads(w, "kt", "w_map", "(int)n0"); });
  }

  TensorCoreLaunch launch() const {
    TensorCoreLaunch l{kernelName(), p.tileM, p.tileN, block.threads(), smemBytes, true};
    if (persistentFits()) {
      l.persistentName = persistentName();
      l.persistentThreads = persistentBlock().launchThreads();
      l.persistentSmemBytes = persistentSmemBytes();
      l.splitTail = splitsTail();
      l.storesByTma = persistentStoresByTma();
    }
    return l;
  }
};

/// One tensor-core kernel of an nhwc convolution: the wgmma one on sm_90a where its
/// block applies, else the mma.sync one.
struct TensorCoreConvKernel {
  std::optional<WgmmaConvWriter> wgmma;
  std::optional<TensorCoreConvWriter> mma;

  LogicalResult plan(const ConvPlan &q, const EpilogueEmitter &epilogue, CudaWriter &w,
                     StringRef arch, StringRef suffix) {
    int64_t limit = plan::smemLimitBytes(arch);
    // (a kcrs filter is gathered by the mma.sync kernel's loads; the wgmma kernels copy
    // whole 16-byte chunks of filter rows)
    if (arch == "sm_90a" && q.krsc) {
      wgmma.emplace(WgmmaConvWriter{{q, epilogue, w}, suffix.str(), {}, 0});
      if (wgmma->plan(limit, /*deepest=*/suffix == "_narrow"))
        return success();
      wgmma.reset();
    }
    mma.emplace(TensorCoreConvWriter{{q, epilogue, w}, suffix.str(), {}, 0});
    return mma->plan(limit);
  }
  void emitKernel() { wgmma ? wgmma->emitKernel() : mma->emitKernel(); }
  TensorCoreLaunch launch() const { return wgmma ? wgmma->launch() : mma->launch(); }
};

/// The halo form of the narrow kernel (stride 1; sketch::HaloPlan, docs/backend.md "The
/// halo form"): persistent and warp-specialized like NAME_ws_narrow, but each tile is
/// whole output rows of one image, their input rows come into shared memory once (not once
/// a filter tap, as im2col boxes do), and tap (r, s) multiplies the same patch from pixel
/// r dil_h slots + s dil_w on; the filter stays in shared memory. The host launches it
/// where sketch::halo_stages finds room and the output channels are one tile (K <= BN).
struct HaloConvWriter : ConvWriterBase {
  /// The narrow kernel's halo form (`narrowed` its plan, `narrow` its kernel), where it applies.
  static std::optional<HaloConvWriter> of(const std::optional<ConvPlan> &narrowed,
                                          const TensorCoreConvKernel &narrow,
                                          const EpilogueEmitter &epilogue, CudaWriter &w) {
    if (!narrowed || !narrow.wgmma || !applies(*narrowed, epilogue))
      return std::nullopt;
    return HaloConvWriter{{*narrowed, epilogue, w}};
  }

  /// Whether the sketch allows it: stride 1, a register epilogue whose tensors are per
  /// channel (the tile's rows are padded pixels, not rows of [N*P*Q, K]), BM = 128 (two
  /// consumer warpgroups), and a filter that is not 1x1 (nothing to reuse).
  static bool applies(const ConvPlan &q, const EpilogueEmitter &epilogue) {
    std::optional<int64_t> r = evaluateExpr(q.r), s = evaluateExpr(q.s);
    bool pointwise = r && s && *r * *s == 1;
    return q.strideH == 1 && q.strideW == 1 && !q.stagedEpilogue && !epilogue.readsFullTensor() &&
           q.tileM == 128 && plan::wgmmaConvTileShape(q.tileM, q.tileN) && !pointwise;
  }

  std::string name() const { return p.sig.name + "_halo"; }
  WgmmaBlock block() const {
    WgmmaBlock b;
    b.tileM = p.tileM, b.tileN = p.tileN, b.operandType = cTypeOf(p.x->type);
    b.producer = true, b.runtimeStages = true;
    return b;
  }
  int64_t stagingBytes() const { return p.tileM * p.tileN * plan::elementBytes(p.y->type); }
  /// Whether the sketch gives the filter's R and S as numbers.
  bool filterSizeKnown() const { return evaluateExpr(p.r) && evaluateExpr(p.s); }
  /// A filter size as the kernel's loops read it: a constant where the sketch gives one.
  std::string filterExtent(StringRef dim, StringRef field) const {
    std::optional<int64_t> v = evaluateExpr(dim);
    return v ? str(*v) : "shape." + field.str();
  }

  /// The kernel's form, as its header comment and --emit=sketch state it.
  std::string formText() const {
    return "the halo form (stride 1): tiles of whole output rows padded to Q + (S - 1) dil_w "
           "pixels, each input row loaded into shared memory once a tile, the filter resident; a "
           "producer warpgroup, " + str(p.tileM / 64) + " consumer warpgroups, wgmma m64n" +
           str(p.tileN) + "k16";
  }

  void emitKernel() {
    WgmmaBlock b = block();
    emitHeaderComment(formText());
    w.line("__global__ void __launch_bounds__(" + str(b.launchThreads()) + ", 1) " + name() + "(" +
           kernelParams() + ", const __grid_constant__ CUtensorMap x_map, const __grid_constant__ "
           "CUtensorMap w_map, const __grid_constant__ CUtensorMap y_map, int stages) {");
    w.indentMore();
    w.line("extern __shared__ __align__(128) unsigned char smem[];  // tiles aligned below");
    emitGridDependencyWait(w);
    w.line("[[maybe_unused]] constexpr bool kVec = true, kVecStore = true;  // launched on the "
           "TMA path only: whole 16-byte chunks");
    emitWgmmaPreamble(w, b);
    emitDerivedSizes();
    w.line("[[maybe_unused]] const int64_t size_n = shape.k;  // the output's channels");
    w.line("const int64_t n0 = 0;  // K <= BN: one channel tile");
    w.line("const sketch::HaloPlan halo(shape, BM, BN, " + str(stagingBytes()) + ", STAGES);");
    w.line("const int tile_count = shape.n * halo.row_tiles;  // tile: image tile / row_tiles, "
           "output rows from tile % row_tiles * tile_rows");
    w.comment("shared memory: the filter ((tap, channel panel) panels of BN rows x 128 bytes), "
              "STAGES patches (channel panels of");
    w.comment("patch_rows x slots pixels, 128 bytes each), the staging tile, the mbarriers; "
              "128-byte swizzle, 1024-byte aligned");
    w.line("const uint32_t filter_smem = (smem_base + 1023) & ~1023u;");
    w.line("const uint32_t patch_smem = filter_smem + (uint32_t)halo.patches_offset;");
    w.line("const uint32_t staging_smem = filter_smem + (uint32_t)halo.staging_offset;");
    w.line("const uint32_t filter_bar = filter_smem + (uint32_t)halo.bars_offset + 16 * STAGES;");
    w.line("float acc[MI][NI][4];");
    w.line("if (threadIdx.x == 0) sketch::mbarrier_init(filter_bar, 1);");
    emitWgmmaStageBarriersAt(w, "filter_smem + (uint32_t)halo.bars_offset",
                             "  // the last barrier the producer joins");
    emitProducer();
    emitConsumers(b);
    w.indentLess();
    w.line("}");
  }

  /// `n` and `oh0` of tile `tile`.
  void emitTileRows(StringRef tile) {
    w.line(("const int n = " + tile + " / halo.row_tiles, oh0 = " + tile +
            " % halo.row_tiles * halo.tile_rows;").str());
  }

  /// Warpgroup 0: each tile's patch, a box a channel panel, through the stage ring.
  void emitProducer() {
    auto loadTile = [&](StringRef tile, StringRef, StringRef) {
      emitTileRows(tile);
      emitWgmmaProducerStep(w, "k_step", [&] {
        w.line("const uint32_t patch = patch_smem + (k_step % STAGES) * (uint32_t)halo.stage_bytes;");
        w.open("for (int panel = 0; panel < halo.panels; ++panel)");
        w.line("sketch::tma_load_4d(patch + panel * (uint32_t)halo.panel_bytes, &x_map, panel * "
               "64, -shape.pad_w, oh0 - shape.pad_h, n, full);");
        w.close();
      }, "(uint32_t)(halo.panels * halo.box_bytes)");
      w.line("++k_step;");
    };
    sketch::emitPersistentProducer(w, "threadIdx.x == 0", "tile_count", std::nullopt, loadTile);
  }

  /// The consumers: the filter once, then each tile's taps over its patch and the epilogue.
  void emitConsumers(const WgmmaBlock &b) {
    w.comment("consumer warpgroups: the filter once, then each tile's taps over its patch and "
              "its epilogue");
    emitConsumerRegisters(w, b);
    bool constant = filterSizeKnown();
    w.line(std::string(constant ? "constexpr" : "const") + " int TAPS_R = " + filterExtent(p.r, "r") +
           ", TAPS_S = " + filterExtent(p.s, "s") + ";  // the filter's rows and columns");
    w.open("if (tid == 0)");
    w.line("sketch::mbarrier_arrive_expect_tx(filter_bar, (uint32_t)halo.filter_bytes);");
    w.comment("panel t: tap t / panels, channels t % panels * 64 .., at column tap * C + ... of "
              "the filter's rows");
    w.open("for (int t = 0; t < TAPS_R * TAPS_S * halo.panels; ++t)");
    w.line("sketch::tma_load_2d(filter_smem + t * (BN * 128), &w_map, t / halo.panels * shape.c + "
           "t % halo.panels * 64, 0, filter_bar);");
    w.close();
    w.close();
    w.line("sketch::mbarrier_wait(filter_bar, 0);");
    w.line("int k_step = 0;");
    w.open("for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x, ++k_step)");
    emitTileRows("tile");
    emitWgmmaZeroAccumulators(w);
    w.line("sketch::mbarrier_wait(bars + 8 * (k_step % STAGES), (k_step / STAGES) & 1);  // the "
           "tile's patch has landed");
    w.line("const uint32_t patch = patch_smem + (k_step % STAGES) * (uint32_t)halo.stage_bytes;");
    emitTaps(b);
    w.line("sketch::mbarrier_arrive_by_warp(bars + 8 * (STAGES + k_step % STAGES));  // the patch "
           "may be refilled");
    emitRegisterEpilogueByTma(w, epilogue, storeSpecOfTile());
    w.close();
    emitTmaStoreDrain(w, "kVecStore");
  }

  /// Every tap of every channel panel. A do-while (at least one panel: C % 64 == 0, C > 0)
  /// fenced and committed inside, so ptxas adds no fence of its own (C7519): over the
  /// panels, the taps unrolled inside, where the sketch gives the filter's size; else over
  /// every (panel, tap), a wgmma group each.
  void emitTaps(const WgmmaBlock &b) {
    bool constant = filterSizeKnown();
    w.line("sketch::wgmma_fence_operands(acc[0]);");
    w.line("int step = 0;");
    w.open("do");
    w.line("sketch::wgmma_fence();");
    if (constant) {
      w.line("const int panel = step;");
      w.line("#pragma unroll");
      w.open("for (int r = 0; r < TAPS_R; ++r)");
      w.line("#pragma unroll");
      w.open("for (int s = 0; s < TAPS_S; ++s)");
      emitTap(b);
      w.close();
      w.close();
    } else {
      w.line("const int panel = step / (TAPS_R * TAPS_S), r = step / TAPS_S % TAPS_R, s = step % TAPS_S;");
      emitTap(b);
    }
    w.line("sketch::wgmma_commit();");
    w.close(std::string(" while (++step < halo.panels") + (constant ? "" : " * TAPS_R * TAPS_S") + ");");
    emitWgmmaDrain(w);
  }

  /// Tap (r, s) of channel panel `panel`: its four k16 steps.
  void emitTap(const WgmmaBlock &b) {
    w.comment("A: the patch from pixel r dil_h slots + s dil_w on (this warpgroup's 64 rows); B: "
              "the filter's (tap, panel)");
    w.line("const uint32_t a = patch + panel * (uint32_t)halo.panel_bytes + (r * shape.dil_h * "
           "halo.slots + s * shape.dil_w + wg * 64) * 128;");
    w.line("const uint32_t b = filter_smem + ((r * TAPS_S + s) * halo.panels + panel) * (BN * 128);");
    w.line("#pragma unroll");
    w.open("for (int kk = 0; kk < KI; ++kk)");
    w.line("sketch::wgmma_m64n" + str(b.tileN) + "k16<" + b.operandType +
           ", 0, 0>(acc[0], sketch::wgmma_desc_sw128(a, 16, 1024, kk * 32), "
           "sketch::wgmma_desc_sw128(b, 16, 1024, kk * 32));");
    w.close();
  }

  /// The tile's store: boxes of the output's rows oh0 .. (slots pixels, those past Q
  /// not written) through the staging tile.
  StoreSpec storeSpecOfTile() const {
    StoreSpec store = storeSpec();
    store.barrier = kWgmmaConsumerBarrier;
    store.tmaMap = "y_map";
    store.tmaStaging = "staging_smem";
    store.tmaTileCoords = "0, oh0, n";
    return store;
  }
};

//===----------------------------------------------------------------------===//
// 3x3, f32, stride 1, dilation 1 (either layout, either filter layout): Winograd F(m x m, 3x3)
//===----------------------------------------------------------------------===//

struct WinogradConvWriter : ConvWriterBase {
  /// Why the convolution cannot run as Winograd; empty when it can
  /// (sketch-choose-defaults checked the `algorithm` directive already).
  std::string mismatch() const {
    if (!p.simt)
      return "it is not f32";
    if (evaluateExpr(p.r) != 3 || evaluateExpr(p.s) != 3)
      return "the filter is " + p.r + "x" + p.s + ", not 3x3";
    if (p.strideH != 1 || p.strideW != 1 || p.dilH != 1 || p.dilW != 1)
      return "its stride or dilation is not (1, 1)";
    return "";
  }

  WinogradConvSpec spec(const plan::WinogradBlock &block) {
    WinogradConvSpec s;
    s.sig = &p.sig;
    s.epilogue = &epilogue;
    s.x = p.x->cname, s.w = p.w->cname, s.y = p.y->cname;
    s.nhwc = p.nhwc;
    s.krsc = p.krsc;
    s.kDim = dim(p.k);
    s.kernelParams = kernelParams();
    s.kernelArgs = kernelArgs();
    s.perChannel = [this](const EpilogueOperand &operand) { return perChannel(operand); };
    s.headerComment = [this, block] {
      const std::string m = std::to_string(block.m);
      emitHeaderComment("Winograd F(" + m + "x" + m + ", 3x3): " + p.n + "*ceil(" + p.p + "/" +
                            m + ")*ceil(" + p.q + "/" + m + ") tiles of " + m + "x" + m +
                            " outputs, " + std::to_string(block.components()) +
                            " component GEMMs of " + p.k + " channels x tiles, reduced over " +
                            p.c,
                        false);
    };
    s.derivedSizes = [this] { emitDerivedSizes(); };
    s.hostShape = [this] { emitHostShape(); };
    return s;
  }
};

/// `p` with a tile of bm x bn (bk deep, `warps`), its staging tile resized.
ConvPlan retiled(const ConvPlan &p, int64_t bm, int64_t bn, int64_t bk, int64_t warps) {
  ConvPlan q = p;
  q.tileM = bm, q.tileN = bn, q.tileK = bk, q.warps = warps;
  q.staging.rows = q.tileM;
  q.staging.cols = q.tileN;
  q.staging.ld = plan::stagingLd(q.tileN, q.staging.elementBytes);
  return q;
}

/// The convolution with sketch-choose-defaults' narrow variant's tile (the
/// host launches it where the output channels fit), its staging tile resized.
std::optional<ConvPlan> narrowPlan(KernelOp kernel, const ConvPlan &p) {
  auto v = plan::variantTile(kernel, plan::kNarrowVariantAttr, 4);
  if (!v)
    return std::nullopt;
  return retiled(p, (*v)[0], (*v)[1], (*v)[2], (*v)[3]);
}

/// The convolution with sketch-choose-defaults' tall variant's tile (kTallVariantAttr).
std::optional<ConvPlan> tallPlan(KernelOp kernel, const ConvPlan &p) {
  auto v = plan::variantTile(kernel, plan::kTallVariantAttr, 2);
  if (!v)
    return std::nullopt;
  return retiled(p, (*v)[0], (*v)[1], p.tileK, p.warps);
}

/// The tall variant's (`q`, tallPlan) persistent TMA kernel where the wide kernel has one
/// too and the taller tile's fits with its own staging tile stored by TMA.
std::optional<WgmmaConvWriter> tallWriter(const ConvPlan &q, const TensorCoreConvKernel &wide,
                                          const EpilogueEmitter &epilogue, CudaWriter &w) {
  if (!wide.wgmma || !wide.wgmma->persistentFits())
    return std::nullopt;
  WgmmaConvWriter tall{{q, epilogue, w}, "_tall", {}, 0, 0, true};
  if (!tall.plan(plan::smemLimitBytes("sm_90a"), false) || !tall.persistentFits() ||
      !tall.persistentStoresByTma())
    return std::nullopt;
  return tall;
}

} // namespace

std::optional<WgmmaDescription> wgmmaConvFormOf(KernelOp kernel, StringRef arch) {
  if (arch != "sm_90a")
    return std::nullopt;
  ConvReader reader{kernel, {}};
  if (plan::winogradConv(kernel) || failed(reader.run()) || reader.p.simt)
    return std::nullopt;
  auto epilogue = EpilogueEmitter::createFor(reader.p);
  if (failed(epilogue))
    return std::nullopt;
  DiscardingCudaWriter w;
  TensorCoreConvKernel wide;
  if (failed(wide.plan(reader.p, *epilogue, w, arch, "")) || !wide.wgmma)
    return std::nullopt;
  const WgmmaConvWriter &form = *wide.wgmma;
  std::string persistent = form.persistentFits()
                               ? "; its persistent, warp-specialized form " +
                                     form.persistentText()
                               : "";
  std::optional<ConvPlan> narrowed = narrowPlan(kernel, reader.p);
  TensorCoreConvKernel narrow;
  if (narrowed && succeeded(narrow.plan(*narrowed, *epilogue, w, arch, "_narrow")))
    if (std::optional<HaloConvWriter> halo = HaloConvWriter::of(narrowed, narrow, *epilogue, w))
      persistent += ". For K <= " + str(narrowed->tileN) + ", where C % 64 == 0, Q + (S - 1) "
                    "dil_w <= 128 and the filter, two patches and the staging tile fit in shared "
                    "memory (sketch::halo_stages) and its tiles take at most 4/3 the rounds of the "
                    "128-pixel ones (sketch::halo_pays), the host launches " + halo->formText();
  return WgmmaDescription{"implicit GEMM, " + form.formText() + persistent, "",
                          form.smemBytes};
}

KernelEmitterResult emitConv(KernelOp kernel, const CudaEmitOptions &options, CudaWriter &w) {
  ConvReader reader{kernel, {}};
  if (failed(reader.run()))
    return failure();
  const ConvPlan &p = reader.p;
  auto epilogue = EpilogueEmitter::createFor(p);
  if (failed(epilogue))
    return failure();
  auto algorithm = p.conv->getAttrOfType<StringAttr>(plan::kConvAlgorithmAttr);
  if (algorithm && plan::winogradOutputTile(algorithm.getValue())) {
    WinogradConvWriter writer{{p, *epilogue, w}};
    if (std::string why = writer.mismatch(); !why.empty())
      return p.conv.emitError() << "the Winograd kernel needs an f32 3x3 convolution with "
                                   "stride (1, 1) and dilation (1, 1), but "
                                << why;
    w.line("#include \"sketch/winograd.cuh\"  // Winograd F(m x m, 3x3) convolution helpers");
    w.line();
    const WinogradBlock block = plan::winogradBlockOf(p.conv);
    WinogradConvSpec spec = writer.spec(block);
    emitWinogradKernel(w, spec, block);
    w.line();
    emitWinogradHost(w, spec, block);
    w.line();
    return p.sig;
  }
  w.line("#include \"sketch/conv.cuh\"  // implicit-GEMM convolution helpers");
  w.line();
  std::optional<ConvPlan> narrowed = narrowPlan(kernel, p);
  if (p.simt) {
    FailureOr<SimtTile> simt = simtConvTile(kernel, p, options.arch);
    if (failed(simt))
      return failure();
    std::optional<SimtTile> narrow;
    if (narrowed) {
      FailureOr<SimtTile> tile = simtConvTile(kernel, *narrowed, options.arch);
      if (failed(tile))
        return failure();
      narrow = *tile;
    }
    SimtConvWriter writer{{p, *epilogue, w}, *simt, narrow};
    if (narrow && writer.pointwiseFlag(*narrow) != writer.pointwiseFlag(*simt))
      writer.narrow.reset();
    return emitKernelAndHost(writer, w, p.sig);
  }
  TensorCoreConvKernel wide, narrow;
  if (failed(wide.plan(p, *epilogue, w, options.arch, "")) ||
      (narrowed && failed(narrow.plan(*narrowed, *epilogue, w, options.arch, "_narrow"))))
    return failure();
  if (wide.wgmma || (narrowed && narrow.wgmma)) {
    w.line("#include \"sketch/wgmma.cuh\"  // warpgroup MMAs");
    w.line("#include \"sketch/tma.cuh\"  // tensor-map (TMA) loads and mbarriers");
    w.line();
  }
  wide.emitKernel();
  w.line();
  if (narrowed) {
    narrow.emitKernel();
    w.line();
  }
  std::optional<ConvPlan> tallened = tallPlan(kernel, p);
  std::optional<WgmmaConvWriter> tall =
      tallened ? tallWriter(*tallened, wide, *epilogue, w) : std::nullopt;
  if (tall) {
    tall->emitPersistentKernel();
    w.line();
  }
  TensorCoreLaunch tallLaunch = tall ? tall->launch() : TensorCoreLaunch{};
  TensorCoreLaunch narrowLaunch = narrowed ? narrow.launch() : TensorCoreLaunch{};
  if (std::optional<HaloConvWriter> halo = HaloConvWriter::of(narrowed, narrow, *epilogue, w)) {
    halo->emitKernel();
    w.line();
    narrowLaunch.haloName = halo->name();
    narrowLaunch.haloThreads = halo->block().launchThreads();
    narrowLaunch.haloStagingBytes = halo->stagingBytes();
  }
  ConvWriterBase{p, *epilogue, w}.emitTensorCoreHost(
      wide.launch(), narrowed ? &narrowLaunch : nullptr, tall ? &tallLaunch : nullptr);
  w.line();
  return p.sig;
}

} // namespace sketch
