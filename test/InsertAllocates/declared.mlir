// Allocates the program already has are kept and not repeated (the seed's
// `Allocate A in global (M, K) with offset batch_offset` and `Allocate C in
// register (BM, BN)`); a new name made by `Compute Y = EXPR` gets the tile of
// the register tile it is computed from.
// RUN: sketch-opt --sketch-insert-allocates %s | FileCheck %s

// CHECK-LABEL: sketch.kernel @declared
// CHECK:      sketch.tensor "Y" : f16 ["Bt", "M", "N"]
// CHECK-NEXT: sketch.allocate "A" in global ["M", "K"] offset "batch_offset"
// CHECK-NEXT: sketch.allocate "C" in register ["BM", "BN"]
// CHECK-NEXT: sketch.allocate "B" in global ["K", "N"] offset "batch_offset"
// CHECK-NEXT: sketch.for "i" in "0" : "K" {
// CHECK:      }
// CHECK-NEXT: sketch.allocate "Y" in register ["BM", "BN"]
// CHECK-NEXT: sketch.assign "Y"
// CHECK:      sketch.allocate "Y" in global ["M", "N"] offset "batch_offset"
// CHECK-NEXT: sketch.copy "Y" from register to global
// CHECK-NOT:  sketch.allocate
sketch.kernel @declared {
  sketch.tensor "A" : f16 ["Bt", "M", "K"]
  sketch.tensor "B" : f16 ["Bt", "K", "N"]
  sketch.tensor "Y" : f16 ["Bt", "M", "N"]
  sketch.allocate "A" in global ["M", "K"] offset "batch_offset"
  sketch.allocate "C" in register ["BM", "BN"]
  sketch.for "i" in "0" : "K" {
    sketch.copy "A" from global to shared
    sketch.copy "B" from global to shared
    sketch.gemm "A", "B" -> "C"
  }
  sketch.assign "Y" {
    %0 = sketch.ref "C"
    %1 = sketch.call gelu(%0)
    sketch.yield %1
  }
  sketch.copy "Y" from register to global
}

// The seed's short example: `Compute GEMM A, B and get C` with nothing
// declared; the operands are read from global by the GEMM itself.
// CHECK-LABEL: sketch.kernel @seed
// CHECK:      sketch.allocate "A" in global ["M", "K"]
// CHECK-NEXT: sketch.allocate "B" in global ["K", "N"]
// CHECK-NEXT: sketch.allocate "C" in register ["BM", "BN"]
// CHECK-NEXT: sketch.for "i" in "0" : "K" {
sketch.kernel @seed {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.for "i" in "0" : "K" {
    sketch.gemm "A", "B" -> "C"
  }
}

// The expression-form epilogue reads C and bias from global memory.
// CHECK-LABEL: sketch.kernel @gemm_epilogue
// CHECK:      sketch.for
// CHECK:      }
// CHECK-NEXT: sketch.allocate "C" in global ["M", "N"]
// CHECK-NEXT: sketch.allocate "bias" in global ["N"]
// CHECK-NEXT: sketch.assign "D"
sketch.kernel @gemm_epilogue {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.tensor "C" : f16 ["M", "N"]
  sketch.tensor "bias" : f16 ["N"]
  sketch.tensor "D" : f16 ["M", "N"]
  sketch.scalar "alpha" : f32
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" from global to shared
    sketch.copy "B" from global to shared
    sketch.gemm "A", "B" -> "D" accumulate
  }
  sketch.assign "D" {
    %0 = sketch.ref "alpha"
    %1 = sketch.ref "D"
    %2 = sketch.binary mul %0, %1
    %3 = sketch.ref "C"
    %4 = sketch.binary add %2, %3
    %5 = sketch.ref "bias"
    %6 = sketch.binary add %4, %5
    sketch.yield %6
  }
  sketch.copy "D" from register to global
}
