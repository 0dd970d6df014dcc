//===- SketchOps.td - one op per sketch statement -------------------------===//
#ifndef SKETCH_OPS_TD
#define SKETCH_OPS_TD

include "dialect/SketchBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Kernel and parameters
//===----------------------------------------------------------------------===//

def Sketch_KernelOp : Sketch_Op<"kernel", [IsolatedFromAbove, Symbol, NoTerminator,
                                           SingleBlock, NoRegionArguments]> {
  let summary = "`kernel NAME(PARAM, ...):` with its directives and statements";
  let description = [{
    The body starts with the parameters (`sketch.tensor`, `sketch.scalar`) in
    declaration order, then the statements. Directives are attributes:
    `tile_m`, `tile_n`, `tile_k` (`tile BM = .., BN = .., BK = ..`), `warps`
    and `stages`; each is absent until the user or the defaults pass sets it.
    `algorithm` (`algorithm winograd` / `winograd_2x2` / `implicit_gemm`, an extension)
    picks a convolution's kernel; absent, sketch-choose-defaults chooses.
    `split_k` (`split_k auto` / `split_k N`, an extension) splits a GEMM's K
    loop: "auto" (the host function chooses by the sizes) or N slices.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<I64Attr>:$tile_m,
                       OptionalAttr<I64Attr>:$tile_n,
                       OptionalAttr<I64Attr>:$tile_k,
                       OptionalAttr<I64Attr>:$warps,
                       OptionalAttr<I64Attr>:$stages,
                       OptionalAttr<StrAttr>:$algorithm,
                       OptionalAttr<StrAttr>:$split_k);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The parameter or statement-produced tensor named `name`, if declared.
    ::mlir::Operation *lookupTensorParam(::llvm::StringRef name);
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Sketch_TensorParamOp : Sketch_Op<"tensor", [HasParent<"KernelOp">]> {
  let summary = "tensor parameter `NAME: DTYPE[DIM, ...] [LAYOUT]`";
  let arguments = (ins StrAttr:$name, Sketch_ElementType:$element_type,
                       StrArrayAttr:$dims, OptionalAttr<Sketch_Layout>:$layout);
  let assemblyFormat = "$name `:` $element_type $dims (`layout` $layout^)? attr-dict";
  let hasVerifier = 1;
}

def Sketch_ScalarParamOp : Sketch_Op<"scalar", [HasParent<"KernelOp">]> {
  let summary = "scalar parameter `NAME: f32` or `NAME: i32`, passed by value";
  let arguments = (ins StrAttr:$name, Sketch_ScalarKind:$scalar_type);
  let assemblyFormat = "$name `:` $scalar_type attr-dict";
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

def Sketch_AllocateOp : Sketch_Op<"allocate"> {
  let summary = "`Allocate X in SPACE (D, ...) [with offset EXPR]`";
  let arguments = (ins StrAttr:$name, Sketch_MemorySpace:$space, StrArrayAttr:$dims,
                       OptionalAttr<StrAttr>:$offset);
  let assemblyFormat = "$name `in` $space $dims (`offset` $offset^)? attr-dict";
  let hasVerifier = 1;
}

def Sketch_CopyOp : Sketch_Op<"copy"> {
  let summary = "`Copy X [(D, D)] [in coordinate [L = EXPR]] from SPACE to SPACE`";
  let arguments = (ins StrAttr:$name, OptionalAttr<StrArrayAttr>:$tile,
                       OptionalAttr<StrAttr>:$coordinate,
                       Sketch_MemorySpace:$source, Sketch_MemorySpace:$destination);
  let assemblyFormat = [{
    $name (`tile` $tile^)? (`at` $coordinate^)? `from` $source `to` $destination attr-dict
  }];
  let hasVerifier = 1;
}

def Sketch_GemmOp : Sketch_Op<"gemm"> {
  let summary = "`Compute GEMM A, B and (get|accumulate) C` (C = A·B or C += A·B)";
  let arguments = (ins StrAttr:$lhs, UnitAttr:$lhs_transposed,
                       StrAttr:$rhs, UnitAttr:$rhs_transposed,
                       StrAttr:$result, UnitAttr:$accumulate);
  let assemblyFormat = [{
    $lhs (`transposed` $lhs_transposed^)? `,` $rhs (`transposed` $rhs_transposed^)?
    `->` $result (`accumulate` $accumulate^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Sketch_Conv2dOp : Sketch_Op<"conv2d"> {
  let summary = "`Compute Conv2d X, W and (get|accumulate) Y with stride (u, v) pad (p, q) [dilation (d, e)]`";
  let arguments = (ins StrAttr:$input, StrAttr:$filter, StrAttr:$result, UnitAttr:$accumulate,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad,
                       DenseI64ArrayAttr:$dilation);
  let assemblyFormat = [{
    $input `,` $filter `->` $result (`accumulate` $accumulate^)?
    `stride` $stride `pad` $pad `dilation` $dilation attr-dict
  }];
  let hasVerifier = 1;
}

def Sketch_SoftmaxOp : Sketch_Op<"softmax"> {
  let summary = "`Compute Softmax S`: row-wise, online inside a loop over the row";
  let arguments = (ins StrAttr:$name);
  let assemblyFormat = "$name attr-dict";
}

def Sketch_MaskOp : Sketch_Op<"mask"> {
  let summary = "`Compute Mask S causal`";
  let arguments = (ins StrAttr:$name);
  let assemblyFormat = "$name `causal` attr-dict";
}

def Sketch_ElementwiseOp : Sketch_Op<"elementwise"> {
  let summary = "in-place elementwise statement (`Compute ReLU C`, `Compute Bias C, bias`, ...)";
  let description = [{
    `operands` holds what follows the target: the slope of LeakyReLU, the
    factor of Scale, the bias tensor of Bias, the tensor and optional beta of
    Add. Each is a name (tensor or scalar parameter) or a number literal.
  }];
  let arguments = (ins Sketch_ElementwiseKind:$kind, StrAttr:$target,
                       StrArrayAttr:$operands);
  let assemblyFormat = "$kind $target $operands attr-dict";
  let hasVerifier = 1;
}

def Sketch_AssignOp : Sketch_Op<"assign", [SingleBlock]> {
  let summary = "`Compute Y = EXPR`, elementwise; the region yields the value";
  let arguments = (ins StrAttr:$target);
  let regions = (region SizedRegion<1>:$expression);
  let assemblyFormat = "$target $expression attr-dict";
  let hasVerifier = 1;
}

def Sketch_ReshapeOp : Sketch_Op<"reshape"> {
  let summary = "`Reshape X from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new)`";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$from, StrArrayAttr:$to);
  let assemblyFormat = "$name `from` $from `to` $to attr-dict";
  let hasVerifier = 1;
}

def Sketch_ForOp : Sketch_Op<"for", [NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "`for VAR in LO:HI:`, over the tiles covering LO..HI";
  let arguments = (ins StrAttr:$var, StrAttr:$lower, StrAttr:$upper);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$var `in` $lower `:` $upper $body attr-dict";
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

//===----------------------------------------------------------------------===//
// Expression ops (only inside `sketch.assign`); values are f32
//===----------------------------------------------------------------------===//

def Sketch_RefOp : Sketch_Op<"ref", [Pure, HasParent<"AssignOp">]> {
  let summary = "the value of a register tile, global tensor or scalar parameter";
  let arguments = (ins StrAttr:$name);
  let results = (outs F32:$value);
  let assemblyFormat = "$name attr-dict";
}

def Sketch_ConstantOp : Sketch_Op<"constant", [Pure, HasParent<"AssignOp">]> {
  let summary = "a number literal; `spelling` is kept so it prints as written";
  let arguments = (ins F64Attr:$value, StrAttr:$spelling);
  let results = (outs F32:$result);
  let assemblyFormat = "$spelling attr-dict";
  let hasVerifier = 1;
}

def Sketch_BinaryOp : Sketch_Op<"binary", [Pure, HasParent<"AssignOp">]> {
  let arguments = (ins Sketch_BinaryKind:$kind, F32:$lhs, F32:$rhs);
  let results = (outs F32:$result);
  let assemblyFormat = "$kind $lhs `,` $rhs attr-dict";
}

def Sketch_NegateOp : Sketch_Op<"negate", [Pure, HasParent<"AssignOp">]> {
  let arguments = (ins F32:$operand);
  let results = (outs F32:$result);
  let assemblyFormat = "$operand attr-dict";
}

def Sketch_CallOp : Sketch_Op<"call", [Pure, HasParent<"AssignOp">]> {
  let arguments = (ins Sketch_CallKind:$callee, Variadic<F32>:$args);
  let results = (outs F32:$result);
  let assemblyFormat = "$callee `(` $args `)` attr-dict";
  let hasVerifier = 1;
}

def Sketch_YieldOp : Sketch_Op<"yield", [Terminator, HasParent<"AssignOp">]> {
  let arguments = (ins F32:$value);
  let assemblyFormat = "$value attr-dict";
}

#endif // SKETCH_OPS_TD
