// Allocate in global for each tensor crossing global memory, Allocate in
// register for each Compute output not declared; each right before the
// top-level statement of its first use, in the order of first use.
// RUN: sketch-opt --sketch-insert-allocates %s | FileCheck %s
// Existing Allocates are recognized: a second run adds nothing.
// RUN: sketch-opt --sketch-insert-allocates %s | sketch-opt --sketch-insert-allocates | FileCheck %s

// The contract's GEMM: A and B before the loop, D's register tile too; the
// bias before the statement reading it, D's global view before its store.
// CHECK-LABEL: sketch.kernel @gemm_bias_relu
// CHECK:      sketch.tensor "D" : f16 ["M", "N"]
// CHECK-NEXT: sketch.allocate "A" in global ["M", "K"]
// CHECK-NEXT: sketch.allocate "B" in global ["K", "N"]
// CHECK-NEXT: sketch.allocate "D" in register ["BM", "BN"]
// CHECK-NEXT: sketch.for "k" in "0" : "K" {
// CHECK:      }
// CHECK-NEXT: sketch.allocate "bias" in global ["N"]
// CHECK-NEXT: sketch.elementwise Bias "D" ["bias"]
// CHECK-NEXT: sketch.elementwise ReLU "D" []
// CHECK-NEXT: sketch.allocate "D" in global ["M", "N"]
// CHECK-NEXT: sketch.copy "D" from register to global
// CHECK-NOT:  sketch.allocate
sketch.kernel @gemm_bias_relu {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.tensor "bias" : f16 ["N"]
  sketch.tensor "D" : f16 ["M", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" from global to shared
    sketch.copy "B" from global to shared
    sketch.gemm "A", "B" -> "D" accumulate
  }
  sketch.elementwise Bias "D" ["bias"]
  sketch.elementwise ReLU "D" []
  sketch.copy "D" from register to global
}

// Leading batch dimensions: the block's matrix with `offset batch_offset`.
// CHECK-LABEL: sketch.kernel @batched_gemm
// CHECK:      sketch.allocate "A" in global ["M", "K"] offset "batch_offset"
// CHECK-NEXT: sketch.allocate "B" in global ["K", "N"] offset "batch_offset"
// CHECK-NEXT: sketch.allocate "C" in register ["BM", "BN"]
// CHECK-NEXT: sketch.for
// CHECK:      sketch.allocate "C" in global ["M", "N"] offset "batch_offset"
// CHECK-NEXT: sketch.copy "C" from register to global
sketch.kernel @batched_gemm {
  sketch.tensor "A" : f16 ["Bt", "M", "K"]
  sketch.tensor "B" : f16 ["Bt", "K", "N"]
  sketch.tensor "C" : f16 ["Bt", "M", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" from global to shared
    sketch.copy "B" from global to shared
    sketch.gemm "A", "B" -> "C" accumulate
  }
  sketch.copy "C" from register to global
}

// Convolution tensors keep their 4-D shape, without offset.
// CHECK-LABEL: sketch.kernel @conv2d
// CHECK:      sketch.allocate "In" in global ["N", "C", "H", "W"]
// CHECK-NEXT: sketch.allocate "Wei" in global ["K", "C", "R", "S"]
// CHECK-NEXT: sketch.allocate "Out" in register ["BM", "BN"]
// CHECK-NEXT: sketch.for
// CHECK:      sketch.allocate "Out" in global ["N", "K", "P", "Q"]
// CHECK-NEXT: sketch.copy "Out" from register to global
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

// Attention: Q before its Copy outside the loop; K, P, V and O, in the order
// the loop first uses them, before the loop. P is (BM, BN): the loop steps
// over the keys by BN; O has the whole head dimension.
// CHECK-LABEL: sketch.kernel @attention
// CHECK:      sketch.allocate "Q" in global ["S", "128"] offset "batch_offset"
// CHECK-NEXT: sketch.copy "Q" from global to shared
// CHECK-NEXT: sketch.allocate "K" in global ["L", "128"] offset "batch_offset"
// CHECK-NEXT: sketch.allocate "P" in register ["BM", "BN"]
// CHECK-NEXT: sketch.allocate "V" in global ["L", "128"] offset "batch_offset"
// CHECK-NEXT: sketch.allocate "O" in register ["BM", "128"]
// CHECK-NEXT: sketch.for "j" in "0" : "L" {
// CHECK:      sketch.allocate "O" in global ["S", "128"] offset "batch_offset"
// CHECK-NEXT: sketch.copy "O" from register to global
sketch.kernel @attention {
  sketch.tensor "Q" : f16 ["B", "H", "S", "128"]
  sketch.tensor "K" : f16 ["B", "H", "L", "128"]
  sketch.tensor "V" : f16 ["B", "H", "L", "128"]
  sketch.tensor "O" : f16 ["B", "H", "S", "128"]
  sketch.scalar "scale" : f32
  sketch.copy "Q" from global to shared
  sketch.for "j" in "0" : "L" {
    sketch.copy "K" from global to shared
    sketch.gemm "Q", "K" transposed -> "P"
    sketch.assign "P" {
      %0 = sketch.ref "P"
      %1 = sketch.ref "scale"
      %2 = sketch.binary mul %0, %1
      sketch.yield %2
    }
    sketch.softmax "P"
    sketch.copy "V" from global to shared
    sketch.gemm "P", "V" -> "O" accumulate
  }
  sketch.copy "O" from register to global
}

// b2b: D0 keeps all 64 columns, D1 all 128; C1 is read by the epilogue from
// global memory; scalars get nothing.
// CHECK-LABEL: sketch.kernel @b2b
// CHECK:      sketch.allocate "A0" in global ["M", "K0"]
// CHECK-NEXT: sketch.allocate "B0" in global ["K0", "64"]
// CHECK-NEXT: sketch.allocate "D0" in register ["BM", "64"]
// CHECK-NEXT: sketch.for "k"
// CHECK:      sketch.assign "D0"
// CHECK:      sketch.allocate "B1" in global ["64", "128"]
// CHECK-NEXT: sketch.allocate "D1" in register ["BM", "128"]
// CHECK-NEXT: sketch.for "n"
// CHECK:      sketch.allocate "C1" in global ["M", "128"]
// CHECK-NEXT: sketch.assign "D1"
// CHECK:      sketch.allocate "D1" in global ["M", "128"]
// CHECK-NEXT: sketch.copy "D1" from register to global
// CHECK-NOT:  sketch.allocate "alpha
sketch.kernel @b2b {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "128"]
  sketch.tensor "C1" : f16 ["M", "128"]
  sketch.tensor "D1" : f16 ["M", "128"]
  sketch.scalar "alpha0" : f32
  sketch.scalar "beta1" : f32
  sketch.for "k" in "0" : "K0" {
    sketch.copy "A0" from global to shared
    sketch.copy "B0" from global to shared
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.assign "D0" {
    %0 = sketch.ref "alpha0"
    %1 = sketch.ref "D0"
    %2 = sketch.binary mul %0, %1
    %3 = sketch.call relu(%2)
    sketch.yield %3
  }
  sketch.for "n" in "0" : "64" {
    sketch.copy "B1" from global to shared
    sketch.gemm "D0", "B1" -> "D1" accumulate
  }
  sketch.assign "D1" {
    %0 = sketch.ref "D1"
    %1 = sketch.ref "beta1"
    %2 = sketch.ref "C1"
    %3 = sketch.binary mul %1, %2
    %4 = sketch.binary add %0, %3
    sketch.yield %4
  }
  sketch.copy "D1" from register to global
}
