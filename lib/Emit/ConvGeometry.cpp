//===- ConvGeometry.cpp - a convolution's sizes on the host ---------------===//
#include "lib/Emit/ConvGeometry.h"
#include "lib/Emit/EmitHost.h"

using namespace mlir;

namespace sketch {

ConvGeometry readConvGeometry(KernelOp kernel, Conv2dOp conv, const ConvShape &shape) {
  ConvGeometry g;
  g.n = shape.n, g.c = shape.c, g.h = shape.h, g.wd = shape.w;
  g.k = shape.k, g.r = shape.r, g.s = shape.s, g.p = shape.p, g.q = shape.q;
  // Output sizes sketch-infer-dimensions derives (`sketch.derived`): the host computes them.
  if (auto derived = kernel->getAttrOfType<DictionaryAttr>("sketch.derived"))
    for (const std::string &d : {g.p, g.q})
      if (derived.get(d) && !llvm::is_contained(g.derived, d))
        g.derived.push_back(d);
  auto stride = conv.getStride(), pad = conv.getPad(), dil = conv.getDilation();
  g.strideH = stride[0], g.strideW = stride[1], g.padH = pad[0], g.padW = pad[1];
  g.dilH = dil[0], g.dilW = dil[1];
  return g;
}

void emitConvHostShape(CudaWriter &w, const ConvGeometry &g, const KernelSignature &sig,
                       ArrayRef<std::string> inputDims, StringRef outputName,
                       ArrayRef<std::string> outputChannels) {
  auto dim = [&](StringRef d) { return sig.dim(d); };
  w.comment("output size: P = (H + 2 pad - dil (R - 1) - 1) / stride + 1, likewise Q");
  w.line("const int64_t out_p = sketch::conv_out_size(" + dim(g.h) + ", " + dim(g.r) + ", " +
         str(g.strideH) + ", " + str(g.padH) + ", " + str(g.dilH) + ");");
  w.line("const int64_t out_q = sketch::conv_out_size(" + dim(g.wd) + ", " + dim(g.s) + ", " +
         str(g.strideW) + ", " + str(g.padW) + ", " + str(g.dilW) + ");");
  for (const std::string &d : g.derived)
    w.line("const int64_t " + cIdent(d) + " = " + (d == g.p ? "out_p" : "out_q") +
           ";  // derived");
  emitHostChecks(w, sig);
  w.line("if (" + dim(g.r) + " < 1 || " + dim(g.s) + " < 1 || out_p < 1 || out_q < 1)");
  w.line("  return cudaErrorInvalidValue;  // the window does not fit the input");
  for (const std::string &d : {g.p, g.q}) {
    if (llvm::is_contained(g.derived, d))
      continue;
    w.line("if (" + dim(d) + " != " + (d == g.p ? "out_p" : "out_q") + ")");
    w.line("  return cudaErrorInvalidValue;  // " + outputName.str() + "'s " + d +
           " is not the output size");
  }
  w.comment("32-bit element indices inside each tensor");
  std::string outputs;
  for (const std::string &channels : outputChannels)
    outputs += " || " + dim(g.n) + " * " + dim(channels) + " * out_p * out_q > INT32_MAX";
  w.line("if (" + sig.product(inputDims) + " > INT32_MAX || " + sig.product({g.k}) + " * " +
         sig.product({g.c, g.r, g.s}) + " > INT32_MAX" + outputs + ")");
  w.line("  return cudaErrorInvalidValue;");
  w.line("const sketch::ConvShape shape = sketch::make_conv_shape(" + dim(g.n) + ", " + dim(g.c) +
         ", " + dim(g.h) + ", " + dim(g.wd) + ", " + dim(g.k) + ", " + dim(g.r) + ", " +
         dim(g.s) + ", " + str(g.strideH) + ", " + str(g.strideW) + ", " + str(g.padH) + ", " +
         str(g.padW) + ", " + str(g.dilH) + ", " + str(g.dilW) + ");");
  w.line("const int64_t pixels = " + dim(g.n) + " * out_p * out_q;");
  w.line("if (pixels == 0 || " + dim(g.k) + " == 0)");
  w.line("  return cudaSuccess;  // empty output");
}

void emitConvTmaWindowStart(CudaWriter &w) {
  w.comment("TMA (C % 64 == 0): the tile's first output pixel as (image, row, column), and "
            "where its window starts");
  w.line("const int pq = shape.p * shape.q;");
  w.line("const int x_n = (int)(m0 / pq), x_pq = (int)(m0 % pq);");
  w.line("const int x_h = x_pq / shape.q * shape.stride_h - shape.pad_h;");
  w.line("const int x_w = x_pq % shape.q * shape.stride_w - shape.pad_w;");
}

void emitConvTapStart(CudaWriter &w, llvm::StringRef first) {
  w.comment("k-tile " + first + "'s filter tap (r, s) and channel c0, stepped from there");
  if (first == "0") {
    w.line("int c0 = 0, r = 0, s = 0;");
    return;
  }
  w.line("const int first_tap = " + first.str() + " * BK / shape.c;");
  w.line("int c0 = " + first.str() + " * BK - first_tap * shape.c, r = first_tap / shape.s, "
         "s = first_tap - r * shape.s;");
}

void emitConvTmaLoads(CudaWriter &w, llvm::StringRef step, llvm::StringRef filterMap,
                      llvm::StringRef filterRow) {
  std::string stage = "(" + step.str() + " % STAGES)";
  w.line("const int k = kt * BK;");
  w.line("sketch::tma_load_im2col_4d(a_smem + " + stage + " * A_STAGE_BYTES, &x_map, c0, "
         "x_w, x_h, x_n, (uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);");
  w.line("sketch::tma_load_2d(b_smem + " + stage + " * B_STAGE_BYTES, &" + filterMap.str() +
         ", k, " + filterRow.str() + ", full);");
  w.comment("the next k-tile's tap and channel (BK divides C): c0, then s, then r");
  w.open("if ((c0 += BK) == shape.c)");
  w.line("c0 = 0;");
  w.open("if (++s == shape.s)");
  w.line("s = 0;");
  w.line("++r;");
  w.close();
  w.close();
}

} // namespace sketch
