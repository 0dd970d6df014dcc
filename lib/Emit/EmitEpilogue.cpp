//===- EmitEpilogue.cpp - fused statements as per-element CUDA ------------===//
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Frontend/Printer.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace sketch {

namespace {

std::string tileVar(StringRef name) { return "v_" + name.str(); }

std::string callName(CallKind kind) {
  switch (kind) {
  case CallKind::relu:
    return "relu";
  case CallKind::gelu:
    return "gelu";
  case CallKind::silu:
    return "silu";
  case CallKind::sigmoid:
    return "sigmoid";
  case CallKind::tanh:
    return "tanh";
  case CallKind::exp:
    return "exp";
  case CallKind::max:
    return "max";
  case CallKind::min:
    return "min";
  case CallKind::leaky_relu:
    return "leaky_relu";
  }
  return "";
}

const char *binarySymbol(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::add:
    return " + ";
  case BinaryKind::sub:
    return " - ";
  case BinaryKind::mul:
    return " * ";
  case BinaryKind::div:
    return " / ";
  }
  return " ? ";
}

std::vector<std::string> indexOf(Operation *op) {
  std::vector<std::string> index;
  if (auto attr = op->getAttrOfType<ArrayAttr>(plan::kIndexAttr))
    for (Attribute entry : attr)
      index.push_back(cast<StringAttr>(entry).str());
  return index;
}

std::string indexText(const std::vector<std::string> &index) {
  bool row = llvm::is_contained(index, "row"), col = llvm::is_contained(index, "col");
  if (row && col)
    return "full";
  if (col)
    return "per column";
  if (row)
    return "per row";
  return "per batch";
}

} // namespace

std::string statementText(Operation *op) {
  if (auto elementwise = dyn_cast<ElementwiseOp>(op)) {
    std::string text = "Compute " + stringifyElementwiseKind(elementwise.getKind()).str() + " " +
                       elementwise.getTarget().str();
    for (Attribute operand : elementwise.getOperands())
      text += ", " + cast<StringAttr>(operand).str();
    return text;
  }
  auto assign = cast<AssignOp>(op);
  auto yield = cast<YieldOp>(assign.getExpression().front().getTerminator());
  return "Compute " + assign.getTarget().str() + " = " + printExpression(yield.getValue());
}

const EpilogueOperand *EpilogueEmitter::operandFor(StringRef name) const {
  for (const EpilogueOperand &operand : operandList)
    if (operand.param->name == name)
      return &operand;
  return nullptr;
}

LogicalResult EpilogueEmitter::addOperand(Operation *at, StringRef name) {
  if (operandFor(name))
    return success();
  EpilogueOperand operand;
  operand.param = sig->find(name);
  if (!operand.param || !operand.param->isTensor)
    return at->emitError() << "'" << name << "' is read by the epilogue but is no tensor parameter";
  operand.index = indexOf(at);
  if (operand.index.size() != operand.param->dims.size())
    return at->emitError() << "'" << name << "' has no broadcast plan (run sketch-fuse-epilogue)";
  operand.usesRow = llvm::is_contained(operand.index, "row");
  operand.usesCol = llvm::is_contained(operand.index, "col");
  operand.var = "e_" + name.str();
  operandList.push_back(std::move(operand));
  return success();
}

std::string EpilogueEmitter::scalarExpr(StringRef operand) const {
  double value;
  if (!operand.getAsDouble(value))
    return floatLiteral(value);
  const ParamInfo *param = sig->find(operand);
  if (param && !param->isTensor)
    return param->scalar == ScalarKind::i32 ? "static_cast<float>(" + param->cname + ")"
                                            : param->cname;
  return "";
}

LogicalResult EpilogueEmitter::check(Location loc) {
  llvm::StringSet<> tiles = {accumulator};
  auto needTile = [&](Operation *op, StringRef name) -> LogicalResult {
    if (tiles.contains(name))
      return success();
    return op->emitError() << "'" << name
                           << "' is not a register tile of this epilogue (the accumulator is '"
                           << accumulator << "')";
  };
  auto needScalar = [&](Operation *op, StringRef name) -> LogicalResult {
    if (!scalarExpr(name).empty())
      return success();
    return op->emitError() << "'" << name << "' must be a number or a scalar parameter";
  };
  for (Operation *op : statements) {
    if (auto elementwise = dyn_cast<ElementwiseOp>(op)) {
      if (failed(needTile(op, elementwise.getTarget())))
        return failure();
      auto operands = elementwise.getOperands();
      auto kind = elementwise.getKind();
      for (auto [i, attr] : llvm::enumerate(operands)) {
        StringRef name = cast<StringAttr>(attr).getValue();
        bool tensorSlot = (kind == ElementwiseKind::bias || kind == ElementwiseKind::add) && i == 0;
        if (tensorSlot && (operandFor(name) || tiles.contains(name)))
          continue;
        if (tensorSlot)
          return op->emitError() << "'" << name
                                 << "' is neither a global tensor nor a register tile";
        if (failed(needScalar(op, name)))
          return failure();
      }
      if ((kind == ElementwiseKind::bias || kind == ElementwiseKind::add ||
           kind == ElementwiseKind::scale || kind == ElementwiseKind::leaky_relu) &&
          operands.empty())
        return op->emitError() << "statement needs an operand";
      continue;
    }
    auto assign = cast<AssignOp>(op);
    WalkResult walk = assign.walk([&](RefOp ref) {
      StringRef name = ref.getName();
      if (ref->hasAttr(plan::kIndexAttr) || tiles.contains(name) || !scalarExpr(name).empty())
        return WalkResult::advance();
      ref.emitError() << "'" << name << "' is not a register tile, global tensor or scalar here";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();
    tiles.insert(assign.getTarget());
  }
  if (!tiles.contains(stored))
    return emitError(loc) << "the stored '" << stored << "' is not computed by the epilogue";
  return success();
}

FailureOr<EpilogueEmitter> EpilogueEmitter::create(const KernelSignature &sig,
                                                   ArrayRef<Operation *> ops, StringRef accumulator,
                                                   StringRef stored, Location loc) {
  return build(sig, ops, accumulator, stored, loc, {}, {});
}

FailureOr<EpilogueEmitter> EpilogueEmitter::build(const KernelSignature &sig,
                                                  ArrayRef<Operation *> ops, StringRef accumulator,
                                                  StringRef stored, Location loc,
                                                  std::vector<Operation *> foldedAdds,
                                                  std::vector<Operation *> foldedTerms) {
  EpilogueEmitter emitter;
  emitter.sig = &sig;
  emitter.statements.assign(ops.begin(), ops.end());
  emitter.accumulator = accumulator.str();
  emitter.stored = stored.str();
  emitter.foldedAdds = std::move(foldedAdds);
  emitter.foldedTerms = std::move(foldedTerms);
  for (Operation *op : ops) {
    if (auto elementwise = dyn_cast<ElementwiseOp>(op)) {
      if (op->hasAttr(plan::kIndexAttr) &&
          failed(emitter.addOperand(op, cast<StringAttr>(elementwise.getOperands()[0]).getValue())))
        return failure();
      continue;
    }
    WalkResult walk = op->walk([&](RefOp ref) {
      if (ref->hasAttr(plan::kIndexAttr) && !llvm::is_contained(emitter.foldedTerms, ref) &&
          failed(emitter.addOperand(ref, ref.getName())))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  if (failed(emitter.check(loc)))
    return failure();
  return emitter;
}

std::string EpilogueEmitter::elementOffset(const EpilogueOperand &operand,
                                           const ElementIndex &at) const {
  const auto &dims = operand.param->dims;
  std::string offset;
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string &which = operand.index[i];
    if (which == "unit") // a dimension of 1 broadcast: index 0
      continue;
    std::string index = which == "row"   ? at.row
                        : which == "col" ? at.col
                                         : at.batch[std::stoi(which.substr(5))];
    std::vector<std::string> after(dims.begin() + i + 1, dims.end());
    std::string term = after.empty() ? index : index + " * (" + sig->product(after) + ")";
    offset += (offset.empty() ? "" : " + ") + term;
  }
  return offset.empty() ? "0" : offset;
}

std::string EpilogueEmitter::loadExpr(const EpilogueOperand &operand,
                                      const ElementIndex &at) const {
  std::string load =
      "sketch::to_float(" + operand.param->cname + "[" + elementOffset(operand, at) + "])";
  std::string guard;
  if (operand.usesRow)
    guard = at.row + " < " + at.rows;
  if (operand.usesCol)
    guard += (guard.empty() ? "" : " && ") + at.col + " < " + at.cols;
  return guard.empty() ? load : "(" + guard + " ? " + load + " : 0.0f)";
}

EpilogueEmitter &EpilogueEmitter::forScores() {
  functions = "sketch::scores::";
  reciprocalDivisions = true;
  return *this;
}

bool EpilogueEmitter::readsTile(Value value) const {
  Operation *def = value.getDefiningOp();
  if (auto ref = dyn_cast<RefOp>(def))
    return ref->hasAttr(plan::kIndexAttr) || scalarExpr(ref.getName()).empty();
  bool reads = false;
  for (Value operand : def->getOperands())
    reads = reads || readsTile(operand);
  return reads;
}

std::string
EpilogueEmitter::expression(Value value,
                            llvm::function_ref<std::string(const EpilogueOperand &)> load) const {
  Operation *def = value.getDefiningOp();
  if (auto ref = dyn_cast<RefOp>(def)) {
    if (ref->hasAttr(plan::kIndexAttr))
      return load(*operandFor(ref.getName()));
    std::string scalar = scalarExpr(ref.getName());
    const ParamInfo *param = sig->find(ref.getName());
    if (!scalar.empty() && param && !param->isTensor)
      return scalar;
    return tileVar(ref.getName());
  }
  if (auto constant = dyn_cast<ConstantOp>(def))
    return floatLiteral(constant.getValue().convertToDouble());
  if (auto binary = dyn_cast<BinaryOp>(def)) {
    if (llvm::is_contained(foldedAdds, binary)) { // `ACC + x`, the accumulators started from x
      bool termLeft = llvm::is_contained(foldedTerms, binary.getLhs().getDefiningOp());
      return expression(termLeft ? binary.getRhs() : binary.getLhs(), load);
    }
    if (binary.getKind() == BinaryKind::div && reciprocalDivisions && !readsTile(binary.getRhs()))
      return "(" + expression(binary.getLhs(), load) + " * (1.0f / " +
             expression(binary.getRhs(), load) + "))";
    return "(" + expression(binary.getLhs(), load) + binarySymbol(binary.getKind()) +
           expression(binary.getRhs(), load) + ")";
  }
  if (auto negate = dyn_cast<NegateOp>(def))
    return "(-" + expression(negate.getOperand(), load) + ")";
  auto call = cast<CallOp>(def);
  std::string args;
  for (Value arg : call.getArgs())
    args += (args.empty() ? "" : ", ") + expression(arg, load);
  return functions + callName(call.getCallee()) + "(" + args + ")";
}

void EpilogueEmitter::emitElement(CudaWriter &w, StringRef accExpr,
                                  llvm::function_ref<std::string(const EpilogueOperand &)> value,
                                  StringRef result) const {
  llvm::StringSet<> declared = {accumulator};
  w.line("float " + tileVar(accumulator) + " = " + accExpr.str() + ";");
  for (Operation *op : statements) {
    w.comment(statementText(op));
    if (auto assign = dyn_cast<AssignOp>(op)) {
      auto yield = cast<YieldOp>(assign.getExpression().front().getTerminator());
      std::string target = tileVar(assign.getTarget());
      std::string rhs = expression(yield.getValue(), value);
      if (rhs.size() > 2 && rhs.front() == '(' && rhs.back() == ')')
        rhs = rhs.substr(1, rhs.size() - 2);
      bool fresh = declared.insert(assign.getTarget()).second;
      w.line((fresh ? "float " : "") + target + " = " + rhs + ";");
      continue;
    }
    auto elementwise = cast<ElementwiseOp>(op);
    std::string v = tileVar(elementwise.getTarget());
    auto operands = elementwise.getOperands();
    auto operand = [&](size_t i) { return cast<StringAttr>(operands[i]).getValue(); };
    auto tensorValue = [&](StringRef name) {
      const EpilogueOperand *global = operandFor(name);
      return global ? value(*global) : tileVar(name);
    };
    switch (elementwise.getKind()) {
    case ElementwiseKind::relu:
    case ElementwiseKind::gelu:
    case ElementwiseKind::silu:
    case ElementwiseKind::sigmoid:
    case ElementwiseKind::tanh: {
      std::string fn = stringifyElementwiseKind(elementwise.getKind()).lower();
      w.line(v + " = " + functions + fn + "(" + v + ");");
      break;
    }
    case ElementwiseKind::leaky_relu:
      w.line(v + " = " + functions + "leaky_relu(" + v + ", " + scalarExpr(operand(0)) + ");");
      break;
    case ElementwiseKind::scale:
      w.line(v + " = " + v + " * " + scalarExpr(operand(0)) + ";");
      break;
    case ElementwiseKind::bias:
      w.line(v + " = " + v + " + " + tensorValue(operand(0)) + ";");
      break;
    case ElementwiseKind::add:
      if (operands.size() > 1)
        w.line(v + " = " + v + " + " + scalarExpr(operand(1)) + " * " + tensorValue(operand(0)) +
               ";");
      else
        w.line(v + " = " + v + " + " + tensorValue(operand(0)) + ";");
      break;
    }
  }
  w.line(result.str() + " = " + tileVar(stored) + ";");
}

bool EpilogueEmitter::callsFunctions() const { return functionCalls() > 0; }

int64_t EpilogueEmitter::functionCalls() const {
  int64_t calls = 0;
  for (Operation *statement : statements)
    calls += plan::functionCalls(statement);
  return calls;
}

bool EpilogueEmitter::readsFullTensor() const {
  return llvm::any_of(operandList, [](const EpilogueOperand &o) { return o.whole(); });
}

std::optional<std::pair<AccumulatorStart, EpilogueEmitter>>
EpilogueEmitter::splitExpressionStart() const {
  auto assign = cast<AssignOp>(statements.front());
  if (assign.getTarget() != accumulator)
    return std::nullopt;
  SmallVector<RefOp> reads;
  assign.walk([&](RefOp ref) {
    if (ref.getName() == accumulator && !ref->hasAttr(plan::kIndexAttr))
      reads.push_back(ref);
  });
  if (reads.size() != 1)
    return std::nullopt;
  Value sum = reads[0].getResult(); // the accumulator plus the terms folded before
  while (sum.hasOneUse() && llvm::is_contained(foldedAdds, *sum.getUsers().begin()))
    sum = sum.getUsers().begin()->getResult(0);
  if (!sum.hasOneUse())
    return std::nullopt;
  auto add = dyn_cast<BinaryOp>(*sum.getUsers().begin());
  if (!add || add.getKind() != BinaryKind::add)
    return std::nullopt;
  Value other = add.getLhs() == sum ? add.getRhs() : add.getLhs();
  auto term = other.getDefiningOp<RefOp>();
  if (!term || !term->hasAttr(plan::kIndexAttr))
    return std::nullopt;
  const EpilogueOperand *operand = operandFor(term.getName());
  if (!operand)
    return std::nullopt;
  bool termLeft = add.getLhs() == other;
  std::string written = termLeft ? term.getName().str() + " + " + accumulator
                                 : accumulator + " + " + term.getName().str();
  AccumulatorStart start{*operand, "", "the " + written + " of " + statementText(assign)};
  std::vector<Operation *> adds = foldedAdds, terms = foldedTerms;
  adds.push_back(add);
  terms.push_back(term);
  FailureOr<EpilogueEmitter> after =
      build(*sig, statements, accumulator, stored, assign.getLoc(), adds, terms);
  if (failed(after))
    return std::nullopt;
  return std::make_pair(std::move(start), std::move(*after));
}

std::optional<std::pair<AccumulatorStart, EpilogueEmitter>> EpilogueEmitter::splitStart() const {
  if (statements.empty())
    return std::nullopt;
  if (isa<AssignOp>(statements.front()))
    return splitExpressionStart();
  auto first = dyn_cast<ElementwiseOp>(statements.front());
  if (!first || first.getTarget() != accumulator || !first->hasAttr(plan::kIndexAttr))
    return std::nullopt;
  ElementwiseKind kind = first.getKind();
  if (kind != ElementwiseKind::bias && kind != ElementwiseKind::add)
    return std::nullopt;
  auto operands = first.getOperands();
  const EpilogueOperand *operand = operandFor(cast<StringAttr>(operands[0]).getValue());
  if (!operand)
    return std::nullopt;
  AccumulatorStart start{*operand, "", statementText(first)};
  if (operands.size() > 1)
    start.factor = scalarExpr(cast<StringAttr>(operands[1]).getValue());
  std::vector<Operation *> rest(statements.begin() + 1, statements.end());
  FailureOr<EpilogueEmitter> after = create(*sig, rest, accumulator, stored, first.getLoc());
  if (failed(after))
    return std::nullopt;
  return std::make_pair(std::move(start), std::move(*after));
}

std::vector<std::string> EpilogueEmitter::describe() const {
  std::vector<std::string> lines;
  for (Operation *op : statements) {
    std::string text = statementText(op);
    if (auto elementwise = dyn_cast<ElementwiseOp>(op))
      if (op->hasAttr(plan::kIndexAttr))
        text += " (" + indexText(indexOf(op)) + ")";
    lines.push_back(text);
  }
  return lines;
}

} // namespace sketch
