//===- SketchAnalysis.cpp - shapes, tiles and roles of sketch names --------===//
#include "lib/Passes/SketchAnalysis.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <algorithm>
#include <cstdint>

using namespace mlir;
using namespace sketch;

//===----------------------------------------------------------------------===//
// Size expressions
//===----------------------------------------------------------------------===//

static bool isIdentStart(char c) { return llvm::isAlpha(c) || c == '_'; }
static bool isIdentChar(char c) { return llvm::isAlnum(c) || c == '_'; }

std::string sketch::normalizeExpr(StringRef expr) {
  std::string out;
  for (char c : expr)
    if (!llvm::isSpace(c))
      out.push_back(c);
  return out;
}

bool sketch::isIntegerLiteral(StringRef expr) {
  std::string text = normalizeExpr(expr);
  return !text.empty() && llvm::all_of(text, llvm::isDigit);
}

namespace {
/// Recursive-descent evaluation of + - * / ( ) over integers and known symbols.
class Evaluator {
public:
  Evaluator(StringRef text, const llvm::StringMap<int64_t> &env) : text(text), env(env) {}

  std::optional<int64_t> run() {
    auto value = sum();
    if (!value || pos != text.size())
      return std::nullopt;
    return value;
  }

private:
  std::optional<int64_t> sum() {
    auto value = product();
    while (value && pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      char op = text[pos++];
      auto rhs = product();
      if (!rhs)
        return std::nullopt;
      // An overflowing sum has no value (signed overflow is undefined).
      value = op == '+' ? llvm::checkedAdd(*value, *rhs) : llvm::checkedSub(*value, *rhs);
    }
    return value;
  }

  std::optional<int64_t> product() {
    auto value = atom();
    while (value && pos < text.size() && (text[pos] == '*' || text[pos] == '/')) {
      char op = text[pos++];
      auto rhs = atom();
      if (!rhs || (op == '/' && (*rhs == 0 || (*rhs == -1 && *value == INT64_MIN))))
        return std::nullopt;
      value = op == '*' ? llvm::checkedMul(*value, *rhs) : std::optional(*value / *rhs);
    }
    return value;
  }

  std::optional<int64_t> atom() {
    if (pos >= text.size())
      return std::nullopt;
    char c = text[pos];
    if (c == '-') {
      ++pos;
      auto value = atom();
      if (!value || *value == INT64_MIN)
        return std::nullopt;
      return -*value;
    }
    if (c == '(') {
      ++pos;
      auto value = sum();
      if (!value || pos >= text.size() || text[pos] != ')')
        return std::nullopt;
      ++pos;
      return value;
    }
    size_t start = pos;
    if (llvm::isDigit(c)) {
      while (pos < text.size() && llvm::isDigit(text[pos]))
        ++pos;
      int64_t value;
      if (text.substr(start, pos - start).getAsInteger(10, value))
        return std::nullopt;
      return value;
    }
    if (!isIdentStart(c))
      return std::nullopt;
    while (pos < text.size() && isIdentChar(text[pos]))
      ++pos;
    auto it = env.find(text.substr(start, pos - start));
    if (it == env.end())
      return std::nullopt;
    return it->second;
  }

  StringRef text;
  const llvm::StringMap<int64_t> &env;
  size_t pos = 0;
};
} // namespace

std::optional<int64_t> sketch::evaluateExpr(StringRef expr, const llvm::StringMap<int64_t> &env) {
  std::string text = normalizeExpr(expr);
  return Evaluator(text, env).run();
}

/// Calls `onIdent` for each identifier and `onOther` for each other character.
static void scanExpr(StringRef expr, llvm::function_ref<void(StringRef)> onIdent,
                     llvm::function_ref<void(char)> onOther) {
  for (size_t i = 0; i < expr.size();) {
    if (!isIdentStart(expr[i]) || (i > 0 && llvm::isDigit(expr[i - 1]))) {
      onOther(expr[i++]);
      continue;
    }
    size_t start = i;
    while (i < expr.size() && isIdentChar(expr[i]))
      ++i;
    onIdent(expr.substr(start, i - start));
  }
}

SmallVector<std::string> sketch::exprSymbols(StringRef expr) {
  SmallVector<std::string> symbols;
  scanExpr(
      expr, [&](StringRef ident) { symbols.push_back(ident.str()); }, [](char) {});
  return symbols;
}

std::string sketch::substituteSymbols(StringRef expr, const llvm::StringMap<std::string> &values) {
  std::string out;
  scanExpr(
      expr,
      [&](StringRef ident) {
        auto it = values.find(ident);
        out += it == values.end() ? ident.str() : it->second;
      },
      [&](char c) { out.push_back(c); });
  return out;
}

/// The factors of a pure product ("C*R*S"), sorted, with its literal factors
/// folded into one leading number; empty when `expr` is not a product.
static SmallVector<std::string> productFactors(StringRef expr) {
  SmallVector<std::string> factors;
  std::string text = normalizeExpr(expr);
  if (text.empty() || text.find_first_of("+-/()") != std::string::npos)
    return factors;
  SmallVector<StringRef> parts;
  StringRef(text).split(parts, '*');
  int64_t number = 1;
  for (StringRef part : parts) {
    int64_t value;
    if (part.getAsInteger(10, value)) {
      factors.push_back(part.str());
      continue;
    }
    std::optional<int64_t> product = llvm::checkedMul(number, value);
    if (!product)
      return {}; // too large to compare by its factors
    number = *product;
  }
  llvm::sort(factors);
  factors.insert(factors.begin(), std::to_string(number));
  return factors;
}

bool sketch::sameExtent(StringRef a, StringRef b) {
  if (normalizeExpr(a) == normalizeExpr(b))
    return true;
  auto va = evaluateExpr(a), vb = evaluateExpr(b);
  if (va && vb)
    return *va == *vb;
  auto fa = productFactors(a), fb = productFactors(b);
  return !fa.empty() && fa == fb;
}

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

static void collectStatements(Block &block, SmallVectorImpl<Operation *> &out) {
  for (Operation &op : block) {
    out.push_back(&op);
    if (auto loop = dyn_cast<ForOp>(op))
      collectStatements(loop.getBodyBlock(), out);
  }
}

SmallVector<Operation *> sketch::statementsInOrder(KernelOp kernel) {
  SmallVector<Operation *> out;
  collectStatements(kernel.getBodyBlock(), out);
  return out;
}

/// The statements strictly before `user` in program order (all when null).
static SmallVector<Operation *> statementsBefore(KernelOp kernel, Operation *user) {
  SmallVector<Operation *> all = statementsInOrder(kernel);
  auto end = llvm::find(all, user);
  return SmallVector<Operation *>(all.begin(), end);
}

TensorParamOp sketch::findTensorParam(KernelOp kernel, StringRef name) {
  return dyn_cast_or_null<TensorParamOp>(kernel.lookupTensorParam(name));
}

SmallVector<ForOp> sketch::enclosingLoops(Operation *op) {
  SmallVector<ForOp> loops;
  for (Operation *parent = op->getParentOp(); parent && !isa<KernelOp>(parent);
       parent = parent->getParentOp())
    if (auto loop = dyn_cast<ForOp>(parent))
      loops.push_back(loop);
  return loops;
}

std::string sketch::loopExtent(ForOp loop) {
  std::string lower = normalizeExpr(loop.getLower());
  std::string upper = normalizeExpr(loop.getUpper());
  if (lower == "0")
    return upper;
  return upper + "-(" + lower + ")";
}

//===----------------------------------------------------------------------===//
// GEMM view
//===----------------------------------------------------------------------===//

static std::string dimAt(TensorParamOp param, unsigned index) {
  return cast<StringAttr>(param.getDims()[index]).str();
}

Conv2dOp sketch::producingConv(KernelOp kernel, StringRef name, Operation *user) {
  Conv2dOp found;
  for (Operation *op : statementsInOrder(kernel)) {
    if (op == user)
      break;
    if (auto conv = dyn_cast<Conv2dOp>(op); conv && conv.getResult() == name)
      found = conv;
  }
  return found;
}

Conv2dOp sketch::consumingConv(KernelOp kernel, Conv2dOp conv) {
  Conv2dOp found;
  kernel.getBody().walk([&](Conv2dOp other) {
    if (!found && other != conv && other.getInput() == conv.getResult() &&
        producingConv(kernel, other.getInput(), other) == conv)
      found = other;
  });
  return found;
}

/// P and Q of `shape` from the 4-D tensor parameter `output` (its layout, else the input's).
static void readOutputSize(ConvShape &shape, TensorParamOp output, bool inputNhwc) {
  bool outNhwc = output.getLayout() ? output.getLayout() == Layout::nhwc : inputNhwc;
  shape.pIndex = outNhwc ? 1 : 2;
  shape.qIndex = outNhwc ? 2 : 3;
  shape.p = dimAt(output, shape.pIndex);
  shape.q = dimAt(output, shape.qIndex);
}

std::optional<ConvShape> sketch::convShape(KernelOp kernel, Conv2dOp conv) {
  ConvShape shape;
  shape.input = findTensorParam(kernel, conv.getInput());
  shape.filter = findTensorParam(kernel, conv.getFilter());
  shape.output = findTensorParam(kernel, conv.getResult());
  auto fourD = [](TensorParamOp p) { return p && p.getDims().size() == 4; };
  if (!fourD(shape.filter))
    return std::nullopt;
  bool nhwc = true;
  if (Conv2dOp first = fourD(shape.input) ? Conv2dOp() : producingConv(kernel, conv.getInput(), conv)) {
    // The second of a back-to-back pair: its input is the first's result, nhwc.
    auto firstShape = convShape(kernel, first);
    if (!firstShape || firstShape->p.empty())
      return std::nullopt;
    shape.input = nullptr;
    shape.n = firstShape->n, shape.h = firstShape->p, shape.w = firstShape->q;
    shape.c = firstShape->k;
  } else {
    if (!fourD(shape.input))
      return std::nullopt;
    nhwc = shape.input.getLayout() == Layout::nhwc;
    shape.n = dimAt(shape.input, 0);
    shape.h = dimAt(shape.input, nhwc ? 1 : 2);
    shape.w = dimAt(shape.input, nhwc ? 2 : 3);
    shape.c = dimAt(shape.input, nhwc ? 3 : 1);
  }
  bool krsc = shape.filter.getLayout() == Layout::krsc;
  shape.k = dimAt(shape.filter, 0);
  shape.r = dimAt(shape.filter, krsc ? 1 : 2);
  shape.s = dimAt(shape.filter, krsc ? 2 : 3);
  if (fourD(shape.output)) {
    readOutputSize(shape, shape.output, nhwc);
    return shape;
  }
  shape.output = nullptr;
  // The first of a back-to-back pair: its output pixels are those the second stores.
  if (Conv2dOp second = consumingConv(kernel, conv))
    if (TensorParamOp stored = findTensorParam(kernel, second.getResult()); fourD(stored))
      readOutputSize(shape, stored, nhwc);
  return shape;
}

bool sketch::gathersConvFilter(KernelOp kernel, Conv2dOp conv) {
  auto shape = convShape(kernel, conv);
  return shape && shape->input && shape->input.getLayout() == Layout::nhwc &&
         shape->filter.getLayout() != Layout::krsc;
}

std::optional<GemmDims> sketch::convDims(KernelOp kernel, Conv2dOp conv) {
  auto shape = convShape(kernel, conv);
  if (!shape)
    return std::nullopt;
  std::string p = shape->p.empty() ? "P" : shape->p;
  std::string q = shape->q.empty() ? "Q" : shape->q;
  return GemmDims{shape->n + "*" + p + "*" + q, shape->k,
                  shape->c + "*" + shape->r + "*" + shape->s};
}

/// The names `Compute Y = EXPR` reads, in order, without repeats.
static SmallVector<std::string> assignReads(AssignOp assign) {
  SmallVector<std::string> names;
  assign.getExpression().walk([&](RefOp ref) {
    if (!llvm::is_contained(names, ref.getName()))
      names.push_back(ref.getName().str());
  });
  return names;
}

namespace {
/// What the statements before some point make of each name, gathered in one
/// pass in program order: the register tiles (as isRegisterTile sees them) and
/// the logical shape each GEMM, convolution or `Compute Y = EXPR` gave the
/// name it produced last. Following producer chains backwards instead costs
/// time exponential in their length.
struct ShapeState {
  llvm::StringSet<> registerTiles;
  llvm::StringMap<std::optional<MatrixShape>> produced;
};
} // namespace

/// The shape of a tensor parameter: its last two dimensions (1 x D for one).
static std::optional<MatrixShape> paramShape(KernelOp kernel, StringRef name) {
  auto param = findTensorParam(kernel, name);
  if (!param)
    return std::nullopt;
  unsigned rank = param.getDims().size();
  if (rank == 1)
    return MatrixShape{"1", dimAt(param, 0)};
  return MatrixShape{dimAt(param, rank - 2), dimAt(param, rank - 1)};
}

/// The shape of `name` after the statements recorded in `state`.
static std::optional<MatrixShape> currentShape(KernelOp kernel, const ShapeState &state,
                                               StringRef name) {
  auto it = state.produced.find(name);
  if (it != state.produced.end())
    return it->second;
  return paramShape(kernel, name);
}

static std::optional<GemmDims> gemmDimsIn(KernelOp kernel, GemmOp gemm, const ShapeState &state) {
  auto lhs = currentShape(kernel, state, gemm.getLhs());
  auto rhs = currentShape(kernel, state, gemm.getRhs());
  if (!lhs || !rhs)
    return std::nullopt;
  bool lt = gemm.getLhsTransposed(), rt = gemm.getRhsTransposed();
  return GemmDims{lt ? lhs->cols : lhs->rows, rt ? rhs->rows : rhs->cols,
                  lt ? lhs->rows : lhs->cols};
}

/// `Compute Y = EXPR` is shaped as its first operand that is a register tile,
/// else as its first matrix tensor, else as Y's own declaration.
static std::optional<MatrixShape> assignShape(KernelOp kernel, AssignOp assign,
                                              const ShapeState &state) {
  std::optional<MatrixShape> tensorShape;
  for (const std::string &read : assignReads(assign)) {
    if (state.registerTiles.contains(read))
      if (auto shape = currentShape(kernel, state, read))
        return shape;
    if (!tensorShape)
      if (auto param = findTensorParam(kernel, read); param && param.getDims().size() >= 2)
        tensorShape = currentShape(kernel, state, read);
  }
  if (tensorShape)
    return tensorShape;
  return paramShape(kernel, assign.getTarget());
}

static void recordStatement(KernelOp kernel, Operation *op, ShapeState &state) {
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    auto dims = gemmDimsIn(kernel, gemm, state);
    state.produced[gemm.getResult()] =
        dims ? std::optional<MatrixShape>(MatrixShape{dims->m, dims->n}) : std::nullopt;
    state.registerTiles.insert(gemm.getResult());
  } else if (auto conv = dyn_cast<Conv2dOp>(op)) {
    auto dims = convDims(kernel, conv);
    state.produced[conv.getResult()] =
        dims ? std::optional<MatrixShape>(MatrixShape{dims->m, dims->n}) : std::nullopt;
    state.registerTiles.insert(conv.getResult());
  } else if (auto assign = dyn_cast<AssignOp>(op)) {
    state.produced[assign.getTarget()] = assignShape(kernel, assign, state);
    state.registerTiles.insert(assign.getTarget());
  } else if (auto alloc = dyn_cast<AllocateOp>(op)) {
    if (alloc.getSpace() == MemorySpace::reg)
      state.registerTiles.insert(alloc.getName());
  } else if (auto copy = dyn_cast<CopyOp>(op)) {
    if (copy.getDestination() == MemorySpace::reg)
      state.registerTiles.insert(copy.getName());
  }
}

static ShapeState shapesBefore(KernelOp kernel, Operation *user) {
  ShapeState state;
  for (Operation *op : statementsBefore(kernel, user))
    recordStatement(kernel, op, state);
  return state;
}

std::optional<GemmDims> sketch::gemmDims(KernelOp kernel, GemmOp gemm) {
  return gemmDimsIn(kernel, gemm, shapesBefore(kernel, gemm));
}

std::optional<MatrixShape> sketch::logicalShape(KernelOp kernel, StringRef name, Operation *user) {
  return currentShape(kernel, shapesBefore(kernel, user), name);
}

GemmOp sketch::accumulatorSource(KernelOp kernel, StringRef name, Operation *user) {
  llvm::StringMap<GemmOp> source;
  for (Operation *op : statementsBefore(kernel, user)) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      source[gemm.getResult()] = gemm;
    } else if (auto conv = dyn_cast<Conv2dOp>(op)) {
      source.erase(conv.getResult());
    } else if (auto copy = dyn_cast<CopyOp>(op)) {
      // Loaded into registers, or staged out of them: no longer the accumulator.
      source.erase(copy.getName());
    } else if (auto assign = dyn_cast<AssignOp>(op)) {
      GemmOp from;
      for (const std::string &read : assignReads(assign))
        if (!from)
          from = source.lookup(read);
      if (from)
        source[assign.getTarget()] = from;
      else
        source.erase(assign.getTarget());
    }
  }
  return source.lookup(name);
}

GemmOp sketch::chainedProducer(KernelOp kernel, GemmOp gemm) {
  if (gemm.getLhsTransposed())
    return nullptr;
  return accumulatorSource(kernel, gemm.getLhs(), gemm);
}

bool sketch::feedsChainedGemm(KernelOp kernel, GemmOp gemm) {
  bool feeds = false;
  kernel.getBody().walk(
      [&](GemmOp other) { feeds |= other != gemm && chainedProducer(kernel, other) == gemm; });
  return feeds;
}

//===----------------------------------------------------------------------===//
// Tiles
//===----------------------------------------------------------------------===//

std::optional<unsigned> sketch::loopRole(KernelOp kernel, GemmOp gemm, ForOp loop) {
  auto dims = gemmDims(kernel, gemm);
  if (!dims)
    return std::nullopt;
  std::string extent = loopExtent(loop);
  if (sameExtent(extent, dims->k))
    return 2u;
  if (!chainedProducer(kernel, gemm) && sameExtent(extent, dims->n))
    return 1u;
  if (sameExtent(extent, dims->m))
    return 0u;
  return std::nullopt;
}

static bool convLoopCoversK(KernelOp kernel, Conv2dOp conv, ForOp loop) {
  auto dims = convDims(kernel, conv);
  return dims && sameExtent(loopExtent(loop), dims->k);
}

std::optional<std::string> sketch::loopStep(KernelOp kernel, ForOp loop) {
  static const char *const kSymbols[] = {"BM", "BN", "BK"};
  bool roles[3] = {false, false, false};
  loop.getBody().walk([&](Operation *op) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (auto role = loopRole(kernel, gemm, loop))
        roles[*role] = true;
    } else if (auto conv = dyn_cast<Conv2dOp>(op)) {
      roles[2] |= convLoopCoversK(kernel, conv, loop);
    }
  });
  // A loop that one GEMM runs over N and another over K (attention's loop over
  // the keys) steps by BN: that GEMM's N tile is the other one's K tile.
  for (unsigned role : {1u, 2u, 0u})
    if (roles[role])
      return std::string(kSymbols[role]);
  return std::nullopt;
}

static Tile makeTile(ArrayRef<std::string> dims) {
  Tile tile;
  for (const std::string &dim : dims) {
    tile.dims.push_back(dim);
    tile.loops.push_back(nullptr);
  }
  return tile;
}

std::optional<Tile> sketch::gemmTiles(KernelOp kernel, GemmOp gemm) {
  auto dims = gemmDims(kernel, gemm);
  if (!dims)
    return std::nullopt;
  // A block owns whole rows of a result that feeds, or comes from, a chained
  // GEMM's A operand: its N tile is then all of N unless a loop covers N.
  bool wholeRows = chainedProducer(kernel, gemm) || feedsChainedGemm(kernel, gemm);
  Tile tile = makeTile({"BM", wholeRows ? dims->n : "BN", dims->k});
  bool covered[3] = {false, false, false};
  for (ForOp loop : enclosingLoops(gemm)) {
    auto role = loopRole(kernel, gemm, loop);
    auto step = loopStep(kernel, loop);
    if (!role || !step || covered[*role])
      continue;
    covered[*role] = true;
    tile.dims[*role] = *step;
    tile.loops[*role] = loop;
  }
  return tile;
}

std::optional<Tile> sketch::convTiles(KernelOp kernel, Conv2dOp conv) {
  auto dims = convDims(kernel, conv);
  if (!dims)
    return std::nullopt;
  // Back-to-back convolutions: a block owns whole pixels (rows) of both results.
  bool wholeRows = producingConv(kernel, conv.getInput(), conv) || consumingConv(kernel, conv);
  Tile tile = makeTile({"BM", wholeRows ? dims->n : "BN", dims->k});
  for (ForOp loop : enclosingLoops(conv)) {
    if (!convLoopCoversK(kernel, conv, loop))
      continue;
    tile.dims[2] = "BK";
    tile.loops[2] = loop;
    break;
  }
  return tile;
}

/// The first symbol of `extent`, for the `-D NAME=...` hint.
static std::string firstSymbol(StringRef extent) {
  auto symbols = exprSymbols(extent);
  return symbols.empty() ? std::string("N") : symbols.front();
}

static InFlightDiagnostic wholeExtentError(Operation *op, StringRef extent, StringRef why) {
  auto diag = emitError(op->getLoc());
  diag << "'" << extent << "' must be known at compile time: " << why
       << "; declare it as a literal or bind it with -D " << firstSymbol(extent) << "=...";
  return diag;
}

LogicalResult sketch::verifyWholeExtents(KernelOp kernel, GemmOp gemm) {
  auto tile = gemmTiles(kernel, gemm);
  auto dims = gemmDims(kernel, gemm);
  if (!tile || !dims)
    return success();
  if (!tile->loops[2] && !evaluateExpr(dims->k))
    return wholeExtentError(gemm, dims->k,
                            "no surrounding `for` runs over this GEMM's reduction, so one "
                            "tile spans all of it");
  GemmOp producer = chainedProducer(kernel, gemm);
  if (!producer)
    return success();
  auto producerTile = gemmTiles(kernel, producer);
  auto producerDims = gemmDims(kernel, producer);
  if (producerTile && producerDims && !producerTile->loops[1] && !evaluateExpr(producerDims->n)) {
    auto diag = wholeExtentError(gemm, producerDims->n,
                                 ("'" + gemm.getLhs() + "' (the result of an earlier GEMM, " +
                                  producerDims->m + " x " + producerDims->n +
                                  ") stays in registers as this GEMM's A operand, a whole row "
                                  "per block")
                                     .str());
    diag.attachNote(producer.getLoc()) << "'" << producer.getResult() << "' is computed here";
    return diag;
  }
  if (!tile->loops[1] && !evaluateExpr(dims->n))
    return wholeExtentError(gemm, dims->n,
                            "this GEMM consumes a register-held result, so each block computes "
                            "whole rows of '" +
                                gemm.getResult().str() + "'");
  return success();
}

/// A 2-D tile made of entries `a` and `b` of `full`.
static Tile pick(const Tile &full, unsigned a, unsigned b) {
  Tile tile;
  for (unsigned i : {a, b}) {
    tile.dims.push_back(full.dims[i]);
    tile.loops.push_back(full.loops[i]);
  }
  return tile;
}

std::optional<Tile> sketch::resultTile(KernelOp kernel, Operation *op) {
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    auto tile = gemmTiles(kernel, gemm);
    return tile ? std::optional<Tile>(pick(*tile, 0, 1)) : std::nullopt;
  }
  if (auto conv = dyn_cast<Conv2dOp>(op)) {
    auto tile = convTiles(kernel, conv);
    return tile ? std::optional<Tile>(pick(*tile, 0, 1)) : std::nullopt;
  }
  if (auto assign = dyn_cast<AssignOp>(op)) {
    for (const std::string &read : assignReads(assign))
      if (auto tile = registerTileOf(kernel, read, assign))
        return tile;
    return std::nullopt;
  }
  if (auto copy = dyn_cast<CopyOp>(op);
      copy && copy.getDestination() == MemorySpace::reg && copy.getTile()) {
    SmallVector<std::string> dims;
    ArrayAttr tile = *copy.getTile(); // the optional is a temporary
    for (Attribute dim : tile)
      dims.push_back(cast<StringAttr>(dim).str());
    return makeTile(dims);
  }
  return std::nullopt;
}

std::optional<Tile> sketch::registerTileOf(KernelOp kernel, StringRef name, Operation *user) {
  Operation *producer = nullptr;
  for (Operation *op : statementsBefore(kernel, user)) {
    if (auto alloc = dyn_cast<AllocateOp>(op);
        alloc && alloc.getName() == name && alloc.getSpace() == MemorySpace::reg) {
      SmallVector<std::string> dims;
      for (Attribute dim : alloc.getDims())
        dims.push_back(cast<StringAttr>(dim).str());
      return makeTile(dims);
    }
    if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getResult() == name)
      producer = op;
    else if (auto conv = dyn_cast<Conv2dOp>(op); conv && conv.getResult() == name)
      producer = op;
    else if (auto assign = dyn_cast<AssignOp>(op); assign && assign.getTarget() == name)
      producer = producer ? producer : op; // Y = f(Y) keeps Y's tile
    else if (auto copy = dyn_cast<CopyOp>(op);
             copy && copy.getName() == name && copy.getDestination() == MemorySpace::reg)
      producer = op;
  }
  return producer ? resultTile(kernel, producer) : std::nullopt;
}

/// The first GEMM or convolution in `scope`'s statements that reads or
/// accumulates `name`, searching from `from` onward and then from the start.
static Operation *findConsumer(ArrayRef<Operation *> scope, Operation *from, StringRef name) {
  auto uses = [&](Operation *op) {
    if (auto gemm = dyn_cast<GemmOp>(op))
      return gemm.getLhs() == name || gemm.getRhs() == name || gemm.getResult() == name;
    if (auto conv = dyn_cast<Conv2dOp>(op))
      return conv.getInput() == name || conv.getFilter() == name || conv.getResult() == name;
    return false;
  };
  auto start = llvm::find(scope, from);
  for (auto it = start; it != scope.end(); ++it)
    if (uses(*it))
      return *it;
  for (auto it = scope.begin(); it != start; ++it)
    if (uses(*it))
      return *it;
  return nullptr;
}

/// The tile `name` has as an operand or result of the GEMM or convolution `op`.
static std::optional<Tile> operandTile(KernelOp kernel, Operation *op, StringRef name) {
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    auto full = gemmTiles(kernel, gemm);
    if (!full)
      return std::nullopt;
    if (gemm.getLhs() == name)
      return gemm.getLhsTransposed() ? pick(*full, 2, 0) : pick(*full, 0, 2);
    if (gemm.getRhs() == name)
      return gemm.getRhsTransposed() ? pick(*full, 1, 2) : pick(*full, 2, 1);
    return pick(*full, 0, 1);
  }
  auto conv = cast<Conv2dOp>(op);
  auto full = convTiles(kernel, conv);
  if (!full)
    return std::nullopt;
  if (conv.getInput() == name)
    return pick(*full, 0, 2);
  if (conv.getFilter() == name)
    return pick(*full, 2, 1);
  return pick(*full, 0, 1);
}

/// The tile of `name` read by an epilogue statement: that of the register tile
/// it is combined with, when the two have the same shape.
static std::optional<Tile> epilogueTile(KernelOp kernel, ArrayRef<Operation *> scope,
                                        StringRef name) {
  for (Operation *op : scope) {
    std::string target;
    if (auto ew = dyn_cast<ElementwiseOp>(op)) {
      if (llvm::any_of(ew.getOperands(),
                       [&](Attribute a) { return cast<StringAttr>(a).getValue() == name; }))
        target = ew.getTarget().str();
    } else if (auto assign = dyn_cast<AssignOp>(op)) {
      if (assign.getTarget() != name && llvm::is_contained(assignReads(assign), name))
        target = assign.getTarget().str();
    }
    if (target.empty())
      continue;
    auto tile = registerTileOf(kernel, target, op);
    auto mine = logicalShape(kernel, name, op);
    auto theirs = logicalShape(kernel, target, op);
    if (tile && mine && theirs && sameExtent(mine->rows, theirs->rows) &&
        sameExtent(mine->cols, theirs->cols))
      return tile;
  }
  return std::nullopt;
}

std::optional<Tile> sketch::findCopyTile(KernelOp kernel, CopyOp copy) {
  StringRef name = copy.getName();
  if (copy.getSource() == MemorySpace::reg)
    return registerTileOf(kernel, name, copy);
  SmallVector<ForOp> loops = enclosingLoops(copy);
  SmallVector<Operation *> scope;
  if (loops.empty())
    scope = statementsInOrder(kernel);
  else
    collectStatements(loops.front().getBodyBlock(), scope);
  if (Operation *consumer = findConsumer(scope, copy, name))
    if (auto tile = operandTile(kernel, consumer, name))
      return tile;
  return epilogueTile(kernel, scope, name);
}

FailureOr<Tile> sketch::copyTile(KernelOp kernel, CopyOp copy) {
  if (auto tile = findCopyTile(kernel, copy))
    return *tile;
  StringRef name = copy.getName();
  if (copy.getSource() == MemorySpace::reg)
    return emitError(copy.getLoc(), "cannot tell the tile of '")
           << name << "': it is not a register tile produced before this Copy";
  return emitError(copy.getLoc(), "cannot tell the tile of '")
         << name << "': no GEMM, convolution or elementwise statement here uses it; "
         << "write it, as in `Copy " << name << " (BM, BN) from ...`";
}
