//===- TensorCoreGemm.cpp - pieces of the mma.sync GEMM emitter -----------===//
#include "lib/Emit/TensorCoreGemm.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;

namespace sketch {

namespace {

/// Wraps an expression in parentheses unless it is a plain name or number.
std::string paren(StringRef expr) {
  bool simple = llvm::all_of(expr, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  return simple ? expr.str() : "(" + expr.str() + ")";
}

void unrolledFor(CudaWriter &w, StringRef var, StringRef bound) {
  w.line("#pragma unroll");
  w.open("for (int " + var.str() + " = 0; " + var.str() + " < " + bound.str() + "; ++" + var.str() +
         ")");
}

std::string describeLayout(const plan::SmemBuffer &smem) {
  if (smem.layout == "xor" && smem.xorMask)
    return "16-byte chunk c of row r at c ^ " +
           (smem.xorShift ? "((r >> " + str(smem.xorShift) + ") & " : "(r & ") + str(smem.xorMask) +
           ")";
  if (smem.layout == "pad")
    return "rows padded to " + str(smem.rowBytes) + " bytes";
  return "rows of " + str(smem.rowBytes) + " bytes";
}

} // namespace

namespace {

/// How far a hoisted copy's source moves from one k-tile to the next (elements).
std::string kTileAdvance(const MatrixTileLoader::Spec &spec) {
  return spec.kAlongRows ? "(int64_t)BK * " + paren(spec.ld) : "BK";
}

} // namespace

std::string swizzleBits(const plan::SmemBuffer &smem, StringRef row) {
  std::string r = paren(row);
  if (smem.layout != "xor" || smem.xorMask == 0)
    return "0";
  return smem.xorShift ? "((" + r + " >> " + str(smem.xorShift) + ") & " + str(smem.xorMask) + ")"
                       : "(" + r + " & " + str(smem.xorMask) + ")";
}

std::string swizzleOffset(const plan::SmemBuffer &smem, StringRef row, StringRef chunk) {
  std::string r = paren(row), c = paren(chunk);
  std::string rowPart = r + " * " + str(smem.rowBytes);
  if (smem.layout != "xor" || smem.xorMask == 0)
    return rowPart + " + (" + c + " << 4)";
  std::string bits = smem.xorShift
                         ? "((" + r + " >> " + str(smem.xorShift) + ") & " + str(smem.xorMask) + ")"
                         : "(" + r + " & " + str(smem.xorMask) + ")";
  return rowPart + " + ((" + c + " ^ " + bits + ") << 4)";
}

bool MatrixTileLoader::hoisted() const {
  const plan::SmemBuffer &s = spec.smem;
  int64_t chunksPerRow = s.cols / (16 / s.elementBytes);
  int64_t chunks = s.rows * chunksPerRow;
  return !spec.hoist.empty() && spec.threads % chunksPerRow == 0 && chunks % spec.threads == 0 &&
         chunks / spec.threads <= 32;
}

void MatrixTileLoader::emitSetup(CudaWriter &w) const {
  if (!hoisted())
    return;
  const plan::SmemBuffer &s = spec.smem;
  int64_t perChunk = 16 / s.elementBytes;
  int64_t chunksPerRow = s.cols / perChunk;
  int64_t iterations = s.rows * chunksPerRow / spec.threads;
  std::string x = spec.hoist, rs = str(spec.threads / chunksPerRow), pc = str(perChunk);
  w.comment(spec.label + " copies (16-byte path), set up once: chunk c of tile rows r + i * " + rs +
            "; the source");
  w.comment("of k-tile 0 (+ BK " + std::string(spec.kAlongRows ? "rows" : "columns") +
            " a k-tile) and what lies inside the matrix in every k-tile");
  w.line("const int " + x + "_copy_r = tid / " + str(chunksPerRow) + ", " + x + "_copy_c = tid % " +
         str(chunksPerRow) + ";");
  std::string kSize = spec.kAlongRows ? spec.rows : spec.cols;
  std::string fullMn = spec.kAlongRows ? spec.colOrigin + " + " + str(s.cols) + " <= " + spec.cols
                                       : spec.rowOrigin + " + " + str(s.rows) + " <= " + spec.rows;
  w.line("const bool " + x + "_copy_full = " + fullMn + ";  // the block's tile, along " +
         (spec.kAlongRows ? "the columns" : "the rows"));
  w.line("const int " + x + "_copy_tiles = (int)(" + kSize +
         " / BK);  // k-tiles wholly inside the matrix");
  if (spec.kAlongRows) {
    w.line("const auto *" + x + "_copy_src = " + spec.base + " + (int64_t)" + x + "_copy_r * " +
           paren(spec.ld) + " + " + spec.colOrigin + " + " + x + "_copy_c * " + pc + ";");
    w.line("const bool " + x + "_copy_in = " + spec.colOrigin + " + " + x + "_copy_c * " + pc +
           " < " + spec.cols + ";");
    emitPersistentSources(w, iterations);
    return;
  }
  w.line("const auto *" + x + "_copy_src = " + spec.base + " + (" + spec.rowOrigin + " + " + x +
         "_copy_r) * " + paren(spec.ld) + " + " + x + "_copy_c * " + pc + ";");
  emitPersistentSources(w, iterations);
  w.line("uint32_t " + x + "_copy_in = 0;  // bit i: row r + i * " + rs);
  unrolledFor(w, "i", str(iterations));
  w.line(x + "_copy_in |= (uint32_t)(" + spec.rowOrigin + " + " + x + "_copy_r + i * " + rs + " < " +
         spec.rows + ") << i;");
  w.close();
}

/// The pointers of Spec::persistentSources, one k-tile before k-tile 0 (each copy
/// advances its pointer first; the one before the matrix is never read).
void MatrixTileLoader::emitPersistentSources(CudaWriter &w, int64_t iterations) const {
  if (!spec.persistentSources)
    return;
  int64_t chunksPerRow = spec.smem.cols / (16 / spec.smem.elementBytes);
  std::string x = spec.hoist, rs = str(spec.threads / chunksPerRow);
  w.line("decltype(" + x + "_copy_src) " + x + "_copy_ptr[" + str(iterations) + "];  // row r + i * " +
         rs + ": source of the last full k-tile copied");
  unrolledFor(w, "i", str(iterations));
  w.line(x + "_copy_ptr[i] = " + x + "_copy_src + ((int64_t)i * " + rs + " * " + paren(spec.ld) +
         " - " + kTileAdvance(spec) + ");");
  w.close();
}

namespace {

/// The hoisted 16-byte path of k-tile `kt`: its source and the pointer step
/// between a thread's rows (see MatrixTileLoader::emitSetup).
void emitHoistedTile(CudaWriter &w, const MatrixTileLoader::Spec &spec, int64_t rowStep) {
  std::string x = spec.hoist;
  w.line("const auto *src = " + x + "_copy_src + (int64_t)kt * BK" +
         (spec.kAlongRows ? " * " + paren(spec.ld) : std::string()) + ";");
  w.line("const int step = " + str(rowStep) + " * (int)" + paren(spec.ld) + ";");
  w.line("const bool full = " + x + "_copy_full && kt < " + x +
         "_copy_tiles;  // no copy of this k-tile crosses an edge");
}

/// The hoisted 16-byte path's `iterations` copies: without bounds when the
/// whole k-tile lies inside the matrix, else each one predicated.
void emitHoistedCopies(CudaWriter &w, const MatrixTileLoader::Spec &spec, int64_t rowStep,
                       int64_t iterations) {
  std::string x = spec.hoist, rs = str(rowStep);
  int64_t perChunk = 16 / spec.smem.elementBytes;
  std::string dst = "dst + " + swizzleOffset(spec.smem, x + "_copy_r + i * " + rs, x + "_copy_c");
  auto openLoop = [&] {
    if (iterations > 4) {
      // fully unrolled, the addresses of 8+ chunks would not fit in registers
      w.line("#pragma unroll 2");
      w.open("for (int i = 0; i < " + str(iterations) + "; ++i)");
    } else {
      unrolledFor(w, "i", str(iterations));
    }
  };
  w.open("if (full)");
  openLoop();
  if (spec.persistentSources) {
    // full k-tiles come first (kt < <x>_copy_tiles), so every earlier one advanced too
    w.line(x + "_copy_ptr[i] += " + kTileAdvance(spec) + ";");
    w.line("sketch::cp_async_16(" + dst + ", " + x + "_copy_ptr[i], true);");
  } else {
    w.line("sketch::cp_async_16(" + dst + ", src + (int64_t)i * step, true);");
  }
  w.close();
  w.close();
  w.open("else");
  std::string kSize = spec.kAlongRows ? spec.rows : spec.cols;
  w.line("const int k_left = (int)min(" + kSize + " - (int64_t)kt * BK, (int64_t)BK);  // of this "
         "k-tile");
  openLoop();
  std::string pred = spec.kAlongRows
                         ? x + "_copy_in && " + x + "_copy_r + i * " + rs + " < k_left"
                         : "(" + x + "_copy_in >> i & 1) && " + x + "_copy_c * " + str(perChunk) +
                               " < k_left";
  w.line("const bool pred = " + pred + ";");
  w.line("sketch::cp_async_16(" + dst + ", pred ? src + (int64_t)i * step : " + spec.base +
         ", pred);");
  w.close();
  w.close();
}

} // namespace

/// Heads the element path of a tile copy (emitElementLoads).
constexpr const char *kElementLoadsComment =
    "element path (any size and alignment): aligned words or elements, in batches";

void MatrixTileLoader::emitLoad(CudaWriter &w) const {
  const plan::SmemBuffer &s = spec.smem;
  int64_t perChunk = 16 / s.elementBytes;
  int64_t chunksPerRow = s.cols / perChunk;
  int64_t chunks = s.rows * chunksPerRow;
  int64_t iterations = (chunks + spec.threads - 1) / spec.threads;
  w.comment(spec.label + ": a (" + str(s.rows) + ", " + str(s.cols) + ") tile, " + str(chunks) +
            " chunks of 16 bytes, " + str(iterations) + " per thread");
  if (spec.threads % chunksPerRow || chunks % spec.threads) {
    // Threads do not tile the chunks evenly: index every chunk.
    w.line("#pragma unroll(kVec ? " + str(iterations) + " : 1)");
    w.open("for (int i = 0; i < " + str(iterations) + "; ++i)");
    w.line("const int idx = tid + i * THREADS;");
    bool guarded = chunks % spec.threads != 0;
    if (guarded)
      w.open("if (idx < " + str(chunks) + ")");
    w.line("const int r = idx / " + str(chunksPerRow) + ", c = idx % " + str(chunksPerRow) + ";");
    w.line("sketch::load_chunk_16<kVec>(dst + " + swizzleOffset(s, "r", "c") + ", " + spec.base +
           ", " + spec.rowOrigin + " + r, " + spec.colOrigin + " + c * " + str(perChunk) + ", " +
           spec.rows + ", " + spec.cols + ", " + spec.ld + ");");
    if (guarded)
      w.close();
    w.close();
    return;
  }
  int64_t rowStep = spec.threads / chunksPerRow;
  std::string rs = str(rowStep);
  if (hoisted()) {
    w.open("if constexpr (kVec)");
    w.comment("one cp.async a chunk, from the addresses set up before the loop; zero-filled");
    w.comment("outside the matrix");
    emitHoistedTile(w, spec, rowStep);
    emitHoistedCopies(w, spec, rowStep, iterations);
    w.close();
    w.open("else");
    w.comment(kElementLoadsComment);
    w.line("const int r = tid / " + str(chunksPerRow) + ", c = tid % " + str(chunksPerRow) + ";");
    w.line("const int64_t row = " + spec.rowOrigin + " + r, col = " + spec.colOrigin + " + c * " +
           str(perChunk) + ";");
    emitElementLoads(w, rs, iterations);
    w.close();
    return;
  }
  w.comment("this thread copies chunk c of rows r, r + " + rs + ", ...");
  w.line("const int r = tid / " + str(chunksPerRow) + ", c = tid % " + str(chunksPerRow) + ";");
  w.line("const int64_t row = " + spec.rowOrigin + " + r, col = " + spec.colOrigin + " + c * " +
         str(perChunk) + ";");
  w.open("if constexpr (kVec)");
  w.comment("one cp.async a chunk; zero-filled outside the matrix (rows " + rs +
            " apart: 32-bit steps)");
  w.line("const auto *src = " + spec.base + " + row * " + paren(spec.ld) + " + col;");
  w.line("const int step = " + rs + " * (int)" + paren(spec.ld) + ";");
  if (iterations > 4) {
    // fully unrolled, the hoisted addresses of 8+ chunks would not fit in registers
    w.line("#pragma unroll 2");
    w.open("for (int i = 0; i < " + str(iterations) + "; ++i)");
  } else {
    unrolledFor(w, "i", str(iterations));
  }
  w.line("const bool pred = row + i * " + rs + " < " + spec.rows + " && col < " + spec.cols + ";");
  // kVec rows are under 2^24 elements: 32-bit offsets reach a thread's last row of a tile
  // of up to 128 + rs rows, 64-bit ones beyond (256 rows: 2^32 elements on)
  bool wideOffsets = s.rows - rowStep > 128;
  w.line("sketch::cp_async_16(dst + " + swizzleOffset(s, "r + i * " + rs, "c") + ", pred ? src + " +
         (wideOffsets ? "(int64_t)" : "") + "i * step : " + spec.base + ", pred);");
  w.close();
  w.close();
  w.open("else");
  w.comment(kElementLoadsComment);
  emitElementLoads(w, rs, iterations);
  w.close();
}

/// The element path of a tile copy (any size and alignment), for a thread whose
/// chunk c of rows r, r + rowStep, ... starts at (row, col).
void MatrixTileLoader::emitElementLoads(CudaWriter &w, const std::string &rowStep,
                                        int64_t iterations) const {
  const plan::SmemBuffer &s = spec.smem;
  int64_t batch = spec.chunksInFlight;
  while (iterations % batch)
    batch /= 2;
  w.comment(str(batch) + " chunk(s) a thread at a time: their loads, then their stores");
  w.line("#pragma unroll 1");
  w.open("for (int i0 = 0; i0 < " + str(iterations) + "; i0 += " + str(batch) + ")");
  w.line("sketch::load_element_chunks_16<" + str(batch) + ">(" + spec.base + ", row + i0 * " +
         rowStep + ", " + rowStep + ", col, " + spec.rows + ", " + spec.cols + ", " + spec.ld +
         ", [&](int i) { return dst + " + swizzleOffset(s, "r + (i0 + i) * " + rowStep, "c") +
         "; });");
  w.close();
}

int64_t MatrixTileLoader::copiesPerThread() const {
  const plan::SmemBuffer &s = spec.smem;
  int64_t chunksPerRow = s.cols / (16 / s.elementBytes);
  int64_t chunks = s.rows * chunksPerRow;
  if (spec.threads % chunksPerRow || chunks % spec.threads)
    return 0;
  return chunks / spec.threads;
}

void MatrixTileLoader::emitCopy(CudaWriter &w) const {
  const plan::SmemBuffer &s = spec.smem;
  int64_t perChunk = 16 / s.elementBytes;
  int64_t chunksPerRow = s.cols / perChunk;
  std::string rs = str(spec.threads / chunksPerRow);
  w.comment(spec.label + ": chunk c of row r + i * " + rs + " of the (" + str(s.rows) + ", " +
            str(s.cols) + ") tile; zero-filled outside the matrix");
  w.line("const int r = tid / " + str(chunksPerRow) + ", c = tid % " + str(chunksPerRow) + ";");
  w.line("const int64_t row = " + spec.rowOrigin + " + r + i * " + rs + ", col = " +
         spec.colOrigin + " + c * " + str(perChunk) + ";");
  w.line("const bool pred = row < " + spec.rows + " && col < " + spec.cols + ";");
  w.line("sketch::cp_async_16(dst + " + swizzleOffset(s, "r + i * " + rs, "c") + ", pred ? " +
         spec.base + " + row * " + paren(spec.ld) + " + col : " + spec.base + ", pred);");
}

void emitTensorCorePreamble(CudaWriter &w, const TensorCoreConfig &c) {
  w.line("constexpr int BM = " + str(c.tileM) + ", BN = " + str(c.tileN) +
         ", BK = " + str(c.tileK) + ";");
  w.line("constexpr int WARPS_M = " + str(c.warpsM) + ", WARPS_N = " + str(c.warpsN) +
         ", THREADS = " + str(c.threads()) + ";");
  w.line("constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;     // warp tile " +
         str(c.tileM / c.warpsM) + " x " + str(c.tileN / c.warpsN));
  w.line("constexpr int MI = WM / 16, NI = WN / 8, KI = BK / 16;  // mma.m16n8k16 steps of a "
         "warp tile");
  if (c.stages > 1)
    w.line("constexpr int STAGES = " + str(c.stages) + ";");
  if (c.slices > 1) {
    w.line("constexpr int SLICES = " + str(c.slices) + ", SLICE_SMEM_BYTES = " +
           str(c.sliceSmemBytes) + ";  // K slices: warp groups of THREADS threads,");
    w.line("const int slice = threadIdx.x / THREADS;  // each with its own shared memory");
    w.line("const uint32_t smem_base = sketch::smem_addr(smem) + slice * SLICE_SMEM_BYTES;");
    w.line("const int tid = threadIdx.x % THREADS, lane = tid % 32, warp = tid / 32;");
  } else {
    w.line("const uint32_t smem_base = sketch::smem_addr(smem);");
    w.line("const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;");
  }
  w.line("const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;");
}

namespace {

/// Per-lane ldmatrix byte offsets inside one stage (see mma.cuh for the layouts).
void emitFragmentOffsets(CudaWriter &w, const TensorCoreConfig &c) {
  const plan::SmemBuffer &sa = c.a.smem, &sb = c.b.smem;
  w.comment("ldmatrix row addresses of this lane, as byte offsets inside a stage");
  if (c.a.kContiguous) {
    // chunk kk * 2 + l stored at (kk * 2 + l) ^ s = (kk * 2) ^ (l ^ s): one XOR per step
    w.line("const int a_frag_r = warp_m * WM + (lane & 15);  // + mi * 16 rows");
    w.line("const uint32_t a_frag_row = a_frag_r * " + str(sa.rowBytes) + ";");
    w.line("const int a_frag_x = (lane >> 4) ^ " + swizzleBits(sa, "a_frag_r") +
           ";  // chunk of step kk: (kk * 2) ^ a_frag_x");
  } else {
    w.line("uint32_t a_frag_off[MI];  // + kk * 16 rows");
    unrolledFor(w, "mi", "MI");
    w.line("const int r = (lane & 7) + (lane >> 4) * 8;");
    w.line("const int c = (warp_m * WM + mi * 16) / 8 + ((lane >> 3) & 1);");
    w.line("a_frag_off[mi] = " + swizzleOffset(sa, "r", "c") + ";");
    w.close();
  }
  if (c.b.kContiguous) {
    w.line("const int b_frag_r = warp_n * WN + (lane & 7) + (lane >> 4) * 8;  // + np * 16 rows");
    w.line("const uint32_t b_frag_row = b_frag_r * " + str(sb.rowBytes) + ";");
    w.line("const int b_frag_x = ((lane >> 3) & 1) ^ " + swizzleBits(sb, "b_frag_r") +
           ";  // chunk of step kk: (kk * 2) ^ b_frag_x");
  } else {
    w.line("uint32_t b_frag_off[NI / 2];  // + kk * 16 rows");
    unrolledFor(w, "np", "NI / 2");
    w.line("const int r = lane & 15, c = (warp_n * WN + np * 16) / 8 + (lane >> 4);");
    w.line("b_frag_off[np] = " + swizzleOffset(sb, "r", "c") + ";");
    w.close();
  }
}

/// The fragment names of buffer `buf` (empty: a single buffer).
std::string fragA(const TensorCoreConfig &c, StringRef buf) {
  return c.fragmentBuffers > 1 ? "a_frag[" + buf.str() + "]" : "a_frag";
}
std::string fragB(const TensorCoreConfig &c, StringRef buf) {
  return c.fragmentBuffers > 1 ? "b_frag[" + buf.str() + "]" : "b_frag";
}

/// One ldmatrix.x4 of step `kk` into buffer `buf`: for A, rows mi * 16 .. + 15 of
/// the warp tile (one m16k16 fragment); for B, columns np * 16 .. + 15 (the n8k16
/// fragments 2 np and 2 np + 1). Without .trans when the operand is k-contiguous.
void emitFragmentLoad(CudaWriter &w, const TensorCoreConfig &c, bool isA, StringRef buf,
                      StringRef kk) {
  const MmaOperandPlan &op = isA ? c.a : c.b;
  std::string x = isA ? "a" : "b", f = isA ? fragA(c, buf) : fragB(c, buf);
  std::string i = isA ? "mi" : "np", step = str(16 * op.smem.rowBytes);
  std::string regs = isA ? f + "[mi][0], " + f + "[mi][1], " + f + "[mi][2], " + f + "[mi][3]"
                         : f + "[2 * np][0], " + f + "[2 * np][1], " + f + "[2 * np + 1][0], " + f +
                               "[2 * np + 1][1]";
  if (op.kContiguous)
    w.line("sketch::ldmatrix_x4(" + regs + ", " + x + "_stage + " + x + "_frag_row + " + i + " * " +
           step + " + (((" + kk.str() + ") * 2 ^ " + x + "_frag_x) << 4));");
  else
    w.line("sketch::ldmatrix_x4_trans(" + regs + ", " + x + "_stage + " + x + "_frag_off[" + i +
           "] + " + paren(kk) + " * " + step + ");");
}

/// ldmatrix of step `kk` into fragment buffer `buf` (both C++ expressions).
void emitFragmentLoads(CudaWriter &w, const TensorCoreConfig &c, StringRef buf, StringRef kk) {
  unrolledFor(w, "mi", "MI");
  emitFragmentLoad(w, c, /*isA=*/true, buf, kk);
  w.close();
  unrolledFor(w, "np", "NI / 2");
  emitFragmentLoad(w, c, /*isA=*/false, buf, kk);
  w.close();
}

/// The MMAs of one stage, fragments double-buffered in registers when planned.
void emitStageMma(CudaWriter &w, const TensorCoreConfig &c) {
  bool doubleBuffered = c.fragmentBuffers > 1;
  if (doubleBuffered) {
    w.comment("warp MMAs over the k-tile; the fragments of step kk + 1 load while step kk "
              "multiplies");
    w.line("uint32_t a_frag[2][MI][4], b_frag[2][NI][2];");
    emitFragmentLoads(w, c, "0", "0");
  } else {
    w.comment("warp MMAs over the k-tile");
    w.line("uint32_t a_frag[MI][4], b_frag[NI][2];");
  }
  unrolledFor(w, "kk", "KI");
  if (doubleBuffered) {
    w.open("if (kk + 1 < KI)");
    emitFragmentLoads(w, c, "(kk + 1) % 2", "kk + 1");
    w.close();
  } else {
    emitFragmentLoads(w, c, "", "kk");
  }
  std::string a = doubleBuffered ? "a_frag[kk % 2][mi]" : "a_frag[mi]";
  std::string b = doubleBuffered ? "b_frag[kk % 2][n]" : "b_frag[n]";
  unrolledFor(w, "mi", "MI");
  unrolledFor(w, "ni", "NI");
  w.line("const int n = (mi % 2) ? NI - 1 - ni : ni;  // serpentine order reuses B fragments");
  w.line("sketch::mma_m16n8k16<" + c.operandType + ">(acc[mi][n], " + a + ", " + b + ");");
  w.close();
  w.close();
  w.close();
}

void emitStagePointers(CudaWriter &w, StringRef stage) {
  w.line("const uint32_t a_stage = a_smem + " + stage.str() + " * A_STAGE_BYTES;");
  w.line("const uint32_t b_stage = b_smem + " + stage.str() + " * B_STAGE_BYTES;");
}

void emitUnpipelinedLoop(CudaWriter &w, const TensorCoreConfig &c, StringRef kTiles) {
  w.comment("main loop, not pipelined (stages 1): copy a k-tile, wait, multiply");
  w.open("for (int kt = 0; kt < " + kTiles.str() + "; ++kt)");
  w.line("__syncthreads();  // every warp is done with the previous k-tile");
  w.line("load_a(kt, a_smem);");
  w.line("load_b(kt, b_smem);");
  w.line("sketch::cp_async_commit();");
  w.line("sketch::cp_async_wait<0>();");
  w.line("__syncthreads();");
  emitStagePointers(w, "0");
  emitStageMma(w, c);
  w.close();
}

/// The MMAs of one k-step from buffer `buf`, the ldmatrix of the next step into
/// buffer `next` spread between them: before the MMAs of row block mi, its A
/// fragment and an equal share of the B fragments, so that the load pipe and the
/// tensor pipe work side by side.
void emitInterleavedStep(CudaWriter &w, const TensorCoreConfig &c, StringRef buf, StringRef next,
                         StringRef nextKk) {
  w.comment("MMAs of step kk; the fragments of the next step load between them");
  if (c.copiesA)
    w.comment("(and at step 0 the copies of the refill: copy_a i, copy_b j for row block mi)");
  unrolledFor(w, "mi", "MI");
  emitFragmentLoad(w, c, /*isA=*/true, next, nextKk);
  w.line("#pragma unroll");
  w.open("for (int np = mi * (NI / 2) / MI; np < (mi + 1) * (NI / 2) / MI; ++np)");
  emitFragmentLoad(w, c, /*isA=*/false, next, nextKk);
  w.close();
  if (c.copiesA) {
    w.open("if (kVec && kk == 0 && refill)");
    for (auto [name, count] : {std::pair<std::string, int64_t>{"a", c.copiesA}, {"b", c.copiesB}}) {
      std::string n = str(count);
      w.line("#pragma unroll");
      w.line("for (int i = mi * " + n + " / MI; i < (mi + 1) * " + n + " / MI; ++i) copy_" + name +
             "(kt + STAGES - 1, " + name + "_fill, i);");
    }
    w.close();
  }
  unrolledFor(w, "ni", "NI");
  w.line("const int n = (mi % 2) ? NI - 1 - ni : ni;  // serpentine order reuses B fragments");
  w.line("sketch::mma_m16n8k16<" + c.operandType + ">(acc[mi][n], a_frag[" + buf.str() +
         "][mi], b_frag[" + buf.str() + "][n]);");
  w.close();
  w.close();
}

void emitPrologue(CudaWriter &w, StringRef kTiles) {
  w.comment("prologue: k-tiles 0 .. STAGES - 2, one commit group each");
  unrolledFor(w, "s", "STAGES - 1");
  w.open("if (s < " + kTiles.str() + ")");
  w.line("load_a(s, a_smem + s * A_STAGE_BYTES);");
  w.line("load_b(s, b_smem + s * B_STAGE_BYTES);");
  w.close();
  w.line("sketch::cp_async_commit();");
  w.close();
}

void emitRefill(CudaWriter &w, StringRef kTiles) {
  w.open("if (kt + STAGES - 1 < " + kTiles.str() + ")");
  w.line("load_a(kt + STAGES - 1, a_smem + write_stage * A_STAGE_BYTES);");
  w.line("load_b(kt + STAGES - 1, b_smem + write_stage * B_STAGE_BYTES);");
  w.close();
  w.line("sketch::cp_async_commit();");
}

/// One barrier per k-tile, at its start; fragments in one buffer.
void emitPipelinedLoopSimple(CudaWriter &w, const TensorCoreConfig &c, StringRef kTiles) {
  emitPrologue(w, kTiles);
  w.line("int read_stage = 0, write_stage = STAGES - 1;");
  w.open("for (int kt = 0; kt < " + kTiles.str() + "; ++kt)");
  w.line("sketch::cp_async_wait<STAGES - 2>();  // k-tile kt has landed (this thread's copies)");
  w.line("__syncthreads();                      // ... everyone's; write_stage is free again");
  emitRefill(w, kTiles);
  emitStagePointers(w, "read_stage");
  emitStageMma(w, c);
  w.line("read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;");
  w.line("write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;");
  w.close();
}

/// Fragments double-buffered across k-tiles too: at the last step of a k-tile
/// the warp waits for the next one and loads its first fragments before the
/// last MMAs, so no MMA waits on a fresh ldmatrix after a barrier.
void emitPipelinedLoopOverlapped(CudaWriter &w, const TensorCoreConfig &c, StringRef kTiles) {
  emitPrologue(w, kTiles);
  w.line("sketch::cp_async_wait<STAGES - 2>();  // k-tile 0 has landed");
  w.line("__syncthreads();");
  w.line("int read_stage = 0, write_stage = STAGES - 1;");
  w.line("uint32_t a_stage = a_smem, b_stage = b_smem;");
  w.comment("fragments of step kk + 1 load while step kk multiplies (two register buffers)");
  w.line("uint32_t a_frag[2][MI][4], b_frag[2][NI][2];");
  emitFragmentLoads(w, c, "0", "0");
  w.open("for (int kt = 0; kt < " + kTiles.str() + "; ++kt)");
  unrolledFor(w, "kk", "KI");
  w.open("if (kk == KI - 1)");
  w.line(
      "sketch::cp_async_wait<STAGES - 2>();  // k-tile kt + 1 has landed (this thread's copies)");
  w.line("__syncthreads();                      // ... everyone's; no warp reads stage kt - 1 now");
  w.line("read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;");
  w.line("a_stage = a_smem + read_stage * A_STAGE_BYTES;");
  w.line("b_stage = b_smem + read_stage * B_STAGE_BYTES;");
  w.close();
  if (!c.copiesA) {
    w.open("if (kk == 0)");
    w.comment("refill the stage every warp finished before the last barrier (before the next");
    w.comment("fragments are live: the element path's loads need the registers)");
    emitRefill(w, kTiles);
    w.line("write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;");
    w.close();
    emitInterleavedStep(w, c, "kk % 2", "(kk + 1) % 2", "(kk + 1) % KI");
    w.close();
    w.close();
    return;
  }
  w.comment("refill the stage every warp finished before the last barrier: at step 0, the");
  w.comment("16-byte path's copies spread between the MMAs, the element path's before them");
  w.line("const bool refill = kt + STAGES - 1 < " + kTiles.str() + ";");
  w.line("const uint32_t a_fill = a_smem + write_stage * A_STAGE_BYTES, b_fill = b_smem + "
         "write_stage * B_STAGE_BYTES;");
  w.open("if (!kVec && kk == 0 && refill)");
  w.line("load_a(kt + STAGES - 1, a_fill);");
  w.line("load_b(kt + STAGES - 1, b_fill);");
  w.close();
  emitInterleavedStep(w, c, "kk % 2", "(kk + 1) % 2", "(kk + 1) % KI");
  w.open("if (kk == 0)");
  w.line("sketch::cp_async_commit();");
  w.line("write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;");
  w.close();
  w.close();
  w.close();
}

/// sketch-pipeline plans two fragment buffers only for an even number of k-steps
/// a k-tile, so that the buffers alternate across k-tiles too.
bool overlappedLoop(const TensorCoreConfig &c) {
  return c.stages > 1 && c.fragmentBuffers == 2 && (c.tileK / 16) % 2 == 0;
}

void emitPipelinedLoop(CudaWriter &w, const TensorCoreConfig &c, StringRef kTiles) {
  bool multistage = c.stages > 2;
  w.comment(multistage ? "main loop, multistage pipeline: STAGES - 1 k-tiles in flight as "
                         "cp.async groups"
                       : "main loop, double buffering: the next k-tile is copied while this "
                         "one is multiplied");
  if (overlappedLoop(c))
    emitPipelinedLoopOverlapped(w, c, kTiles);
  else
    emitPipelinedLoopSimple(w, c, kTiles);
}

} // namespace

void emitTensorCoreMainloop(CudaWriter &w, const TensorCoreConfig &c, const TileLoader &a,
                            const TileLoader &b, StringRef kTiles) {
  w.comment("shared memory (sketch-plan-shared-memory): A " + str(c.a.smem.stages) + " x " +
            str(c.a.smem.stageBytes) + " bytes at " + str(c.a.smem.offset) + ", " +
            describeLayout(c.a.smem));
  w.comment("                                           B " + str(c.b.smem.stages) + " x " +
            str(c.b.smem.stageBytes) + " bytes at " + str(c.b.smem.offset) + ", " +
            describeLayout(c.b.smem));
  w.line("constexpr int A_STAGE_BYTES = " + str(c.a.smem.stageBytes) +
         ", B_STAGE_BYTES = " + str(c.b.smem.stageBytes) + ";");
  w.line("const uint32_t a_smem = smem_base + " + str(c.a.smem.offset) + ", b_smem = smem_base + " +
         str(c.b.smem.offset) + ";");
  w.line("float acc[MI][NI][4];");
  unrolledFor(w, "mi", "MI");
  unrolledFor(w, "ni", "NI");
  unrolledFor(w, "e", "4");
  w.line("acc[mi][ni][e] = 0.0f;");
  w.close();
  w.close();
  w.close();
  emitFragmentOffsets(w, c);
  a.emitSetup(w);
  b.emitSetup(w);
  w.line("const int k_tiles = " + kTiles.str() + ";");
  w.open("auto load_a = [&](int kt, uint32_t dst)");
  a.emitLoad(w);
  w.close(";");
  w.open("auto load_b = [&](int kt, uint32_t dst)");
  b.emitLoad(w);
  w.close(";");
  // Spread only refills that the block copy would issue as a rolled loop (over 4
  // copies a thread). Measured on an H100 (mma.sync, sm_90, same runs): spreading
  // 4 + 4 copies between the MMAs was 10-13% slower than one block of them before
  // step 0 (so was one block after step 0's MMAs); spreading 8 a thread (BK = 64,
  // 4 warps) 3-12% faster than the rolled block.
  TensorCoreConfig spread = c;
  if (overlappedLoop(c) && a.copiesPerThread() && b.copiesPerThread() &&
      std::max(a.copiesPerThread(), b.copiesPerThread()) > 4) {
    spread.copiesA = a.copiesPerThread();
    spread.copiesB = b.copiesPerThread();
    w.comment("the same copies one at a time (16-byte path), for refills spread between MMAs");
    w.open("auto copy_a = [&](int kt, uint32_t dst, int i)");
    a.emitCopy(w);
    w.close(";");
    w.open("auto copy_b = [&](int kt, uint32_t dst, int i)");
    b.emitCopy(w);
    w.close(";");
  }
  if (c.stages <= 1)
    emitUnpipelinedLoop(w, spread, "k_tiles");
  else
    emitPipelinedLoop(w, spread, "k_tiles");
}

namespace {

/// Loads of epilogue operands that depend on the column only ([NI][2] per
/// thread), the row only ([MI][2]) or neither (once); full ones load per element.
void emitOperandPreloads(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s) {
  for (const EpilogueOperand &operand : epilogue.operands()) {
    ElementIndex at{"row", "col", s.rows, s.cols, s.batch};
    if (operand.whole())
      continue;
    if (operand.usesCol) {
      w.line("float " + operand.var + "[NI][2];  // " + operand.param->name + ": per column");
      unrolledFor(w, "ni", "NI");
      unrolledFor(w, "j", "2");
      w.line("const int64_t col = " + s.n0 + " + warp_n * WN + ni * 8 + 2 * t + j;");
      w.line(operand.var + "[ni][j] = " + epilogue.loadExpr(operand, at) + ";");
      w.close();
      w.close();
    } else if (operand.usesRow) {
      w.line("float " + operand.var + "[MI][2];  // " + operand.param->name + ": per row");
      unrolledFor(w, "mi", "MI");
      unrolledFor(w, "h", "2");
      w.line("const int64_t row = " + s.m0 + " + warp_m * WM + mi * 16 + g + h * 8;");
      w.line(operand.var + "[mi][h] = " + epilogue.loadExpr(operand, at) + ";");
      w.close();
      w.close();
    } else {
      w.line("const float " + operand.var + " = " + epilogue.loadExpr(operand, at) + ";  // " +
             operand.param->name + ": per block");
    }
  }
}

std::string operandValue(const EpilogueEmitter &epilogue, const EpilogueOperand &operand,
                         const StoreSpec &s) {
  if (operand.whole() && s.wholeInRegisters) {
    std::string pair = "sketch::unpack2<" + cTypeOf(operand.param->type) + ">(pre_" +
                       operand.var + "[mi][ni][h])";
    return "(j == 0 ? " + pair + ".x : " + pair + ".y)";
  }
  if (operand.whole())
    return epilogue.loadExpr(operand, ElementIndex{"row", "col", s.rows, s.cols, s.batch});
  if (operand.usesCol)
    return operand.var + "[ni][j]";
  if (operand.usesRow)
    return operand.var + "[mi][h]";
  return operand.var;
}

} // namespace

namespace {

/// The guarded 16-byte (else element) store of `chunk` / `vals[e]` at (row, col).
void emitChunkStore(CudaWriter &w, const StoreSpec &s, int64_t perChunk, StringRef chunk,
                    StringRef element) {
  w.line(s.outType + " *dst = " + s.dst + " + row * " + paren(s.ld) + " + col;");
  w.open("if (" + s.storeVec + " && col + " + str(perChunk) + " <= " + s.cols + ")");
  w.line("sketch::st_global_128(dst, " + chunk.str() + ");");
  w.close();
  w.open("else");
  unrolledFor(w, "e", str(perChunk));
  w.line("if (col + e < " + s.cols + ") dst[e] = " + element.str() + ";");
  w.close();
  w.close();
}

/// The output tile as 16-byte chunks of the staging buffer, THREADS at a time.
struct OutputChunks {
  int64_t perChunk, chunksPerRow, chunks, iterations;
  /// The tile row of staged row r: "r", or "pass * PASS_ROWS + r" in a pass of a multi-pass store.
  std::string tileRow = "r";
  OutputChunks(const StoreSpec &s, const TensorCoreConfig &c)
      : perChunk(16 / s.outBytes), chunksPerRow(s.staging.cols / perChunk),
        chunks(s.staging.rows * chunksPerRow), iterations((chunks + c.threads() - 1) / c.threads()) {}
  bool guarded(const TensorCoreConfig &c) const { return chunks % c.threads() != 0; }

  /// Opens the loop over this thread's chunks (`unrolled` or rolled) with
  /// `r`, `c` (tile row and column of the chunk) and `row` declared and the
  /// row in the matrix; close with closeLoop.
  void openLoop(CudaWriter &w, const TensorCoreConfig &tc, const StoreSpec &s, bool unrolled) const {
    if (unrolled) {
      unrolledFor(w, "i", str(iterations));
    } else {
      w.line("#pragma unroll 1");
      w.open("for (int i = 0; i < " + str(iterations) + "; ++i)");
    }
    w.line("const int idx = tid + i * THREADS;");
    if (guarded(tc))
      w.open("if (idx < " + str(chunks) + ")");
    w.line("const int r = idx / " + str(chunksPerRow) + ", c = idx % " + str(chunksPerRow) + " * " +
           str(perChunk) + ";");
    w.line("const int64_t row = " + s.m0 + " + " + tileRow + ";");
    w.open("if (row < " + s.rows + ")");
  }
  void closeLoop(CudaWriter &w, const TensorCoreConfig &tc) const {
    w.close();
    if (guarded(tc))
      w.close();
    w.close();
  }
};

/// Before the threads that store write the shared staging tile: the pipeline and the
/// last tile's store are done with it.
void emitStagingBarrier(CudaWriter &w, const StoreSpec &s) {
  w.line(s.barrier + "  // the pipeline buffers (or the last tile's staging) become the staging tile");
}

/// The start of both epilogues: the pipeline drained, its buffers free for staging (and,
/// where the block's tile is stored by TMA, the previous tile's stores done reading it;
/// warpgroups with their own slots wait for their own stores instead, emitWarpgroupTmaStore).
void emitEpilogueStart(CudaWriter &w, const StoreSpec &s) {
  w.line("sketch::cp_async_wait_all();");
  if (!s.storesByWarpgroup()) {
    if (s.storesByTma())
      emitTmaStoreDrain(w, s.storeVec, false, "the last tile's stores have read the staging tile");
    emitStagingBarrier(w, s);
  }
  w.line("const int g = lane / 4, t = lane % 4;  // accumulator rows g, g + 8; columns 2t, 2t + 1");
}

/// Opens the loops over a thread's fragments: mi, ni (or nb: NI_COUNT of them from
/// NI_FIRST) and h.
void openFragmentLoops(CudaWriter &w, StringRef niFirst, int64_t niCount) {
  unrolledFor(w, "mi", "MI");
  if (niFirst.empty()) {
    unrolledFor(w, "ni", "NI");
  } else {
    unrolledFor(w, "nb", str(niCount));
    w.line("const int ni = " + niFirst.str() + " + nb;");
  }
  unrolledFor(w, "h", "2");
}

/// Closes what openFragmentLoops opened.
void closeFragmentLoops(CudaWriter &w) {
  w.close();
  w.close();
  w.close();
}

/// r and c: a fragment pair's tile row (less the pass's first row in passes) and column.
std::string fragmentIndexLine(bool passes) {
  return "const int r = warp_m * WM + mi * 16 + g + h * 8" +
         std::string(passes ? " - pass * PASS_ROWS" : "") + ", c = warp_n * WN + ni * 8 + 2 * t;";
}

/// Inside openFragmentLoops: the statements on accumulator elements 2 h and 2 h + 1 into
/// `out[2]` (declared here, with r and c for the stage line), or `inPlace` into the
/// accumulators themselves (r and c only where whole tensors are read by element).
void emitElementStatements(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s,
                           StringRef tileRow, bool passes, bool inPlace) {
  // elements indexed by (row, col): whole tensors not already loaded into registers
  bool wholeReads = epilogue.readsFullTensor() && !s.wholeInRegisters;
  if (!inPlace || wholeReads)
    w.line(fragmentIndexLine(passes));
  if (wholeReads)
    w.line("const int64_t row = " + s.m0 + " + " + tileRow.str() + ";");
  if (!inPlace)
    w.line("float out[2];");
  unrolledFor(w, "j", "2");
  if (wholeReads)
    w.line("const int64_t col = " + s.n0 + " + c + j;");
  epilogue.emitElement(
      w, "acc[mi][ni][2 * h + j]",
      [&](const EpilogueOperand &operand) { return operandValue(epilogue, operand, s); },
      inPlace ? "acc[mi][ni][2 * h + j]" : "out[j]");
  w.close();
}

/// The register epilogue's loop over a thread's fragments: the statements on each
/// accumulator pair into `out[2]`, then `stage` (a line of r, c and out) writes the pair
/// to the staging tile. In passes, only the warps whose rows are in pass `pass` (an `if`
/// left open for the caller); with `applied`, the accumulators already hold the
/// statements' values (applyEpilogueInPlace).
void emitFragmentEpilogue(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s,
                          StringRef tileRow, StringRef stage, StringRef niFirst = "",
                          int64_t niCount = 0, bool applied = false) {
  bool passes = s.rowPasses > 1;
  if (passes)
    w.open("if (warp_m * WM / PASS_ROWS == pass)");
  openFragmentLoops(w, niFirst, niCount);
  if (applied) {
    w.line(fragmentIndexLine(passes));
    w.line("const float out[2] = {acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]};");
  } else {
    emitElementStatements(w, epilogue, s, tileRow, passes, /*inPlace=*/false);
  }
  w.line(stage.str());
  closeFragmentLoops(w);
}

/// The statements on every accumulator, in place, before the staging loop
/// (appliesEpilogueFirst): the passes' rolled loop keeps the accumulators live across both
/// passes, and a function applied inside it (GELU over 128 accumulators) spilled 156 bytes
/// in the 168 registers of the persistent kernel's element path; applied once before it,
/// nothing.
void applyEpilogueInPlace(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s) {
  w.comment("the statements on the accumulators in place, before they are staged");
  openFragmentLoops(w, "", 0);
  emitElementStatements(w, epilogue, s, "r", /*passes=*/false, /*inPlace=*/true);
  closeFragmentLoops(w);
}

/// The line that stages a fragment's pair `out[0]`, `out[1]` at the element pointer `at`
/// in the output type (one 8-byte f32 store, or one packed 4-byte store).
std::string stagePair(const StoreSpec &s, StringRef at) {
  if (s.outBytes == 4)
    return "*reinterpret_cast<float2 *>(" + at.str() + ") = make_float2(out[0], out[1]);";
  return "*reinterpret_cast<uint32_t *>(" + at.str() + ") = sketch::pack2<" + s.outType +
         ">(out[0], out[1]);";
}

/// Opens the loop over the staging passes (where there are several), each starting once
/// the previous one is stored (`waitStored`: what the storing thread waits for first).
void openPasses(CudaWriter &w, const StoreSpec &s, StringRef waitStored = "") {
  if (s.rowPasses == 1)
    return;
  w.line("constexpr int PASS_ROWS = BM / " + str(s.rowPasses) + ";  // the staging tile's rows");
  w.comment("in " + str(s.rowPasses) + " passes of PASS_ROWS rows: the warps whose rows are in the "
            "pass stage them, then they are stored");
  w.line("#pragma unroll 1");
  w.open("for (int pass = 0; pass < " + str(s.rowPasses) + "; ++pass)");
  if (waitStored.empty()) {
    w.line("if (pass > 0) " + s.barrier + "  // the previous pass is stored");
    return;
  }
  w.open("if (pass > 0)");
  w.line(waitStored.str());
  w.line(s.barrier + "  // the previous pass is read");
  w.close();
}

/// One box's TMA store from shared memory: `to` is "source, column, row" (C++ expressions;
/// "source, column" with StoreSpec::tmaTileCoords).
void emitTmaStoreCall(CudaWriter &w, const StoreSpec &s, const std::string &to) {
  if (!s.tmaTileCoords.empty())
    w.line("sketch::tma_store_4d(&" + s.tmaMap + ", " + to + ", " + s.tmaTileCoords + ");");
  else if (s.tmaBatch.empty())
    w.line("sketch::tma_store_2d(&" + s.tmaMap + ", " + to + ");");
  else
    w.line("sketch::tma_store_3d(&" + s.tmaMap + ", " + to + ", " + s.tmaBatch + ");");
}

/// The 16-byte path's store by TMA of the block's tile (StoreSpec::storesByTma, no
/// tmaSlots): each pass staged densely in 128B-swizzled boxes of 128 bytes by its rows,
/// fenced for the copy engine, then thread 0 stores the boxes (the copy engine skips what
/// lies past the matrix) and goes on; the next pass (or tile) waits until they have read
/// the staging tile.
void emitBlockTmaStore(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s) {
  const plan::StagingBuffer &st = s.staging;
  int64_t boxCols = 128 / s.outBytes, boxes = st.cols / boxCols;
  bool passes = s.rowPasses > 1;
  std::string rows = str(st.rows);
  w.comment("the tile stored by TMA: staged in " + str(boxes) + " boxes of " + rows + " rows x " +
            str(boxCols) + " columns (128-byte rows, 128B-swizzled), then one thread stores them");
  w.line("const uint32_t staged_smem = " + s.tmaStaging + ";  // 1024-byte aligned");
  w.line(s.outType + " *staged = reinterpret_cast<" + s.outType +
         " *>(smem + (staged_smem - sketch::smem_addr(smem)));");
  openPasses(w, s, "if (tid == 0) sketch::tma_store_wait_read();");
  std::string at = "staged + sketch::Swizzle128<" + rows + ", " + s.outType + ">::offset(r, c)";
  emitFragmentEpilogue(w, epilogue, s, passes ? "pass * PASS_ROWS + r" : "r", stagePair(s, at));
  w.line("sketch::fence_async_shared();  // the staged tile, visible to the copy engine");
  if (passes)
    w.close();
  w.line(s.barrier);
  w.open("if (tid == 0)");
  unrolledFor(w, "b", str(boxes));
  std::string row = "(int)" + s.m0 + (passes ? " + pass * PASS_ROWS" : "");
  std::string to = "staged_smem + b * " + str(st.rows * 128) + ", (int)" + s.n0 + " + b * " + str(boxCols);
  if (s.tmaTileCoords.empty())
    to += ", " + row;
  emitTmaStoreCall(w, s, to);
  w.close();
  w.line("sketch::tma_store_commit();");
  w.close();
  if (passes)
    w.close();
}

/// The 16-byte path's store by TMA with StoreSpec::tmaSlots: each consumer warpgroup
/// stages its 64 rows a 128-byte box at a time in its own slots (128B-swizzled), fences
/// them for the copy engine, and its first thread stores the box and goes on; a slot is
/// written again once its last store has read it. Only the warpgroup's own barrier
/// orders these steps, so one warpgroup's epilogue runs beside the other's next tile.
void emitWarpgroupTmaStore(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s) {
  int64_t boxCols = 128 / s.outBytes, boxes = s.staging.cols / boxCols, slots = s.tmaSlots;
  int64_t slotBytes = kTmaStoreBoxRows * 128;
  std::string rows = str(kTmaStoreBoxRows);
  w.comment("the tile stored by TMA: each warpgroup stages its " + rows + " rows in " + str(boxes) +
            " boxes of " + str(boxCols) + " columns (128-byte rows, 128B-swizzled), one at a time");
  w.comment("in its own " + str(slots) + " slot(s), and its first thread stores each box");
  w.line("const uint32_t staged_smem = " + s.tmaStaging + " + wg * " + str(slots * slotBytes) +
         ";  // this warpgroup's slots, 1024-byte aligned");
  w.line(s.outType + " *staged = reinterpret_cast<" + s.outType +
         " *>(smem + (staged_smem - sketch::smem_addr(smem)));");
  w.line("const bool wg_leader = tid % 128 == 0;");
  unrolledFor(w, "b", str(boxes));
  std::string wait = "sketch::tma_store_wait_read<" + str(slots - 1) + ">();";
  if (boxes % slots != 0)  // the previous tile's last box may lie in box 0's slot
    wait = "b == 0 ? sketch::tma_store_wait_read<0>() : " + wait;
  w.line("if (wg_leader) " + wait + "  // box b's slot has been read");
  w.line("sketch::named_barrier_sync(2 + wg, 128);");
  StoreSpec boxSpec = s;
  boxSpec.rowPasses = 1;
  // box b's slot from the first, in `unit`s (none with one slot)
  auto slotOffset = [&](int64_t unit) {
    return slots == 1 ? std::string() : " + (b % " + str(slots) + ") * " + str(unit);
  };
  std::string at = "staged" + slotOffset(slotBytes / s.outBytes) + " + sketch::Swizzle128<" + rows + ", " + s.outType + ">::offset(r - wg * " + rows +
                   ", c - b * " + str(boxCols) + ")";
  emitFragmentEpilogue(w, epilogue, boxSpec, "r", stagePair(s, at), "b * " + str(boxCols / 8),
                       boxCols / 8);
  w.line("sketch::fence_async_shared();  // the staged box, visible to the copy engine");
  w.line("sketch::named_barrier_sync(2 + wg, 128);");
  w.open("if (wg_leader)");
  std::string to = "staged_smem" + slotOffset(slotBytes) + ", (int)" + s.n0 +
                   " + b * " + str(boxCols) + ", (int)" + s.m0 + " + wg * " + rows;
  emitTmaStoreCall(w, s, to);
  w.line("sketch::tma_store_commit();");
  w.close();
  w.close();
}

/// Whether the statements run on every accumulator in place before the staging loop
/// (applyEpilogueInPlace) rather than inside it: in passes (above), and where functions
/// crowd the accumulators (functionsCrowdAccumulators; applied first, nothing spilled).
bool appliesEpilogueFirst(const TensorCoreConfig &c, const EpilogueEmitter &epilogue,
                          const StoreSpec &s) {
  return s.rowPasses > 1 || functionsCrowdAccumulators(epilogue, c.tileM * c.tileN / c.threads());
}

/// The staged tile's coalesced 16-byte stores (element stores at the edges).
void emitChunkedStore(CudaWriter &w, const TensorCoreConfig &c, const EpilogueEmitter &epilogue,
                      const StoreSpec &s) {
  const plan::StagingBuffer &st = s.staging;
  OutputChunks out(s, c);
  bool passes = s.rowPasses > 1, applied = appliesEpilogueFirst(c, epilogue, s);
  if (passes)
    out.tileRow = "pass * PASS_ROWS + r";
  w.line("constexpr int LD = " + str(st.ld) + ";  // staging row, padded against bank conflicts");
  w.line(s.outType + " *staged = reinterpret_cast<" + s.outType + " *>(smem + " + str(st.offset) +
         ");");
  if (applied)
    applyEpilogueInPlace(w, epilogue, s);
  openPasses(w, s);
  emitFragmentEpilogue(w, epilogue, s, out.tileRow, stagePair(s, "staged + r * LD + c"), "", 0,
                       applied);
  if (passes)
    w.close();
  w.line(s.barrier);
  w.comment("coalesced store: " + str(out.chunks) + " chunks of 16 bytes, guarded at the edges");
  out.openLoop(w, c, s, /*unrolled=*/!passes);
  w.line("const int64_t col = " + s.n0 + " + c;");
  emitChunkStore(w, s, out.perChunk, "*reinterpret_cast<const uint4 *>(staged + r * LD + c)",
                 "staged[r * LD + c + e]");
  out.closeLoop(w, c);
  if (passes)
    w.close();
}

/// Epilogue on the fragments, result staged in the output type, then stored.
void emitRegisterEpilogue(CudaWriter &w, const TensorCoreConfig &c, const EpilogueEmitter &epilogue,
                          const StoreSpec &s) {
  w.comment("epilogue (sketch-fuse-epilogue): on the accumulators in registers, then one store");
  w.comment("through shared memory");
  emitEpilogueStart(w, s);
  emitOperandPreloads(w, epilogue, s);
  if (!s.storesByTma()) {
    emitChunkedStore(w, c, epilogue, s);
    return;
  }
  w.open("if constexpr (" + s.storeVec + ")");
  if (s.storesByWarpgroup())
    emitWarpgroupTmaStore(w, epilogue, s);
  else
    emitBlockTmaStore(w, epilogue, s);
  w.close();
  w.open("else");
  if (s.storesByWarpgroup()) // emitEpilogueStart left the staging barrier to this path
    emitStagingBarrier(w, s);
  emitChunkedStore(w, c, epilogue, s);
  w.close();
}

/// The f32 accumulators into the shared tile `tile` (LD floats a row), each thread its fragments.
void emitStageF32Accumulators(CudaWriter &w, StringRef tile) {
  unrolledFor(w, "mi", "MI");
  unrolledFor(w, "ni", "NI");
  unrolledFor(w, "h", "2");
  w.line("const int r = warp_m * WM + mi * 16 + g + h * 8, c = warp_n * WN + ni * 8 + 2 * t;");
  w.line("*reinterpret_cast<float2 *>(" + tile.str() +
         " + r * LD + c) = make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);");
  w.close();
  w.close();
  w.close();
}

/// The epilogue on the `perChunk` f32 values of one output chunk at tile row r, column c
/// (element e being `value`, an expression of e), then the chunk's guarded store.
void emitChunkEpilogue(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s,
                       int64_t perChunk, StringRef value) {
  w.line("float vals[" + str(perChunk) + "];");
  unrolledFor(w, "e", str(perChunk));
  if (llvm::any_of(epilogue.operands(), [](const EpilogueOperand &o) { return o.usesCol; }))
    w.line("const int64_t col = " + s.n0 + " + c + e;");
  ElementIndex at{"row", "col", s.rows, s.cols, s.batch};
  epilogue.emitElement(
      w, value, [&](const EpilogueOperand &operand) { return epilogue.loadExpr(operand, at); },
      "vals[e]");
  w.close();
  std::string words;
  for (int64_t i = 0; i < 4; ++i) {
    std::string word = s.outBytes == 4 ? "__float_as_uint(vals[" + str(i) + "])"
                                       : "sketch::pack2<" + s.outType + ">(vals[" + str(2 * i) +
                                             "], vals[" + str(2 * i + 1) + "])";
    words += (i ? ", " : "") + word;
  }
  w.line("const int64_t col = " + s.n0 + " + c;");
  emitChunkStore(w, s, perChunk, "make_uint4(" + words + ")",
                 "sketch::from_float<" + s.outType + ">(vals[e])");
}

/// The f32 accumulators staged first; the epilogue then runs on row-major
/// chunks of the output, so full-tensor operands load coalesced.
void emitStagedEpilogue(CudaWriter &w, const TensorCoreConfig &c, const EpilogueEmitter &epilogue,
                        const StoreSpec &s) {
  const plan::StagingBuffer &st = s.staging;
  OutputChunks out(s, c);
  int64_t perChunk = out.perChunk;

  w.comment("epilogue (sketch-fuse-epilogue, staged): the f32 accumulators go through shared");
  w.comment("memory; the statements run on row-major chunks (coalesced operand loads), then one");
  w.comment("store");
  emitEpilogueStart(w, s);
  w.line("constexpr int LD = " + str(st.ld) + ";  // staging row, padded against bank conflicts");
  w.line("float *staged = reinterpret_cast<float *>(smem + " + str(st.offset) + ");");
  emitStageF32Accumulators(w, "staged");
  w.line(s.barrier);
  w.comment(str(out.chunks) + " output chunks of 16 bytes, guarded at the edges");
  out.openLoop(w, c, s, /*unrolled=*/false);
  emitChunkEpilogue(w, epilogue, s, perChunk, "staged[r * LD + c + e]");
  out.closeLoop(w, c);
}

/// The block barrier before the split-K reduction stages its partial tile over the
/// pipeline buffers (emitSplitReduceStore and emitSplitReduceBarriers).
constexpr const char *kPartialBarrier = "__syncthreads();";

} // namespace

namespace {

/// Accumulator registers a fragment one term's words take: a 16-bit per-column operand 1,
/// a 16-bit full one 2 (rows g and g + 8); 0 for element loads.
int64_t wordsOf(const EpilogueOperand &operand) {
  if (plan::elementBytes(operand.param->type) != 2 || !operand.usesCol)
    return 0;
  return operand.usesRow ? 2 : 1;
}

} // namespace

FoldedEpilogue::FoldedEpilogue(const EpilogueEmitter &epilogue, bool fold) : whole(&epilogue) {
  int64_t slots = 0;
  while (fold) {
    auto next = rest().splitStart();
    if (!next)
      break;
    int64_t words = wordsOf(next->first.operand);
    if (!terms.empty() && (words == 0 || terms.front().words == 0 || slots + words > 4))
      break;
    terms.push_back({next->first, words, slots});
    after = std::move(next->second);  // next holds no reference into the emitter it replaces
    slots += words;
    fold = words > 0;
  }
}

std::string FoldedEpilogue::describe() const {
  if (terms.empty())
    return "";
  std::string names;
  for (const Term &term : terms)
    names += (names.empty() ? "" : " + ") + term.start.operand.param->name;
  return "the accumulators start from " + names + " (the epilogue's first " +
         (terms.size() > 1 ? "terms" : "statement") + "), not from zero";
}

void FoldedEpilogue::emitStart(CudaWriter &w, const StoreSpec &s,
                               llvm::function_ref<void()> zero) const {
  if (terms.empty()) {
    zero();
    return;
  }
  for (const Term &term : terms)
    w.comment("the accumulators start from " + term.start.operand.param->name + " (" +
              term.start.statement + ", the epilogue's first statement), not from zero");
  w.line("{");
  w.indentMore();
  ElementIndex at{"row", "col", s.rows, s.cols, s.batch};
  if (terms.front().words == 0) {
    emitElementStart(w, terms.front(), at, s);
  } else {
    w.comment("each thread's words (two 16-bit elements: columns 2t, 2t + 1) load straight into");
    w.comment("its accumulators, all in flight at once, then widen to f32 in place");
    bool rows = llvm::any_of(terms, [](const Term &term) { return term.words == 2; });
    w.line(std::string(rows ? "const int g = lane / 4, t = lane % 4;" : "const int t = lane % 4;"));
    w.line("const int64_t col = " + s.n0 + " + warp_n * WN + 2 * t;  // this thread's first pair");
    for (const Term &term : terms)
      emitWordLoads(w, term, at, s);
    emitWiden(w);
  }
  w.close();
}

void FoldedEpilogue::emitElementStart(CudaWriter &w, const Term &term, const ElementIndex &at,
                                      const StoreSpec &s) const {
  const EpilogueOperand &operand = term.start.operand;
  if (operand.usesRow)
    w.line("const int g = lane / 4;  // fragment rows g, g + 8");
  if (operand.usesCol)
    w.line("const int t = lane % 4;  // fragment columns 2t, 2t + 1");
  unrolledFor(w, "mi", "MI");
  unrolledFor(w, "ni", "NI");
  unrolledFor(w, "e", "4");
  if (operand.usesRow)
    w.line("const int64_t row = " + s.m0 + " + warp_m * WM + mi * 16 + g + e / 2 * 8;");
  if (operand.usesCol)
    w.line("const int64_t col = " + s.n0 + " + warp_n * WN + ni * 8 + 2 * t + e % 2;");
  std::string factor = term.start.factor.empty() ? "" : term.start.factor + " * ";
  w.line("acc[mi][ni][e] = " + factor + whole->loadExpr(operand, at) + ";");
  w.close();
  w.close();
  w.close();
}

/// A thread's words of a 16-bit operand at `src` (its first pair at column `col`) for
/// ni = 0 .. NI - 1, 8 columns apart: `store` (a line of `word`, its bits as uint32_t)
/// for each. One aligned word load each where the row is `inside` and the words lie in
/// the matrix, else pairs guarded element by element (zero outside, rows not `rowInside`).
void emitFragmentWords(CudaWriter &w, const ElementIndex &at, StringRef inside,
                       StringRef rowInside, llvm::function_ref<std::string(StringRef)> store) {
  w.open("if (" + inside.str() + "col + 8 * (NI - 1) + 1 < " + at.cols +
         " && sketch::aligned_words(src))");
  unrolledFor(w, "ni", "NI");
  w.line(store("sketch::load_word(src + ni * 8)"));
  w.close();
  w.close();
  w.open("else");
  unrolledFor(w, "ni", "NI");
  std::string word = "sketch::load_pair_bits(src + ni * 8, col + ni * 8, " + at.cols + ")";
  if (!rowInside.empty())
    word = rowInside.str() + " ? " + word + " : 0u";
  w.line(store(word));
  w.close();
  w.close();
}

/// The source line of a thread's words of `operand` at `at` (EpilogueEmitter's offset).
std::string wordSource(const EpilogueEmitter &epilogue, const EpilogueOperand &operand,
                       const ElementIndex &at) {
  return "const " + cTypeOf(operand.param->type) + " *src = " + operand.param->cname + " + " +
         epilogue.elementOffset(operand, at) + ";";
}

void FoldedEpilogue::emitWordLoads(CudaWriter &w, const Term &term, const ElementIndex &at,
                                   const StoreSpec &s) const {
  const EpilogueOperand &operand = term.start.operand;
  std::string src = wordSource(*whole, operand, at);
  auto into = [](std::string slot) {
    return [slot](StringRef word) {
      return "acc[mi][ni][" + slot + "] = __uint_as_float(" + word.str() + ");";
    };
  };
  unrolledFor(w, "mi", "MI");
  if (term.words == 1) {
    w.comment(operand.param->name + ": a word a column pair, into acc[mi][ni][" +
              str(term.slot) + "]");
    w.line(src);
    emitFragmentWords(w, at, "", "", into(str(term.slot)));
  } else {
    w.comment(operand.param->name + ": a word a column pair of rows g and g + 8, into acc[mi][ni][" +
              str(term.slot) + " + h]");
    unrolledFor(w, "h", "2");
    w.line("const int64_t row = " + s.m0 + " + warp_m * WM + mi * 16 + g + h * 8;");
    w.line(src);
    emitFragmentWords(w, at, "row < " + at.rows + " && ", "row < " + at.rows,
                      into(str(term.slot) + " + h"));
    w.close();
  }
  w.close();
}

bool functionsCrowdAccumulators(const EpilogueEmitter &epilogue, int64_t accumulatorsPerThread,
                                int64_t calls) {
  constexpr int64_t kFunctionAccumulators = 128;
  return epilogue.functionCalls() >= calls && accumulatorsPerThread >= kFunctionAccumulators;
}

bool wholeOperandsAreWords(const EpilogueEmitter &epilogue) {
  return llvm::all_of(epilogue.operands(), [](const EpilogueOperand &o) {
    return !o.whole() || plan::elementBytes(o.param->type) == 2;
  });
}

int64_t epilogueOperandRegisters(const EpilogueEmitter &epilogue, int64_t accumulatorsPerThread) {
  int64_t registers = 0;
  for (const EpilogueOperand &operand : epilogue.operands())
    registers += operand.usesCol ? accumulatorsPerThread / 2 : operand.usesRow ? 2 : 1;
  return registers;
}

void emitWholeOperandPreloads(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s) {
  w.comment("the epilogue's whole [M, N] operands: each thread's words (columns 2t, 2t + 1 of its");
  w.comment("rows g, g + 8) loaded now, in flight through the main loop");
  for (const EpilogueOperand &operand : epilogue.operands())
    if (operand.whole())
      w.line("uint32_t pre_" + operand.var + "[MI][NI][2];  // " + operand.param->name);
  w.line("{");
  w.indentMore();
  w.line("const int g = lane / 4, t = lane % 4;");
  w.line("const int64_t col = " + s.n0 + " + warp_n * WN + 2 * t;  // this thread's first pair");
  ElementIndex at{"row", "col", s.rows, s.cols, s.batch};
  for (const EpilogueOperand &operand : epilogue.operands()) {
    if (!operand.whole())
      continue;
    unrolledFor(w, "mi", "MI");
    unrolledFor(w, "h", "2");
    w.line("const int64_t row = " + s.m0 + " + warp_m * WM + mi * 16 + g + h * 8;");
    w.line(wordSource(epilogue, operand, at));
    std::string var = "pre_" + operand.var;
    emitFragmentWords(w, at, "row < " + at.rows + " && ", "row < " + at.rows,
                      [&](StringRef word) { return var + "[mi][ni][h] = " + word.str() + ";"; });
    w.close();
    w.close();
  }
  w.indentLess();
  w.line("}");
}

void FoldedEpilogue::emitWiden(CudaWriter &w) const {
  unrolledFor(w, "mi", "MI");
  unrolledFor(w, "ni", "NI");
  std::vector<std::string> sums(4);
  llvm::StringMap<int> seen; // an operand folded twice (Bias D, bias twice) names its second _t1
  for (const Term &term : terms) {
    const EpilogueOperand &operand = term.start.operand;
    std::string type = cTypeOf(operand.param->type);
    std::string factor = term.start.factor.empty() ? "" : term.start.factor + " * ";
    int repeat = seen[operand.var]++;
    std::string var = operand.var + (repeat ? "_t" + std::to_string(repeat) : "");
    for (int64_t h = 0; h < term.words; ++h) {
      std::string name = var + (term.words == 1 ? "" : "_" + str(h));
      w.line("const float2 " + name + " = sketch::unpack2<" + type +
             ">(__float_as_uint(acc[mi][ni][" + str(term.slot + h) + "]));");
    }
    for (int64_t e = 0; e < 4; ++e) {
      std::string name = var + (term.words == 1 ? "" : "_" + str(e / 2));
      std::string value = factor + name + (e % 2 ? ".y" : ".x");
      sums[e] += (sums[e].empty() ? "" : " + ") + value;
    }
  }
  for (int64_t e = 0; e < 4; ++e)
    w.line("acc[mi][ni][" + str(e) + "] = " + sums[e] + ";");
  w.close();
  w.close();
}

bool denseStagingFits(const plan::StagingBuffer &padded, int64_t outBytes) {
  return (outBytes == 2 || outBytes == 4) && padded.cols * outBytes % 128 == 0 &&
         padded.rows % 8 == 0 && padded.rows <= 256 &&
         padded.rows * padded.cols * outBytes <= padded.rows * padded.ld * padded.elementBytes;
}

int64_t tmaStoreSlots(const plan::StagingBuffer &padded, int64_t outBytes, int64_t warpgroups) {
  if ((outBytes != 2 && outBytes != 4) || padded.cols * outBytes % 128 != 0)
    return 0;
  int64_t boxes = padded.cols * outBytes / 128;
  int64_t room = padded.rows * padded.ld * padded.elementBytes;
  for (int64_t slots : {2, 1})
    if (slots <= boxes && warpgroups * slots * kTmaStoreBoxRows * 128 <= room)
      return slots;
  return 0;
}

void emitTmaStoreDrain(CudaWriter &w, StringRef storeVec, bool warpgroupSlots, StringRef why) {
  std::string storer = warpgroupSlots ? "tid % 128 == 0" : "tid == 0";
  w.line("if (" + storeVec.str() + " && " + storer + ") sketch::tma_store_wait_read();  // " + why.str());
}

void emitRegisterEpilogueByTma(CudaWriter &w, const EpilogueEmitter &epilogue, const StoreSpec &s) {
  w.comment("epilogue (sketch-fuse-epilogue): on the accumulators in registers, then one store");
  w.comment("by TMA through shared memory");
  emitEpilogueStart(w, s);
  emitOperandPreloads(w, epilogue, s);
  emitBlockTmaStore(w, epilogue, s);
}

void emitAccumulatorStore(CudaWriter &w, const TensorCoreConfig &c, const EpilogueEmitter &epilogue,
                          const StoreSpec &s) {
  if (s.stagedEpilogue)
    emitStagedEpilogue(w, c, epilogue, s);
  else
    emitRegisterEpilogue(w, c, epilogue, s);
}

SplitSlices clusterSlices() {
  return SplitSlices{"slices", "slice", "0", "sketch::cluster_shared_addr(sketch::smem_addr(smem), q)",
                     "sketch::ld_cluster_128", "sketch::cluster_sync();", true};
}

void emitSplitReduceBarriers(CudaWriter &w, const SplitSlices &slices) {
  w.comment("the split-K reduction's barriers, without a share of its work");
  w.line(kPartialBarrier);
  w.line(slices.barrier);
  if (slices.otherBlocks)
    w.line(slices.barrier);
}

void emitSplitReduceStore(CudaWriter &w, const TensorCoreConfig &c, const EpilogueEmitter &epilogue,
                          const StoreSpec &s, const SplitSlices &slices) {
  OutputChunks out(s, c);
  int64_t perChunk = out.perChunk;
  std::string n = slices.count, q = slices.slice;
  w.comment("split-K (docs/backend.md): each K slice stages its f32 partial tile in its shared");
  w.comment("memory; slice `" + q + "` then sums its share of the tile's output chunks over slices");
  w.comment("0, 1, ... in that order (the same bits every run), applies the epilogue and stores them");
  w.line("sketch::cp_async_wait_all();");
  w.line(std::string(kPartialBarrier) + "  // the pipeline buffers become the partial tile");
  w.line("const int g = lane / 4, t = lane % 4;  // accumulator rows g, g + 8; columns 2t, 2t + 1");
  w.line("constexpr int LD = " + str(s.staging.ld) + ";  // partial tile row, padded against bank conflicts");
  w.line("float *partial = reinterpret_cast<float *>(smem + " + slices.partialOffset + ");");
  emitStageF32Accumulators(w, "partial");
  w.line(slices.barrier + "  // every slice's partial tile is complete");
  w.line("auto slice_tile = [&](int q) { return " + slices.sliceTile +
         "; };  // slice q's partial tile");
  w.line("const int rows_in = (int)min(" + s.rows + " - " + s.m0 +
         ", (int64_t)BM);  // tile rows inside the output");
  w.line("const int chunks = rows_in * " + str(out.chunksPerRow) + ", chunk_end = (" + q +
         " + 1) * chunks / " + n + ";");
  w.comment("this slice's chunks: " + q + " * chunks / " + n + " .. chunk_end - 1, row-major");
  w.line("#pragma unroll 1");
  w.open("for (int idx = " + q + " * chunks / " + n + " + tid; idx < chunk_end; idx += THREADS)");
  w.line("const int r = idx / " + str(out.chunksPerRow) + ", c = idx % " + str(out.chunksPerRow) +
         " * " + str(perChunk) + ";");
  w.line("const int64_t row = " + s.m0 + " + r;");
  w.line("const uint32_t at = (r * LD + c) * 4;");
  std::string quads = str(perChunk / 4);
  w.line("float sum[" + str(perChunk) + "] = {};");
  w.open("for (int q = 0; q < " + n + "; ++q)");
  unrolledFor(w, "j", quads);
  w.line("sketch::add_f32x4(sum + 4 * j, " + slices.load + "(slice_tile(q) + at + 16 * j));");
  w.close();
  w.close();
  emitChunkEpilogue(w, epilogue, s, perChunk, "sum[e]");
  w.close();
  if (slices.otherBlocks)
    w.line(slices.barrier + "  // no block leaves while another reads its partial tile");
}

} // namespace sketch
