//===- InferDimensions.cpp - sizes, tiles and coordinates -----------------===//
//
// 1. Applies the -D bindings: each bound symbol becomes its literal everywhere.
// 2. Checks that the sizes agree: GEMM results against their declarations,
//    convolution channels and output sizes, biases and epilogue tensors,
//    Allocates in global, loop extents. A disagreement is an error at one
//    statement with a note at the other place.
// 3. Derives convolution output sizes written as symbols (`sketch.derived`).
// 4. Gives each Copy its tile and coordinate, and each loop its step.
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/Passes.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <limits>

namespace sketch {
#define GEN_PASS_DEF_INFERDIMENSIONS
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;

namespace {

//===----------------------------------------------------------------------===//
// -D bindings
//===----------------------------------------------------------------------===//

SmallVector<std::string> dimsOf(ArrayAttr dims) {
  SmallVector<std::string> out;
  for (Attribute dim : dims)
    out.push_back(cast<StringAttr>(dim).str());
  return out;
}

/// Every size symbol of the module: tensor dimensions and loop bounds.
llvm::StringSet<> sizeSymbols(ModuleOp module) {
  llvm::StringSet<> symbols;
  auto add = [&](StringRef expr) {
    for (const std::string &symbol : exprSymbols(expr))
      symbols.insert(symbol);
  };
  module.walk([&](Operation *op) {
    if (auto param = dyn_cast<TensorParamOp>(op))
      for (const std::string &dim : dimsOf(param.getDims()))
        add(dim);
    if (auto loop = dyn_cast<ForOp>(op)) {
      add(loop.getLower());
      add(loop.getUpper());
    }
  });
  return symbols;
}

ArrayAttr substituteAll(Builder &b, ArrayAttr dims, const llvm::StringMap<std::string> &values) {
  SmallVector<std::string> out;
  for (const std::string &dim : dimsOf(dims))
    out.push_back(substituteSymbols(dim, values));
  return b.getStrArrayAttr(SmallVector<StringRef>(out.begin(), out.end()));
}

/// Replaces each bound symbol by its value in every size of the module.
void substituteBindings(ModuleOp module, const llvm::StringMap<std::string> &values) {
  Builder b(module.getContext());
  module.walk([&](Operation *op) {
    if (auto param = dyn_cast<TensorParamOp>(op)) {
      param.setDimsAttr(substituteAll(b, param.getDims(), values));
    } else if (auto alloc = dyn_cast<AllocateOp>(op)) {
      alloc.setDimsAttr(substituteAll(b, alloc.getDims(), values));
    } else if (auto copy = dyn_cast<CopyOp>(op)) {
      if (copy.getTile())
        copy.setTileAttr(substituteAll(b, *copy.getTile(), values));
    } else if (auto loop = dyn_cast<ForOp>(op)) {
      loop.setLower(substituteSymbols(loop.getLower(), values));
      loop.setUpper(substituteSymbols(loop.getUpper(), values));
    }
  });
}

bool isIdentifier(StringRef text) {
  return !text.empty() && (llvm::isAlpha(text[0]) || text[0] == '_') &&
         llvm::all_of(text, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

/// Parses and checks the -D bindings, then applies them.
LogicalResult applyBindings(ModuleOp module, ArrayRef<std::string> bindings) {
  if (bindings.empty())
    return success();
  auto kernels = module.getOps<KernelOp>();
  Location loc = kernels.empty() ? module.getLoc() : (*kernels.begin()).getLoc();
  llvm::StringSet<> known = sizeSymbols(module);
  llvm::StringMap<std::string> values;
  for (const std::string &binding : bindings) {
    auto [name, value] = StringRef(binding).split('=');
    name = name.trim();
    value = value.trim();
    int64_t number;
    if (!isIdentifier(name) || value.getAsInteger(10, number) || number < 1)
      return emitError(loc) << "-D " << binding
                            << ": expected NAME=VALUE with VALUE a positive integer";
    if (!known.contains(name))
      return emitError(loc) << "-D " << binding << ": no kernel has a size symbol named '" << name
                            << "'";
    std::string text = std::to_string(number);
    auto [it, inserted] = values.try_emplace(name, text);
    if (!inserted && it->second != text)
      return emitError(loc) << "-D " << binding << ": '" << name << "' is already bound to "
                            << it->second;
  }
  substituteBindings(module, values);
  return success();
}

//===----------------------------------------------------------------------===//
// Size checks
//===----------------------------------------------------------------------===//

std::string spell(ArrayRef<std::string> dims) {
  std::string out = "[";
  for (const auto &dim : dims)
    out += (out.size() > 1 ? ", " : "") + dim;
  return out + "]";
}

InFlightDiagnostic noteDeclared(InFlightDiagnostic diag, TensorParamOp param) {
  diag.attachNote(param.getLoc()) << "'" << param.getName() << "' is declared here as "
                                  << spell(dimsOf(param.getDims()));
  return diag;
}

/// A user's `Allocate X in global (...)` must be X's dimensions, or their last ones.
LogicalResult checkGlobalAllocate(KernelOp kernel, AllocateOp alloc) {
  TensorParamOp param = findTensorParam(kernel, alloc.getName());
  if (alloc.getSpace() != MemorySpace::global || !param)
    return success();
  auto declared = dimsOf(param.getDims());
  auto allocated = dimsOf(alloc.getDims());
  bool suffix = allocated.size() <= declared.size();
  for (size_t i = 0; suffix && i < allocated.size(); ++i)
    suffix = sameExtent(allocated[allocated.size() - 1 - i], declared[declared.size() - 1 - i]);
  if (suffix)
    return success();
  return noteDeclared(emitError(alloc.getLoc(), "Allocate of '")
                          << alloc.getName() << "' in global as " << spell(allocated)
                          << " does not match its declaration",
                      param);
}

/// A GEMM's M x N must be its result's declared last two dimensions, and the
/// result's leading (batch) dimensions those of the A operand.
LogicalResult checkGemm(KernelOp kernel, GemmOp gemm) {
  auto dims = gemmDims(kernel, gemm);
  TensorParamOp result = findTensorParam(kernel, gemm.getResult());
  if (!dims || !result || result.getDims().size() < 2 || result.getLayout())
    return success();
  auto declared = dimsOf(result.getDims());
  size_t rank = declared.size();
  if (!sameExtent(dims->m, declared[rank - 2]) || !sameExtent(dims->n, declared[rank - 1]))
    return noteDeclared(emitError(gemm.getLoc(), "GEMM result '")
                            << gemm.getResult() << "' is " << dims->m << " x " << dims->n
                            << " here but declared " << declared[rank - 2] << " x "
                            << declared[rank - 1],
                        result);
  TensorParamOp lhs = findTensorParam(kernel, gemm.getLhs());
  if (!lhs || lhs.getDims().size() < 3 || isRegisterTile(kernel, gemm.getLhs(), gemm))
    return success();
  auto lhsDims = dimsOf(lhs.getDims());
  SmallVector<std::string> lhsBatch(lhsDims.begin(), lhsDims.end() - 2);
  SmallVector<std::string> resultBatch(declared.begin(), declared.end() - 2);
  bool same = lhsBatch.size() == resultBatch.size();
  for (size_t i = 0; same && i < lhsBatch.size(); ++i)
    same = sameExtent(lhsBatch[i], resultBatch[i]);
  if (same)
    return success();
  return noteDeclared(emitError(gemm.getLoc(), "GEMM result '")
                          << gemm.getResult() << "' has batch dimensions " << spell(resultBatch)
                          << " but '" << gemm.getLhs() << "' has " << spell(lhsBatch),
                      result);
}

/// `a` and `b` must be the same size; else an error at `op`, a note at `other`.
LogicalResult expectSame(Operation *op, StringRef what, StringRef a, StringRef b,
                         TensorParamOp other) {
  if (sameExtent(a, b))
    return success();
  return noteDeclared(emitError(op->getLoc()) << what << ": " << a << " here, " << b << " in '"
                                              << other.getName() << "'",
                      other);
}

/// The output size of a convolution along one spatial axis, as a readable
/// expression: (IN + 2*pad - dil*(F - 1) - 1) / stride + 1.
std::string outputSizeFormula(StringRef in, StringRef filter, int64_t stride, int64_t pad,
                              int64_t dilation) {
  // Linear in IN and F: IN - dilation*F + constant, then divided by the stride.
  int64_t constant = 2 * pad + dilation - (stride == 1 ? 0 : 1);
  std::string text = normalizeExpr(in);
  if (!isIntegerLiteral(text) && !isIdentifier(text))
    text = "(" + text + ")";
  std::string f = normalizeExpr(filter);
  // A filter size whose product or difference does not fit int64_t stays a term.
  std::optional<int64_t> value = evaluateExpr(f);
  std::optional<int64_t> product = value ? llvm::checkedMul(dilation, *value) : std::nullopt;
  std::optional<int64_t> folded = product ? llvm::checkedSub(constant, *product) : std::nullopt;
  if (folded && *folded != std::numeric_limits<int64_t>::min()) {
    constant = *folded;
  } else {
    bool simple = isIdentifier(f);
    std::string term = simple ? f : "(" + f + ")";
    text += " - " + (dilation == 1 ? term : std::to_string(dilation) + "*" + term);
  }
  if (constant > 0)
    text += " + " + std::to_string(constant);
  else if (constant < 0)
    text += " - " + std::to_string(-constant);
  if (stride != 1)
    text = "(" + text + ") / " + std::to_string(stride) + " + 1";
  if (auto value = evaluateExpr(text))
    return std::to_string(*value);
  return text;
}

/// Symbols that an output size of `shape` cannot be derived into: those of
/// loop bounds, of the convolution's input and filter, and of the output's
/// other dimensions. Epilogue operands (a residual [N, K, P, Q], a bias over
/// Q) may use the derived sizes.
llvm::StringSet<> symbolsOutside(KernelOp kernel, const ConvShape &shape) {
  llvm::StringSet<> used;
  for (Operation *op : statementsInOrder(kernel))
    if (auto loop = dyn_cast<ForOp>(op))
      for (const std::string &s : exprSymbols(loop.getUpper()))
        used.insert(s);
  for (TensorParamOp param : {shape.input, shape.filter, shape.output}) {
    if (!param)
      continue;
    auto dims = dimsOf(param.getDims());
    for (unsigned i = 0; i < dims.size(); ++i) {
      if (param == shape.output && (i == shape.pIndex || i == shape.qIndex))
        continue;
      for (const std::string &s : exprSymbols(dims[i]))
        used.insert(s);
    }
  }
  return used;
}

/// Checks one output size against its formula; records it when derived.
LogicalResult checkOutputSize(KernelOp kernel, Conv2dOp conv, ConvShape shape, StringRef axis,
                              StringRef declared, StringRef in, const std::string &formula,
                              llvm::StringMap<std::string> &derived) {
  auto computed = evaluateExpr(formula);
  if (computed && *computed < 1)
    return emitError(conv.getLoc(), "Conv2d output ")
           << axis << " would be " << *computed << ": the filter is larger than the padded input";
  if (isIntegerLiteral(declared)) {
    if (!computed)
      return noteDeclared(emitError(conv.getLoc(), "Conv2d output ")
                              << axis << " is declared " << declared << " but it is " << formula
                              << ", not known at compile time; write a symbol for it (it is "
                              << "then derived) or bind the input size with -D",
                          shape.output);
    if (*evaluateExpr(declared) != *computed)
      return noteDeclared(emitError(conv.getLoc(), "Conv2d output ")
                              << axis << " is " << *computed << " (" << in << ") but '"
                              << shape.output.getName() << "' declares " << declared,
                          shape.output);
    return success();
  }
  if (normalizeExpr(declared) == normalizeExpr(formula))
    return success(); // e.g. a same-size convolution writing [N, K, H, W]
  if (!isIdentifier(normalizeExpr(declared)) ||
      symbolsOutside(kernel, shape).contains(normalizeExpr(declared)))
    return noteDeclared(emitError(conv.getLoc(), "Conv2d output ")
                            << axis << " '" << declared << "' must be " << formula
                            << "; give it a symbol of its own (it is then derived) or a literal",
                        shape.output);
  auto [it, inserted] = derived.try_emplace(normalizeExpr(declared), formula);
  if (!inserted && it->second != formula)
    return noteDeclared(emitError(conv.getLoc(), "'")
                            << declared << "' would be both " << it->second << " and " << formula,
                        shape.output);
  return success();
}

/// Checks the output sizes `shape.output` declares against the convolution
/// `sizes` (its stride, pad, dilation) of shape's input and filter; errors at `at`.
LogicalResult checkConvOutput(KernelOp kernel, Conv2dOp at, Conv2dOp sizes, const ConvShape &shape,
                              llvm::StringMap<std::string> &derived) {
  auto stride = sizes.getStride(), pad = sizes.getPad(), dilation = sizes.getDilation();
  std::string p = outputSizeFormula(shape.h, shape.r, stride[0], pad[0], dilation[0]);
  std::string q = outputSizeFormula(shape.w, shape.s, stride[1], pad[1], dilation[1]);
  auto how = [&](StringRef in, StringRef f, int axis) {
    return ("input " + in + ", filter " + f + ", stride " + Twine(stride[axis]) + ", pad " +
            Twine(pad[axis]) + ", dilation " + Twine(dilation[axis]))
        .str();
  };
  if (failed(checkOutputSize(kernel, at, shape, "height", shape.p, how(shape.h, shape.r, 0), p,
                             derived)))
    return failure();
  return checkOutputSize(kernel, at, shape, "width", shape.q, how(shape.w, shape.s, 1), q, derived);
}

/// What keeps `second` from reading only its block's own pixels of the first
/// convolution's result ("" when nothing: a 1x1 filter, stride 1, pad 0, dilation 1).
std::string haloOf(Conv2dOp second, TensorParamOp filter, const std::string &r,
                   const std::string &s) {
  auto is = [](ArrayRef<int64_t> pair, int64_t value) {
    return pair[0] == value && pair[1] == value;
  };
  auto spellPair = [](ArrayRef<int64_t> pair) {
    return "(" + std::to_string(pair[0]) + ", " + std::to_string(pair[1]) + ")";
  };
  if (evaluateExpr(r) != std::optional<int64_t>(1) || evaluateExpr(s) != std::optional<int64_t>(1))
    return "its filter '" + filter.getName().str() + "' is " + r + " x " + s;
  if (!is(second.getStride(), 1))
    return "its stride is " + spellPair(second.getStride());
  if (!is(second.getPad(), 0))
    return "its pad is " + spellPair(second.getPad());
  if (!is(second.getDilation(), 1))
    return "its dilation is " + spellPair(second.getDilation());
  return "";
}

/// A Conv2d whose input is the register result of an earlier one (a back-to-back
/// convolution): the second is a GEMM over the first's channels at each output
/// pixel, so it may not have a halo; the pair runs on f16/bf16 tensor cores with
/// the pixels' channels contiguous (nhwc activations and output).
LogicalResult checkBackToBackConv(KernelOp kernel, Conv2dOp first, Conv2dOp second,
                                  llvm::StringMap<std::string> &derived) {
  // A chain of three or more: reported once, at the third convolution.
  Conv2dOp third = consumingConv(kernel, second);
  if (Conv2dOp before = producingConv(kernel, first.getInput(), first))
    third = second, second = first, first = before;
  if (third)
    return emitError(third.getLoc(), "back-to-back convolution: '")
           << second.getResult() << "' comes from a convolution of '" << first.getResult()
           << "', itself a convolution's result; the fused kernel chains two convolutions, the "
           << "first reading a tensor parameter";
  auto firstShape = convShape(kernel, first);
  TensorParamOp filter = findTensorParam(kernel, second.getFilter());
  TensorParamOp output = findTensorParam(kernel, second.getResult());
  if (!firstShape || !filter || filter.getDims().size() != 4 || !output ||
      output.getDims().size() != 4)
    return emitError(second.getLoc(), "back-to-back convolution: the second Conv2d needs a 4-D "
                                      "tensor parameter as filter and as result");
  bool krsc = filter.getLayout() == Layout::krsc;
  auto filterDims = dimsOf(filter.getDims());
  std::string halo = haloOf(second, filter, filterDims[krsc ? 1 : 2], filterDims[krsc ? 2 : 3]);
  if (!halo.empty())
    return emitError(second.getLoc(), "back-to-back convolution: the second Conv2d reads '")
           << first.getResult() << "' only at the output pixels of its own block, so it cannot "
           << "have a halo (it needs a 1 x 1 filter, stride (1, 1), pad (0, 0), dilation (1, 1)); "
           << halo;
  for (TensorParamOp activations : {firstShape->input, output})
    if (activations.getLayout() != Layout::nhwc)
      return emitError(second.getLoc(), "back-to-back convolution: '")
             << activations.getName() << "' must be nhwc (the fused kernel's rows are output "
             << "pixels, their channels contiguous)";
  if (firstShape->filter.getLayout() != Layout::krsc)
    return emitError(second.getLoc(), "back-to-back convolution: '")
           << firstShape->filter.getName() << "' must be krsc (the first convolution reduces "
           << "over (r, s, c) with the channels fastest, as they lie in the nhwc input)";
  for (TensorParamOp operand : {firstShape->input, firstShape->filter, filter})
    if (operand.getElementType() != ElementType::f16 &&
        operand.getElementType() != ElementType::bf16)
      return emitError(second.getLoc(), "back-to-back convolution: '")
             << operand.getName() << "' must be f16 or bf16 (both convolutions run on tensor "
             << "cores)";
  if (firstShape->filter.getElementType() != filter.getElementType() ||
      firstShape->input.getElementType() != filter.getElementType())
    return emitError(second.getLoc(), "back-to-back convolution: '")
           << firstShape->input.getName() << "', '" << firstShape->filter.getName() << "' and '"
           << filter.getName() << "' must have one element type";
  // A block keeps whole rows (pixels) of Y and of Z: their channel counts are compile-time.
  for (auto [width, what] : {std::pair(firstShape->k, "'" + first.getResult().str() +
                                                         "' stays on chip as the second "
                                                         "convolution's input, all its channels "
                                                         "a pixel"),
                             std::pair(filterDims[0], "each block computes all channels of '" +
                                                          second.getResult().str() +
                                                          "' at its pixels")})
    if (!evaluateExpr(width)) {
      auto symbols = exprSymbols(width);
      return emitError(second.getLoc(), "back-to-back convolution: '")
             << width << "' must be known at compile time: " << what
             << "; declare it as a literal or bind it with -D "
             << (symbols.empty() ? std::string("K") : symbols.front()) << "=...";
    }
  auto out = dimsOf(output.getDims());
  if (failed(expectSame(second, "Conv2d channels differ", firstShape->k,
                        filterDims[krsc ? 3 : 1], filter)) ||
      failed(expectSame(second, "Conv2d batch sizes differ", firstShape->n, out[0], output)) ||
      failed(expectSame(second, "Conv2d output channels differ", filterDims[0], out[3], output)))
    return failure();
  ConvShape pair = *firstShape; // the output pixels are the first convolution's
  pair.output = output;
  pair.pIndex = 1;
  pair.qIndex = 2;
  pair.p = out[1];
  pair.q = out[2];
  return checkConvOutput(kernel, second, first, pair, derived);
}

LogicalResult checkConv(KernelOp kernel, Conv2dOp conv, llvm::StringMap<std::string> &derived) {
  if (Conv2dOp first = producingConv(kernel, conv.getInput(), conv))
    return checkBackToBackConv(kernel, first, conv, derived);
  auto shape = convShape(kernel, conv);
  if (!shape)
    return emitError(conv.getLoc(), "Conv2d needs 4-D tensor parameters as input and filter");
  auto tile = convTiles(kernel, conv);
  auto dims = convDims(kernel, conv);
  if (tile && dims && !tile->loops[2] && !evaluateExpr(dims->k))
    return emitError(conv.getLoc(), "'")
           << dims->k << "' must be known at compile time: no surrounding `for` runs over "
           << "this convolution's reduction, so one tile spans all of it; put it in `for i in 0:"
           << dims->k << ":` or make the sizes literals";
  if (failed(expectSame(
          conv, "Conv2d channels differ", shape->c,
          dimsOf(shape->filter.getDims())[shape->filter.getLayout() == Layout::krsc ? 3 : 1],
          shape->filter)))
    return failure();
  if (!shape->output)
    return success();
  auto out = dimsOf(shape->output.getDims());
  unsigned kIndex = shape->pIndex == 1 ? 3 : 1;
  if (failed(expectSame(conv, "Conv2d batch sizes differ", shape->n, out[0], shape->output)) ||
      failed(
          expectSame(conv, "Conv2d output channels differ", shape->k, out[kIndex], shape->output)))
    return failure();
  return checkConvOutput(kernel, conv, conv, *shape, derived);
}

/// The shape of the register tile an epilogue statement writes.
std::optional<MatrixShape> targetShape(KernelOp kernel, Operation *op, StringRef target) {
  if (isRegisterTile(kernel, target, op))
    return logicalShape(kernel, target, op);
  return std::nullopt;
}

/// A tensor read by an epilogue must fit the tile it is combined with: a
/// vector along the rows or columns, or a matrix of the same shape.
LogicalResult checkEpilogueTensor(KernelOp kernel, Operation *op, StringRef name,
                                  const MatrixShape &target, StringRef targetName) {
  TensorParamOp param = findTensorParam(kernel, name);
  if (!param || isRegisterTile(kernel, name, op) || param.getLayout())
    return success();
  auto dims = dimsOf(param.getDims());
  bool fits;
  if (dims.size() == 1)
    fits = sameExtent(dims[0], target.cols) || sameExtent(dims[0], target.rows);
  else
    fits = (sameExtent(dims[dims.size() - 2], target.rows) || dims[dims.size() - 2] == "1") &&
           (sameExtent(dims.back(), target.cols) || dims.back() == "1");
  if (fits)
    return success();
  return noteDeclared(emitError(op->getLoc(), "'")
                          << name << "' " << spell(dims) << " does not fit '" << targetName
                          << "', which is " << target.rows << " x " << target.cols
                          << " (a vector along its rows or columns, or the same matrix)",
                      param);
}

LogicalResult checkEpilogue(KernelOp kernel, Operation *op) {
  if (auto ew = dyn_cast<ElementwiseOp>(op)) {
    if (ew.getKind() != ElementwiseKind::bias && ew.getKind() != ElementwiseKind::add)
      return success();
    auto target = targetShape(kernel, op, ew.getTarget());
    auto operand = cast<StringAttr>(ew.getOperands()[0]).getValue();
    if (!target)
      return success();
    return checkEpilogueTensor(kernel, op, operand, *target, ew.getTarget());
  }
  auto assign = dyn_cast<AssignOp>(op);
  if (!assign)
    return success();
  std::optional<MatrixShape> target;
  llvm::SmallVector<StringRef> reads;
  assign.getExpression().walk([&](RefOp ref) { reads.push_back(ref.getName()); });
  for (StringRef read : reads)
    if (!target && isRegisterTile(kernel, read, op))
      target = logicalShape(kernel, read, op);
  for (StringRef read : reads)
    if (target && failed(checkEpilogueTensor(kernel, op, read, *target, assign.getTarget())))
      return failure();
  return success();
}

/// A loop around a GEMM or convolution must run over one of its dimensions.
LogicalResult checkLoop(KernelOp kernel, ForOp loop) {
  Operation *compute = nullptr;
  loop.getBody().walk([&](Operation *op) {
    if (!compute && isa<GemmOp, Conv2dOp>(op))
      compute = op;
  });
  if (!compute || loopStep(kernel, loop))
    return success();
  // The second of back-to-back convolutions: a filter with a halo is reported by checkConv.
  if (auto conv = dyn_cast<Conv2dOp>(compute); conv && producingConv(kernel, conv.getInput(), conv))
    if (auto shape = convShape(kernel, conv);
        !shape || evaluateExpr(shape->r) != 1 || evaluateExpr(shape->s) != 1)
      return success();
  // Unknown shapes are reported elsewhere. The diagnostic is made only once it
  // is certain: an InFlightDiagnostic is reported when it goes out of scope.
  std::string what;
  if (auto gemm = dyn_cast<GemmOp>(compute)) {
    auto dims = gemmDims(kernel, gemm);
    if (!dims)
      return success();
    what = "none of the dimensions of the GEMM in it (M = " + dims->m + ", N = " + dims->n +
           ", K = " + dims->k + ")";
  } else if (auto dims = convDims(kernel, cast<Conv2dOp>(compute))) {
    what = "not the reduction " + dims->k + " of the convolution in it";
  } else {
    return success();
  }
  auto diag = emitError(loop.getLoc(), "this loop runs over ")
              << loopExtent(loop) << ", which is " << what;
  diag.attachNote(compute->getLoc())
      << "the loop's " << compute->getName().stripDialect() << " is here";
  return diag;
}

//===----------------------------------------------------------------------===//
// Completion
//===----------------------------------------------------------------------===//

/// Gives a Copy its tile and, inside a loop over one of its dimensions, its coordinate.
LogicalResult completeCopy(KernelOp kernel, CopyOp copy) {
  SmallVector<ForOp> loops = enclosingLoops(copy);
  bool needsCoordinate = !copy.getCoordinate() && !loops.empty();
  if (copy.getTile() && !needsCoordinate)
    return success();
  std::optional<Tile> tile;
  if (copy.getTile()) {
    tile = findCopyTile(kernel, copy);
  } else {
    auto found = copyTile(kernel, copy);
    if (failed(found))
      return failure();
    tile = *found;
  }
  if (!tile)
    return success();
  Builder b(copy.getContext());
  if (!copy.getTile())
    copy.setTileAttr(
        b.getStrArrayAttr(SmallVector<StringRef>(tile->dims.begin(), tile->dims.end())));
  if (!needsCoordinate)
    return success();
  for (ForOp loop : loops)
    if (llvm::is_contained(tile->loops, loop)) {
      copy.setCoordinate(loop.getVar());
      break;
    }
  return success();
}

/// Records a loop's step and trip count (in tiles) as discardable attributes.
void annotateLoop(KernelOp kernel, ForOp loop) {
  auto step = loopStep(kernel, loop);
  if (!step)
    return;
  Builder b(loop.getContext());
  std::string extent = loopExtent(loop);
  loop->setAttr("sketch.step", b.getStringAttr(*step));
  loop->setAttr("sketch.trip_count",
                b.getStringAttr("(" + extent + " + " + *step + " - 1) / " + *step));
}

LogicalResult completeKernel(KernelOp kernel) {
  llvm::StringMap<std::string> derived;
  SmallVector<Operation *> statements = statementsInOrder(kernel);
  for (Operation *op : statements) {
    LogicalResult result = success();
    if (auto alloc = dyn_cast<AllocateOp>(op))
      result = checkGlobalAllocate(kernel, alloc);
    else if (auto gemm = dyn_cast<GemmOp>(op))
      result = checkGemm(kernel, gemm);
    else if (auto conv = dyn_cast<Conv2dOp>(op))
      result = checkConv(kernel, conv, derived);
    else if (auto loop = dyn_cast<ForOp>(op))
      result = checkLoop(kernel, loop);
    else
      result = checkEpilogue(kernel, op);
    if (failed(result))
      return failure();
  }
  for (Operation *op : statements)
    if (auto gemm = dyn_cast<GemmOp>(op); gemm && failed(verifyWholeExtents(kernel, gemm)))
      return failure();
  for (Operation *op : statements)
    if (auto copy = dyn_cast<CopyOp>(op); copy && failed(completeCopy(kernel, copy)))
      return failure();
  for (Operation *op : statements)
    if (auto loop = dyn_cast<ForOp>(op))
      annotateLoop(kernel, loop);
  if (!derived.empty()) {
    Builder b(kernel.getContext());
    SmallVector<NamedAttribute> entries;
    for (auto &entry : derived)
      entries.push_back(b.getNamedAttr(entry.getKey(), b.getStringAttr(entry.getValue())));
    kernel->setAttr("sketch.derived", b.getDictionaryAttr(entries));
  }
  return success();
}

struct InferDimensionsPass : sketch::impl::InferDimensionsBase<InferDimensionsPass> {
  using InferDimensionsBase::InferDimensionsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::string> values(bindings.begin(), bindings.end());
    if (failed(applyBindings(module, values)))
      return signalPassFailure();
    for (KernelOp kernel : module.getOps<KernelOp>())
      if (failed(completeKernel(kernel)))
        signalPassFailure();
  }
};

} // namespace
