// Convolution as an implicit GEMM over C*R*S: the activation is the A operand
// (BM, BK), the filter the B operand (BK, BN), whatever the layouts. Output
// sizes written as symbols are derived (sketch.derived holds their formula);
// literal ones are checked.
// RUN: sketch-opt --sketch-infer-dimensions %s | FileCheck %s
// RUN: sketch-opt --sketch-infer-dimensions %s | sketch-opt --sketch-infer-dimensions | FileCheck %s

// CHECK-LABEL: sketch.kernel @conv2d attributes {sketch.derived = {P = "H - R + 3", Q = "W - S + 3"}}
// CHECK:      sketch.copy "In" tile ["BM", "BK"] at "i" from global to shared
// CHECK-NEXT: sketch.copy "Wei" tile ["BK", "BN"] at "i" from global to shared
// CHECK:      } {sketch.step = "BK", sketch.trip_count = "(C*R*S + BK - 1) / BK"}
// CHECK-NEXT: sketch.copy "Out" tile ["BM", "BN"] from register to global
sketch.kernel @conv2d {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "R", "S"] layout kcrs
  sketch.tensor "Out" : f32 ["N", "K", "P", "Q"] layout nchw
  sketch.for "i" in "0" : "C*R*S" {
    sketch.copy "In" from global to shared
    sketch.copy "Wei" from global to shared
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
  sketch.copy "Out" from register to global
}

// NHWC/KRSC, a 3x3 filter, stride 2, pad 1: P = (H + 2 - 2 - 1) / 2 + 1. The
// loop may name the reduction in any order. The bias is per output channel.
// CHECK-LABEL: sketch.kernel @conv2d_nhwc attributes {sketch.derived = {P = "(H - 1) / 2 + 1", Q = "(W - 1) / 2 + 1"}}
// CHECK:      sketch.copy "In" tile ["BM", "BK"] at "i" from global to shared
// CHECK-NEXT: sketch.copy "Wei" tile ["BK", "BN"] at "i" from global to shared
sketch.kernel @conv2d_nhwc {
  sketch.tensor "In" : f16 ["N", "H", "W", "C"] layout nhwc
  sketch.tensor "Wei" : f16 ["K", "3", "3", "C"] layout krsc
  sketch.tensor "bias" : f16 ["K"]
  sketch.tensor "Out" : f16 ["N", "P", "Q", "K"] layout nhwc
  sketch.for "i" in "0" : "C*3*3" {
    sketch.copy "In" from global to shared
    sketch.copy "Wei" from global to shared
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [2, 2] pad [1, 1] dilation [1, 1]
  }
  sketch.elementwise Bias "Out" ["bias"]
  sketch.copy "Out" from register to global
}

// A same-size convolution may reuse H and W for its output: with a 3x3
// filter, stride 1 and pad 1 the formula is H itself. Nothing is derived.
// CHECK-LABEL: sketch.kernel @same_size {
// CHECK:      sketch.copy "In" tile ["BM", "BK"] at "i" from global to shared
sketch.kernel @same_size {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "3", "3"] layout kcrs
  sketch.tensor "Out" : f32 ["N", "K", "H", "W"] layout nchw
  sketch.for "i" in "0" : "9*C" {
    sketch.copy "In" from global to shared
    sketch.copy "Wei" from global to shared
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
  sketch.copy "Out" from register to global
}

// All sizes literal: the declared output sizes are checked and kept.
// CHECK-LABEL: sketch.kernel @literal {
sketch.kernel @literal {
  sketch.tensor "In" : f32 ["2", "64", "32", "30"] layout nchw
  sketch.tensor "Wei" : f32 ["128", "64", "5", "3"] layout kcrs
  sketch.tensor "Out" : f32 ["2", "128", "12", "28"] layout nchw
  sketch.for "i" in "0" : "64*5*3" {
    sketch.copy "In" from global to shared
    sketch.copy "Wei" from global to shared
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [2, 1] pad [0, 0] dilation [2, 1]
  }
  sketch.copy "Out" from register to global
}
