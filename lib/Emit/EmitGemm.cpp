//===- EmitGemm.cpp - the tensor-core GEMM kernel and its host function ---===//
//
// D[batch..., M, N] = epilogue(A[batch..., M, K] · B[batch..., K, N]) with
// f16/bf16 operands and f32 accumulation: one block per (BM, BN) output tile
// (blocks ordered in groups of 8 tile rows for L2 reuse) and per batch index
// (blockIdx.z), warps of (BM / WARPS_M, BN / WARPS_N) mma.sync tiles, the
// k-loop pipelined as sketch-pipeline planned, the epilogue fused as
// sketch-fuse-epilogue planned. Two instantiations: kVec = true when every
// row is whole 16-byte chunks on aligned bases (cp.async, 16-byte stores),
// kVec = false otherwise (element loads and stores; any size).
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

/// The offset of a tensor's batch (its leading dims, matched to the output's).
std::string batchOffset(const KernelSignature &sig, const ParamInfo &param,
                        ArrayRef<int64_t> positions) {
  std::string offset;
  for (size_t i = 0; i < positions.size(); ++i) {
    std::vector<std::string> after(param.dims.begin() + i + 1, param.dims.end());
    offset +=
        (offset.empty() ? "" : " + ") + batchVar(positions[i]) + " * (" + sig.product(after) + ")";
  }
  return offset.empty() ? param.cname : param.cname + " + " + offset;
}

} // namespace

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

void emitGemmBlockCoordinates(CudaWriter &w, const GemmAnalysis &g) {
  w.line("const int64_t size_m = " + g.sig.dim(g.m) + ", size_n = " + g.sig.dim(g.n) +
         ", size_k = " + g.sig.dim(g.k) + ";");
  w.comment("block -> output tile: groups of 8 tile rows, column by column inside a group "
            "(L2 reuse)");
  w.line("const int tiles_m = (int)sketch::ceil_div(size_m, BM), tiles_n = "
         "(int)sketch::ceil_div(size_n, BN);");
  w.line("const int group = 8 * tiles_n, first = (int)blockIdx.x / group * 8;");
  w.line("const int rows = min(tiles_m - first, 8);");
  w.line("const int tile_m = first + (int)blockIdx.x % group % rows, tile_n = (int)blockIdx.x "
         "% group / rows;");
  w.line("const int64_t m0 = (int64_t)tile_m * BM, n0 = (int64_t)tile_n * BN;");
  if (g.batchDims.empty())
    return;
  w.comment("batch: blockIdx.z runs over (" + joined(g.batchDims) + ")");
  w.line("int64_t z = blockIdx.z;");
  for (int64_t i = static_cast<int64_t>(g.batchDims.size()) - 1; i > 0; --i)
    w.line("const int64_t " + batchVar(i) + " = z % " + g.sig.dim(g.batchDims[i]) +
           "; z /= " + g.sig.dim(g.batchDims[i]) + ";");
  w.line("const int64_t " + batchVar(0) + " = z;");
}

void emitGemmOperandPointers(CudaWriter &w, const GemmAnalysis &g) {
  std::vector<int64_t> outPositions;
  for (size_t i = 0; i < g.batchDims.size(); ++i)
    outPositions.push_back(i);
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
  return s;
}

namespace {

/// The 16-byte path's conditions: rows of whole chunks on 16-byte aligned bases.
std::string vecCondition(const GemmAnalysis &g) {
  std::vector<std::string> terms;
  auto rowOf = [&](const ParamInfo &p) { return g.sig.dim(p.dims.back()); };
  int64_t outChunk = 16 / plan::elementBytes(g.out->type);
  for (std::string term : {rowOf(*g.a.param) + " % 8 == 0", rowOf(*g.b.param) + " % 8 == 0",
                           rowOf(*g.out) + " % " + str(outChunk) + " == 0"})
    if (!llvm::is_contained(terms, term))
      terms.push_back(term);
  // 32-bit steps between the rows one thread copies
  for (const ParamInfo *p : {g.a.param, g.b.param})
    if (!llvm::is_contained(terms, rowOf(*p) + " < (1 << 24)"))
      terms.push_back(rowOf(*p) + " < (1 << 24)");
  for (const ParamInfo *p : {g.a.param, g.b.param, g.out})
    terms.push_back("sketch::aligned_to(" + p->cname + ", 16)");
  return joined(terms, " && ");
}

} // namespace

void emitGemmHost(CudaWriter &w, const GemmAnalysis &g, int64_t threads, int64_t smemBytes,
                  const TensorMapArgs &maps) {
  std::string kernel = g.sig.name + "_kernel";
  w.open(hostPrototype(g.sig));
  emitHostChecks(w, g.sig);
  w.line("const int64_t size_m = " + g.sig.dim(g.m) + ", size_n = " + g.sig.dim(g.n) + ";");
  w.line("const int64_t batch = " + g.sig.product(g.batchDims) + ";");
  w.line("const int64_t tiles = sketch::ceil_div(size_m, " + str(g.tileM) +
         ") * sketch::ceil_div(size_n, " + str(g.tileN) + ");");
  w.line("if (tiles == 0 || batch == 0) return cudaSuccess;  // empty output: nothing to do");
  w.line("if (tiles > INT32_MAX || batch > 65535) return cudaErrorInvalidValue;");
  w.line("const bool vec = " + vecCondition(g) + ";");
  std::string args = kernelArgumentList(g.sig);
  if (!maps.names.empty()) {
    w.comment("the 16-byte path loads by TMA: its tensor maps (the element path ignores them)");
    w.line("CUtensorMap " + joined(maps.names, "{}, ") + "{};");
    w.line("const bool maps = vec &&");
    for (size_t i = 0; i < maps.encodes.size(); ++i)
      w.line("    " + maps.encodes[i] + (i + 1 < maps.encodes.size() ? " &&" : ";"));
    w.line("auto kernel = maps ? " + kernel + "<true> : " + kernel + "<false>;");
    args += ", " + joined(maps.names, ", ");
  } else {
    w.line("auto kernel = vec ? " + kernel + "<true> : " + kernel + "<false>;");
  }
  w.line("const int smem_bytes = " + str(smemBytes) + ";  // dynamic; above 48 KB by opt-in");
  w.line("cudaError_t err = sketch::allow_dynamic_smem(kernel, smem_bytes);");
  w.line("if (err != cudaSuccess) return err;");
  w.line("kernel<<<dim3((unsigned)tiles, 1, (unsigned)batch), " + str(threads) +
         ", smem_bytes, stream>>>(" + args + ");");
  w.line("return cudaGetLastError();");
  w.close();
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

class GemmWriter {
public:
  GemmWriter(const GemmAnalysis &g, const EpilogueEmitter &epilogue, CudaWriter &w)
      : g(g), epilogue(epilogue), w(w), config(configOf(g)) {}

  void run() {
    writeHeaderComment();
    writeKernel();
    w.line();
    emitGemmHost(w, g, config.threads(), g.smemBytes);
    w.line();
  }

private:
  const GemmAnalysis &g;
  const EpilogueEmitter &epilogue;
  CudaWriter &w;
  TensorCoreConfig config;

  std::string kernelName() const { return g.sig.name + "_kernel"; }

  void writeHeaderComment() {
    emitGemmHeaderComment(
        w, g, epilogue,
        {"  tile " + str(g.tileM) + " x " + str(g.tileN) + " x " + str(g.tileK) + ", " +
             str(g.warps) + " warps as " + str(g.warpsM) + " x " + str(g.warpsN) + " of " +
             str(g.tileM / g.warpsM) + " x " + str(g.tileN / g.warpsN) +
             " (mma.sync m16n8k16), " + str(g.stages) + " stages (" + g.pipeline + ")",
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
      s.rows = mn, s.cols = "size_k", s.ld = "size_k", s.rowOrigin = origin, s.colOrigin = k;
    } else {
      s.rows = "size_k", s.cols = mn, s.ld = mn, s.rowOrigin = k, s.colOrigin = origin;
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
    w.line("template <bool kVec>");
    w.line("__global__ void __launch_bounds__(" + str(config.threads()) + ") " + kernelName() +
           "(" + kernelParameterList(g.sig, restrictPtr) + ") {");
    w.indentMore();
    w.line("extern __shared__ __align__(128) unsigned char smem[];");
    emitTensorCorePreamble(w, config);
    emitGemmBlockCoordinates(w, g);
    emitGemmOperandPointers(w, g);
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
    emitTensorCoreMainloop(w, config, a, b, "(int)sketch::ceil_div(size_k, BK)");
    emitAccumulatorStore(w, config, epilogue, gemmStoreSpec(g));
    w.indentLess();
    w.line("}");
  }

};

} // namespace

KernelEmitterResult emitTensorCoreGemm(KernelOp kernel, const CudaEmitOptions &options,
                                       CudaWriter &w) {
  auto analysis = analyzeGemm(kernel);
  if (failed(analysis))
    return failure();
  const GemmAnalysis &g = *analysis;
  auto epilogue = EpilogueEmitter::createFor(g);
  if (failed(epilogue))
    return failure();
  if (options.arch == "sm_90a" && wgmmaSupports(g))
    emitWgmmaGemm(g, *epilogue, w);  // Hopper: wgmma (WgmmaGemm.cpp)
  else
    GemmWriter(g, *epilogue, w).run();
  return g.sig;
}

} // namespace sketch
