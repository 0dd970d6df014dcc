//===- EmitEpilogue.h - fused statements as per-element CUDA ---*- C++ -*-===//
//
// The statements sketch-fuse-epilogue marked (elementwise and `Compute Y =
// EXPR`) become straight-line C++ on one f32 accumulator element: each
// register tile is a local `float v_NAME`, each global tensor a value the
// caller provides (loaded once per element, per row, per column or per block,
// as the tensor's `sketch.index` allows), each scalar its parameter.
//
// Use: create() validates and collects the global operands; the caller emits
// their loads (loadExpr gives a guarded load at given indices), then calls
// emitElement() inside its per-element loop.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_EMITEPILOGUE_H
#define SKETCH_EMIT_EMITEPILOGUE_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/KernelAnalysis.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <utility>

namespace sketch {

/// A global tensor read by the epilogue, and how it is indexed.
struct EpilogueOperand {
  const ParamInfo *param = nullptr;
  /// Per dimension of the tensor: "row", "col", "batchI" or "unit" (a 1, read at 0).
  std::vector<std::string> index;
  bool usesRow = false;
  bool usesCol = false;
  /// A C++ name for its value (unique among the operands).
  std::string var;
  /// A whole [M, N] tensor: read by row and column.
  bool whole() const { return usesRow && usesCol; }
};

/// The indices of the element being computed, as C++ expressions.
struct ElementIndex {
  std::string row, col;           // global row and column (int64_t)
  std::string rows, cols;         // the output's row and column counts (bounds)
  std::vector<std::string> batch; // batch index of each output batch dimension
};

struct AccumulatorStart;

/// An elementwise statement as written in the sketch (`Compute D = relu(D + bias)`), for
/// the comment above its code.
std::string statementText(mlir::Operation *op);

class EpilogueEmitter {
public:
  /// Reads the fused statements `ops`, which start from the register tile
  /// `accumulator` and end with `stored` holding the value to store.
  static mlir::FailureOr<EpilogueEmitter> create(const KernelSignature &sig,
                                                 llvm::ArrayRef<mlir::Operation *> ops,
                                                 llvm::StringRef accumulator,
                                                 llvm::StringRef stored, mlir::Location loc);
  /// create() for a kernel plan: its `sig`, fused `epilogue` statements, `accumulator`
  /// and the Copy `store` that ends them.
  template <typename Plan>
  static mlir::FailureOr<EpilogueEmitter> createFor(const Plan &plan) {
    CopyOp store{plan.store};
    return create(plan.sig, plan.epilogue, plan.accumulator, store.getName(), store.getLoc());
  }

  const std::vector<EpilogueOperand> &operands() const { return operandList; }

  /// The code of the attention scores' statements: functions from sketch::scores (fast
  /// forms, absolutely accurate to about 1e-6: a softmax turns an absolute error of a
  /// score into a relative one of its probability), and a division by scalars and numbers
  /// as a multiplication by their reciprocal (computed once, outside the loop).
  EpilogueEmitter &forScores();

  /// The offset of `operand`'s element at `at` from its base pointer (C++ expression).
  std::string elementOffset(const EpilogueOperand &operand, const ElementIndex &at) const;

  /// A float expression loading `operand` at `at`, zero outside the output.
  std::string loadExpr(const EpilogueOperand &operand, const ElementIndex &at) const;

  /// Statements computing `result` (an existing float lvalue) from the
  /// accumulator value `accExpr`; `value` gives each operand's float expression.
  void emitElement(CudaWriter &w, llvm::StringRef accExpr,
                   llvm::function_ref<std::string(const EpilogueOperand &)> value,
                   llvm::StringRef result) const;

  /// Where the first statement adds a global tensor to the accumulator (`Compute Bias
  /// ACC, x`, `Compute Add ACC, x[, s]`, or an expression `Compute ACC = ...` whose one
  /// read of ACC is in `ACC + x`, through sums folded before): that operand, and an
  /// emitter of the epilogue without it (the other statements, or the expression with
  /// `ACC + x` read as ACC). A kernel may then start its accumulators from the operand
  /// instead of zero, so the epilogue after the main loop loads nothing for it
  /// (docs/backend.md); splitStart again on that emitter finds the next term.
  std::optional<std::pair<AccumulatorStart, EpilogueEmitter>> splitStart() const;

  /// One comment line per statement: what the epilogue does, for the kernel's header.
  std::vector<std::string> describe() const;

  /// Whether a statement evaluates a function beyond ReLU (GELU, SiLU, sigmoid, tanh,
  /// exp): code whose temporaries need registers beside the accumulators.
  bool callsFunctions() const;
  /// How many such calls the statements evaluate an element (plan::functionCalls).
  int64_t functionCalls() const;

  /// Whether an operand is a whole [M, N] tensor (read by row and column).
  bool readsFullTensor() const;

private:
  const KernelSignature *sig = nullptr;
  std::vector<mlir::Operation *> statements;
  std::vector<EpilogueOperand> operandList;
  std::string accumulator, stored;
  std::string functions = "sketch::"; // the namespace of the functions called
  bool reciprocalDivisions = false;   // forScores
  /// splitStart's `ACC + x` nodes in the first statement's expression (each emitted as
  /// its other side) and their x reads.
  std::vector<mlir::Operation *> foldedAdds, foldedTerms;

  static mlir::FailureOr<EpilogueEmitter> build(const KernelSignature &sig,
                                                llvm::ArrayRef<mlir::Operation *> ops,
                                                llvm::StringRef accumulator,
                                                llvm::StringRef stored, mlir::Location loc,
                                                std::vector<mlir::Operation *> foldedAdds,
                                                std::vector<mlir::Operation *> foldedTerms);
  std::optional<std::pair<AccumulatorStart, EpilogueEmitter>> splitExpressionStart() const;

  mlir::LogicalResult addOperand(mlir::Operation *at, llvm::StringRef name);
  mlir::LogicalResult check(mlir::Location loc);
  const EpilogueOperand *operandFor(llvm::StringRef name) const;
  std::string scalarExpr(llvm::StringRef operand) const;
  /// Whether `value` reads a register tile or a global tensor (not only scalars and numbers).
  bool readsTile(mlir::Value value) const;
  std::string expression(mlir::Value value,
                         llvm::function_ref<std::string(const EpilogueOperand &)> load) const;
};

/// The operand the accumulators start from (EpilogueEmitter::splitStart), times `factor`
/// where it is not empty, and the statement it comes from.
struct AccumulatorStart {
  EpilogueOperand operand;
  std::string factor;
  std::string statement;
};

} // namespace sketch

#endif // SKETCH_EMIT_EMITEPILOGUE_H
