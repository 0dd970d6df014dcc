//===- EmitAttention.cpp - attention kernels to CUDA ----------------------===//
//
// Two stages. Matcher reads, in the kernel's loop over keys,
//   GEMM Q, K (or K^T) -> P ; [statement on P | mask of P]... ; [Softmax P ; [scale of P]...] ;
//   GEMM P, V (or V^T) += O
// and plans the softmax as an online one, or none (a looped back-to-back GEMM:
// O sums the scores times the values); the statements on P are scalings folded into
// one factor or, when one is not, code on each score (P_steps: the epilogue's
// per-element code, tensors broadcast to P) (AttentionPlan: what the kernel needs
// to know, K and V each stored with a key per row or per column; every form it
// cannot generate is a located error naming the rule). KernelWriter and
// writeHost then write the CUDA from pieces (a tile copy per storage order, a B
// operand load per orientation): one block per (BM query rows, leading indices
// of Q), each warp owning MT = BM / (16 * warps) row tiles of 16.
// On sm_90a, for head dimensions multiples of 16 whose tiles fit
// (plan::AttentionTiles::wgmmaFits), the warp-specialized wgmma kernel instead: a
// producer warpgroup loading by TMA, consumer warpgroups of 64 rows
// (flash_hopper.cuh's steps), which also copies the 16-bit [.., S, L] tensors of P_steps
// by TMA with each K tile (stageScoreTensors); with K or V a key per column or such
// tensors, beside the mma.sync kernel (NAME_mma) that the host runs where TMA cannot
// read them: L not a multiple of 8, a staged tensor not 16-byte aligned (mmaFallback).
// docs/backend.md, "Attention", describes the generated kernels.
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Emit/EmitHost.h"
#include "lib/Emit/KernelEmitters.h"
#include "lib/Passes/BackendPlan.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using namespace sketch;
using llvm::formatv;

namespace {

/// A tensor parameter of the attention.
struct TensorInfo {
  std::string name;
  ElementType type;
  std::vector<std::string> dims;
  Operation *op = nullptr;

  llvm::ArrayRef<std::string> leading() const {
    return llvm::ArrayRef<std::string>(dims).drop_back(2);
  }
  const std::string &rows() const { return dims[dims.size() - 2]; }
  const std::string &cols() const { return dims.back(); }
};

/// K or V: stored with one key per row ([L, D]: K used as K^T, V as is) or
/// one key per column ([D, L]: K used as is, V as V^T).
struct KeyTensor : TensorInfo {
  bool keyRows = true;

  const std::string &keys() const { return keyRows ? rows() : cols(); }
  const std::string &depth() const { return keyRows ? cols() : rows(); }
};

/// What the kernel needs to know, read off the program.
struct AttentionPlan {
  mutable KernelOp kernel; // ops' accessors are not const
  std::string name;
  TensorInfo q, o;
  KeyTensor k, v;
  std::string scores;             // P, the first GEMM's result
  std::string loopVar;            // j
  std::vector<std::string> scale; // factors of `Compute P = P * s` / `Compute Scale P, s`
  std::vector<std::string> after; // those after the Softmax (on the probabilities)
  /// The statements on the scores before the Softmax (or the value GEMM), Mask
  /// excluded, in program order; `elementwise`: one is not a scaling, so all of them
  /// run on every score (KernelWriter's P_steps) and `scale` is empty.
  std::vector<Operation *> steps;
  bool elementwise = false;
  plan::ScoreWork work = plan::ScoreWork::scaling; // what `steps` do to each score (checkSteps)
  /// The tensors `steps` read are loaded without guards, at clamped indices: at most
  /// kUnguardedScoreTensors of them (checkSteps), on sm_90a where the consumers' registers
  /// leave room (stageScoreTensors).
  bool unguarded = false;
  /// sm_90a: the tensors `steps` read a BM x BN tile of, copied by TMA beside each K
  /// stage (stageScoreTensors); the others are loaded a score at a time.
  std::vector<EpilogueOperand> staged;
  bool softmax = true;            // false: no Softmax, P is the scaled scores
  bool causal = false;
  plan::AttentionTiles tiles;
  KernelSignature sig; // parameters and size symbols of the host function

  /// The C++ spelling of a dimension: a number, a bound value or the size argument.
  std::string dim(StringRef d) const { return sig.dim(d); }
  /// The C++ name of a parameter.
  std::string cname(StringRef name) const {
    const ParamInfo *param = sig.find(name);
    return param ? param->cname : cIdent(name);
  }
};

bool isInteger(StringRef text) {
  int64_t value;
  return !text.empty() && !text.getAsInteger(10, value);
}

bool isIdentifier(StringRef text) {
  if (text.empty() || !(isalpha(text[0]) || text[0] == '_'))
    return false;
  return llvm::all_of(text, [](char c) { return isalnum(c) || c == '_'; });
}

std::vector<std::string> dimsOf(TensorParamOp param) {
  std::vector<std::string> dims;
  for (Attribute dim : param.getDims())
    dims.push_back(cast<StringAttr>(dim).str());
  return dims;
}

StringRef cudaType(ElementType type) {
  return type == ElementType::bf16 ? "__nv_bfloat16" : type == ElementType::f16 ? "__half" : "float";
}

//===----------------------------------------------------------------------===//
// Recognition
//===----------------------------------------------------------------------===//

/// The most global tensors the statements on the scores read without guards.
constexpr size_t kUnguardedScoreTensors = 2;
/// sm_90a: the consumer registers, past AttentionTiles::consumerRegistersNeeded, that each
/// tensor the statements read (staged or loaded) and one more take where the loaded ones
/// are unguarded. Measured with ptxas -O3 (sm_90a): d = 256, 128 x 64, one staged and one
/// unguarded [S, L] tensor (32 spare of 240) spilled 8 bytes, guarded 0; d = 64, 192 x 64,
/// two unguarded (48 spare of 160) 0.
constexpr int64_t kUnguardedTensorRegisters = 16;

/// The statements on the scores as code on one score (`plan.elementwise`).
FailureOr<EpilogueEmitter> scoreSteps(const AttentionPlan &plan, Location loc) {
  FailureOr<EpilogueEmitter> steps =
      EpilogueEmitter::create(plan.sig, plan.steps, plan.scores, plan.scores, loc);
  if (succeeded(steps))
    steps->forScores();
  return steps;
}

class Matcher {
public:
  Matcher(KernelOp kernel, StringRef arch, AttentionPlan &plan)
      : kernel(kernel), arch(arch), plan(plan) {}

  LogicalResult run() {
    plan.kernel = kernel;
    plan.name = kernel.getSymName().str();
    plan.sig = analyzeSignature(kernel);
    SoftmaxOp softmax;
    int64_t gemms = 0;
    kernel.walk([&](Operation *op) {
      if (auto found = dyn_cast<SoftmaxOp>(op); found && !softmax)
        softmax = found;
      gemms += isa<GemmOp>(op);
    });
    ForOp loop;
    if (softmax && gemms == 1 && !isa<ForOp>(softmax->getParentOp()))
      return softmax.emitError("a Softmax needs whole rows of '")
             << softmax.getName()
             << "' in one warp: it runs between back-to-back GEMMs (on the first one's result) "
                "and online in attention's loop over the keys, not after a single GEMM, whose "
                "blocks compute each row in tiles of BN columns";
    if (softmax) {
      loop = dyn_cast<ForOp>(softmax->getParentOp());
      if (!loop || loop->getParentOp() != kernel.getOperation())
        return softmax.emitError("attention: the Softmax must be computed online, in a top-level "
                                 "loop over the keys that also holds the GEMM of its scores and "
                                 "the GEMM accumulating them times the values");
    } else {
      // A looped back-to-back GEMM (classifyKernel): no softmax, P is the scaled scores.
      plan.softmax = false;
      loop = loopedGemmChain(kernel);
      if (!loop)
        return kernel.emitError("attention: no loop over the keys holds the GEMM of the scores "
                                "and the GEMM accumulating them times the values");
    }
    plan.loopVar = loop.getVar().str();
    if (failed(matchLoop(loop, softmax)) || failed(matchOutside(loop)))
      return failure();
    if (failed(matchTensors(loop)) || failed(checkSteps(loop)) || failed(chooseTiles()))
      return failure();
    return success();
  }

private:
  /// In order: the scores GEMM, [scale | mask]..., the Softmax, [scale]..., the
  /// value GEMM; without a Softmax (`softmax` null): the scores GEMM,
  /// [scale | mask]..., the value GEMM.
  LogicalResult matchLoop(ForOp loop, SoftmaxOp softmax) {
    GemmOp first, second;
    bool softmaxSeen = !softmax; // without one, the value GEMM may follow the scores directly
    for (Operation &op : loop.getBodyBlock()) {
      if (isa<CopyOp, AllocateOp, ReshapeOp>(op))
        continue;
      if (auto gemm = dyn_cast<GemmOp>(op)) {
        if (!first) {
          first = gemm;
          if (failed(checkFirstGemm(gemm, softmax)))
            return failure();
        } else if (!second && softmaxSeen) {
          second = gemm;
          if (failed(checkSecondGemm(gemm)))
            return failure();
        } else {
          return gemm.emitError("attention: one GEMM computes the scores before the Softmax and "
                                "one accumulates the probabilities times the values after it; "
                                "this is a third");
        }
        continue;
      }
      if (&op == softmax.getOperation()) {
        if (!first)
          return softmax.emitError("attention: the Softmax needs its scores computed by a GEMM "
                                   "before it in the loop");
        softmaxSeen = true;
        continue;
      }
      if (!first || second)
        return op.emitError("attention: only scaling and Mask of the scores may sit between the "
                            "GEMMs; this statement is not supported in the loop");
      if (softmax && softmaxSeen) {
        if (failed(matchProbabilityStatement(op)))
          return failure();
      } else if (failed(matchScoreStatement(op))) {
        return failure();
      }
    }
    if (!second && !softmax)
      return first.emitError("attention: the GEMM of the scores '")
             << plan.scores << "' must be followed in its loop by the GEMM that accumulates "
             << "them times the values (Compute GEMM " << plan.scores << ", V and accumulate O)";
    if (!second)
      return softmax.emitError("attention: the Softmax must be followed in its loop by the GEMM "
                               "that accumulates ")
             << plan.scores << " times the values (Compute GEMM " << plan.scores
             << ", V and accumulate O)";
    return success();
  }

  LogicalResult checkFirstGemm(GemmOp gemm, SoftmaxOp softmax) {
    plan.scores = gemm.getResult().str();
    if (softmax && softmax.getName() != gemm.getResult())
      return softmax.emitError("attention: Softmax of '")
             << softmax.getName() << "', but the loop's first GEMM produces '"
             << gemm.getResult() << "'";
    if (gemm.getAccumulate())
      return gemm.emitError("attention: the scores GEMM must `get` ") << plan.scores
                                                                      << " (it is new each step)";
    if (gemm.getLhsTransposed())
      return gemm.emitError("attention: the queries '")
             << gemm.getLhs() << "' must be stored one query per row ([S, D]) and used as "
             << "stored: each block keeps its rows in shared memory for the whole loop";
    plan.q.name = gemm.getLhs().str();
    plan.k.name = gemm.getRhs().str();
    plan.k.keyRows = gemm.getRhsTransposed(); // K^T: [L, D]; K: [D, L]
    return success();
  }

  LogicalResult checkSecondGemm(GemmOp gemm) {
    if (gemm.getLhs() != plan.scores || gemm.getLhsTransposed())
      return gemm.emitError("attention: the second GEMM must read the probabilities '")
             << plan.scores << "' as computed (one query per row) as its left operand";
    if (!gemm.getAccumulate())
      return gemm.emitError("attention: the second GEMM must accumulate its result over the loop");
    plan.v.name = gemm.getRhs().str();
    plan.v.keyRows = !gemm.getRhsTransposed(); // V: [L, D]; V^T: [D, L]
    plan.o.name = gemm.getResult().str();
    return success();
  }

  /// `Compute Mask P causal`, or an elementwise statement on P in place (`Compute
  /// Scale P, s`, `Compute Tanh P`, `Compute P = EXPR`) reading only P, scalars and
  /// numbers: a scaling (P times a factor) or, beside the Mask, a step on every score.
  LogicalResult matchScoreStatement(Operation &op) {
    const std::string &p = plan.scores;
    if (auto mask = dyn_cast<MaskOp>(op)) {
      if (mask.getName() != p)
        return mask.emitError("attention: Mask of '") << mask.getName() << "', expected '" << p
                                                      << "'";
      plan.causal = true;
      maskSeen = true;
      return success();
    }
    if (auto ew = dyn_cast<ElementwiseOp>(op)) {
      if (ew.getTarget() != p)
        return ew.emitError("attention: only statements on the scores '")
               << p << "' are supported between the GEMMs";
      ElementwiseKind kind = ew.getKind();
      if (kind == ElementwiseKind::bias || kind == ElementwiseKind::add) {
        StringRef added = cast<StringAttr>(ew.getOperands()[0]).getValue();
        if (!isa_and_nonnull<TensorParamOp>(kernel.lookupTensorParam(added)))
          return ew.emitError("attention: ")
                 << stringifyElementwiseKind(kind) << " of the scores '" << p << "' adds '"
                 << added << "', which must be a tensor parameter (the only tile between the "
                 << "GEMMs is the scores)";
      }
      if (kind != ElementwiseKind::scale)
        return addStep(&op, std::nullopt);
      auto factor = scalarFactor(ew, cast<StringAttr>(ew.getOperands()[0]).getValue());
      return factor ? addStep(&op, factor) : failure();
    }
    if (auto assign = dyn_cast<AssignOp>(op)) {
      if (assign.getTarget() != p)
        return assign.emitError("attention: only `Compute ")
               << p << " = ...` (the scores in place) is supported between the GEMMs";
      if (failed(checkScoreOperands(assign)))
        return failure();
      auto result = linear(cast<YieldOp>(assign.getExpression().front().back()).getValue());
      if (result && !result->hasScores)
        return assign.emitError("attention: the new scores must be computed from the old ones");
      return addStep(&op, result ? std::optional<std::string>(result->factor) : std::nullopt);
    }
    return op.emitError("attention: this statement is not supported between the GEMMs");
  }

  /// A statement on the scores: a scaling by `factor`, or (none) a step on each score,
  /// which must come before the Mask (masked scores are skipped, not computed).
  LogicalResult addStep(Operation *op, std::optional<std::string> factor) {
    if (!factor && maskSeen)
      return op->emitError("attention: this statement on the scores '")
             << plan.scores << "' must come before `Compute Mask " << plan.scores
             << " causal`: the kernel skips the masked scores, so only a scaling may follow it";
    if (factor)
      plan.scale.push_back(*factor);
    else
      plan.elementwise = true;
    plan.steps.push_back(op);
    return success();
  }

  /// With a step that is not a scaling, every statement on the scores runs on each
  /// score in program order (the factors are not folded): they must compile as such.
  LogicalResult checkSteps(ForOp loop) {
    if (!plan.elementwise)
      return success();
    plan.scale.clear();
    if (failed(indexScoreOperands()))
      return failure();
    FailureOr<EpilogueEmitter> steps = scoreSteps(plan, loop.getLoc());
    if (failed(steps))
      return failure();
    // As ChooseDefaults reads them for the default tiles.
    plan.work = !steps->operands().empty() ? plan::ScoreWork::loads
                : steps->callsFunctions()  ? plan::ScoreWork::functions
                                           : plan::ScoreWork::scaling;
    plan.unguarded = plan.work == plan::ScoreWork::loads &&
                     steps->operands().size() <= kUnguardedScoreTensors;
    return success();
  }

  /// The names an expression on the scores reads: the scores and parameters (global
  /// tensors are broadcast to the scores later, checkSteps).
  LogicalResult checkScoreOperands(AssignOp assign) {
    WalkResult walk = assign.walk([&](RefOp ref) {
      if (ref.getName() == plan.scores || kernel.lookupTensorParam(ref.getName()))
        return WalkResult::advance();
      ref.emitError("attention: '")
          << ref.getName() << "' in a statement on the scores '" << plan.scores
          << "' must be a parameter or a number (the only tile between the GEMMs is the "
          << "scores)";
      return WalkResult::interrupt();
    });
    return failure(walk.wasInterrupted());
  }

  /// The scores' logical dimensions: Q's leading ones, its rows, the keys.
  std::vector<std::string> scoreDims() const {
    std::vector<std::string> dims(plan.q.leading().begin(), plan.q.leading().end());
    dims.push_back(plan.q.rows());
    dims.push_back(plan.k.keys());
    return dims;
  }

  /// Marks how the global tensor `name`, read at `at`, is indexed by a score (the
  /// epilogue's `sketch.index`: per row, per column, full, by leading index).
  LogicalResult indexScoreOperand(Operation *at, StringRef name) {
    std::vector<std::string> dims = plan::tensorDims(kernel, name), scores = scoreDims();
    auto positions = plan::matchBroadcastDims(dims, scores);
    if (!positions)
      return at->emitError("attention: '")
             << name << "[" << llvm::join(dims, ", ") << "]' cannot be broadcast to the scores '"
             << plan.scores << "[" << llvm::join(scores, ", ")
             << "]': each of its dimensions must match one of the scores', in order";
    SmallVector<std::string> names = plan::indexNames(*positions, scores.size());
    SmallVector<StringRef> refs(names.begin(), names.end());
    at->setAttr(plan::kIndexAttr, Builder(at->getContext()).getStrArrayAttr(refs));
    return success();
  }

  /// The global tensors the statements on the scores read, each indexed.
  LogicalResult indexScoreOperands() {
    for (Operation *op : plan.steps) {
      if (auto ew = dyn_cast<ElementwiseOp>(op)) {
        ElementwiseKind kind = ew.getKind();
        if ((kind == ElementwiseKind::bias || kind == ElementwiseKind::add) &&
            failed(indexScoreOperand(op, cast<StringAttr>(ew.getOperands()[0]).getValue())))
          return failure();
        continue;
      }
      WalkResult walk = op->walk([&](RefOp ref) {
        if (!isa_and_nonnull<TensorParamOp>(kernel.lookupTensorParam(ref.getName())) ||
            succeeded(indexScoreOperand(ref, ref.getName())))
          return WalkResult::advance();
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted())
        return failure();
    }
    return success();
  }

  /// After the Softmax, before the value GEMM: `Compute Scale P, s`, `Compute P =
  /// P * s` (the probabilities scaled; folded into the final normalisation).
  LogicalResult matchProbabilityStatement(Operation &op) {
    const std::string &p = plan.scores;
    if (auto ew = dyn_cast<ElementwiseOp>(op);
        ew && ew.getKind() == ElementwiseKind::scale && ew.getTarget() == p) {
      auto factor = scalarFactor(ew, cast<StringAttr>(ew.getOperands()[0]).getValue());
      if (!factor)
        return failure();
      plan.after.push_back(*factor);
      return success();
    }
    if (auto assign = dyn_cast<AssignOp>(op); assign && assign.getTarget() == p)
      return matchProbabilityScaling(assign);
    if (isa<MaskOp>(op))
      return op.emitError("attention: Mask after the Softmax is not supported: a masked "
                          "probability must not count in the row sums; mask the scores '")
             << p << "' before the Softmax";
    return op.emitError("attention: after the Softmax only scaling of the probabilities '")
           << p << "' (`Compute " << p << " = " << p << " * s`, `Compute Scale " << p
           << ", s`) may come before the value GEMM";
  }

  /// A scalar parameter (as float) or a number literal, as C++.
  std::optional<std::string> scalarFactor(Operation *op, StringRef operand) {
    double value;
    if (!operand.getAsDouble(value))
      return formatv("{0}f", operand).str();
    auto scalar = dyn_cast_or_null<ScalarParamOp>(kernel.lookupTensorParam(operand));
    if (!scalar) {
      op->emitError("attention: the scale '") << operand << "' must be a scalar parameter or a "
                                              << "number";
      return std::nullopt;
    }
    std::string name = plan.cname(operand);
    return scalar.getScalarType() == ScalarKind::f32 ? name : "float(" + name + ")";
  }

  /// The value of an expression as (holds P, C++ factor): P times a factor.
  struct Linear {
    bool hasScores;
    std::string factor;
  };

  static std::string multiply(const std::string &a, const std::string &b) {
    if (a == "1.0f")
      return b;
    if (b == "1.0f")
      return a;
    return "(" + a + " * " + b + ")";
  }

  std::optional<Linear> linear(Value value) {
    Operation *def = value.getDefiningOp();
    if (auto ref = dyn_cast<RefOp>(def)) {
      if (ref.getName() == plan.scores)
        return Linear{true, "1.0f"};
      if (!isa_and_nonnull<ScalarParamOp>(kernel.lookupTensorParam(ref.getName())))
        return std::nullopt;
      auto factor = scalarFactor(def, ref.getName());
      return factor ? std::optional<Linear>(Linear{false, *factor}) : std::nullopt;
    }
    if (auto constant = dyn_cast<ConstantOp>(def))
      return Linear{false, formatv("{0}f", constant.getSpelling()).str()};
    if (auto negate = dyn_cast<NegateOp>(def)) {
      auto inner = linear(negate.getOperand());
      return inner ? std::optional<Linear>(Linear{inner->hasScores, "(-" + inner->factor + ")"})
                   : std::nullopt;
    }
    if (auto binary = dyn_cast<BinaryOp>(def)) {
      auto lhs = linear(binary.getLhs()), rhs = linear(binary.getRhs());
      if (!lhs || !rhs)
        return std::nullopt;
      BinaryKind kind = binary.getKind();
      bool scores = lhs->hasScores || rhs->hasScores;
      if (kind == BinaryKind::mul && !(lhs->hasScores && rhs->hasScores))
        return Linear{scores, multiply(lhs->factor, rhs->factor)};
      if (kind == BinaryKind::div && !rhs->hasScores)
        return Linear{scores, "(" + lhs->factor + " / " + rhs->factor + ")"};
      if ((kind == BinaryKind::add || kind == BinaryKind::sub) && !scores)
        return Linear{false, "(" + lhs->factor + (kind == BinaryKind::add ? " + " : " - ") +
                                 rhs->factor + ")"};
    }
    return std::nullopt; // not P times a factor
  }

  /// After the Softmax: `Compute P = P * s` (P times scalars and numbers).
  LogicalResult matchProbabilityScaling(AssignOp assign) {
    auto yield = cast<YieldOp>(assign.getExpression().front().back());
    auto result = linear(yield.getValue());
    if (!result || !result->hasScores)
      return assign.emitError("attention: after the Softmax the probabilities '")
             << plan.scores << "' may only be multiplied or divided by scalars and numbers";
    plan.after.push_back(result->factor);
    return success();
  }

  /// Before the loop: Copy Q (and Allocates); after it: Copy O to global only.
  LogicalResult matchOutside(ForOp loop) {
    bool after = false, stored = false;
    for (Operation &op : kernel.getBodyBlock()) {
      if (&op == loop.getOperation()) {
        after = true;
        continue;
      }
      if (isa<TensorParamOp, ScalarParamOp, AllocateOp, ReshapeOp>(op))
        continue;
      auto copy = dyn_cast<CopyOp>(op);
      if (copy && !after && copy.getDestination() != MemorySpace::global)
        continue;
      if (copy && after && copy.getName() == plan.o.name &&
          copy.getSource() == MemorySpace::reg && copy.getDestination() == MemorySpace::global) {
        stored = true;
        continue;
      }
      return op.emitError("attention: not supported ")
             << (after ? "after" : "before") << " the loop over keys (only `Copy "
             << plan.q.name << "` before it and `Copy " << plan.o.name
             << " from register to global` after it)";
    }
    if (!stored)
      return loop.emitError("attention: the loop must be followed by `Copy ")
             << plan.o.name << " from register to global`";
    return success();
  }

  LogicalResult lookup(TensorInfo &info, Operation *user) {
    auto param = dyn_cast_or_null<TensorParamOp>(kernel.lookupTensorParam(info.name));
    if (!param)
      return user->emitError("attention: '") << info.name << "' must be a tensor parameter";
    info.type = param.getElementType();
    info.dims = dimsOf(param);
    info.op = param;
    if (info.dims.size() < 2)
      return param.emitError("attention: '") << info.name << "' needs at least 2 dimensions";
    if (info.type == ElementType::f32)
      return param.emitError("attention: '")
             << info.name << "' is f32; the attention backend runs on tensor cores and needs "
             << "f16 or bf16";
    return success();
  }

  LogicalResult matchTensors(ForOp loop) {
    for (TensorInfo *info : {&plan.q, static_cast<TensorInfo *>(&plan.k),
                             static_cast<TensorInfo *>(&plan.v), &plan.o})
      if (failed(lookup(*info, loop)))
        return failure();
    for (const TensorInfo *info : {static_cast<TensorInfo *>(&plan.k),
                                   static_cast<TensorInfo *>(&plan.v), &plan.o}) {
      if (info->type != plan.q.type)
        return info->op->emitError("attention: '")
               << info->name << "' is " << spellElementType(info->type) << " but '" << plan.q.name
               << "' is " << spellElementType(plan.q.type) << "; all four must agree";
      if (info->dims.size() != plan.q.dims.size())
        return info->op->emitError("attention: '")
               << info->name << "' has " << info->dims.size() << " dimensions, '" << plan.q.name
               << "' has " << plan.q.dims.size();
    }
    if (failed(matchShapes()))
      return failure();
    if (loop.getUpper() != plan.k.keys() || loop.getLower() != "0")
      return loop.emitError("attention: the loop must run over the keys, 0:") << plan.k.keys();
    for (const TensorInfo *info : {&plan.q, static_cast<TensorInfo *>(&plan.k),
                                   static_cast<TensorInfo *>(&plan.v), &plan.o})
      for (const std::string &dim : info->dims)
        if (!isInteger(dim) && !isIdentifier(dim))
          return info->op->emitError("attention: dimension '")
                 << dim << "' of '" << info->name << "' must be a size symbol or a number";
    if (failed(headDim(plan.q, plan.q.cols(), plan.tiles.dqk)) ||
        failed(headDim(plan.v, plan.v.depth(), plan.tiles.dv)))
      return failure();
    return checkGroups();
  }

  /// Q [S, Dqk], K [L, Dqk] or [Dqk, L], V [L, Dv] or [Dv, L], O [S, Dv] by size
  /// symbol; O has Q's leading dimensions and V has K's.
  LogicalResult matchShapes() {
    const KeyTensor &k = plan.k, &v = plan.v;
    auto where = [](const KeyTensor &t) { return t.keyRows ? "rows" : "columns"; };
    if (k.depth() != plan.q.cols())
      return k.op->emitError("attention: the head dimension of '")
             << k.name << "' (" << k.depth() << ") differs from '" << plan.q.name << "' ("
             << plan.q.cols() << "): the scores GEMM reduces over it";
    if (v.keys() != k.keys())
      return v.op->emitError("attention: '")
             << v.name << "' must hold the keys of '" << k.name << "' (" << k.keys()
             << ") along its " << where(v) << ", as used in the second GEMM";
    if (plan.o.rows() != plan.q.rows() || plan.o.cols() != v.depth())
      return plan.o.op->emitError("attention: '")
             << plan.o.name << "' must be [" << plan.q.rows() << ", " << v.depth()
             << "]: a row per query of '" << plan.q.name << "', a column per value dimension of '"
             << v.name << "'";
    if (plan.o.leading() != plan.q.leading())
      return plan.o.op->emitError("attention: '")
             << plan.o.name << "' must have the leading dimensions of '" << plan.q.name << "'";
    if (v.leading() != k.leading())
      return v.op->emitError("attention: '")
             << v.name << "' must have the leading dimensions of '" << k.name << "'";
    return success();
  }

  /// A head dimension: known at compile time and a multiple of 16, the depth of
  /// one m16n8k16 step of Q K^T and two 8-column tiles of P V.
  LogicalResult headDim(const TensorInfo &info, const std::string &dim, int64_t &out) {
    std::string value = plan.dim(dim);
    if (!isInteger(value))
      return info.op->emitError("attention: the head dimension '")
             << dim << "' of '" << info.name << "' must be known at compile time; write a "
             << "number or bind it, e.g. -D " << dim << "=128";
    StringRef(value).getAsInteger(10, out);
    if (out > 65536)
      return info.op->emitError("attention: head dimension ")
             << out << " of '" << info.name << "' is more than 65536, far past the shared "
             << "memory of a block";
    if (out <= 0 || out % 16 != 0)
      return info.op->emitError("attention: head dimension ")
             << out << " of '" << info.name << "' must be a positive multiple of 16: the "
             << "tensor cores' m16n8k16 MMA reduces 16 deep and covers 16 columns (two tiles "
             << "of 8) at a time";
    return success();
  }

  /// Grouped heads: each leading dimension of K that differs from Q's divides it.
  LogicalResult checkGroups() {
    for (size_t i = 0; i < plan.q.leading().size(); ++i) {
      std::string qd = plan.dim(plan.q.leading()[i]), kd = plan.dim(plan.k.leading()[i]);
      int64_t a = 0, b = -1;
      if (qd == kd || !isInteger(kd))
        continue;
      StringRef(kd).getAsInteger(10, b);
      if (b == 0 || (!StringRef(qd).getAsInteger(10, a) && a % b != 0))
        return plan.k.op->emitError("attention: '")
               << plan.k.name << "' dimension " << i << " (" << kd << ") must divide '"
               << plan.q.name << "' dimension " << i << " (" << qd << ")";
    }
    return success();
  }

  /// The directives, or the defaults' rules (plan::AttentionTiles), checked
  /// against the MMA shape, the register file and shared memory.
  LogicalResult chooseTiles() {
    plan::AttentionTiles &t = plan.tiles;
    t.alike = plan.k.keyRows && plan.v.keyRows && t.dqk == t.dv;
    t.work = plan.work;
    const plan::AttentionTiles defaults =
        plan::AttentionTiles::defaults(t.dqk, t.dv, t.alike, plan.causal, arch, plan.work);
    t.bm = kernel.getTileM() ? int64_t(*kernel.getTileM()) : defaults.bm;
    t.bn = kernel.getTileN() ? int64_t(*kernel.getTileN()) : defaults.bn;
    t.warps = kernel.getWarps() ? int64_t(*kernel.getWarps()) : defaults.warps;
    t.stages = kernel.getStages() ? int64_t(*kernel.getStages()) : 2;
    if (t.warps <= 0 || t.bm <= 0 || t.bm % (16 * t.warps) != 0)
      return kernel.emitError("attention: tile BM = ")
             << t.bm << " must be a multiple of 16 x " << t.warps
             << " warps: each warp owns whole 16-row MMA tiles of the queries";
    if (t.bn <= 0 || t.bn % 16 != 0)
      return kernel.emitError("attention: tile BN = ")
             << t.bn << " must be a multiple of 16: the keys of a step are the depth of the "
             << "second GEMM, 16 per MMA";
    if (t.hopperTakes(arch)) {
      t.wgmma = true; // the Hopper kernel where its tiles fit, mma.sync's otherwise
      if (!kernel.getStages()) // the default: as many as fit (withMostStages)
        t = t.withMostStages(arch);
      stageScoreTensors();
      return success();
    }
    if (t.stages != 2)
      return kernel.emitError("attention: stages ")
             << t.stages << " is not supported; K and V are double-buffered (stages 2) but "
             << "in the sm_90a kernel (2 or more, within shared memory)";
    int64_t limit = plan::smemLimitBytes(arch);
    if (t.smemBytes() > limit)
      return kernel.emitError("attention: the shared tiles of Q (BM x ")
             << t.dqk << ") and of K and V (BN keys x " << t.dqk << " and x " << t.dv
             << ", two stages each) need " << t.smemBytes()
             << " bytes of shared memory, more than the " << limit << " a block can use on "
             << arch << ": use a smaller tile BM or BN";
    if (!t.fitsRegisters())
      return kernel.emitError("attention: each thread would keep ")
             << t.outputRegisters() << " f32 registers of O (" << t.bm / t.warps
             << " rows a warp x " << t.dv << ", over 32 lanes) and " << t.scoreRegisters()
             << " of the scores (x " << t.bn << "); of its 255 registers the accumulators may "
             << "take " << plan::kAttentionAccumulatorRegisters << ", the scores "
             << plan::kAttentionScoreRegisters
             << " (the rest holds the operands): use fewer rows a warp (tile BM or warps) or a "
             << "smaller tile BN";
    return success();
  }

  /// sm_90a: the 16-bit tensors the statements on the scores read a whole tile of
  /// ([.., S, L]: a query per row, a key per column) come by TMA with each K tile, as
  /// many as shared memory holds beside the stages: one coalesced copy instead of a
  /// 2-byte load a score (8 rows of a warp's load in the accumulator layout).
  void stageScoreTensors() {
    if (plan.work != plan::ScoreWork::loads)
      return;
    FailureOr<EpilogueEmitter> steps = scoreSteps(plan, kernel.getLoc());
    for (const EpilogueOperand &operand : steps->operands()) {
      const std::vector<std::string> &index = operand.index;
      size_t n = index.size();
      if (plan::elementBytes(operand.param->type) != 2 || n < 2 || index[n - 2] != "row" ||
          index[n - 1] != "col")
        continue;
      plan::AttentionTiles more = plan.tiles;
      ++more.scoreTiles;
      if (!more.wgmmaFits(arch))
        break;
      plan.tiles = more;
      plan.staged.push_back(operand);
    }
    int64_t spare = plan.tiles.consumerRegisters() - plan.tiles.consumerRegistersNeeded();
    int64_t tensors = int64_t(steps->operands().size());
    if (plan.staged.size() < steps->operands().size() &&
        spare < kUnguardedTensorRegisters * (tensors + 1))
      plan.unguarded = false;
  }

  KernelOp kernel;
  StringRef arch;
  AttentionPlan &plan;
  bool maskSeen = false; // matchScoreStatement passed the Mask
};

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

/// The factor of the scores: the scaling statements, times log2(e) for the
/// softmax's exp2 (empty without either).
std::string scaleExpr(const AttentionPlan &plan) {
  std::string out;
  for (const std::string &factor : plan.scale)
    out += (out.empty() ? "" : " * ") + factor;
  if (plan.softmax)
    out += (out.empty() ? "" : " * ") + std::string("1.4426950408889634f");
  return out;
}

/// The factor of the probabilities (the scaling after the Softmax), or empty.
std::string afterExpr(const AttentionPlan &plan) {
  std::string out;
  for (const std::string &factor : plan.after)
    out += (out.empty() ? "" : " * ") + factor;
  return out;
}

/// A B operand of m16n8k16 in its swizzled shared tile, by the tile's rows: the
/// MMA's N (the operand as stored: plain ldmatrix, two N tiles of 8 a load) or
/// its K (ldmatrix.trans). `tile`: K or V; `cols`: the tile's row length.
struct OperandTile {
  std::string tile, cols;
  bool rowsAreK;

  /// The lane's SwizzledLane (see the comment before it in the kernel).
  std::string lane() const {
    return formatv(rowsAreK ? "const SwizzledLane<{1}> {0}_lane({0}_s, lane % 8 + ((lane / 8) % 2) "
                              "* 8, lane / 16);"
                            : "const SwizzledLane<{1}> {0}_lane({0}_s, lane % 8 + (lane / 16) * 8, "
                              "(lane / 8) % 2);",
                   tile, cols)
        .str();
  }

  /// The fragments b[0..1][0..1] of N tiles n, n + 1 at k-step k.
  std::string load(StringRef b) const {
    return formatv(rowsAreK ? "ldmatrix_x4_trans({1}[0][0], {1}[0][1], {1}[1][0], {1}[1][1], "
                              "{0}_lane.at(n, 16 * k, {0}_stage));"
                            : "ldmatrix_x4({1}[0][0], {1}[0][1], {1}[1][0], {1}[1][1], "
                              "{0}_lane.at(2 * k, n * 8, {0}_stage));",
                   tile, b)
        .str();
  }
};

/// The product of `dims` as an int64_t expression.
std::string product(const AttentionPlan &plan, llvm::ArrayRef<std::string> dims) {
  std::string out = "int64_t(1)";
  for (const std::string &dim : dims)
    out += " * " + plan.dim(dim);
  return out;
}

/// The tensors the sm_90a kernel reads by TMA, a map (NAME_map) each, in the order of its
/// parameters and the host's arguments: Q, K, V, the staged ones.
std::vector<std::string> tensorMapNames(const AttentionPlan &plan) {
  std::vector<std::string> maps{"Q", "K", "V"};
  for (const EpilogueOperand &t : plan.staged)
    maps.push_back(t.param->cname);
  return maps;
}

/// The leading dimensions where K's differs from Q's (grouped heads: K's divides Q's).
std::vector<size_t> groupedDims(const AttentionPlan &plan) {
  auto q = plan.q.leading(), k = plan.k.leading();
  std::vector<size_t> dims;
  for (size_t i = 0; i < std::min(q.size(), k.size()); ++i)
    if (q[i] != k[i])
      dims.push_back(i);
  return dims;
}

/// Whether generated C++ expression `expr` names a variable: an identifier's first letter
/// that is not inside a number (the `e` and `f` of 2e-3f follow a digit).
bool namesVariable(StringRef expr) {
  static const llvm::Regex identifier("(^|[^0-9.A-Za-z_])[A-Za-z_]");
  return identifier.match(expr);
}

/// What the host derives from the sizes and scalars for the kernel, in its parameters'
/// constant bank (ptxas recomputes from there, or reads in place, what a register would
/// hold through the key loop; the mma.sync kernel at d = 128 has none to spare): each grouped
/// dimension i's group size `group<i>` (Q's size over K's, a multiply-shift), and the scores'
/// factor `P_scale` (scaleExpr) where it names a scalar (a constant one stays `constexpr` in the
/// kernel). `arguments`: the host's expressions, else the kernel's parameters.
std::string derivedValues(const AttentionPlan &plan, bool arguments) {
  std::string list;
  for (size_t i : groupedDims(plan))
    list += arguments ? formatv(", sketch::FastDivmod(int({0} / {1}))",
                                plan.dim(plan.q.leading()[i]), plan.dim(plan.k.leading()[i]))
                            .str()
                      : formatv(", const sketch::FastDivmod group{0}", i).str();
  if (std::string scale = scaleExpr(plan); namesVariable(scale))
    list += arguments ? ", float(" + scale + ")" : ", const float P_scale";
  return list;
}

/// Whether the sm_90a kernel may split a row tile's keys over the blocks of a cluster (the
/// host's sketch::key_splits, for grids short of the SMs): sketch-choose-defaults' rule
/// (plan::kKeySplitsAttr: the statements on the scores read no tensor at a key index, so a
/// block's keys may be counted from its first); never the mma.sync kernel beside it.
bool splitsKeys(const AttentionPlan &plan) {
  return plan.tiles.wgmma && plan.kernel->hasAttr(plan::kKeySplitsAttr);
}

class KernelWriter {
public:
  KernelWriter(const AttentionPlan &plan, CudaWriter &w) : plan(plan), w(w) {}

  void write() {
    writeConstants();
    w.line();
    w.line("__global__ void __launch_bounds__(" + ns() + "::THREADS, " +
           (plan.tiles.wgmma ? ns() + "::BLOCKS_PER_SM" : std::string("1")) + ")");
    std::string maps;
    if (plan.tiles.wgmma)
      for (const std::string &t : tensorMapNames(plan))
        maps += ", const __grid_constant__ CUtensorMap " + t + "_map";
    w.open(plan.name + "_kernel(" +
           kernelParameterList(plan.sig, [](const ParamInfo &) { return true; }) + maps +
           derivedValues(plan, false) + (plan.causal ? ", int row_base" : "") + ")");
    w.line("using namespace " + ns() + ";");
    w.line("using namespace sketch;");
    if (plan.tiles.wgmma) {
      writeHopperSetup();
      writeBlockCoordinates();
      writeHopperRoles();
    } else {
      writeSetup();
      writeBlockCoordinates();
      writePrologue();
      writeLoop();
      writeEpilogue();
    }
    w.close();
  }

private:
  std::string ns() const { return plan.name + "_tiles"; }

  /// The tile's name, row length and orientation as the scores GEMM's B (K) or P V's (V).
  OperandTile keysOperand() const { return {"K", plan.k.keyRows ? "DQK" : "BN", !plan.k.keyRows}; }
  OperandTile valuesOperand() const { return {"V", plan.v.keyRows ? "DV" : "BN", plan.v.keyRows}; }

  /// Whether a warp must wait for the whole block before staging O at the start
  /// of shared memory: when its rows there reach V's stages (still read by
  /// other warps' last P V), or when a row tile may run no step (causal) and
  /// other threads' copies of Q may still be landing.
  bool stagingWaitsForBlock() const {
    const plan::AttentionTiles &t = plan.tiles;
    return plan.causal || t.bm * t.dv > t.bm * t.dqk + 2 * t.bn * t.dqk;
  }

  /// Whether the kernel may split a row tile's keys (the free function of that name).
  bool splitsKeys() const { return ::splitsKeys(plan); }

  /// Whether O's staging tile is larger than the tiles of the loop.
  bool stagingLarger() const {
    const plan::AttentionTiles &t = plan.tiles;
    return t.bm * t.dv > t.bm * t.dqk + 2 * t.bn * (t.dqk + t.dv);
  }

  std::string describeLayout(const KeyTensor &t, StringRef depth) const {
    return t.keyRows ? formatv("[BN][{0}] (a key per row)", depth).str()
                     : formatv("[{0}][BN] (a key per column)", depth).str();
  }

  void writeConstants() {
    const std::string &p = plan.scores;
    const plan::AttentionTiles &t = plan.tiles;
    std::string middle = plan.softmax
                             ? formatv("Compute Softmax {0}, online over {1}", p, plan.loopVar).str()
                             : formatv("no Softmax: {0} is the scaled scores, summed over {1}",
                                       p, plan.loopVar)
                                   .str();
    w.comment(formatv("kernel {0}: Compute GEMM {1}, {2}{3} and get {4}; {5}; Compute GEMM {4}, "
                      "{6}{7} and accumulate {8}.",
                      plan.name, plan.q.name, plan.k.name, plan.k.keyRows ? "^T" : "", p, middle,
                      plan.v.name, plan.v.keyRows ? "" : "^T", plan.o.name)
                  .str());
    w.open("namespace " + ns());
    w.line(formatv("using T = {0};", cudaType(plan.q.type)).str());
    w.line(formatv("constexpr int BM = {0}, BN = {1}; // query rows, keys per step of {2}", t.bm,
                   t.bn, plan.loopVar)
               .str());
    w.line(formatv("constexpr int DQK = {0}, DV = {1}; // head dimensions of {2} and {3}, of {4}",
                   t.dqk, t.dv, plan.q.name, plan.k.name, plan.v.name)
               .str());
    if (t.wgmma) {
      writeHopperConstants();
      w.close(" // namespace " + ns());
      return;
    }
    w.line(formatv("constexpr int WARPS = {0}, THREADS = 32 * WARPS;", t.warps).str());
    w.line("constexpr int MT = BM / (16 * WARPS);                // row tiles of 16 per warp");
    w.line("constexpr int NT_P = BN / 8, NT_O = DV / 8;          // column tiles of 8 of " + p +
           " and " + plan.o.name);
    w.line("constexpr int TILE_Q = BM * DQK * 2, TILE_K = BN * DQK * 2, TILE_V = BN * DV * 2; // bytes");
    w.comment(plan.q.name + "; " + plan.k.name + " and " + plan.v.name +
              ", two stages each; after the loop " + plan.o.name + "'s staging tile (BM, DV) "
              "reuses them" + (stagingLarger() ? ", and needs more." : "."));
    w.line(stagingLarger() ? "constexpr int SMEM = BM * DV * 2;"
                           : "constexpr int SMEM = TILE_Q + 2 * (TILE_K + TILE_V);");
    w.line(std::string("constexpr bool CAUSAL = ") + (plan.causal ? "true" : "false") +
           ";            // Compute Mask " + p + " causal");
    w.close(" // namespace " + ns());
  }

  //===--------------------------------------------------------------------===//
  // sm_90a: a producer warpgroup (TMA) and consumer warpgroups (wgmma)
  //===--------------------------------------------------------------------===//

  void writeHopperConstants() {
    const plan::AttentionTiles &t = plan.tiles;
    const std::string &p = plan.scores;
    w.comment("sm_90a: warpgroup 0 loads (one thread issues TMA), warpgroups 1.. each own 64 "
              "rows and run");
    w.comment(std::string("both GEMMs on wgmma (m64 x BN scores, m64 x DV output) with ") +
              (plan.softmax ? "the online softmax" : "the scaling of the scores") + " in between.");
    w.line(formatv("constexpr int CONSUMERS = {0}, THREADS = 128 * (1 + CONSUMERS); // warpgroups",
                   t.bm / 64)
               .str());
    w.line("constexpr int NT_P = BN / 8, NT_O = DV / 8; // accumulator rows of 4 of " + p +
           " and " + plan.o.name);
    w.comment("Shared tiles in panels of 64 columns; a head dimension short of a whole panel "
              "reads zeros past it.");
    w.comment("A tile stored a key per column is BN / 64 panels of 64 keys x its head "
              "dimension's rows.");
    w.line(plan.v.keyRows ? "constexpr int QK_PANELS = (DQK + 63) / 64, V_PANELS = (DV + 63) / 64;"
                          : "constexpr int QK_PANELS = (DQK + 63) / 64;");
    w.line(std::string("constexpr int TILE_Q = BM * QK_PANELS * 128, TILE_K = ") +
           (plan.k.keyRows ? "BN * QK_PANELS * 128" : "BN * DQK * 2") +
           ", TILE_V = " + (plan.v.keyRows ? "BN * V_PANELS * 128" : "BN * DV * 2") +
           "; // bytes");
    w.line(formatv("constexpr int STAGES = {0}; // of K and V", t.stages).str());
    if (!plan.staged.empty())
      w.line("constexpr int TILE_P = BM * BN * 2; // bytes: a staged tile of a tensor on " + p +
             " (BM queries x BN keys)");
    w.comment(plan.q.name + " (panels of 64 columns x BM rows, 128-byte swizzle); " + plan.k.name +
              " and " + plan.v.name + ", STAGES stages each" +
              (plan.staged.empty() ? ";" : ", and the staged tiles beside K's;"));
    w.comment("1024 bytes to align them for the swizzle; the mbarriers.");
    w.line(formatv("constexpr int SMEM = {0};", t.smemBytes()).str());
    w.comment(t.blocksPerSm() == 1
                  ? "One block an SM."
                  : "Blocks an SM: one's loads, first scores and store overlap another's key loop.");
    w.line(formatv("constexpr int BLOCKS_PER_SM = {0};", t.blocksPerSm()).str());
    w.comment("setmaxnreg: the producer keeps few registers, the consumers share the rest of "
              "the block's (only when that is more than the launch gives them).");
    w.line(formatv("constexpr int PRODUCER_REGS = {0}, CONSUMER_REGS = {1};",
                   plan::kAttentionProducerRegisters, t.consumerRegisters())
               .str());
    w.line("constexpr bool REALLOCATE = CONSUMER_REGS > 65536 / BLOCKS_PER_SM / THREADS;");
    w.line(std::string("constexpr bool CAUSAL = ") + (plan.causal ? "true" : "false") +
           ";            // Compute Mask " + p + " causal");
    if (splitsKeys()) {
      w.comment("Key splits (a grid short of the SMs: the host's sketch::key_splits): the blocks "
                "of a cluster share a");
      w.comment("row tile's key tiles, then stage their f32 rows over " + plan.q.name +
                " and the stages and sum each other's.");
      w.line("constexpr bool KEY_SPLITS = sketch::KeySplitTile<BM, DV>::kBytes <= TILE_Q + "
             "STAGES * (TILE_K + TILE_V);");
    }
    if (plan.softmax) {
      w.comment("The online softmax moves a row's max only when a score passes it by more than "
                "this (log2");
      w.comment("units): the probabilities stay below 2^8 and most tiles skip the rescaling of " +
                plan.o.name + ".");
      w.line("constexpr float MAX_SLACK = 8.0f;");
    }
  }

  void writeHopperSetup() {
    w.line("extern __shared__ __align__(128) unsigned char smem[];  // tiles aligned below");
    w.line("const uint32_t Q_s = (smem_addr(smem) + 1023u) & ~1023u;");
    w.line("const uint32_t K_s = Q_s + TILE_Q;     // stage i at K_s + i * TILE_K: " +
           describeLayout(plan.k, "DQK"));
    w.line("const uint32_t V_s = K_s + STAGES * TILE_K; // stage i at V_s + i * TILE_V: " +
           describeLayout(plan.v, "DV"));
    std::string last = "V_s + STAGES * TILE_V";
    for (const EpilogueOperand &operand : plan.staged) {
      const std::string &t = operand.param->cname;
      w.line("const uint32_t " + t + "_s = " + last + "; // stage i at " + t +
             "_s + i * TILE_P: 64-key panels of BM queries, with K's stage i");
      last = t + "_s + STAGES * TILE_P";
    }
    w.comment(std::string("mbarriers: Q landed; K") + (plan.staged.empty() ? "" : " (and the staged tiles)") +
              ", V of stage i landed (full); K, V of stage i read by every consumer warp (empty).");
    w.line("const uint32_t Q_full = " + last + ";");
    w.line("const uint32_t K_full = Q_full + 8, V_full = K_full + 8 * STAGES;");
    w.line("const uint32_t K_empty = V_full + 8 * STAGES, V_empty = K_empty + 8 * STAGES;");
    w.open("if (threadIdx.x == 0)");
    w.line("mbarrier_init(Q_full, 1);");
    w.open("for (int i = 0; i < STAGES; ++i)");
    w.line("mbarrier_init(K_full + 8 * i, 1);");
    w.line("mbarrier_init(V_full + 8 * i, 1);");
    w.line("mbarrier_init(K_empty + 8 * i, 4 * CONSUMERS);");
    w.line("mbarrier_init(V_empty + 8 * i, 4 * CONSUMERS);");
    w.close();
    w.line("fence_mbarrier_init();");
    w.close();
    w.line("__syncthreads();");
  }

  void writeHopperRoles() {
    w.line();
    w.comment("Warp specialization: each role is one branch (setmaxnreg needs it).");
    w.open("if (threadIdx.x < 128)");
    w.line("if constexpr (REALLOCATE)");
    w.line("  sketch::setmaxnreg_dec<PRODUCER_REGS>();");
    w.open("if (threadIdx.x == 0)");
    writeProducer();
    w.close();
    w.close(" else {");
    w.indentMore();
    w.line("if constexpr (REALLOCATE)");
    w.line("  sketch::setmaxnreg_inc<CONSUMER_REGS>();");
    writeConsumer();
    w.close();
  }

  void writeProducer() {
    const std::string &j = plan.loopVar;
    w.comment("Copy " + plan.q.name + " (BM, DQK) from global to shared by TMA (rows past " +
              plan.q.rows() + " read as zero).");
    w.line("mbarrier_arrive_expect_tx(Q_full, TILE_Q);");
    w.line("tma_load_panels<QK_PANELS, BM>(Q_s, &Q_map, m0, Q_head, Q_full);");
    w.comment(formatv("for {0} in 0:{1}: Copy {2} and {3} in coordinate [L = {0}] from global to "
                      "shared, into stage {0} % STAGES",
                      j, plan.k.keys(), plan.k.name, plan.v.name)
                  .str());
    w.comment("once every consumer warp has released what it held there (keys past L read as "
              "zero), in the order");
    w.comment("the consumers take them: K_0, then K_{j+1} before V_j (the scores of j + 1 are "
              "issued with P V of j).");
    writeKeysLoader();
    w.line("if (tiles > 0)");
    w.line("  load_keys(0);");
    if (prefetchesNextWave())
      writeNextWavePrefetch();
    w.open("for (int j = 0; j < tiles; ++j)");
    w.line("if (j + 1 < tiles)");
    w.line("  load_keys(j + 1);");
    w.line("const int stage = j % STAGES;");
    w.line("if (j >= STAGES)");
    w.line("  mbarrier_wait(V_empty + 8 * stage, (j / STAGES - 1) & 1);");
    w.line("mbarrier_arrive_expect_tx(V_full + 8 * stage, TILE_V);");
    w.line(keysLoad(plan.v, "V_PANELS", "DV") + "(V_s + stage * TILE_V, &V_map, " + firstKey("j") +
           ", KV_head, V_full + 8 * stage);");
    w.close();
  }

  /// Without a mask every block of a one-block-an-SM grid costs the same, so the block one
  /// wave later (linear index + SMs) is about the one this SM takes next: its Q, K_0 and V_0
  /// are asked into L2 after this block's Q and K_0.
  bool prefetchesNextWave() const {
    return plan.tiles.wgmma && !plan.causal && plan.tiles.blocksPerSm() == 1;
  }

  void writeNextWavePrefetch() {
    w.comment("The block one wave later (linear index + SMs, about the one this SM runs next): "
              "its Q, K_0, V_0 into L2.");
    if (splitsKeys()) {
      w.open("if (splits == 1)");
    } else {
      w.line("{");
      w.indentMore();
    }
    w.line("unsigned sms;");
    w.line("asm(\"mov.u32 %0, %%nsmid;\" : \"=r\"(sms));");
    w.line("const unsigned next = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z) "
           "+ sms;");
    w.open("if (next < gridDim.x * gridDim.y * gridDim.z)");
    w.line("const int n_m0 = (int(gridDim.x) - 1 - int(next % gridDim.x)) * BM;");
    writeLeadingIndices("n_i", "int(next / gridDim.x % gridDim.y)",
                        "int(next / (gridDim.x * gridDim.y))", "const int ",
                        !takesOuterIndex(plan.q) || !takesOuterIndex(plan.k));
    w.line("const int n_q = int(" + leadingIndex(plan.q, "n_i") + "), n_kv = int(" +
           leadingIndex(plan.k, "n_i") + ");");
    w.line("tma_prefetch_tile_panels<QK_PANELS>(&Q_map, 0, n_m0, n_q);");
    w.comment("K_0 and V_0 of another head only: this block's own are in L2 already.");
    w.open("if (n_kv != KV_head)");
    w.line("tma_prefetch_tile_panels<" + keyPanels(plan.k, "QK_PANELS") + ">(&K_map, 0, 0, n_kv);");
    w.line("tma_prefetch_tile_panels<" + keyPanels(plan.v, "V_PANELS") + ">(&V_map, 0, 0, n_kv);");
    w.close();
    w.close();
    w.close();
  }

  /// The boxes of a K or V tile: head-dimension panels of BN keys, or key panels.
  static std::string keyPanels(const KeyTensor &t, StringRef panels) {
    return t.keyRows ? panels.str() : "BN / 64";
  }

  /// The producer's copy of key tile t (a lambda: the loop takes t = 0 first, then
  /// t = j + 1 before V_j).
  void writeKeysLoader() {
    for (const EpilogueOperand &t : plan.staged)
      w.line("const int " + t.param->cname + "_matrix = " + stagedMatrix(t) +
             "; // the block's matrix of " + t.param->cname + "_map");
    w.open("const auto load_keys = [&](int t)");
    w.line("const int stage = t % STAGES;");
    w.line("if (t >= STAGES)");
    w.line("  mbarrier_wait(K_empty + 8 * stage, (t / STAGES - 1) & 1);");
    w.line(formatv("mbarrier_arrive_expect_tx(K_full + 8 * stage, TILE_K{0});",
                   plan.staged.empty() ? "" : formatv(" + {0} * TILE_P", plan.staged.size()).str())
               .str());
    w.line(keysLoad(plan.k, "QK_PANELS", "DQK") + "(K_s + stage * TILE_K, &K_map, " + firstKey("t") +
           ", KV_head, K_full + 8 * stage);");
    for (const EpilogueOperand &operand : plan.staged) {
      const std::string &t = operand.param->cname;
      w.comment("Copy the (BM, BN) tile of " + t + " at query m0, key t * BN (past S and L read "
                "as zero)");
      w.line("tma_load_tile_panels<BN / 64, BM>(" + t + "_s + stage * TILE_P, &" + t +
             "_map, t * BN, m0, " + t + "_matrix, K_full + 8 * stage);");
    }
    w.close(";");
  }

  /// The first key of this block's key tile `tile` (from its split's first key, key0).
  std::string firstKey(StringRef tile) const {
    return (splitsKeys() ? "key0 + " : "") + tile.str() + " * BN";
  }

  /// The block's matrix of a staged tensor [.., S, L]: its leading indices (those of Q's
  /// leading dimensions, 0 on a broadcast 1) over its leading dimensions.
  std::string stagedMatrix(const EpilogueOperand &operand) const {
    const std::vector<std::string> &dims = operand.param->dims;
    std::string matrix;
    for (size_t i = 0; i + 2 < dims.size(); ++i) {
      if (operand.index[i] == "unit")
        continue;
      std::string index = indexName(std::stoi(operand.index[i].substr(5)));
      std::string after =
          plan.sig.product(std::vector<std::string>(dims.begin() + i + 1, dims.end() - 2));
      matrix += (matrix.empty() ? "" : " + ") +
                (after == "1" ? index : index + " * int(" + after + ")");
    }
    return matrix.empty() ? "0" : matrix;
  }

  /// The TMA copy of a K or V tile: `panels` panels of 64 columns of BN key rows, or
  /// BN / 64 panels of 64 keys of the head dimension's (`depth`) rows.
  static std::string keysLoad(const KeyTensor &t, StringRef panels, StringRef depth) {
    return t.keyRows ? formatv("tma_load_panels<{0}, BN>", panels).str()
                     : formatv("tma_load_key_panels<BN / 64, {0}>", depth).str();
  }

  void writeConsumer() {
    const std::string &j = plan.loopVar, &p = plan.scores, &o = plan.o.name;
    w.line("const int warp = threadIdx.x / 32 - 4; // among the consumers");
    w.line("const int warp_row = warp * 16;        // this warp's first row of the tile");
    w.comment("Its warpgroup's rows of " + plan.q.name + ": the warpgroup through a shuffle, "
              "which ptxas knows is the same in the");
    w.comment("warp, so the wgmma descriptors built on it stay in uniform registers.");
    w.line("const uint32_t Q_wg = Q_s + uint32_t(__shfl_sync(0xffffffffu, warp / 4, 0)) * 64 * 128;");
    if (plan.softmax) {
      w.comment("Allocate " + o + " in register (64 rows a warpgroup, DV); the running max and "
                "sum of " + p + " per row;");
      w.comment(p + " (64 rows, BN keys): the scores of one key tile, then its probabilities.");
      w.line("float O_r[1][NT_O][4] = {};");
      w.line("float P_max[1][2] = {{-CUDART_INF_F, -CUDART_INF_F}}, P_sum[1][2] = {};");
      w.line("float P[1][NT_P][4], P_correction[1][2];");
    } else {
      w.comment("Allocate " + o + " in register (64 rows a warpgroup, DV); " + p +
                " (64 rows, BN keys): the scores of one key tile.");
      w.line("float O_r[1][NT_O][4] = {};");
      w.line("float P[1][NT_P][4];");
    }
    writeScaleFactors();
    w.line("mbarrier_wait(Q_full, 0);");
    if (foldsScale()) {
      w.comment("A scaling that is not positive: its sign (or 0) applied to " + plan.q.name +
                " once, the rest folded in P_fold.");
      w.open("if (!(P_scale > 0.0f))");
      w.line("scale_shared_tile<T, TILE_Q>(Q_s, P_scale < 0.0f ? -1.0f : 0.0f * P_scale, "
             "threadIdx.x - 128, 128 * CONSUMERS);");
      w.line("named_barrier_sync(1 + CONSUMERS, 128 * CONSUMERS);");
      w.close();
    }
    w.comment("Ping-pong: the consumer warpgroups issue their GEMMs in turns, so one's softmax "
              "runs while");
    w.comment("another's GEMMs hold the tensor cores (each takes tiles + 1 turns).");
    w.line("const WarpgroupTurns<CONSUMERS> turn{warp / 4};");
    w.line();
    w.comment(formatv("Software pipeline over {0} (FlashAttention-3's intra-warpgroup overlap): "
                      "the {1} of",
                      j, plan.softmax ? "softmax" : "scaling")
                  .str());
    w.comment("key tile j + 1 runs while the tensor cores compute P V of tile j. Before the "
              "loop: tile 0's scores.");
    if (packsLate())
      writeProbabilitiesADeclaration();
    w.open("if (tiles > 0)");
    w.line("const int n0 = 0;");
    w.line("turn.open();");
    w.line("mbarrier_wait(K_full, 0);");
    w.line("turn.take();");
    writeScoresIssue("K_s", plan.q.name, plan.k.name);
    w.line("turn.pass();");
    w.line("wgmma_wait<0>();");
    w.line("wgmma_fence_operands(P[0]);");
    std::string release = "mbarrier_arrive_by_warp(K_empty); // this warp is done with K_0";
    if (plan.staged.empty())
      w.line(release);
    writeProbabilities("0", release);
    if (packsLate())
      writeProbabilitiesA();
    w.close();
    w.comment(formatv("for {0} in 0:{1}, as j: all but the last key tile, each overlapped with "
                      "the next",
                      j, plan.k.keys())
                  .str());
    w.open("for (int j = 0; j + 1 < tiles; ++j)");
    w.line("const int stage = j % STAGES, phase = (j / STAGES) & 1, next = (j + 1) % STAGES;");
    if (!packsLate())
      writeProbabilitiesAAtTop();
    w.line("mbarrier_wait(K_full + 8 * next, ((j + 1) / STAGES) & 1);");
    w.line("mbarrier_wait(V_full + 8 * stage, phase);");
    w.line("turn.take();");
    writeScoresIssue("K_s + next * TILE_K", plan.q.name, plan.k.name);
    writeValueIssue();
    w.line("turn.pass();");
    w.line("wgmma_wait<1>(); // the scores of tile j + 1 (committed first)");
    w.line("wgmma_fence_operands(P[0]);");
    release = "mbarrier_arrive_by_warp(K_empty + 8 * next); // ... and with K_{j+1}";
    if (plan.staged.empty())
      w.line(release);
    w.line("const int n0 = (j + 1) * BN;");
    writeProbabilities("next", release);
    if (plan.softmax)
      writeValueWaitAndRescale();
    else
      writeValueWait(packsLate());
    w.close();
    w.open("if (tiles > 0)");
    w.comment("The last key tile: P V alone.");
    w.line("const int j = tiles - 1, stage = j % STAGES, phase = (j / STAGES) & 1;");
    if (!packsLate())
      writeProbabilitiesAAtTop();
    w.line("mbarrier_wait(V_full + 8 * stage, phase);");
    w.line("turn.take();");
    writeValueIssue();
    w.line("turn.pass(true); // the last turn");
    writeValueWait();
    w.close();
    writeSoftmaxFinish();
    if (splitsKeys())
      writeKeySplitCombine();
    w.comment("Copy " + o + " from register to global through shared memory, 16-byte stores of "
              "the rows below S:");
    w.comment("each warp stages its 16 rows of a (BM, DV) tile at the start of shared memory, "
              "free once every");
    w.comment("consumer is past its last GEMM (and so every TMA load has landed).");
    w.line("named_barrier_sync(1 + CONSUMERS, 128 * CONSUMERS); // after the turns' barriers");
    w.line("store_tile_shared<T, DV>(Q_s, warp_row, O_r);");
    w.line("__syncwarp();");
    w.line("store_rows_global<16, DV>(O_g, Q_s, warp_row, m0 + warp_row, S_rows);");
  }


  /// Key splits: each block of the cluster stages its rows of O (f32, divided by its own row
  /// sums) and their log2 sums over Q and the stages; after a cluster barrier each block
  /// sums its share of the rows over the cluster in rank order, weighted by 2^(lse - max)
  /// (a softmax over all the keys), and stores them.
  void writeKeySplitCombine() {
    const std::string &o = plan.o.name;
    w.open("if (KEY_SPLITS && splits > 1)");
    w.comment("Key splits: every consumer is past its last GEMM, so Q and the stages are free; "
              "stage this block's");
    w.comment("rows of " + o + (plan.softmax ? " and their lse, then sum each row over the "
                                               "cluster's blocks, weighted by 2^(lse - max)."
                                             : ", then sum each row over the cluster's blocks."));
    w.line("float O_lse[1][2] = {}; // log2 of each row's sum of probabilities");
    if (plan.softmax)
      w.line("row_log2_sums(P_max, P_sum, O_lse);");
    w.line("named_barrier_sync(1 + CONSUMERS, 128 * CONSUMERS); // after the turns' barriers");
    w.line("stage_key_split<BM, DV>(Q_s, warp_row, O_r, O_lse);");
    w.line("cluster_sync(); // every block's rows staged (the producers have exited)");
    w.line(std::string("combine_key_splits<T, BM, DV, ") + (plan.softmax ? "true" : "false") +
           ">(O_g + int64_t(m0) * DV, Q_s, min(BM, S_rows - m0), threadIdx.x - 128, 128 * "
           "CONSUMERS);");
    w.line("cluster_sync(); // the other blocks have read this one's rows");
    w.line("return;");
    w.close();
  }

  /// Where P becomes wgmma's register A for P V (P_a). With two or more consumer warpgroups
  /// taking turns and BN >= 128, right after the wait for the previous P V, in the iteration
  /// of its softmax (FlashAttention-3's order): packed at the top of the next iteration
  /// instead, P's f32 values stayed live across the loop's back edge beside the next scores
  /// (at D = 128 the 64-row kernel needed 254 registers against 193, and BN = 144 to 176
  /// spilled). Elsewhere at the top of the next iteration, where ptxas interleaves the
  /// packing with the issue of the scores GEMM: one warpgroup alone idles the tensor cores
  /// through a packing after the wait, which no other warpgroup's turn covers (docs/backend.md:
  /// D = 64 6% slower, D = 256 at BN = 64 1-2%; D = 128 1.5-2% faster, D = 96 causal 4%).
  bool packsLate() const { return plan.tiles.bm / 64 > 1 && plan.tiles.bn >= 128; }

  void writeProbabilitiesAAtTop() {
    w.comment(formatv("Reshape {0} from (MMA_C, ...) to (MMA_A, ...): wgmma's register A; {0} is "
                      "free again.",
                      plan.scores)
                  .str());
    w.line("uint32_t P_a[BN / 16][4];");
    writeProbabilitiesA();
  }

  void writeProbabilitiesADeclaration() {
    w.line("uint32_t P_a[BN / 16][4]; // " + plan.scores +
           " of the next P V as wgmma's register A, packed after each wait for P V");
  }

  void writeProbabilitiesA() { w.line("flash_probabilities_a<T, BN>(P[0], P_a);"); }

  void writeValueIssue() {
    w.comment(formatv("Compute GEMM {0}, {1} and accumulate {2} (wgmma, issued: not waited for "
                      "yet)",
                      plan.scores, plan.v.name, plan.o.name)
                  .str());
    w.line(std::string("flash_value_issue<T, BN, DV") + (plan.v.keyRows ? "" : ", false") +
           ">(O_r[0], P_a, V_s + stage * TILE_V);");
  }

  /// P V of tile j waited for in each arm of the branch on the rescaling vote, after the
  /// softmax: with the wait before the branch, ptxas scheduled it above the softmax (the
  /// SASS's WARPGROUP.DEPBAR before the first ex2), so the softmax no longer ran beside P V.
  void writeValueWaitAndRescale() {
    w.comment("Wait for P V of tile j in each arm of the rescaling branch: a wait before it is "
              "scheduled above the softmax.");
    w.open("if (warp_rescales(P_correction))");
    writeValueWait(packsLate());
    w.line("scale_rows(O_r, P_correction); // " + plan.o.name +
           " rescaled to tile j + 1's row maxima");
    w.close(" else { // most tiles leave the row maxima as they are");
    w.indentMore();
    writeValueWait(packsLate());
    w.close();
  }

  /// The wait for P V of tile j; `packNext`: then P_a takes the probabilities of tile j + 1.
  void writeValueWait(bool packNext = false) {
    w.line("wgmma_wait<0>(); // P V of tile j");
    w.line("wgmma_fence_operands(O_r[0]);");
    w.line("wgmma_fence_fragments(P_a);");
    w.line("mbarrier_arrive_by_warp(V_empty + 8 * stage); // this warp is done with V_j");
    if (packNext)
      writeProbabilitiesA();
  }

  void writeScoresIssue(StringRef tile, StringRef q, StringRef k) {
    w.comment(formatv("Compute GEMM {0}, {1}^T and get {2} (wgmma, both from shared memory; "
                      "issued)",
                      q, k, plan.scores)
                  .str());
    w.line(("flash_scores_issue<T, DQK, BM, BN" + std::string(plan.k.keyRows ? "" : ", false") +
            ">(P[0], Q_wg, " + tile + ");")
               .str());
  }

  /// Whether the scaling of the scores folds into the softmax's exponent (the sm_90a
  /// kernel with a Softmax: one FFMA a score instead of a multiplication and a
  /// subtraction).
  bool foldsScale() const { return plan.tiles.wgmma && plan.softmax; }

  /// Scale, mask and the softmax of the scores P of the key tile from n0, leaving
  /// O_r alone (P V may be in flight): its rescaling waits in P_correction.
  void writeProbabilities(StringRef stage, StringRef release) {
    writeScaleAndMask(stage, release);
    if (!plan.softmax)
      return;
    w.comment(formatv("Compute Softmax {0}: online across {1} (running max and sum; the "
                      "rescaling of {2} in P_correction).",
                      plan.scores, plan.loopVar, plan.o.name)
                  .str());
    w.line("online_softmax_probabilities(P, P_max, P_sum, P_correction, P_fold, MAX_SLACK);");
  }

  void writeSetup() {
    w.line("extern __shared__ __align__(128) unsigned char smem[];");
    w.line("const uint32_t Q_s = smem_addr(smem);");
    w.line("const uint32_t K_s = Q_s + TILE_Q;     // stage i at K_s + i * TILE_K: " +
           describeLayout(plan.k, "DQK"));
    w.line("const uint32_t V_s = K_s + 2 * TILE_K; // stage i at V_s + i * TILE_V: " +
           describeLayout(plan.v, "DV"));
    w.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
    w.line("const int warp_row = warp * MT * 16; // this warp's first row of the tile");
    w.comment("ldmatrix lanes: Q as A (row lane % 16, chunk + lane / 16); a B operand whose tile");
    w.comment("rows are the MMA's N (row lane % 8 + 8 * (lane / 16), chunk + (lane / 8) % 2) or");
    w.comment("its K (ldmatrix.trans: row lane % 8 + 8 * ((lane / 8) % 2), chunk + lane / 16).");
    w.line("const SwizzledLane<DQK> Q_lane(Q_s, warp_row + lane % 16, lane / 16);");
    w.line(keysOperand().lane());
    w.line(valuesOperand().lane());
  }

  /// Leading index i of Q, as a C++ variable name.
  static std::string indexName(size_t i, StringRef prefix = "i") {
    return formatv("{0}{1}", prefix, i).str();
  }

  /// Query index `index` of leading dimension `dim` as the index of K's grouped one: over the
  /// group size, by the kernel's `group<dim>` (a multiply-shift ptxas recomputes where
  /// registers are short; it kept an integer division's quotient, and the mma.sync kernel at
  /// d = 128 spilled 48-52 bytes).
  static std::string groupedIndex(StringRef index, size_t dim) {
    return formatv("group{0}.div({1})", dim, index).str();
  }

  /// Flattened leading indices of `info` (grouped: the query index / group size).
  std::string leadingIndex(const TensorInfo &info, StringRef prefix = "i") const {
    auto leading = info.leading(), q = plan.q.leading();
    if (plan.causal) { // the causal block order's flat index of Q's leading dimensions, `head`
      if (leading == q)
        return "int64_t(head)";
      // grouped in the last one only (it divides Q's: the host checks): head / the group size
      if (!leading.empty() && leading.drop_back() == q.drop_back())
        return "int64_t(" + groupedIndex("head", q.size() - 1) + ")";
    }
    auto index = [&](size_t i) { // grouped: query index / (group size)
      std::string name = indexName(i, prefix);
      return leading[i] == q[i] ? name : groupedIndex(name, i);
    };
    if (takesOuterIndex(info))
      return "(int64_t(" + prefix.str() + "_outer) * " + plan.dim(leading.back()) + " + " +
             index(leading.size() - 1) + ")";
    std::string flat = "0";
    for (size_t i = 0; i < leading.size(); ++i)
      flat = i == 0 ? "int64_t(" + index(i) + ")"
                    : "(" + flat + " * " + plan.dim(leading[i]) + " + " + index(i) + ")";
    return flat;
  }

  void writeBlockCoordinates() {
    auto leading = plan.q.leading();
    std::string last = "blockIdx.y", rest = "blockIdx.z";
    if (plan.causal) {
      writeCausalBlockOrder();
      if (!leading.empty()) {
        std::string lastDim = "int(" + plan.dim(leading.back()) + ")";
        last = "head % " + lastDim;
        rest = "head / " + lastDim;
      }
    } else {
      w.comment("Block coordinates: the row tile (the last first), then the leading indices of " +
                plan.q.name);
      w.comment("(blockIdx.y: the last, blockIdx.z: the others).");
      if (splitsKeys()) {
        w.line("const int splits = int(cluster_size()); // blocks sharing the row tile's keys "
               "(a cluster along x)");
        w.line("const int row_tile = (int(gridDim.x) - 1 - int(blockIdx.x)) / splits;");
      } else {
        w.line("const int row_tile = gridDim.x - 1 - blockIdx.x;");
      }
    }
    w.line("const int m0 = row_tile * BM;");
    // With the causal order, tensors of Q's leading dimensions take `head` itself.
    writeLeadingIndices("i", last, rest, plan.causal ? "[[maybe_unused]] const int " : "const int ");
    if (splitsKeys()) // a key split counts keys from its first (writeKeySplitShare)
      w.line(formatv("const int S_rows = int({0});", plan.dim(plan.q.rows())).str())
          .line(formatv("int L_rows = int({0});", plan.dim(plan.k.keys())).str());
    else
      w.line(formatv("const int S_rows = int({0}), L_rows = int({1});", plan.dim(plan.q.rows()),
                     plan.dim(plan.k.keys()))
                 .str());
    w.comment(formatv("Allocate {0} in global ({1}, DQK) with offset {2}; {3} ({1}, DV) likewise.",
                      plan.q.name, plan.q.rows(), leadingIndex(plan.q), plan.o.name)
                  .str());
    if (plan.tiles.wgmma)
      w.line("const int Q_head = int(" + leadingIndex(plan.q) + "); // matrix of Q_map");
    else
      w.line("const T *Q_g = " + plan.cname(plan.q.name) + " + " + leadingIndex(plan.q) + " * " +
             plan.dim(plan.q.rows()) + " * DQK;");
    w.line("T *O_g = " + plan.cname(plan.o.name) + " + " + leadingIndex(plan.o) + " * " +
           plan.dim(plan.o.rows()) + " * DV;");
    bool grouped = plan.k.leading() != plan.q.leading();
    w.comment(formatv("Allocate {0} in global {1} and {2} in global {3}, at the same head{4}.",
                      plan.k.name, globalShape(plan.k, "DQK"), plan.v.name,
                      globalShape(plan.v, "DV"),
                      grouped ? " (grouped-query: the key/value head of this query head)" : "")
                  .str());
    if (plan.tiles.wgmma) {
      w.line("const int KV_head = int(" + leadingIndex(plan.k) + "); // matrix of K_map, V_map");
    } else {
      w.line("const int64_t KV_head = " + leadingIndex(plan.k) + ";");
      writeKeyPointers();
    }
    writeTileCount();
  }

  /// With a causal mask a row tile's keys grow with it, so the grid is (heads of a group, row
  /// tiles, groups): in launch order the blocks take gridDim.x heads (the host's
  /// sketch::causal_head_group: their K and V stay in L2) and their row tiles the last first
  /// across those heads, so the longest blocks start first and the short ones fill the last
  /// wave. Every coordinate is a few operations on blockIdx, which ptxas recomputes where
  /// registers are short (a division here made the D = 128 consumers spill).
  void writeCausalBlockOrder() {
    w.comment("Block coordinates (CAUSAL: the last row tiles see the most keys). The grid is "
              "(heads of a group,");
    w.comment("row tiles from row_base, groups): a group's row tiles run the last first across "
              "its heads.");
    w.line("const int row_tile = row_base + int(gridDim.y) - 1 - int(blockIdx.y);");
    if (splitsKeys()) {
      w.line("const int splits = int(cluster_size()); // blocks sharing the row tile's keys "
             "(a cluster along x)");
      w.line("const int head = int(blockIdx.z) * (int(gridDim.x) / splits) + int(blockIdx.x) / "
             "splits; // flat over Q's leading dimensions");
    } else {
      w.line("const int head = int(blockIdx.z * gridDim.x + blockIdx.x); // flat over Q's "
             "leading dimensions");
    }
    w.line("if (head >= int(" + product(plan, plan.q.leading()) +
           ")) // below 2^30 (the host checks)");
    w.line("  return; // past the last group's heads");
  }

  /// A tensor with Q's leading dimensions, three or more, the last perhaps grouped: its
  /// flat index starts from PREFIX_outer, Q's leading indices but the last flattened (the
  /// grid's own), not from the indices divided out of it (on sm_80 the divisions made the
  /// D = 128 kernel of [B, G, H, S, D] tensors spill 52 bytes).
  bool takesOuterIndex(const TensorInfo &info) const {
    auto leading = info.leading(), q = plan.q.leading();
    return leading.size() >= 3 && leading.size() == q.size() && leading.drop_back() == q.drop_back();
  }

  /// Q's leading indices PREFIX0.. from the grid's `last` (its last dimension) and `rest`
  /// (the others, flattened: PREFIX_outer where there are three or more). Indices are below
  /// 65536 (the host checks the grid), so 32-bit division suffices. `others`: the indices
  /// but the last are written (only PREFIX_outer otherwise).
  void writeLeadingIndices(StringRef prefix, StringRef last, StringRef rest, StringRef decl,
                           bool others = true) {
    auto leading = plan.q.leading();
    if (!leading.empty())
      w.line(formatv("{0}{1} = {2};", decl, indexName(leading.size() - 1, prefix), last).str());
    if (leading.size() == 2)
      w.line(formatv("{0}{1} = {2};", decl, indexName(0, prefix), rest).str());
    if (leading.size() > 2) {
      w.line(formatv("const int {0}_outer = {1}; // {0}0 .. {0}{2} flattened", prefix, rest,
                     leading.size() - 2)
                 .str());
      if (!others)
        return;
      decl = "[[maybe_unused]] const int "; // the tensors of Q's dimensions take PREFIX_outer
      std::string left = (prefix.drop_back() + "rest").str(); // i0.. take rest, n_i0.. n_rest
      w.line("int " + left + " = " + prefix.str() + "_outer;");
      for (size_t i = leading.size() - 1; i-- > 0;) {
        if (i == 0) {
          w.line(formatv("{0}{1} = {2};", decl, indexName(i, prefix), left).str());
        } else {
          w.line(formatv("{0}{1} = {2} % int({3});", decl, indexName(i, prefix), left,
                         plan.dim(leading[i]))
                     .str());
          w.line(formatv("{0} /= int({1});", left, plan.dim(leading[i])).str());
        }
      }
    }
  }

  void writeKeyPointers() {
    std::string keys = plan.dim(plan.k.keys());
    w.line("const T *K_g = " + plan.cname(plan.k.name) + " + KV_head * " + keys + " * DQK;");
    w.line("const T *V_g = " + plan.cname(plan.v.name) + " + KV_head * " + keys + " * DV;");
    if (!plan.k.keyRows || !plan.v.keyRows)
      w.line("const bool L_vec = L_rows % 8 == 0; // rows of keys-as-columns tiles 16-byte aligned");
  }

  void writeTileCount() {
    w.comment(formatv("for {0} in 0:{1}: the key tiles this row tile sees (with CAUSAL, row i "
                      "sees keys 0..i + L - S:",
                      plan.loopVar, plan.k.keys())
                  .str());
    w.comment("the diagonal is aligned to the bottom right; a row tile may see none).");
    w.line("int tiles = int(ceil_div(L_rows, BN));");
    w.line(std::string(splitsKeys() ? "int" : "const int") +
           " diagonal0 = m0 + L_rows - S_rows; // the last key row m0 sees (CAUSAL)");
    w.line("if (CAUSAL)");
    w.line("  tiles = min(tiles, max(0, int(ceil_div(diagonal0 + BM, BN))));");
    if (splitsKeys())
      writeKeySplitShare();
  }

  /// A key split's share of the row tile's key tiles: the split-th run of ceil(tiles /
  /// splits), its keys and the diagonal then counted from its first key (key0).
  void writeKeySplitShare() {
    w.comment("Key splits: block cluster_rank() of the cluster takes the split-th share of these "
              "key tiles;");
    w.comment("L_rows and diagonal0 then count keys from its first, key0.");
    w.line("const int share = int(ceil_div(tiles, splits)), first = min(tiles, int(cluster_rank()) "
           "* share);");
    w.line("const int key0 = first * BN;");
    w.line("tiles = min(share, tiles - first);");
    w.line("L_rows -= key0;");
    w.line("diagonal0 -= key0;");
  }

  static std::string globalShape(const KeyTensor &t, StringRef depth) {
    return t.keyRows ? formatv("({0}, {1})", t.keys(), depth).str()
                     : formatv("({0}, {1})", depth, t.keys()).str();
  }

  /// The copy of the K or V tile of keys `first`.. into `dst`.
  static std::string copyKeys(const KeyTensor &t, StringRef tile, StringRef depth, StringRef dst,
                              StringRef first) {
    if (t.keyRows)
      return formatv("copy_tile_async<BN, {0}, THREADS>({1}, {2}_g, {3}, L_rows);", depth, dst,
                     tile, first)
          .str();
    return formatv("copy_cols_async<{0}, BN, THREADS>({1}, {2}_g, L_rows, {3}, L_rows, L_vec);",
                   depth, dst, tile, first)
        .str();
  }

  void writePrologue() {
    w.comment("Copy " + plan.q.name + " (BM, DQK) from global to shared, with " + plan.k.name +
              " and " + plan.v.name + " of " + plan.loopVar + " = 0.");
    w.line("copy_tile_async<BM, DQK, THREADS>(Q_s, Q_g, m0, S_rows);");
    w.line(copyKeys(plan.k, "K", "DQK", "K_s", "0"));
    w.line("cp_async_commit();");
    w.line(copyKeys(plan.v, "V", "DV", "V_s", "0"));
    w.line("cp_async_commit();");
    if (!plan.softmax) {
      w.comment("Allocate " + plan.o.name + " in register (BM, DV).");
      w.line("float O_r[MT][NT_O][4] = {};");
      writeScaleFactors();
      return;
    }
    w.comment("Allocate " + plan.o.name + " in register (BM, DV); the running max and sum of " +
              plan.scores + " per row.");
    w.line("float O_r[MT][NT_O][4] = {};");
    w.line("float P_max[MT][2], P_sum[MT][2];");
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < MT; ++m)");
    w.line("P_max[m][0] = P_max[m][1] = -CUDART_INF_F;");
    w.line("P_sum[m][0] = P_sum[m][1] = 0.0f;");
    w.close();
    writeScaleFactors();
  }

  /// P_scale, the factor of the scores (with log2(e) for the softmax), and
  /// P_after, that of the probabilities (folded into the final division).
  void writeScaleFactors() {
    const std::string &p = plan.scores;
    writeScoreSteps();
    std::string scale = scaleExpr(plan), after = afterExpr(plan);
    if (plan.softmax)
      w.comment("The scaling of " + p + ", with log2(e) folded in: the softmax uses exp2.");
    else if (!scale.empty())
      w.comment("The scaling of " + p + " (no Softmax: " + p + " times the values as scaled).");
    if (namesVariable(scale))
      w.comment("P_scale = " + scale + " (a parameter: the host computes it).");
    else if (!scale.empty())
      w.line("constexpr float P_scale = " + scale + ";");
    if (foldsScale()) {
      w.comment("It is folded into the softmax's exponent (2^(" + p +
                " * P_fold - max): one FFMA a score); one that is not");
      w.comment("positive multiplies " + plan.q.name +
                " in shared memory by its sign (or by 0) once, and P_fold is its magnitude.");
      w.line("const float P_fold = P_scale > 0.0f ? P_scale : (P_scale < 0.0f ? -P_scale : 1.0f);");
    }
    if (after.empty())
      return;
    w.comment("The scaling of " + p + " after the Softmax (the probabilities): folded into the "
              "final division by the row sums.");
    w.line("const float P_after = " + after + ";");
  }

  /// The statements on the scores as a function of one score (`plan.elementwise`).
  void writeScoreSteps() {
    if (!plan.elementwise)
      return;
    FailureOr<EpilogueEmitter> steps = scoreSteps(plan, plan.kernel.getLoc());
    bool indexed = stepsIndexed();
    w.comment("The statements on " + plan.scores + " before the " +
              (plan.softmax ? "Softmax" : "value GEMM") + ", on one score, in program order" +
              (indexed ? " (row: its query, col: its key)." : "."));
    // Unconditional loads, which ptxas issues all at once, ran the mask [S, L] 1.5 times as
    // fast as guarded ones (docs/backend.md); they take a register a score each, so only for
    // up to kUnguardedScoreTensors tensors (three spilled in the sm_90a consumers).
    bool unguarded = plan.unguarded;
    if (!plan.staged.empty()) {
      w.comment("The stage of the key tile whose scores " + plan.scores +
                " holds: where its staged tiles are (set with each tile).");
      w.line("int scores_stage = 0;");
    }
    bool loaded = llvm::any_of(steps->operands(),
                               [&](const EpilogueOperand &t) { return !isStaged(t); });
    if (unguarded && loaded) {
      w.comment("Tensors are read at the last query and key for the scores past S and L: those "
                "are masked or");
      w.comment("never stored, and an unconditional load costs less than a guarded one. The "
                "keys are clamped");
      w.comment("only on the tile that crosses L (tile.in_bounds, a constant, is false there).");
    } else if (indexed && loaded) {
      w.comment("Tensors read 0 past S and L.");
    }
    if (!plan.staged.empty())
      w.comment("Staged tiles are read in shared memory (TMA wrote zeros past S and L).");
    w.open(stepsTakeTile() ? "const auto P_steps = [&](float &score, int row, int col, auto tile)"
           : indexed       ? "const auto P_steps = [&](float &score, int row, int col)"
                           : "const auto P_steps = [&](float &score)");
    ElementIndex at{"row", "col", "S_rows", "L_rows", {}};
    ElementIndex clamped{"min(row, S_rows - 1)", "(tile.in_bounds ? col : min(col, L_rows - 1))",
                         "S_rows", "L_rows", {}};
    for (size_t i = 0; i < plan.q.leading().size(); ++i) {
      at.batch.push_back(indexName(i));
      clamped.batch.push_back(indexName(i));
    }
    steps->emitElement(
        w, "score",
        [&](const EpilogueOperand &operand) {
          if (isStaged(operand))
            return "sketch::to_float(shared_tile_element<" + cudaType(operand.param->type).str() +
                   ", BM>(" + operand.param->cname +
                   "_s + scores_stage * TILE_P, row - m0, col - tile.col0))";
          return unguarded ? "sketch::to_float(" + operand.param->cname + "[" +
                                 steps->elementOffset(operand, clamped) + "])"
                           : steps->loadExpr(operand, at);
        },
        "score");
    w.close(";");
  }

  /// Whether the statements on the scores read global tensors (P_steps takes the indices).
  bool stepsIndexed() const { return plan.work == plan::ScoreWork::loads; }

  /// Whether P_steps takes the tile's TileColumns (map_tile_at with the key count): its
  /// clamped loads or staged tiles need them.
  bool stepsTakeTile() const { return plan.unguarded || !plan.staged.empty(); }

  bool isStaged(const EpilogueOperand &operand) const {
    return llvm::any_of(plan.staged,
                        [&](const EpilogueOperand &t) { return t.param == operand.param; });
  }

  /// After the loop: O divided by the row sums of the online softmax (and scaled
  /// by P_after); nothing without a Softmax.
  void writeSoftmaxFinish() {
    if (!plan.softmax)
      return;
    const std::string &p = plan.scores, &o = plan.o.name;
    w.comment("Softmax " + p + ", finished: " + o + " divided by the row sums" +
              (plan.tiles.wgmma ? "" : ", once, after the loop") + " (a row that saw no key is 0)" +
              (plan.after.empty() ? "." : ", times P_after."));
    w.line(plan.after.empty() ? "online_softmax_finish(P_sum, O_r);"
                              : "online_softmax_finish(P_sum, O_r, P_after);");
  }

  void writeLoop() {
    const std::string &j = plan.loopVar;
    w.line();
    w.comment(formatv("for {0} in 0:{1}, as j", j, plan.k.keys()).str());
    w.open("for (int j = 0; j < tiles; ++j)");
    w.line("const int stage = j & 1, n0 = j * BN;");
    w.line("cp_async_wait<1>(); // " + plan.k.name + " of " + j + " (and " + plan.q.name +
           ") arrived");
    w.line("__syncthreads();    // ... for all threads; the other stage is free again");
    w.comment(formatv("Copy {0} in coordinate [L = {1} + 1] from global to shared; {2} likewise.",
                      plan.k.name, j, plan.v.name)
                  .str());
    w.line("if (j + 1 < tiles)");
    w.line("  " + copyKeys(plan.k, "K", "DQK", "K_s + (stage ^ 1) * TILE_K", "n0 + BN"));
    w.line("cp_async_commit();");
    w.line("if (j + 1 < tiles)");
    w.line("  " + copyKeys(plan.v, "V", "DV", "V_s + (stage ^ 1) * TILE_V", "n0 + BN"));
    w.line("cp_async_commit();");
    w.line();
    writeScoresGemm();
    writeOnlineSoftmax();
    w.line();
    w.line("cp_async_wait<2>(); // " + plan.v.name + " of " + j + " arrived");
    w.line("__syncthreads();");
    writeValueGemm();
    w.close();
    w.line("cp_async_wait_all();");
  }

  /// The statements between the GEMMs on the scores P (a register tile, rows from
  /// warp_row, keys from n0), then the online softmax step that also rescales O_r.
  void writeOnlineSoftmax() {
    writeScaleAndMask();
    if (!plan.softmax)
      return;
    w.comment(formatv("Compute Softmax {0}: online across {1} (running max and sum; {2} rescaled).",
                      plan.scores, plan.loopVar, plan.o.name)
                  .str());
    w.line("online_softmax_step(P, P_max, P_sum, O_r);");
  }

  /// `stage`, `release` (sm_90a): the key tile's K stage and the line that releases it,
  /// written after P_steps where that reads staged tiles there.
  void writeScaleAndMask(StringRef stage = "", StringRef release = "") {
    const std::string &p = plan.scores;
    if (plan.elementwise) {
      for (const std::string &line : scoreSteps(plan, plan.kernel.getLoc())->describe())
        w.comment(line);
      if (!plan.staged.empty())
        w.line("scores_stage = " + stage.str() + ";");
      w.line(stepsTakeTile()  ? "map_tile_at(P, m0 + warp_row, n0, L_rows, P_steps); // on every "
                                "score, in program order"
             : stepsIndexed() ? "map_tile_at(P, m0 + warp_row, n0, P_steps); // on every score, "
                                "in program order"
                              : "map_tile(P, P_steps); // on every score, in program order");
      if (!plan.staged.empty())
        w.line(release.str() + " and with its staged tiles");
    }
    // With element steps the scaling is the softmax's log2(e) alone.
    std::string scaling = plan.elementwise ? "log2(e) for the softmax's exp2"
                                           : formatv("Compute {0} = {0} * scale", p).str();
    if (foldsScale()) {
      w.comment(scaling + (plan.elementwise ? "" : " (times log2(e))") +
                ": in the softmax's exponent (P_fold)");
    } else if (!scaleExpr(plan).empty()) {
      w.comment(scaling + (plan.softmax && !plan.elementwise ? " (times log2(e))" : ""));
      w.line("scale_tile(P, P_scale);");
    }
    w.comment(formatv("Compute Mask {0}{1}: keys past L too, only on the tiles that need it{2}.",
                      p, plan.causal ? " causal" : "",
                      plan.softmax ? "" : " (no Softmax: masked scores are 0)")
                  .str());
    w.line("if (n0 + BN > L_rows || (CAUSAL && n0 + BN - 1 > diagonal0))");
    w.line(plan.softmax ? "  mask_tile(P, diagonal0 + warp_row, n0, L_rows, CAUSAL);"
                        : "  mask_tile(P, diagonal0 + warp_row, n0, L_rows, CAUSAL, 0.0f);");
  }

  void writeScoresGemm() {
    OperandTile keys = keysOperand();
    w.comment(formatv("Compute GEMM {0}, {1}{2} and get {3}", plan.q.name, plan.k.name,
                      plan.k.keyRows ? "^T" : "", plan.scores)
                  .str());
    w.line("float P[MT][NT_P][4] = {};");
    w.line("const uint32_t K_stage = stage * TILE_K;");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < DQK / 16; ++k)");
    w.line("uint32_t q[MT][4];");
    w.line("#pragma unroll");
    w.line("for (int m = 0; m < MT; ++m)");
    w.line("  ldmatrix_x4(q[m][0], q[m][1], q[m][2], q[m][3], Q_lane.at(2 * k, m * 16));");
    w.line("#pragma unroll");
    w.open("for (int n = 0; n < NT_P; n += 2)");
    w.line("uint32_t kb[2][2];");
    w.line(keys.load("kb"));
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < MT; ++m)");
    w.line("mma_m16n8k16<T>(P[m][n], q[m], kb[0]);");
    w.line("mma_m16n8k16<T>(P[m][n + 1], q[m], kb[1]);");
    w.close();
    w.close();
    w.close();
  }

  void writeValueGemm() {
    OperandTile values = valuesOperand();
    w.comment(formatv("Reshape {0} from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new)",
                      plan.scores)
                  .str());
    w.comment(formatv("Compute GEMM {0}, {1}{2} and accumulate {3}", plan.scores, plan.v.name,
                      plan.v.keyRows ? "" : "^T", plan.o.name)
                  .str());
    w.line("const uint32_t V_stage = stage * TILE_V;");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < BN / 16; ++k)");
    w.line("uint32_t p[MT][4];");
    w.line("#pragma unroll");
    w.line("for (int m = 0; m < MT; ++m)");
    w.line("  reshape_c_to_a<T>(P[m][2 * k], P[m][2 * k + 1], p[m]);");
    w.line("#pragma unroll");
    w.open("for (int n = 0; n < NT_O; n += 2)");
    w.line("uint32_t vb[2][2];");
    w.line(values.load("vb"));
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < MT; ++m)");
    w.line("mma_m16n8k16<T>(O_r[m][n], p[m], vb[0]);");
    w.line("mma_m16n8k16<T>(O_r[m][n + 1], p[m], vb[1]);");
    w.close();
    w.close();
    w.close();
  }

  void writeEpilogue() {
    writeSoftmaxFinish();
    w.comment("Copy " + plan.o.name + " from register to global: through this warp's rows of a " +
              "[BM][DV] tile at the start of shared");
    w.comment("memory, then 16-byte stores of the rows below S.");
    if (stagingWaitsForBlock())
      w.line("__syncthreads(); // no warp reads " + plan.q.name + ", " + plan.k.name + " or " +
             plan.v.name + " any more, every copy has landed");
    else
      w.line("__syncwarp(); // these rows lie in " + plan.q.name + "'s and " + plan.k.name +
             "'s tiles, which no warp reads after the last step's barrier");
    w.line("store_tile_shared<T, DV>(Q_s, warp_row, O_r);");
    w.line("__syncwarp();");
    w.line("store_rows_global<MT * 16, DV>(O_g, Q_s, warp_row, m0 + warp_row, S_rows);");
  }

  const AttentionPlan &plan;
  CudaWriter &w;
};

//===----------------------------------------------------------------------===//
// Host function
//===----------------------------------------------------------------------===//

/// The signature with what writeHost checks, for callers that check first.
KernelSignature hostConditions(const AttentionPlan &plan) {
  KernelSignature sig = plan.sig;
  sig.requireTensorAlignment(16);
  sig.requirements.push_back({plan.k.keys() + " > 0", plan.softmax
                                                         ? "a softmax over no keys is undefined"
                                                         : "the loop over the keys runs at least once"});
  auto leadQ = plan.q.leading(), leadK = plan.k.leading();
  for (size_t i : groupedDims(plan))
    sig.requirements.push_back({leadK[i] + " > 0 && " + leadQ[i] + " % " + leadK[i] + " == 0",
                                "key/value heads must divide the query heads"});
  return sig;
}

/// The sm_90a kernel with K or V stored a key per column reads rows of L keys by TMA,
/// which needs them 16-byte aligned: the plan of the mma.sync kernel that takes the
/// other L (its default tiles, a static host function NAME_mma).
std::optional<AttentionPlan> mmaFallback(const AttentionPlan &plan) {
  if (!plan.tiles.wgmma || (plan.k.keyRows && plan.v.keyRows && plan.staged.empty()))
    return std::nullopt;
  AttentionPlan fallback = plan;
  fallback.staged.clear();
  fallback.name = plan.name + "_mma";
  fallback.sig.name = fallback.name;
  fallback.sig.exported = false;
  const plan::AttentionTiles &t = plan.tiles;
  fallback.tiles =
      plan::AttentionTiles::defaults(t.dqk, t.dv, false, plan.causal, "sm_90", plan.work);
  return fallback;
}

/// `plan` on one consumer warpgroup of 64 query rows (the same statements and key tiles), a
/// kernel with a static host function NAME`suffix`; none where that tile does not fit.
std::optional<AttentionPlan> sixtyFourRowVariant(const AttentionPlan &plan, StringRef arch,
                                                 StringRef suffix) {
  AttentionPlan variant = plan;
  variant.name = plan.name + suffix.str();
  variant.sig.name = variant.name;
  variant.sig.exported = false;
  variant.tiles = plan.tiles.sixtyFourRows();
  if (!variant.tiles.wgmmaFits(arch))
    return std::nullopt;
  return variant;
}

/// The sm_90a 64-row kernel (NAME_rows64) where the plan's rows are more: with at most 64
/// query rows (decoding) the plan's other warpgroups would multiply rows past S, so the host
/// calls this kernel there. Not for plans that stage tensors on the scores (their tiles are
/// planned for the plan's rows).
std::optional<AttentionPlan> fewRowsVariant(const AttentionPlan &plan, StringRef arch) {
  if (!plan.tiles.wgmma || plan.tiles.bm <= 64 || !plan.staged.empty())
    return std::nullopt;
  return sixtyFourRowVariant(plan, arch, "_rows64");
}

/// A causal kernel's 64-row kernel without the mask (NAME_one_row), which the host calls for
/// one query row: the mask is aligned bottom-right, so row 0 sees every key, and without the
/// mask the host may pack grouped heads into rows (writePackedHeadsCall). Not where the
/// mma.sync kernel may stand in (keys stored a key per column, staged score tensors).
std::optional<AttentionPlan> oneRowVariant(const AttentionPlan &plan, StringRef arch) {
  if (!plan.causal || !plan.tiles.wgmma || !plan.staged.empty() || !plan.k.keyRows ||
      !plan.v.keyRows)
    return std::nullopt;
  std::optional<AttentionPlan> variant = sixtyFourRowVariant(plan, arch, "_one_row");
  if (variant)
    variant->causal = false;
  return variant;
}

/// The host's call of `variant` with the same arguments where `condition` holds.
void writeVariantCall(const AttentionPlan &plan, const AttentionPlan &variant,
                      const std::string &condition, const std::string &why, CudaWriter &w) {
  w.comment(why);
  w.line("if (" + condition + ")");
  w.line("  return " + variant.sig.name + "(" + kernelArgumentList(plan.sig) + ", stream);");
}

/// The host's call of itself with each key/value head's group of query heads packed into one
/// matrix of rows, where that keeps the result (else nothing): Q and O stored [.., H, S, D] hold
/// the group's heads one after another, so with no causal mask, no tensor but Q, K, V and O
/// and H and S free sizes used by Q and O alone, the group is one head of (H / HK) * S rows
/// (where those stay below 2^30).
/// A block then reads each K and V tile once for the group, not once a query head, and few
/// query rows (decoding) fill a row tile.
void writePackedHeadsCall(const AttentionPlan &plan, CudaWriter &w) {
  if (plan.causal || plan.q.leading().empty())
    return;
  const std::string &heads = plan.q.leading().back(), &rows = plan.q.rows();
  const std::string &keyHeads = plan.k.leading().back();
  auto isFree = [&](const std::string &d) { return llvm::is_contained(plan.sig.sizeSymbols, d); };
  if (heads == keyHeads || heads == rows || !isFree(heads) || !isFree(rows) ||
      plan.v.leading().back() != keyHeads || plan.o.leading() != plan.q.leading() ||
      plan.o.rows() != rows)
    return;
  for (const ParamInfo &param : plan.sig.params) {
    if (!param.isTensor)
      continue;
    bool queryLike = param.name == plan.q.name || param.name == plan.o.name;
    if (!queryLike && param.name != plan.k.name && param.name != plan.v.name)
      return;
    for (size_t i = 0; i < param.dims.size(); ++i) {
      bool packedPlace = queryLike && i + 3 >= param.dims.size() && i + 1 < param.dims.size();
      if ((param.dims[i] == heads || param.dims[i] == rows) && !packedPlace)
        return;
    }
  }
  std::string h = plan.dim(heads), hk = plan.dim(keyHeads), arguments;
  for (const ParamInfo &param : plan.sig.params)
    arguments += param.cname + ", ";
  for (const std::string &symbol : plan.sig.sizeSymbols)
    arguments += (symbol == heads  ? hk
                  : symbol == rows ? plan.dim(rows) + " * (" + h + " / " + hk + ")"
                                   : cIdent(symbol)) + ", ";
  w.comment("Grouped heads: a key/value head's query heads are one matrix of rows, one head "
            "that reads K and V once for them.");
  w.line("if (" + h + " != " + hk + " && int64_t(" + plan.dim(rows) + ") <= INT32_MAX / 2 / " + h +
         ")");
  w.line("  return " + plan.sig.name + "(" + arguments + "stream);");
}

/// sketch::encode_tensor_map_3d of `pointer` into `map`: `matrices` row-major matrices of
/// `rows` x `cols` 2-byte elements, boxes of 64 columns x `box` rows (C++ expressions).
std::string encodeTensorMap(StringRef map, StringRef pointer, StringRef cols, StringRef rows,
                            StringRef matrices, StringRef box) {
  return formatv("sketch::encode_tensor_map_3d(&{0}, {1}, {2}, {3}, uint64_t({4}), {2} * 2, "
                 "{3} * {2} * 2, 64, {5}, 2)",
                 map, pointer, cols, rows, matrices, box)
      .str();
}

/// The host's call of `fallback` (mmaFallback) where TMA cannot read the keys or a
/// staged tensor: rows of L keys are a multiple of 16 bytes, the tensor 16-byte aligned.
void writeMmaFallback(const AttentionPlan &plan, const AttentionPlan &fallback, CudaWriter &w) {
  std::string keys = plan.dim(plan.k.keys()) + " % 8 != 0";
  std::vector<std::string> conditions;
  if (!plan.k.keyRows || !plan.v.keyRows) {
    w.comment("Keys stored a key per column: TMA reads their rows only where L keys are a "
              "multiple of 16 bytes;");
    conditions.push_back(keys);
  }
  if (!plan.staged.empty()) {
    w.comment("The staged tensors on the scores: TMA reads them where their rows of L keys are "
              "a multiple of 16 bytes");
    w.comment("and they are 16-byte aligned;");
    if (conditions.empty())
      conditions.push_back(keys);
    for (const EpilogueOperand &t : plan.staged)
      conditions.push_back("!sketch::aligned_to(" + t.param->cname + ", 16)");
  }
  w.comment(plan.staged.empty()
                ? "other L take the mma.sync kernel (cp.async, element copies where needed)."
                : "others take the mma.sync kernel (cp.async, element copies and loads where "
                  "needed).");
  w.line("if (" + llvm::join(conditions, " || ") + ")");
  w.line("  return " + fallback.sig.name + "(" + kernelArgumentList(plan.sig) + ", stream);");
}

/// The causal kernel's launches (see writeCausalBlockOrder): groups of heads whose K and V
/// fit in half the L2, row tiles in grid y, so up to 65535 a launch, the last ones first.
void writeCausalLaunches(const AttentionPlan &plan, CudaWriter &w, const std::string &launch,
                         const std::string &heads, bool split) {
  w.comment("CAUSAL: grid (heads of a group, row tiles, groups), groups of heads whose K and V "
            "fit in half the L2;");
  w.comment("row tiles 65535 a launch, the last ones first.");
  w.line("const int64_t heads = " + heads + ";");
  w.line("if (heads > INT32_MAX / 2)");
  w.line("  return cudaErrorInvalidValue; // the kernel numbers heads in an int");
  w.line("const int group = sketch::causal_head_group(int64_t(" + plan.dim(plan.k.keys()) +
         ") * (DQK + DV) * int64_t(sizeof(T)), heads);");
  w.line("const unsigned groups = unsigned(sketch::ceil_div(heads, int64_t(group)));");
  w.open("for (int64_t end = row_tiles; end > 0; end -= 65535)");
  w.line("const int64_t base = end > 65535 ? end - 65535 : 0;");
  w.line(split ? "const dim3 grid{unsigned(group * splits), unsigned(end - base), groups};"
              : "const dim3 grid{unsigned(group), unsigned(end - base), groups};");
  if (split) {
    w.line("const cudaError_t launched = " + launch + ", int(base));");
  } else {
    w.line(launch + ", int(base));");
    w.line("const cudaError_t launched = cudaGetLastError();");
  }
  w.line("if (launched != cudaSuccess)");
  w.line("  return launched;");
  w.close();
  w.line("return cudaSuccess;");
}

/// The host's key splits (sketch::key_splits), a static function NAME_key_splits(row tiles,
/// keys) before the host function: the row tiles' clusters all fit at once on the device, each
/// sharing its key tiles among the blocks of a cluster (the resident counts are cached a
/// device: sketch::cluster_resident_blocks).
void writeKeySplitsFunction(const AttentionPlan &plan, CudaWriter &w) {
  w.comment("Key splits of " + plan.name + "_kernel: a grid short of the SMs shares each row "
            "tile's key tiles among the blocks");
  w.comment("of a cluster (2, 4 or 8, all resident at once; the same sizes give the same "
            "splits).");
  w.open("static int " + plan.name + "_key_splits(int64_t row_tiles, int64_t keys)");
  w.line("using namespace ::" + plan.name + "_tiles;");
  w.line("if (!KEY_SPLITS)");
  w.line("  return 1;");
  w.line("static sketch::PerDevice resident_2, resident_4, resident_8;");
  w.open("const auto resident = [](int cluster)");
  w.line("return sketch::cluster_resident_blocks(" + plan.name + "_kernel, THREADS, SMEM, "
         "cluster, cluster == 2 ? resident_2 : cluster == 4 ? resident_4 : resident_8);");
  w.close(";");
  w.line("return sketch::key_splits(row_tiles, sketch::ceil_div(keys, BN), resident);");
  w.close();
  w.line();
}

/// Where the grid splits the keys and the 64-row kernel (fewRowsVariant: twice the row tiles)
/// would split them as many ways, the host calls that kernel, whose blocks then fill twice the
/// SMs: on the kernels sketch-choose-defaults marks (plan::kShortGridRowsAttr: two consumer
/// warpgroups, no mask). Measured 10-16% faster there; 20-60% slower where it splits fewer
/// ways, no faster against three warpgroups a block (docs/backend.md).
void writeShortGridCall(const AttentionPlan &plan, const AttentionPlan &fewRows,
                        const std::string &headsOfGrid, CudaWriter &w) {
  w.comment("A short grid (key splits) whose 64-row kernel splits the keys as many ways: that "
            "kernel, twice the blocks.");
  std::string rowTiles = "sketch::ceil_div(int64_t(" + plan.dim(plan.q.rows()) + "), " +
                         str(fewRows.tiles.bm) + ")";
  w.line("if (splits > 1 && " + fewRows.name + "_key_splits(" + rowTiles + " * " + headsOfGrid +
         ", int64_t(" + plan.dim(plan.k.keys()) + ")) == splits)");
  w.line("  return " + fewRows.sig.name + "(" + kernelArgumentList(plan.sig) + ", stream);");
}

/// The host function; `fallback`: the mma.sync kernel's plan it calls for L that TMA
/// cannot read (mmaFallback), written before it; `fewRows`: the 64-row kernel's plan
/// (fewRowsVariant); `packHeads`: packs grouped heads first (writePackedHeadsCall); `oneRow`:
/// the kernel without the causal mask for one query row (oneRowVariant).
void writeHost(const AttentionPlan &plan, CudaWriter &w, const AttentionPlan *fallback = nullptr,
               const AttentionPlan *fewRows = nullptr, bool packHeads = false,
               const AttentionPlan *oneRow = nullptr) {
  std::string tiles = "::" + plan.name + "_tiles";
  auto leadQ = plan.q.leading(), leadK = plan.k.leading();
  const bool split = splitsKeys(plan);
  if (split)
    writeKeySplitsFunction(plan, w);
  w.open(hostPrototype(plan.sig));
  w.line("using namespace " + tiles + ";");
  emitHostChecks(w, plan.sig);
  w.comment("Nothing to compute: no query rows.");
  w.line("if (" + product(plan, plan.q.dims) + " == 0)");
  w.line("  return cudaSuccess;");
  w.comment(std::string(plan.softmax ? "A softmax over no keys is undefined"
                                     : "The loop over the keys runs at least once") +
            "; grouped heads must divide the query heads.");
  std::string bad = plan.dim(plan.k.keys()) + " == 0";
  for (size_t i = 0; i < leadK.size(); ++i) { // numbers were checked when compiling
    std::string qd = plan.dim(leadQ[i]), kd = plan.dim(leadK[i]);
    if (qd == kd)
      continue;
    if (!isInteger(kd))
      bad += " || " + kd + " == 0";
    if (!isInteger(kd) || (!isInteger(qd) && kd != "1"))
      bad += " || " + qd + " % " + kd + " != 0";
  }
  w.line("if (" + bad + ")");
  w.line("  return cudaErrorInvalidValue;");
  if (packHeads)
    writePackedHeadsCall(plan, w);
  std::string queryRows = plan.dim(plan.q.rows());
  if (oneRow)
    writeVariantCall(plan, *oneRow, queryRows + " == 1",
                     "One query row: the causal mask keeps every key, so the kernel without it "
                     "(grouped heads packed into rows).", w);
  if (fewRows)
    writeVariantCall(plan, *fewRows, queryRows + " <= 64",
                     "At most 64 query rows (decoding): the kernel of one consumer warpgroup, "
                     "whose blocks multiply no rows past S.", w);
  w.comment(std::string("Rows and keys are int in the kernel (m0 + BM + L stays below 2^31)") +
            (plan.causal ? "; the causal grid is below."
                         : "; the grid has the row tiles in x, the last leading dimension in y, "
                           "the others in z."));
  std::string gridY = leadQ.empty() ? "int64_t(1)" : "int64_t(" + plan.dim(leadQ.back()) + ")";
  std::string gridZ = product(plan, leadQ.empty() ? leadQ : leadQ.drop_back());
  std::string rows = "int64_t(" + plan.dim(plan.q.rows()) + ")";
  w.line("const int64_t row_tiles = sketch::ceil_div(" + rows + ", BM);");
  w.line("if (" + rows + " > INT32_MAX - BM || int64_t(" + plan.dim(plan.k.keys()) +
         ") > INT32_MAX - BM - BN || " + gridY + " > 65535 || " + gridZ + " > 65535)");
  w.line("  return cudaErrorInvalidValue;");
  w.comment(plan.tiles.wgmma ? "TMA needs 16-byte aligned tensors."
                             : "cp.async and the 16-byte stores need 16-byte aligned tensors.");
  std::string aligned;
  for (const TensorInfo *t : {&plan.q, static_cast<const TensorInfo *>(&plan.k),
                              static_cast<const TensorInfo *>(&plan.v), &plan.o})
    aligned += (aligned.empty() ? "" : " || ") + ("!sketch::aligned_to(" + plan.cname(t->name) + ", 16)");
  w.line("if (" + aligned + ")");
  w.line("  return cudaErrorInvalidValue;");
  std::string maps, heads = gridY + " * " + gridZ;
  if (plan.tiles.wgmma) {
    if (fallback)
      writeMmaFallback(plan, *fallback, w);
    // the splits (and the short grid's call) before this kernel's tensor maps
    if (split)
      w.line("const int splits = " + plan.name + "_key_splits(row_tiles * " + heads +
             ", int64_t(" + plan.dim(plan.k.keys()) + "));");
    if (split && fewRows && splitsKeys(*fewRows) &&
        plan.kernel->hasAttr(plan::kShortGridRowsAttr))
      writeShortGridCall(plan, *fewRows, heads, w);
    w.comment("TMA: Q, K and V as batches of row-major matrices (a matrix a head), boxes of 64 "
              "columns x BM or BN rows");
    w.comment("(a tensor stored a key per column: 64 keys x its head dimension); sizes the copy "
              "engine cannot describe are refused.");
    w.line("CUtensorMap Q_map, K_map, V_map;");
    auto encode = [&](const TensorInfo &t, StringRef map, StringRef cols, StringRef box) {
      return encodeTensorMap(map, plan.cname(t.name), cols, "uint64_t(" + plan.dim(t.rows()) + ")",
                             product(plan, t.leading()), box);
    };
    auto encodeKeys = [&](const KeyTensor &t, StringRef map, StringRef depth) {
      return t.keyRows ? encode(t, map, depth, "BN")
                       : encode(t, map, "uint64_t(" + plan.dim(t.keys()) + ")", depth);
    };
    std::vector<std::string> encodes{encode(plan.q, "Q_map", "DQK", "BM"),
                                     encodeKeys(plan.k, "K_map", "DQK"),
                                     encodeKeys(plan.v, "V_map", "DV")};
    for (const EpilogueOperand &operand : plan.staged) {
      const std::string &t = operand.param->cname;
      const std::vector<std::string> &dims = operand.param->dims;
      std::string keys = "uint64_t(" + plan.dim(dims.back()) + ")";
      std::string queries = "uint64_t(" + plan.dim(dims[dims.size() - 2]) + ")";
      std::string matrices =
          plan.sig.product(std::vector<std::string>(dims.begin(), dims.end() - 2));
      w.comment(t + ": matrices of (" + dims[dims.size() - 2] + ", " + dims.back() +
                "), boxes of 64 keys x BM queries.");
      w.line("CUtensorMap " + t + "_map;");
      encodes.push_back(encodeTensorMap(t + "_map", t, keys, queries, matrices, "BM"));
    }
    for (const std::string &t : tensorMapNames(plan))
      maps += ", " + t + "_map";
    for (size_t i = 0; i < encodes.size(); ++i)
      w.line(std::string(i == 0 ? "if (!" : "    !") + encodes[i] +
             (i + 1 < encodes.size() ? " ||" : ")"));
    w.line("  return cudaErrorInvalidValue;");
  }
  w.line("cudaError_t error = sketch::allow_dynamic_smem(" + plan.name + "_kernel, SMEM);");
  w.line("if (error != cudaSuccess)");
  w.line("  return error;");
  std::string launch = split ? "sketch::launch_kernel(" + plan.name +
                                   "_kernel, grid, THREADS, SMEM, splits, false, stream, "
                             : plan.name + "_kernel<<<grid, THREADS, SMEM, stream>>>(";
  launch += kernelArgumentList(plan.sig) + maps + derivedValues(plan, true);
  if (plan.causal) {
    writeCausalLaunches(plan, w, launch, heads, split);
  } else if (split) {
    w.line("const dim3 grid{unsigned(row_tiles * splits), unsigned(" + gridY + "), unsigned(" +
           gridZ + ")};");
    w.line("return " + launch + ");");
  } else {
    w.line("const dim3 grid{unsigned(row_tiles), unsigned(" + gridY + "), unsigned(" + gridZ + ")};");
    w.line(launch + ");");
    w.line("return cudaGetLastError();");
  }
  w.close();
}

} // namespace

KernelEmitterResult sketch::emitAttention(KernelOp kernel, const CudaEmitOptions &options,
                                          CudaWriter &w) {
  AttentionPlan plan;
  if (failed(Matcher(kernel, options.arch, plan).run()))
    return failure();
  w.line(plan.tiles.wgmma ? "#include \"sketch/flash_hopper.cuh\""
                          : "#include \"sketch/softmax.cuh\"");
  w.line();
  std::optional<AttentionPlan> fallback = mmaFallback(plan);
  std::optional<AttentionPlan> fewRows = fewRowsVariant(plan, options.arch);
  std::optional<AttentionPlan> oneRow = oneRowVariant(plan, options.arch);
  const AttentionPlan *fallbackPlan = fallback ? &*fallback : nullptr;
  w.line("namespace {");
  w.line();
  KernelWriter(plan, w).write();
  for (const std::optional<AttentionPlan> *other : {&fewRows, &oneRow, &fallback})
    if (*other) {
      w.line();
      KernelWriter(**other, w).write();
    }
  w.line();
  w.line("} // namespace");
  w.line();
  if (fallback) {
    writeHost(*fallback, w);
    w.line();
  }
  if (fewRows) {
    writeHost(*fewRows, w, fallbackPlan);
    w.line();
  }
  if (oneRow) {
    writeHost(*oneRow, w, nullptr, nullptr, /*packHeads=*/true);
    w.line();
  }
  writeHost(plan, w, fallbackPlan, fewRows ? &*fewRows : nullptr, /*packHeads=*/true,
            oneRow ? &*oneRow : nullptr);
  w.line();
  return hostConditions(plan);
}
