//===- Printer.cpp - the sketch dialect back to sketch syntax -------------===//
//
// Prints each kernel in the canonical spelling of the language contract:
// a header with its parameters, the directives that are set, then one line
// per statement with four spaces of indentation per block level. The output
// parses back to the same ops, and printing that again gives the same bytes.
//
//===----------------------------------------------------------------------===//
#include "lib/Frontend/Printer.h"

#include "dialect/SketchDialect.h"
#include "lib/Passes/BackendPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <string>

using namespace mlir;
using namespace sketch;

namespace {

/// Headers longer than this many columns are broken after a parameter.
constexpr size_t kHeaderWidth = 110;

/// Binding strength of an expression; operands that bind more loosely than
/// their context need parentheses.
enum class Precedence { additive = 1, multiplicative = 2, unary = 3, primary = 4 };

/// A printed subexpression and how tightly it binds.
struct PrintedExpr {
  std::string text;
  Precedence precedence;
};

/// `(A, B, C)`-style lists of dimension strings, without the brackets.
std::string joinStrings(ArrayAttr items) {
  std::string text;
  for (auto [index, item] : llvm::enumerate(items)) {
    if (index)
      text += ", ";
    text += cast<StringAttr>(item).getValue().str();
  }
  return text;
}

std::string joinIntegers(ArrayRef<int64_t> values) {
  std::string text;
  for (auto [index, value] : llvm::enumerate(values)) {
    if (index)
      text += ", ";
    text += std::to_string(value);
  }
  return text;
}

std::string parenthesize(const PrintedExpr &expr, bool needed) {
  return needed ? "(" + expr.text + ")" : expr.text;
}

StringRef spellBinary(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::add:
    return "+";
  case BinaryKind::sub:
    return "-";
  case BinaryKind::mul:
    return "*";
  case BinaryKind::div:
    return "/";
  }
  return "?";
}

Precedence precedenceOf(BinaryKind kind) {
  bool additive = kind == BinaryKind::add || kind == BinaryKind::sub;
  return additive ? Precedence::additive : Precedence::multiplicative;
}

/// Prints the expression computing `value` with the fewest parentheses that
/// keep its tree: operators are left-associative, so a right operand of the
/// same strength is parenthesized (`a - (b - c)`, `a + (b + c)`).
PrintedExpr printExpr(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto ref = dyn_cast_or_null<RefOp>(def))
    return {ref.getName().str(), Precedence::primary};
  if (auto constant = dyn_cast_or_null<ConstantOp>(def)) {
    StringRef spelling = constant.getSpelling();
    bool signedLiteral = spelling.starts_with("-") || spelling.starts_with("+");
    return {spelling.str(), signedLiteral ? Precedence::unary : Precedence::primary};
  }
  if (auto negate = dyn_cast_or_null<NegateOp>(def)) {
    PrintedExpr operand = printExpr(negate.getOperand());
    // `-(-x)` rather than `--x`: a doubled sign reads as a typo.
    return {"-" + parenthesize(operand, operand.precedence <= Precedence::unary),
            Precedence::unary};
  }
  if (auto binary = dyn_cast_or_null<BinaryOp>(def)) {
    Precedence own = precedenceOf(binary.getKind());
    PrintedExpr lhs = printExpr(binary.getLhs());
    PrintedExpr rhs = printExpr(binary.getRhs());
    return {parenthesize(lhs, lhs.precedence < own) + " " +
                spellBinary(binary.getKind()).str() + " " +
                parenthesize(rhs, rhs.precedence <= own),
            own};
  }
  if (auto call = dyn_cast_or_null<CallOp>(def)) {
    std::string text = stringifyCallKind(call.getCallee()).str() + "(";
    for (auto [index, arg] : llvm::enumerate(call.getArgs())) {
      if (index)
        text += ", ";
      text += printExpr(arg).text;
    }
    return {text + ")", Precedence::primary};
  }
  // Only hand-written IR gets here (a block argument or a foreign op).
  return {"<invalid>", Precedence::primary};
}

class SketchPrinter {
public:
  explicit SketchPrinter(raw_ostream &os) : os(os) {}

  void printModule(ModuleOp module) {
    bool first = true;
    for (auto kernel : module.getOps<KernelOp>()) {
      if (!first)
        os << "\n";
      first = false;
      printKernel(kernel);
    }
  }

private:
  std::optional<std::string> winogradFilter; // of the kernel being printed, run as Winograd
  plan::WinogradBlock winograd;              // its block

  void printKernel(KernelOp kernel) {
    winogradFilter.reset();
    if (std::optional<Conv2dOp> conv = plan::winogradConv(kernel)) {
      winogradFilter = conv->getFilter().str();
      winograd = plan::winogradBlockOf(*conv);
    }
    printHeader(kernel);
    printDirectives(kernel);
    for (Operation &op : kernel.getBodyBlock())
      if (!isa<TensorParamOp, ScalarParamOp>(op))
        printStatement(op, 1);
  }

  static std::string spellParam(Operation &op) {
    if (auto tensor = dyn_cast<TensorParamOp>(op)) {
      std::string text = tensor.getName().str() + ": " +
                         spellElementType(tensor.getElementType()).str() + "[" +
                         joinStrings(tensor.getDims()) + "]";
      if (auto layout = tensor.getLayout())
        text += " " + stringifyLayout(*layout).str();
      return text;
    }
    auto scalar = cast<ScalarParamOp>(op);
    return scalar.getName().str() + ": " + stringifyScalarKind(scalar.getScalarType()).str();
  }

  /// `kernel NAME(P, ...):` on one line when it fits; otherwise see wrapParams.
  void printHeader(KernelOp kernel) {
    std::string opening = "kernel " + kernel.getSymName().str() + "(";
    SmallVector<std::string> params;
    SmallVector<bool> isScalar;
    for (Operation &op : kernel.getBodyBlock()) {
      if (!isa<TensorParamOp, ScalarParamOp>(op))
        continue;
      params.push_back(spellParam(op));
      isScalar.push_back(isa<ScalarParamOp>(op));
    }
    std::string oneLine = opening + llvm::join(params, ", ") + "):";
    if (oneLine.size() <= kHeaderWidth)
      os << oneLine << "\n";
    else
      os << wrapParams(opening, params, isScalar);
  }

  /// Continuation lines align after `(` and are filled up to the width; when
  /// all tensors come before all scalars, the scalars start a line of their own.
  static std::string wrapParams(const std::string &opening, ArrayRef<std::string> params,
                                ArrayRef<bool> isScalar) {
    size_t tensorCount = llvm::find(isScalar, true) - isScalar.begin();
    bool scalarsTrail =
        tensorCount > 0 && size_t(llvm::count(isScalar, true)) == params.size() - tensorCount;
    size_t scalarLine = scalarsTrail ? tensorCount : params.size();

    std::string text;
    std::string line = opening;
    for (auto [index, param] : llvm::enumerate(params)) {
      bool last = index + 1 == params.size();
      std::string piece = param + (last ? "):" : ",");
      bool lineEmpty = line.size() == opening.size();
      if (!lineEmpty && (index == scalarLine || line.size() + 1 + piece.size() > kHeaderWidth)) {
        text += line + "\n";
        line = std::string(opening.size(), ' ');
        lineEmpty = true;
      }
      line += (lineEmpty ? "" : " ") + piece;
    }
    return text + line + "\n";
  }

  void printDirectives(KernelOp kernel) {
    SmallVector<std::string> tiles;
    if (auto m = kernel.getTileM())
      tiles.push_back("BM = " + std::to_string(*m));
    if (auto n = kernel.getTileN())
      tiles.push_back("BN = " + std::to_string(*n));
    if (auto k = kernel.getTileK())
      tiles.push_back("BK = " + std::to_string(*k));
    if (!tiles.empty())
      indent(1) << "tile " << llvm::join(tiles, ", ") << "\n";
    if (auto warps = kernel.getWarps())
      indent(1) << "warps " << *warps << "\n";
    if (auto stages = kernel.getStages())
      indent(1) << "stages " << *stages << "\n";
    if (auto algorithm = kernel.getAlgorithm())
      indent(1) << "algorithm " << *algorithm << "\n";
    if (auto split = kernel.getSplitK()) {
      indent(1) << "split_k " << *split << "\n";
      std::optional<plan::SplitPlan> plan = plan::splitPlanFrom(kernel->getAttr(plan::kSplitAttr));
      bool planned = kernel->hasAttr(plan::kSmemBytesAttr); // with the backend plan's comments
      if (plan && planned)
        for (const std::string &line : describeSplit(*split, *plan, narrowKernel(kernel, *plan)))
          indent(1) << "# " << line << "\n";
      else if (planned && *split != "1") // an f32 GEMM's (a tensor-core GEMM's has a plan)
        for (const std::string &line : wrapComment(describeSimtSplit(kernel, *split)))
          indent(1) << "# " << line << "\n";
    }
    if (auto bytes = kernel->getAttrOfType<IntegerAttr>(plan::kSmemBytesAttr)) {
      auto [hopperBytes, hopperForm] = describeHopperKernel(kernel);
      indent(1) << "# shared memory: " << (hopperBytes ? hopperBytes : bytes.getInt())
                << " bytes a block\n";
      if (hopperBytes)
        for (const std::string &line :
             wrapComment(hopperForm + ". The notes on the statements are the mma.sync plan of "
                                      "these tiles (" + std::to_string(bytes.getInt()) +
                         " bytes of shared memory)"))
          indent(1) << "# " << line << "\n";
    }
    if (auto grid = describeF64Grid(kernel, plan::kF64MmaAttr);
        grid && kernel->hasAttr(plan::kSmemBytesAttr))
      for (const std::string &line :
           wrapComment("on the f64 tensor cores: " + *grid +
                       " of m16n8k4 f64 MMAs (exact products, f64 sums, one rounding)"))
        indent(1) << "# " << line << "\n";
    if (kernel->hasAttr(plan::kKeySplitsAttr) && kernel->hasAttr(plan::kSmemBytesAttr)) {
      indent(1) << "# key splits (sm_90a): with fewer row tiles than SMs, the host shares each\n";
      indent(1) << "#   row tile's key tiles among 2, 4 or 8 blocks of a cluster (all resident\n";
      indent(1) << "#   at once, 4 key tiles a block or more), which sum their rows in rank order\n";
      if (kernel->hasAttr(plan::kShortGridRowsAttr))
        indent(1) << "#   (a grid whose 64-row kernel splits the keys as many ways takes that kernel)\n";
    }
    auto narrow = plan::variantTile(kernel, plan::kNarrowVariantAttr, 4);
    if (narrow && kernel->hasAttr(plan::kSmemBytesAttr)) {
      const SmallVector<int64_t, 4> &v = *narrow;
      indent(1) << "# K <= " << v[1] << " output channels: the host launches tile BM = " << v[0]
                << ", BN = " << v[1] << ", BK = " << v[2] << ", warps " << v[3] << "\n";
      if (auto grid = describeF64Grid(kernel, plan::kNarrowF64MmaAttr))
        for (const std::string &line : wrapComment("(on the f64 tensor cores: " + *grid + ")"))
          indent(1) << "#   " << line << "\n";
    }
    auto tall = plan::variantTile(kernel, plan::kTallVariantAttr, 2);
    if (tall && kernel->hasAttr(plan::kSmemBytesAttr)) {
      indent(1) << "# where tiles of " << (*tall)[0] << " x " << (*tall)[1]
                << " move fewer operand rows an SM (TMA path): the host launches those\n";
    }
  }


  /// The split form and, for `split_k auto`, the host function's rule (plan::SplitRule),
  /// as comment lines of at most 90 columns.
  /// Whether the host function also has the split tile as a kernel of its own.
  static bool narrowKernel(KernelOp kernel, const plan::SplitPlan &split) {
    auto tileM = kernel.getTileM(), tileN = kernel.getTileN(), stages = kernel.getStages();
    return tileM && tileN && stages &&
           plan::hasNarrowKernel(split, int64_t(*tileM), int64_t(*tileN), int64_t(*stages));
  }

  /// `split_k N`, or `auto` with the split tile's own split form (plan::SplitRule).
  static std::string describeSplitForm(StringRef directive, const plan::SplitPlan &split,
                                       bool narrow) {
    using Rule = plan::SplitRule;
    auto n = [](int64_t value) { return std::to_string(value); };
    std::string where = split.cluster ? "the blocks of a cluster"
                                      : "warp groups of one block, " + n(split.warps) + " warps each";
    std::string count = split.slices ? n(split.slices) + " slices (" + where + ")"
                                     : "S slices (" + where + "), S = min(" + n(Rule::autoSlices(split.stages)) +
                                           ", " + n(Rule::sliceFillNum) + "/" + n(Rule::sliceFillDen) +
                                           " of the SMs / its tiles, k-tiles / " + n(Rule::minKTiles) +
                                           ") and at least 1";
    std::string text = "split_k " + directive.str() + ": ";
    if (split.beside)
      text += "the host function runs the tile above when its grid covers " + n(Rule::fillNum) +
              "/" + n(Rule::fillDen) + " of the SMs, else the split form: tile " + n(split.tileM) +
              " x " + n(split.tileN) + " x " + n(split.tileK) + ", " + n(split.stages) + " stages, ";
    text += "K split over " + count +
            "; the slices' f32 partial tiles summed in slice order, then the epilogue and one store";
    if (narrow)
      text += "; where S is 1, and for M up to " + n(Rule::narrowRows) +
              " rows, the split tile runs as a kernel of its own (no slices, no reduction)";
    return text;
  }

  /// The f64 tensor cores' warp grid the attribute `name` (plan::kF64MmaAttr,
  /// kNarrowF64MmaAttr) holds: "warps 1 x 2", a convolution's along its pixels and channels.
  static std::optional<std::string> describeF64Grid(KernelOp kernel, StringRef name) {
    auto grid = plan::variantTile(kernel, name, 2);
    if (!grid)
      return std::nullopt;
    bool conv = false;
    kernel.walk([&](Conv2dOp) { conv = true; });
    return "warps " + std::to_string((*grid)[0]) + (conv ? " along the pixels" : "") + " x " +
           std::to_string((*grid)[1]) + (conv ? " along the output channels" : "");
  }

  /// An f32 GEMM's split over a cluster (plan::kSimtSplitAttr; none: no clusters).
  static std::string describeSimtSplit(KernelOp kernel, StringRef directive) {
    auto tile = kernel->getAttrOfType<DenseI64ArrayAttr>(plan::kSimtSplitAttr);
    std::string text = "split_k " + directive.str() + ": ";
    if (!tile || tile.size() != 2)
      return text + "no thread-block clusters on this architecture: one slice";
    auto n = [](int64_t value) { return std::to_string(value); };
    std::string sums = "; the cluster's first block adds the others' f32 accumulators in "
                       "order, then the epilogue and one store";
    if (directive != "auto")
      return text + "K split over the " + directive.str() + " blocks of a cluster" + sums;
    std::string splitTile = n(tile[0]) + " x " + n(tile[1]);
    bool own = kernel.getTileM() && kernel.getTileN() && int64_t(*kernel.getTileM()) == tile[0] &&
               int64_t(*kernel.getTileN()) == tile[1];
    text += own ? "where the grid is under 3/4 of the blocks resident at once, the tile above"
                : "the host function runs the tile above when its grid covers 3/4 of its blocks "
                  "resident at once, else a " + splitTile + " tile";
    return text + " with K split over S blocks of a cluster, S = min(8, the resident blocks / " +
           "its tiles, k-tiles / 4) and at least 1" + sums;
  }

  /// `split_k auto` with the split forms over all the SMs (EmitGemm.h SplitForm::fillForms).
  static std::string describeFillForms(const plan::SplitPlan &split) {
    using Rule = plan::SplitRule;
    auto n = [](int64_t value) { return std::to_string(value); };
    auto tile = [&](int64_t m, int64_t tn, int64_t stages) {
      return n(m) + " x " + n(tn) + " (" + n(stages) + " stages)";
    };
    std::string text = "split_k auto: the host function runs the tile above when its grid covers " +
                       n(Rule::fillNum) + "/" + n(Rule::fillDen) + " of the SMs; else a split form "
                       "over all the SMs where it takes S = min(" +
                       n(Rule::autoSlices(split.tallStages)) + ", the SMs / its tiles, k-tiles / " +
                       n(Rule::minKTiles) + ") >= 2 slices (the blocks of a cluster; the slices' f32 "
                       "partial tiles summed in slice order, then the epilogue and one store): "
                       "tiles of " +
                       tile(Rule::squareTile.tileM, Rule::squareTile.tileN, split.squareStages) +
                       " for M up to " + n(Rule::narrowRows) + " rows, and up to " +
                       n(Rule::squareBlocksRows) + " where their blocks (tiles x S) outnumber those of " +
                       tile(Rule::tallTile.tileM, Rule::tallTile.tileN, split.tallStages) +
                       ", which serve the rest; else, without slices, of tiles " +
                       tile(split.tileM, split.tileN, split.stages);
    for (const plan::SplitPlan::WaveTile &wave : split.waveTiles)
      text += ", " + tile(wave.tileM, wave.tileN, wave.stages) +
              (wave.tileM == Rule::tallWaveRows ? " where M is over " + n(wave.tileM) : "");
    text += ": the one whose waves move the fewest operand rows, ceil(tiles / SMs) x (BM + BN), "
            "ties keeping the first listed; for M up to " + n(Rule::narrowRows) +
            " rows where the grid covers the SMs, the first (" + n(split.tileM) + " x " +
            n(split.tileN) + "); over " + n(Rule::narrowRows) + " rows, the tile above or, "
            "where persistent with a split tail, one of these of its height or of " +
            n(Rule::tallWaveRows) + " rows whose rounds cost under " + n(Rule::persistentNum) +
            "/" + n(Rule::persistentDen) + " of its own (sketch::persistent_cost)";
    return text;
  }

  static SmallVector<std::string> describeSplit(StringRef directive, const plan::SplitPlan &split,
                                                bool narrow) {
    return wrapComment(narrow && split.fillForms() ? describeFillForms(split)
                                                   : describeSplitForm(directive, split, narrow));
  }

  /// The shared memory and form of the sm_90a kernel that runs `kernel` where it is not the
  /// statements' mma.sync plan (kHopperAttentionAttr, kHopperGemmAttr); 0 bytes elsewhere.
  static std::pair<int64_t, std::string> describeHopperKernel(KernelOp kernel) {
    if (auto bytes = kernel->getAttrOfType<IntegerAttr>(plan::kHopperAttentionAttr))
      // a kernel without key splits has statements on the scores that read tensors
      return {bytes.getInt(),
              describeHopperAttention(kernel, !kernel->hasAttr(plan::kKeySplitsAttr))};
    auto gemm = kernel->getAttrOfType<ArrayAttr>(plan::kHopperGemmAttr);
    if (!gemm || gemm.size() != 3)
      return {0, ""};
    std::string memory = cast<StringAttr>(gemm[1]).str();
    return {cast<IntegerAttr>(gemm[2]).getInt(), "sm_90a kernel: " +
                                                   cast<StringAttr>(gemm[0]).str() +
                                                   (memory.empty() ? "" : "; " + memory)};
  }

  /// The sm_90a attention kernel (kHopperAttentionAttr); `scoreTensors`: statements on the
  /// scores read tensors, which it may stage.
  static std::string describeHopperAttention(KernelOp kernel, bool scoreTensors) {
    int64_t rows = kernel.getTileM().value_or(0), stages = kernel.getStages().value_or(0);
    std::string text =
        "sm_90a kernel: a producer warpgroup copies the tiles by TMA (panels of 64 columns, "
        "128-byte swizzle; " + std::to_string(stages) + " stages of the keys and values "
        "behind mbarriers) and " +
        (rows / 64 == 1 ? std::string("one consumer warpgroup of 64 rows runs")
                        : std::to_string(rows / 64) + " consumer warpgroups of 64 rows run") +
        " both GEMMs on wgmma with the softmax between them";
    if (scoreTensors)
      text += "; a tensor on the scores it stages adds a BM x BN tile a stage";
    if (kernel->hasAttr(plan::kTwoBlocksPerSmAttr))
      text += "; two blocks an SM (each within half the shared memory and registers), one's "
              "loads, first scores and store overlapping the other's key loop";
    return text;
  }

  /// `text` in comment lines of at most 84 columns, continuations indented.
  static SmallVector<std::string> wrapComment(StringRef text) {
    SmallVector<std::string> lines(1);
    for (StringRef word : llvm::split(text, ' ')) {
      if (!lines.back().empty() && lines.back().size() + 1 + word.size() > 84)
        lines.push_back("  ");
      lines.back() += (lines.back().empty() || lines.back() == "  " ? "" : " ") + word.str();
    }
    return lines;
  }

  raw_ostream &indent(unsigned depth) {
    for (unsigned i = 0; i < depth; ++i)
      os << "    ";
    return os;
  }

  void printStatement(Operation &op, unsigned depth) {
    if (auto loop = dyn_cast<ForOp>(op)) {
      indent(depth) << "for " << loop.getVar() << " in " << loop.getLower() << ":"
                    << loop.getUpper() << ":" << (winogradFilter ? winogradNote(op) : planNote(op))
                    << "\n";
      for (Operation &inner : loop.getBodyBlock())
        printStatement(inner, depth + 1);
      return;
    }
    indent(depth) << spellStatement(op) << (winogradFilter ? winogradNote(op) : planNote(op))
                  << "\n";
  }

  /// planNote for a kernel whose convolution runs as Winograd F(m x m, 3x3)
  /// (sketch/winograd.cuh): its loop, copies and store instead of the implicit GEMM's.
  std::string winogradNote(Operation &op) const {
    std::string step = std::to_string(winograd.depth);
    std::string comps = std::to_string(winograd.components());
    std::string side = std::to_string(winograd.alpha());
    if (op.hasAttr(plan::kPipelineAttr))
      return "  # Winograd: " + step +
             " input channels a step, cp.async into raw buffers one step ahead";
    if (auto copy = dyn_cast<CopyOp>(op); copy && copy.getSource() == MemorySpace::global &&
                                          copy.getDestination() == MemorySpace::shared)
      return copy.getName() == *winogradFilter
                 ? "  # 3x3 filters transformed (G g G^T) into shared U[2][" + comps + "][" +
                       step + "][" + std::to_string(winograd.channels) + "]"
                 : "  # " + side + "x" + side + " patches transformed (B^T d B) into shared V[2][" +
                       comps + "][" + step + "][" + std::to_string(winograd.tiles) + "]";
    if (auto fused = op.getAttrOfType<IntegerAttr>(plan::kEpilogueAttr)) {
      int64_t n = fused.getInt();
      return "  # output transform (A^T m A) in registers" +
             (n ? ", then " + std::to_string(n) + " fused statement" + (n == 1 ? "" : "s") : "") +
             ", guarded stores";
    }
    return planNote(op);
  }

  /// What the backend planning passes (sketch-fuse-epilogue, sketch-pipelining,
  /// sketch-plan-shared-memory) decided for `op`, as a trailing comment; empty
  /// where they did not run or left `op` alone.
  static std::string planNote(Operation &op) {
    std::string note;
    if (auto pipeline = op.getAttrOfType<StringAttr>(plan::kPipelineAttr))
      note = spellPipeline(pipeline.getValue(), op.getAttrOfType<IntegerAttr>(plan::kStagesAttr));
    if (std::optional<plan::SmemBuffer> buffer = plan::smemBufferFrom(op.getAttr(plan::kSmemAttr)))
      note = spellSharedBuffer(*buffer, op.hasAttr(plan::kAsyncAttr));
    if (auto buffers = op.getAttrOfType<IntegerAttr>(plan::kFragmentBuffersAttr))
      note = std::to_string(buffers.getInt()) + " register fragment buffer" +
             (buffers.getInt() == 1 ? "" : "s");
    if (op.hasAttr(plan::kFusedAttr))
      note = "fused into the store";
    if (auto fused = op.getAttrOfType<IntegerAttr>(plan::kEpilogueAttr))
      note = spellEpilogue(op, fused.getInt());
    if (auto algorithm = op.getAttrOfType<StringAttr>(plan::kConvAlgorithmAttr))
      note = plan::winogradOutputTile(algorithm.getValue()) ? winogradChoice(cast<Conv2dOp>(op))
                                                            : "implicit GEMM";
    return note.empty() ? note : "  # " + note;
  }

  static std::string winogradChoice(Conv2dOp conv) {
    plan::WinogradBlock b = plan::winogradBlockOf(conv);
    std::string m = std::to_string(b.m);
    return "Winograd F(" + m + "x" + m + ", 3x3): " + std::to_string(b.components()) +
           " component GEMMs, blocks of " + std::to_string(b.tiles) + " " + m + "x" + m +
           " tiles x " + std::to_string(b.channels) + " channels, " + std::to_string(b.depth) +
           " input channels a step";
  }

  static std::string spellPipeline(StringRef kind, IntegerAttr stages) {
    std::string count = stages ? std::to_string(stages.getInt()) : "?";
    if (kind == "multistage")
      return "pipelined: " + count + " shared-memory stages, cp.async groups";
    if (kind == "double_buffer")
      return "double-buffered: 2 shared-memory stages";
    return "not pipelined: 1 shared-memory stage";
  }

  static std::string spellSharedBuffer(const plan::SmemBuffer &buffer, bool async) {
    std::string text = "shared " + std::to_string(buffer.stages) + " x " +
                       std::to_string(buffer.rows) + "x" + std::to_string(buffer.cols) + " at +" +
                       std::to_string(buffer.offset) + ", ";
    if (buffer.layout == "k_major")
      text += "k-major f32, ";
    text += buffer.layout == "xor" ? "XOR-swizzled 16-byte chunks"
                                   : "rows padded to " + std::to_string(buffer.rowBytes) + " bytes";
    return text + (async ? ", cp.async" : "");
  }

  static std::string spellEpilogue(Operation &op, int64_t fused) {
    std::string text = fused == 0 ? std::string("no epilogue")
                                  : std::to_string(fused) + " statement" + (fused == 1 ? "" : "s") +
                                        " fused before this store";
    if (auto mode = op.getAttrOfType<StringAttr>(plan::kEpilogueModeAttr); mode && fused)
      text += mode.getValue() == "staged" ? ", on f32 tiles staged in shared memory"
                                          : ", in registers";
    if (std::optional<plan::StagingBuffer> staging = plan::stagingBufferFrom(op.getAttr(plan::kStagingAttr)))
      text += ", stored through a " + std::to_string(staging->rows) + "x" +
              std::to_string(staging->cols) + " shared tile";
    return text;
  }

  static std::string spellStatement(Operation &op) {
    if (auto alloc = dyn_cast<AllocateOp>(op))
      return spellAllocate(alloc);
    if (auto copy = dyn_cast<CopyOp>(op))
      return spellCopy(copy);
    if (auto gemm = dyn_cast<GemmOp>(op))
      return spellGemm(gemm);
    if (auto conv = dyn_cast<Conv2dOp>(op))
      return spellConv2d(conv);
    if (auto softmax = dyn_cast<SoftmaxOp>(op))
      return "Compute Softmax " + softmax.getName().str();
    if (auto mask = dyn_cast<MaskOp>(op))
      return "Compute Mask " + mask.getName().str() + " causal";
    if (auto ew = dyn_cast<ElementwiseOp>(op))
      return spellElementwise(ew);
    if (auto assign = dyn_cast<AssignOp>(op))
      return spellAssign(assign);
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      std::string text = "Reshape " + reshape.getName().str() + " from (" +
                         joinStrings(reshape.getFrom()) + ") to (" +
                         joinStrings(reshape.getTo()) + ")";
      // Where a back-to-back GEMM keeps it (sketch-choose-b2b-residency).
      if (auto where = reshape->getAttrOfType<StringAttr>("sketch.b2b_residency"))
        text += "  # " + reshape.getName().str() +
                (where.getValue() == "register" ? " kept in registers"
                                                : " staged in shared memory");
      // The sm_90a wgmma form beside it (ChooseB2bResidency.h).
      if (auto form = reshape->getAttrOfType<StringAttr>("sketch.b2b_wgmma"))
        text += "; sm_90a " + form.getValue().str();
      // How a batched one runs its batch (ChooseB2bResidency.h).
      if (auto batch = reshape->getAttrOfType<StringAttr>("sketch.b2b_batch"))
        text += "; " + batch.getValue().str();
      return text;
    }
    // Ops this printer does not know (added by a later stage) stay visible.
    return "# " + op.getName().getStringRef().str();
  }

  static std::string spellAllocate(AllocateOp alloc) {
    std::string text = "Allocate " + alloc.getName().str() + " in " +
                       spellSpace(alloc.getSpace()).str() + " (" + joinStrings(alloc.getDims()) +
                       ")";
    if (auto offset = alloc.getOffset())
      text += " with offset " + offset->str();
    return text;
  }

  static std::string spellCopy(CopyOp copy) {
    std::string text = "Copy " + copy.getName().str();
    if (auto tile = copy.getTile())
      text += " (" + joinStrings(*tile) + ")";
    if (auto coordinate = copy.getCoordinate())
      text += " in coordinate [L = " + coordinate->str() + "]";
    return text + " from " + spellSpace(copy.getSource()).str() + " to " +
           spellSpace(copy.getDestination()).str();
  }

  static std::string spellGemm(GemmOp gemm) {
    return "Compute GEMM " + gemm.getLhs().str() + (gemm.getLhsTransposed() ? "^T" : "") + ", " +
           gemm.getRhs().str() + (gemm.getRhsTransposed() ? "^T" : "") +
           (gemm.getAccumulate() ? " and accumulate " : " and get ") + gemm.getResult().str();
  }

  static std::string spellConv2d(Conv2dOp conv) {
    std::string text = "Compute Conv2d " + conv.getInput().str() + ", " + conv.getFilter().str() +
                       (conv.getAccumulate() ? " and accumulate " : " and get ") +
                       conv.getResult().str() + " with stride (" + joinIntegers(conv.getStride()) +
                       ") pad (" + joinIntegers(conv.getPad()) + ")";
    ArrayRef<int64_t> dilation = conv.getDilation();
    if (!llvm::all_of(dilation, [](int64_t d) { return d == 1; }))
      text += " dilation (" + joinIntegers(dilation) + ")";
    return text;
  }

  static std::string spellElementwise(ElementwiseOp ew) {
    std::string text =
        "Compute " + stringifyElementwiseKind(ew.getKind()).str() + " " + ew.getTarget().str();
    for (Attribute operand : ew.getOperands())
      text += ", " + cast<StringAttr>(operand).getValue().str();
    return text;
  }

  static std::string spellAssign(AssignOp assign) {
    Block &block = assign.getExpression().front();
    auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
    std::string value = yield ? printExpr(yield.getValue()).text : "<invalid>";
    return "Compute " + assign.getTarget().str() + " = " + value;
  }

  raw_ostream &os;
};

} // namespace

std::string sketch::printExpression(Value value) { return printExpr(value).text; }

void sketch::printSketch(ModuleOp module, raw_ostream &os) {
  SketchPrinter(os).printModule(module);
}
