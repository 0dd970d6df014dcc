//===- InsertAllocates.cpp - Allocate statements for global and register ---===//
//
// Adds, unless the kernel already has it:
//  - `Allocate X in global (...)` for each tensor parameter that crosses global
//    memory: copied from or to global, or read from global by a GEMM, a
//    convolution or an epilogue. A tensor with more leading dimensions than
//    the 2-D tile gets its last two dimensions `with offset batch_offset`
//    (one batch/head slice per block); a convolution tensor keeps its 4-D shape.
//  - `Allocate X in register (...)` for each register tile a Compute (or a
//    Copy to register) produces, with the block tile of that Compute.
// Each goes right before the top-level statement holding the first use, in
// the order of first use.
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/Passes.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace sketch {
#define GEN_PASS_DEF_INSERTALLOCATES
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;

namespace {

/// One Allocate to add, before `anchor`.
struct PendingAllocate {
  std::string name;
  MemorySpace space;
  SmallVector<std::string> dims;
  std::string offset;
  Operation *anchor;
  Location loc;
};

/// The statement of the kernel body that holds `op`.
Operation *topLevelStatement(KernelOp kernel, Operation *op) {
  while (op->getParentOp() != kernel.getOperation())
    op = op->getParentOp();
  return op;
}

class AllocatePlanner {
public:
  explicit AllocatePlanner(KernelOp kernel) : kernel(kernel) {
    kernel.getBody().walk(
        [&](AllocateOp alloc) { existing.insert(key(alloc.getName(), alloc.getSpace())); });
  }

  LogicalResult plan() {
    for (Operation *op : statementsInOrder(kernel)) {
      if (auto copy = dyn_cast<CopyOp>(op)) {
        if (copy.getSource() == MemorySpace::global || copy.getDestination() == MemorySpace::global)
          addGlobal(copy.getName(), op);
      }
      for (StringRef name : globalReads(op))
        if (!isRegisterTile(kernel, name, op))
          addGlobal(name, op);
      if (failed(addRegisterResult(op)))
        return failure();
    }
    return success();
  }

  void insert() {
    for (const PendingAllocate &pending : planned) {
      OpBuilder builder(pending.anchor);
      SmallVector<StringRef> dims(pending.dims.begin(), pending.dims.end());
      auto alloc = builder.create<AllocateOp>(pending.loc, pending.name, pending.space,
                                              builder.getStrArrayAttr(dims), nullptr);
      if (!pending.offset.empty())
        alloc.setOffset(pending.offset);
    }
  }

private:
  static std::string key(StringRef name, MemorySpace space) {
    return (name + "@" + spellSpace(space)).str();
  }

  /// The names a Compute reads; those that are tensor parameters and not
  /// register tiles are read from global memory.
  static SmallVector<StringRef> globalReads(Operation *op) {
    SmallVector<StringRef> names;
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      names.append({gemm.getLhs(), gemm.getRhs()});
    } else if (auto conv = dyn_cast<Conv2dOp>(op)) {
      names.append({conv.getInput(), conv.getFilter()});
    } else if (auto ew = dyn_cast<ElementwiseOp>(op)) {
      for (Attribute operand : ew.getOperands())
        names.push_back(cast<StringAttr>(operand).getValue());
    } else if (auto assign = dyn_cast<AssignOp>(op)) {
      assign.getExpression().walk([&](RefOp ref) { names.push_back(ref.getName()); });
    }
    return names;
  }

  void addGlobal(StringRef name, Operation *user) {
    TensorParamOp param = findTensorParam(kernel, name);
    if (!param || !existing.insert(key(name, MemorySpace::global)).second)
      return;
    SmallVector<std::string> dims;
    for (Attribute dim : param.getDims())
      dims.push_back(cast<StringAttr>(dim).str());
    std::string offset;
    if (!param.getLayout() && dims.size() > 2) {
      dims.erase(dims.begin(), dims.end() - 2);
      offset = "batch_offset";
    }
    planned.push_back({name.str(), MemorySpace::global, dims, offset,
                       topLevelStatement(kernel, user), user->getLoc()});
  }

  /// The name `op` makes a register tile, if any.
  static std::optional<StringRef> registerResult(Operation *op) {
    if (auto gemm = dyn_cast<GemmOp>(op))
      return gemm.getResult();
    if (auto conv = dyn_cast<Conv2dOp>(op))
      return conv.getResult();
    if (auto assign = dyn_cast<AssignOp>(op))
      return assign.getTarget();
    if (auto copy = dyn_cast<CopyOp>(op); copy && copy.getDestination() == MemorySpace::reg)
      return copy.getName();
    return std::nullopt;
  }

  LogicalResult addRegisterResult(Operation *op) {
    auto name = registerResult(op);
    if (!name || !existing.insert(key(*name, MemorySpace::reg)).second)
      return success();
    auto tile = resultTile(kernel, op);
    if (!tile)
      return emitError(op->getLoc(), "cannot tell the register tile of '")
             << *name << "'; declare it with `Allocate " << *name << " in register (BM, BN)`";
    planned.push_back({name->str(), MemorySpace::reg,
                       SmallVector<std::string>(tile->dims.begin(), tile->dims.end()), "",
                       topLevelStatement(kernel, op), op->getLoc()});
    return success();
  }

  KernelOp kernel;
  llvm::StringSet<> existing;
  SmallVector<PendingAllocate> planned;
};

struct InsertAllocatesPass : sketch::impl::InsertAllocatesBase<InsertAllocatesPass> {
  using InsertAllocatesBase::InsertAllocatesBase;

  void runOnOperation() override {
    for (KernelOp kernel : getOperation().getOps<KernelOp>()) {
      AllocatePlanner planner(kernel);
      if (failed(planner.plan())) {
        signalPassFailure();
        continue;
      }
      planner.insert();
    }
  }
};

} // namespace
