//===- SketchBase.td - the sketch dialect and its attributes --------------===//
//
// The dialect holds one op per sketch statement. Tensors are named, not SSA
// values: a sketch names one logical tensor with a view at each memory level,
// so ops refer to tensors by name and the kernel op owns the name table.
// Dimensions are kept as sketch expressions in strings ("M", "128", "C*R*S").
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_BASE_TD
#define SKETCH_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Sketch_Dialect : Dialect {
  let name = "sketch";
  let summary = "Thread-block sketches: Allocate, Copy, Compute, Reshape, for";
  let cppNamespace = "::sketch";
}

class Sketch_Op<string mnemonic, list<Trait> traits = []>
    : Op<Sketch_Dialect, mnemonic, traits>;

def Sketch_MemorySpace : I32EnumAttr<"MemorySpace", "memory level", [
    I32EnumAttrCase<"global", 0>,
    I32EnumAttrCase<"shared", 1>,
    I32EnumAttrCase<"reg", 2, "register">
  ]> {
  let cppNamespace = "::sketch";
}

def Sketch_Layout : I32EnumAttr<"Layout", "activation or filter layout", [
    I32EnumAttrCase<"nchw", 0>, I32EnumAttrCase<"nhwc", 1>,
    I32EnumAttrCase<"kcrs", 2>, I32EnumAttrCase<"krsc", 3>
  ]> {
  let cppNamespace = "::sketch";
}

// In-place elementwise statements: `Compute ReLU C`, `Compute Bias C, bias`...
def Sketch_ElementwiseKind : I32EnumAttr<"ElementwiseKind", "in-place elementwise statement", [
    I32EnumAttrCase<"relu", 0, "ReLU">, I32EnumAttrCase<"gelu", 1, "GELU">,
    I32EnumAttrCase<"silu", 2, "SiLU">, I32EnumAttrCase<"sigmoid", 3, "Sigmoid">,
    I32EnumAttrCase<"tanh", 4, "Tanh">, I32EnumAttrCase<"leaky_relu", 5, "LeakyReLU">,
    I32EnumAttrCase<"scale", 6, "Scale">, I32EnumAttrCase<"bias", 7, "Bias">,
    I32EnumAttrCase<"add", 8, "Add">
  ]> {
  let cppNamespace = "::sketch";
}

def Sketch_BinaryKind : I32EnumAttr<"BinaryKind", "arithmetic operator", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"sub", 1>,
    I32EnumAttrCase<"mul", 2>, I32EnumAttrCase<"div", 3>
  ]> {
  let cppNamespace = "::sketch";
}

def Sketch_CallKind : I32EnumAttr<"CallKind", "elementwise function", [
    I32EnumAttrCase<"relu", 0>, I32EnumAttrCase<"gelu", 1>, I32EnumAttrCase<"silu", 2>,
    I32EnumAttrCase<"sigmoid", 3>, I32EnumAttrCase<"tanh", 4>, I32EnumAttrCase<"exp", 5>,
    I32EnumAttrCase<"max", 6>, I32EnumAttrCase<"min", 7>, I32EnumAttrCase<"leaky_relu", 8>
  ]> {
  let cppNamespace = "::sketch";
}

def Sketch_ScalarKind : I32EnumAttr<"ScalarKind", "scalar parameter type", [
    I32EnumAttrCase<"f32", 0>, I32EnumAttrCase<"i32", 1>
  ]> {
  let cppNamespace = "::sketch";
}

def Sketch_ElementType : I32EnumAttr<"ElementType", "tensor element type", [
    I32EnumAttrCase<"f16", 0>, I32EnumAttrCase<"bf16", 1>, I32EnumAttrCase<"f32", 2>
  ]> {
  let cppNamespace = "::sketch";
}

#endif // SKETCH_BASE_TD
