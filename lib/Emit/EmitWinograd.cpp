//===- EmitWinograd.cpp - Winograd F(m x m, 3x3) forward convolution ------===//
//
// `Compute Conv2d X, W and get Y with stride (1, 1) pad (p, q)`, f32 nchw or nhwc X,
// kcrs or krsc 3x3 W: each m x m output tile is A^T [sum_c U_c .* V_c] A with U = G g G^T
// (filters) and V = B^T d B ((m + 2)^2 input patches), sketch/winograd.cuh. Per
// Winograd component xi the sum over input channels is a GEMM of output channels
// by tiles, so a block (plan::WinogradBlock) computes, for BT tiles and BK output
// channels:
//
//   for each step of BC input channels:
//     step s + 1's patches and filters: cp.async into raw shared buffers (4 bytes;
//       filters 16, four at a time, in the kernel<true> the host launches where C % 4
//       == 0 and W is 16-byte aligned), in flight during step s's math (zero outside
//       the image, C, K)
//     warp w: M[xi] (BK x BT) += U[xi]^T V[xi] for its components xi
//     each thread transforms the patches and filters it copied into the other
//       stage of V[xi][BC][LDV] (nhwc: columns swizzled, v_column) and U[xi][BC][LDU]
//   epilogue, 16 tiles at a time: M through shared memory so that a thread holds
//     all components of a (channel, tile) pair; Y = A^T M A; the fused statements
//     per output element; guarded stores (P, Q that m does not divide).
//
// The filters are transformed in the kernel at every step (the host function
// takes no workspace).
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/EmitWinograd.h"

#include "lib/Emit/EmitHost.h"

namespace sketch {

namespace {

std::string kernelName(const WinogradConvSpec &spec, const WinogradBlock &b) {
  return spec.sig->name + "_winograd" + str(b.m) + "x" + str(b.m);
}

/// The main loop: copies of step s + 1 in flight (cp.async into the raw buffers)
/// while the warps multiply step s's components. The copies' filter layout follows
/// the input's unless stated (nchw / kcrs, nhwc / krsc).
void emitMainLoop(CudaWriter &w, const WinogradConvSpec &spec) {
  bool mixed = spec.nhwc != spec.krsc;
  std::string layouts = std::string(spec.nhwc ? "nhwc" : "nchw") + " / " + (spec.krsc ? "krsc" : "kcrs");
  w.line(std::string("using Copies = sketch::winograd::WinogradCopies<M, BT, BK, BC, LDU, LDV, THREADS, ") +
         (spec.nhwc ? "true" : "false") + ", kVecFilters" +
         (mixed ? std::string(", ") + (spec.krsc ? "true" : "false") : "") + ">;" +
         (spec.nhwc || mixed ? "  // " + layouts : ""));
  w.line("const Copies copies(x_in, w_in, shape, wshape, tile0, k0);");
  w.line("const int steps = (shape.c + BC - 1) / BC;");
  w.line("copies.copy(0, xr, wr);");
  w.line("sketch::cp_async_commit();");
  w.line("sketch::cp_async_wait_all();");
  w.line("copies.transform(xr, wr, v[0], u[0]);  // the thread's own copies: no barrier");
  w.open("if (steps > 1)");
  w.line("copies.copy(BC, xr, wr);");
  w.line("sketch::cp_async_commit();");
  w.close();
  w.line("__syncthreads();");
  w.open("for (int step = 0; step < steps; ++step)");
  w.line("const int cur = step & 1;");
  w.comment("component GEMMs: M[xi] += U[xi]^T (BK x BC) * V[xi] (BC x BT) for this warp's xi");
  w.line("#pragma unroll");
  w.open("for (int c = 0; c < BC; ++c)");
  w.line("#pragma unroll");
  w.open("for (int q = 0; q < PER_WARP; ++q)");
  w.line("const float *us = &u[cur][warp * PER_WARP + q][c][ty * 4];");
  w.line("const float *vs = v[cur][warp * PER_WARP + q][c];");
  w.line("float a[TM], b[TN];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < TM; i += 4)  // channel pieces 32 apart");
  w.line("  *reinterpret_cast<float4 *>(&a[i]) = *reinterpret_cast<const float4 *>(us + i * 8);");
  w.line("#pragma unroll");
  w.line("for (int j = 0; j < TN; j += 4)  // tile pieces 16 apart, at V's columns of them");
  w.line("  *reinterpret_cast<float4 *>(&b[j]) =");
  w.line("      *reinterpret_cast<const float4 *>(vs + Copies::v_column(c, tx * 4 + j * 4));");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < TM; ++i)");
  w.line("  #pragma unroll");
  w.line("  for (int j = 0; j < TN; ++j)");
  w.line("    acc[q][i][j] = fmaf(a[i], b[j], acc[q][i][j]);");
  w.close(); // q
  w.close(); // c
  w.open("if (step + 1 < steps)");
  w.comment("step + 1 landed: transform it into the other stage, then copy step + 2");
  w.line("sketch::cp_async_wait_all();");
  w.line("copies.transform(xr, wr, v[cur ^ 1], u[cur ^ 1]);");
  w.open("if (step + 2 < steps)");
  w.line("copies.copy((step + 2) * BC, xr, wr);");
  w.line("sketch::cp_async_commit();");
  w.close();
  w.close();
  w.line("__syncthreads();");
  w.close(); // step
}

/// The epilogue, 16 tiles at a time: the warps write their components of them to
/// E[xi][BK][LDE], then each thread takes (channel, tile) pairs: all A * A components,
/// Y = A^T m A, the fused statements, guarded stores.
void emitEpilogue(CudaWriter &w, const WinogradConvSpec &spec) {
  w.comment("Epilogue, tiles tile0 + piece * 16 .. + 15 at a time: the warps write their");
  w.comment("components to E[xi][BK][LDE], then each thread takes (channel, tile) pairs.");
  w.line("auto e = reinterpret_cast<float (*)[BK][LDE]>(smem_f);  // the loop's last barrier freed U, V");
  w.line("#pragma unroll");
  w.open("for (int piece = 0; piece < TN / 4; ++piece)");
  w.line("#pragma unroll");
  w.line("for (int q = 0; q < PER_WARP; ++q)");
  w.line("  #pragma unroll");
  w.line("  for (int i = 0; i < TM; ++i)");
  w.line("    *reinterpret_cast<float4 *>(&e[warp * PER_WARP + q][ty * 4 + i % 4 + i / 4 * 32][tx * 4]) =");
  w.line("        make_float4(acc[q][i][piece * 4], acc[q][i][piece * 4 + 1], acc[q][i][piece * 4 + 2],");
  w.line("                    acc[q][i][piece * 4 + 3]);");
  w.line("__syncthreads();");
  w.open("for (int pair = threadIdx.x; pair < BK * 16; pair += THREADS)");
  if (spec.nhwc)
    w.comment("a warp: 8 channels x 4 tiles, 32-byte stores (and E's reads in distinct banks)");
  w.line(spec.nhwc ? "const int kk = pair % 8 + pair / 32 % (BK / 8) * 8, t = pair / 8 % 4 + pair / (4 * BK) * 4;"
                   : "const int kk = pair / 16, t = pair % 16;");
  w.line("const int channel = k0 + kk, tile = tile0 + piece * 16 + t;");
  w.line("if (channel >= shape.k || tile >= wshape.tiles)");
  w.line("  continue;");
  w.line("float m[A * A];");
  w.line("#pragma unroll");
  w.line("for (int xi = 0; xi < A * A; ++xi)");
  w.line("  m[xi] = e[xi][kk][t];");
  w.line("float y[M][M];");
  w.line("sketch::winograd::Transforms2d<M>::output(m, y);");
  w.line("const sketch::winograd::TileCoord at(wshape, tile, M);");
  for (const EpilogueOperand &operand : spec.epilogue->operands())
    if (spec.perChannel(operand))
      w.line("const float " + operand.var + " = sketch::to_float(" + operand.param->cname +
             "[channel]);  // per output channel");
  w.line("#pragma unroll");
  w.open("for (int dy = 0; dy < M; ++dy)");
  w.line("#pragma unroll");
  w.open("for (int dx = 0; dx < M; ++dx)");
  w.line("const int oh = at.oh0 + dy, ow = at.ow0 + dx;");
  w.line("if (oh >= shape.p || ow >= shape.q)");
  w.line("  continue;  // the last tiles of a P or Q that M does not divide");
  w.line(spec.nhwc ? "const int y_at = ((at.image * shape.p + oh) * shape.q + ow) * shape.k + channel;"
                   : "const int y_at = ((at.image * shape.k + channel) * shape.p + oh) * shape.q + ow;");
  w.line("float out;");
  spec.epilogue->emitElement(
      w, "y[dy][dx]",
      [&](const EpilogueOperand &operand) {
        if (spec.perChannel(operand))
          return operand.var;
        return "sketch::to_float(" + operand.param->cname + "[y_at])";
      },
      "out");
  w.line(spec.y + "[y_at] = out;");
  w.close(); // dx
  w.close(); // dy
  w.close(); // pair
  w.line("__syncthreads();  // E is written again by the next piece");
  w.close(); // piece
}

} // namespace

void emitWinogradKernel(CudaWriter &w, const WinogradConvSpec &spec, const WinogradBlock &b) {
  spec.headerComment();
  const std::string m = str(b.m), comps = str(b.components());
  w.comment("Winograd F(" + m + "x" + m + ", 3x3) (sketch/winograd.cuh): a block computes " +
            str(b.tiles) + " tiles of " + m + "x" + m + " outputs x " + str(b.channels) +
            " output channels");
  w.comment("for all " + comps + " components, " + str(b.depth) + " input channels a step, " +
            str(b.threads()) + " threads (warp w: components " + str(b.componentsPerWarp()) +
            " w ..), " + str(b.smemBytes()) + " bytes of shared memory");
  w.comment("kVecFilters: the filters copied 16 bytes (four filters) at a time (C % 4 == 0, W 16-byte");
  w.comment("aligned), else 4 bytes (one filter element) at a time");
  w.line("template <bool kVecFilters>");
  w.line("__global__ void __launch_bounds__(" + str(b.threads()) + ", 1) " +
         kernelName(spec, b) + "(" + spec.kernelParams +
         ", const __grid_constant__ sketch::winograd::WinogradShape wshape) {");
  w.indentMore();
  w.line("constexpr int M = " + m + ", A = M + 2;  // outputs a tile side; patch side");
  w.line("constexpr int BT = " + str(b.tiles) + ", BK = " + str(b.channels) + ", BC = " +
         str(b.depth) + ";  // tiles, output channels a block; input channels a step");
  w.line("constexpr int THREADS = " + str(b.threads()) + ", PER_WARP = " +
         str(b.componentsPerWarp()) + ";  // components a warp");
  w.line("constexpr int TM = BK / 8, TN = BT / 4;  // a thread's channels x tiles of each component");
  w.line("constexpr int LDU = " + str(b.ldU()) + ", LDV = " + str(b.ldV()) + ", LDE = " +
         str(WinogradBlock::ldE) + ";  // rows of U, V and the exchange buffer");
  w.comment("shared memory: U[2][A * A][BC][LDU] transformed filters, V[2][A * A][BC][LDV]");
  w.comment("transformed patches (two stages each), the raw copies of one step XR[A * A][BT * BC]");
  w.comment("and WR (9 x BK * BC floats); after the loop E[A * A][BK][LDE] over U and V");
  w.line("static_assert(A * A * BK * LDE <= 2 * A * A * BC * (LDU + LDV), \"E fits over U and V\");");
  w.line("extern __shared__ __align__(128) unsigned char smem[];");
  w.line("float *const smem_f = reinterpret_cast<float *>(smem);");
  w.line("auto u = reinterpret_cast<float (*)[A * A][BC][LDU]>(smem_f);");
  w.line("auto v = reinterpret_cast<float (*)[A * A][BC][LDV]>(smem_f + 2 * A * A * BC * LDU);");
  w.line("auto xr = reinterpret_cast<float (*)[BT * BC]>(smem_f + 2 * A * A * BC * (LDU + LDV));");
  w.line("auto wr = reinterpret_cast<float (*)[BK * BC]>(smem_f + 2 * A * A * BC * (LDU + LDV) + "
         "A * A * BT * BC);");
  spec.derivedSizes();
  w.line("const float *const x_in = " + spec.x + ";");
  w.line("const float *const w_in = " + spec.w + ";");
  w.comment("output channels fastest: neighbouring blocks read the same input patches");
  w.line("const int k_blocks = (shape.k + BK - 1) / BK;");
  w.line("const int k0 = int(blockIdx.x % k_blocks) * BK, tile0 = int(blockIdx.x / k_blocks) * "
         "BT;");
  w.comment("thread (ty, tx) of its warp: channels ty * 4 + (i & 3) + (i >> 2) * 32, tiles");
  w.comment("tx * 4 + (j & 3) + (j >> 2) * 16 of each of the warp's components");
  w.line("const int warp = threadIdx.x / 32, ty = threadIdx.x % 32 / 4, tx = threadIdx.x % 4;");
  w.line("float acc[PER_WARP][TM][TN];");
  w.line("#pragma unroll");
  w.line("for (int q = 0; q < PER_WARP; ++q)");
  w.line("  #pragma unroll");
  w.line("  for (int i = 0; i < TM; ++i)");
  w.line("    #pragma unroll");
  w.line("    for (int j = 0; j < TN; ++j)");
  w.line("      acc[q][i][j] = 0.f;");
  w.line("{  // the copies' registers end with this scope");
  w.indentMore();
  emitMainLoop(w, spec);
  w.indentLess();
  w.line("}");
  emitEpilogue(w, spec);
  w.indentLess();
  w.line("}");
}

void emitWinogradHost(CudaWriter &w, const WinogradConvSpec &spec, const WinogradBlock &b) {
  w.open(hostPrototype(*spec.sig));
  spec.hostShape();
  w.line("const sketch::winograd::WinogradShape wshape = "
         "sketch::winograd::make_winograd_shape(shape, " + str(b.m) + ");");
  w.line("const int64_t blocks = sketch::ceil_div(wshape.tiles, " + str(b.tiles) +
         ") * sketch::ceil_div(" + spec.kDim + ", " + str(b.channels) + ");");
  w.line("if (blocks > INT32_MAX)");
  w.line("  return cudaErrorInvalidValue;");
  w.line("const int smem_bytes = " + str(b.smemBytes()) + ";");
  const std::string name = kernelName(spec, b);
  w.comment("filters by 16-byte copies where four input channels' filters are whole 16-byte chunks");
  w.line("const bool vec_filters = shape.c % 4 == 0 && sketch::aligned_to(" + spec.w +
         ", 16);");
  w.line("const auto kernel = vec_filters ? " + name + "<true> : " + name + "<false>;");
  w.line("cudaError_t err = sketch::allow_dynamic_smem(kernel, smem_bytes);");
  w.line("if (err != cudaSuccess)");
  w.line("  return err;");
  w.line("kernel<<<dim3(unsigned(blocks)), " + str(b.threads()) + ", smem_bytes, stream>>>(" +
         spec.kernelArgs + ", wshape);");
  w.line("return cudaGetLastError();");
  w.close();
}

} // namespace sketch
