//===- EmitWinograd.cpp - Winograd F(2x2, 3x3) forward convolution --------===//
//
// `Compute Conv2d X, W and get Y with stride (1, 1) pad (p, q)`, f32 nchw X,
// kcrs 3x3 W: each 2x2 output tile is A^T [sum_c U_c .* V_c] A with U = G g G^T
// (filters) and V = B^T d B (4x4 input patches), sketch/winograd.cuh. Per
// Winograd component xi (16) the sum over input channels is a GEMM of output
// channels by tiles, so a block computes, for BT tiles and BK output channels:
//
//   for each step of BC input channels (double-buffered through registers):
//     patches -> V[16][BC][BT], filters -> U[16][BC][BK] in shared memory
//       (transformed in registers on the way; zero outside the image, C, K)
//     warp xi: M[xi] (BK x BT) += U[xi]^T V[xi], 8x8 outputs a thread (float4 reads)
//   epilogue, in two halves of the channels: M through shared memory so that a
//     thread holds all 16 components of two (channel, tile) pairs; Y = A^T M A;
//     the fused statements per output element; guarded stores (odd P, Q).
//
// The filters are transformed in the kernel at every step (the host function
// takes no workspace): BK * BC filters a step against BT * BC patches.
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/EmitWinograd.h"

#include "lib/Emit/EmitHost.h"

namespace sketch {

namespace {

std::string kernelName(const WinogradConvSpec &spec) { return spec.sig->name + "_winograd"; }

} // namespace

void emitWinogradKernel(CudaWriter &w, const WinogradConvSpec &spec) {
  using T = WinogradTile;
  spec.headerComment();
  w.comment("Winograd F(2x2, 3x3) (sketch/winograd.cuh): a block computes " + str(T::tiles) +
            " tiles of 2x2 outputs x " + str(T::channels) + " output channels for all 16");
  w.comment("components, " + str(T::depth) + " input channels a step, " + str(T::threads) +
            " threads (warp xi: component xi), " + str(T::smemBytes) +
            " bytes of shared memory");
  w.line("__global__ void __launch_bounds__(" + str(T::threads) + ", 1) " + kernelName(spec) +
         "(" + spec.kernelParams +
         ", const __grid_constant__ sketch::winograd::WinogradShape wshape) {");
  w.indentMore();
  w.line("constexpr int BT = " + str(T::tiles) + ", BK = " + str(T::channels) + ", BC = " +
         str(T::depth) + ";  // tiles, output channels a block; input channels a step");
  w.line("constexpr int LDU = " + str(T::ldU) +
         ", LDE = " + str(T::ldE) + ";  // padded rows of U and of the exchange buffer");
  w.line("constexpr int THREADS = " + str(T::threads) + ";");
  w.comment("shared memory: U[2][16][BC][LDU] transformed filters, V[2][16][BC][BT] transformed");
  w.comment("patches (two stages each); after the loop E[16][BK / 2][LDE] over them");
  // The same declaration as every other kernel's: one file may hold kernels of several kinds.
  w.line("extern __shared__ __align__(128) unsigned char smem[];");
  w.line("float *const smem_f = reinterpret_cast<float *>(smem);");
  w.line("auto u = reinterpret_cast<float (*)[16][BC][LDU]>(smem_f);");
  w.line("auto v = reinterpret_cast<float (*)[16][BC][BT]>(smem_f + 2 * 16 * BC * LDU);");
  spec.derivedSizes();
  w.comment("output channels fastest: neighbouring blocks read the same input patches");
  w.line("const int k_blocks = (shape.k + BK - 1) / BK;");
  w.line("const int k0 = int(blockIdx.x % k_blocks) * BK, tile0 = int(blockIdx.x / k_blocks) * "
         "BT;");
  w.comment("warp xi multiplies component xi: a BK x BT GEMM, 8 x 8 outputs a thread, channels");
  w.comment("ty * 4 + (i & 3) + (i >> 2) * BK / 2, tiles tx * 4 + (j & 3) + (j >> 2) * BT / 2");
  w.line("const int xi = threadIdx.x / 32, ty = threadIdx.x % 32 / 4, tx = threadIdx.x % 4;");
  w.line("float acc[8][8];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 8; ++i)");
  w.line("  #pragma unroll");
  w.line("  for (int j = 0; j < 8; ++j)");
  w.line("    acc[i][j] = 0.f;");
  w.line("{  // the loaders' registers end with this scope");
  w.indentMore();
  w.line("sketch::winograd::WinogradInputLoader<BT, BC> load_x(" + spec.x +
         ", shape, wshape, tile0);");
  w.line("sketch::winograd::WinogradFilterLoader<BK, BC, LDU> load_w(" + spec.w +
         ", shape, k0);");
  w.line("static_assert(decltype(load_x)::kThreads == THREADS && decltype(load_w)::kThreads == "
         "THREADS, \"one patch half and one filter a thread\");");
  w.line("const int steps = (shape.c + BC - 1) / BC;");
  w.line("load_x.fetch(0);");
  w.line("load_w.fetch(0);");
  w.line("load_x.stash(v[0]);");
  w.line("load_w.stash(u[0]);");
  w.line("__syncthreads();");
  w.open("for (int step = 0; step < steps; ++step)");
  w.line("const int cur = step & 1;");
  w.line("const bool more = step + 1 < steps;");
  w.open("if (more)");
  w.comment("input channels of the next step: global -> registers, in flight during the math");
  w.line("load_x.fetch((step + 1) * BC);");
  w.line("load_w.fetch((step + 1) * BC);");
  w.close();
  w.comment("component GEMM xi: M[xi] += U[xi]^T (BK x BC) * V[xi] (BC x BT)");
  w.line("const float *us = &u[cur][xi][0][ty * 4];");
  w.line("const float *vs = &v[cur][xi][0][tx * 4];");
  w.line("#pragma unroll");
  w.open("for (int c = 0; c < BC; ++c)");
  w.line("const float4 a0 = *reinterpret_cast<const float4 *>(us + c * LDU);");
  w.line("const float4 a1 = *reinterpret_cast<const float4 *>(us + c * LDU + BK / 2);");
  w.line("const float4 b0 = *reinterpret_cast<const float4 *>(vs + c * BT);");
  w.line("const float4 b1 = *reinterpret_cast<const float4 *>(vs + c * BT + BT / 2);");
  w.line("const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};");
  w.line("const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 8; ++i)");
  w.line("  #pragma unroll");
  w.line("  for (int j = 0; j < 8; ++j)");
  w.line("    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);");
  w.close();
  w.open("if (more)");
  w.comment("transform (patches: two lanes a patch, shuffles) and store the next stage");
  w.line("load_x.stash(v[cur ^ 1]);");
  w.line("load_w.stash(u[cur ^ 1]);");
  w.close();
  w.line("__syncthreads();");
  w.close(); // for step
  w.indentLess();
  w.line("}");

  // Epilogue.
  w.comment("Epilogue, channels k0 + half * BK / 2 + 0..BK / 2 - 1 at a time: warp xi writes its");
  w.comment("M[xi] rows to E[xi], then each thread reads all 16 components of (channel, tile)");
  w.comment("pairs threadIdx.x + r * THREADS and applies Y = A^T M A and the fused statements.");
  w.line("auto e = reinterpret_cast<float (*)[BK / 2][LDE]>(smem_f);  // the loop's last barrier "
         "freed U, V");
  w.line("#pragma unroll");
  w.open("for (int half = 0; half < 2; ++half)");
  w.line("#pragma unroll");
  w.open("for (int i = 0; i < 4; ++i)");
  w.line("float *row = &e[xi][ty * 4 + i][tx * 4];");
  w.line("const float (&m)[8] = acc[4 * half + i];");
  w.line("*reinterpret_cast<float4 *>(row) = make_float4(m[0], m[1], m[2], m[3]);");
  w.line("*reinterpret_cast<float4 *>(row + BT / 2) = make_float4(m[4], m[5], m[6], m[7]);");
  w.close();
  w.line("__syncthreads();");
  w.line("#pragma unroll");
  w.open("for (int r = 0; r < BK / 2 * BT / THREADS; ++r)");
  w.line("const int pair = threadIdx.x + r * THREADS, kk = pair / BT, t = pair % BT;");
  w.line("const int channel = k0 + half * BK / 2 + kk, tile = tile0 + t;");
  w.line("if (channel >= shape.k || tile >= wshape.tiles)");
  w.line("  continue;");
  w.line("float m[16];");
  w.line("#pragma unroll");
  w.line("for (int c = 0; c < 16; ++c)");
  w.line("  m[c] = e[c][kk][t];");
  w.line("float y[2][2];");
  w.line("sketch::winograd::output_transform(m, y);");
  w.line("const sketch::winograd::TileCoord at(wshape, tile);");
  for (const EpilogueOperand &operand : spec.epilogue->operands())
    if (spec.perChannel(operand))
      w.line("const float " + operand.var + " = sketch::to_float(" + operand.param->cname +
             "[channel]);  // per output channel");
  w.line("#pragma unroll");
  w.open("for (int dy = 0; dy < 2; ++dy)");
  w.line("#pragma unroll");
  w.open("for (int dx = 0; dx < 2; ++dx)");
  w.line("const int oh = at.oh0 + dy, ow = at.ow0 + dx;");
  w.line("if (oh >= shape.p || ow >= shape.q)");
  w.line("  continue;  // the last tile of an odd P or Q");
  w.line("const int y_at = ((at.image * shape.k + channel) * shape.p + oh) * shape.q + ow;");
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
  w.close(); // r
  w.line("__syncthreads();  // E is written again by the next half");
  w.close(); // half
  w.indentLess();
  w.line("}");
}

void emitWinogradHost(CudaWriter &w, const WinogradConvSpec &spec) {
  using T = WinogradTile;
  w.open(hostPrototype(*spec.sig));
  spec.hostShape();
  w.line("const sketch::winograd::WinogradShape wshape = "
         "sketch::winograd::make_winograd_shape(shape);");
  w.line("const int64_t blocks = sketch::ceil_div(wshape.tiles, " + str(T::tiles) +
         ") * sketch::ceil_div(" + spec.kDim + ", " + str(T::channels) + ");");
  w.line("if (blocks > INT32_MAX)");
  w.line("  return cudaErrorInvalidValue;");
  w.line("const int smem_bytes = " + str(T::smemBytes) + ";");
  w.line("cudaError_t err = sketch::allow_dynamic_smem(" + kernelName(spec) + ", smem_bytes);");
  w.line("if (err != cudaSuccess)");
  w.line("  return err;");
  w.line(kernelName(spec) + "<<<dim3(unsigned(blocks)), " + str(T::threads) +
         ", smem_bytes, stream>>>(" + spec.kernelArgs + ", wshape);");
  w.line("return cudaGetLastError();");
  w.close();
}

} // namespace sketch
