// `Reshape X from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new)` before
// every GEMM whose A operand is an earlier GEMM's accumulator, with softmax or
// elementwise work allowed in between; never twice.
// RUN: sketch-opt --sketch-insert-reshapes %s | FileCheck %s
// RUN: sketch-opt --sketch-insert-reshapes %s | sketch-opt --sketch-insert-reshapes | FileCheck %s

// Attention: P is scaled and softmaxed, then feeds the second GEMM of the
// same loop; the Reshape sits right before that GEMM.
// CHECK-LABEL: sketch.kernel @attention
// CHECK:      sketch.softmax "P"
// CHECK-NEXT: sketch.copy "V" from global to shared
// CHECK-NEXT: sketch.reshape "P" from ["MMA_C", "MMA_M", "MMA_N"] to ["MMA_A", "MMA_M", "MMA_N_new"]
// CHECK-NEXT: sketch.gemm "P", "V" -> "O" accumulate
// CHECK-NOT:  sketch.reshape
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

// b2b: D0 comes from the first loop, so it is re-laid out once, before the
// second loop, after the elementwise work on it.
// CHECK-LABEL: sketch.kernel @b2b
// CHECK:      sketch.assign "D0"
// CHECK:      sketch.reshape "D0" from ["MMA_C", "MMA_M", "MMA_N"] to ["MMA_A", "MMA_M", "MMA_N_new"]
// CHECK-NEXT: sketch.for "n" in "0" : "64" {
// CHECK-NEXT:   sketch.copy "B1" from global to shared
// CHECK-NEXT:   sketch.gemm "D0", "B1" -> "D1" accumulate
// CHECK-NOT:  sketch.reshape
sketch.kernel @b2b {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "128"]
  sketch.tensor "D1" : f16 ["M", "128"]
  sketch.scalar "alpha0" : f32
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
  sketch.copy "D1" from register to global
}

// A Reshape already written (here inside the loop) is recognized.
// CHECK-LABEL: sketch.kernel @written
// CHECK:      sketch.for "n" in "0" : "64" {
// CHECK-NEXT:   sketch.reshape "G" from ["MMA_C", "MMA_M", "MMA_N"] to ["MMA_A", "MMA_M", "MMA_N_new"]
// CHECK-NEXT:   sketch.gemm "G", "H" -> "I" accumulate
// CHECK-NOT:  sketch.reshape
sketch.kernel @written {
  sketch.tensor "E" : f16 ["M", "K"]
  sketch.tensor "F" : f16 ["K", "64"]
  sketch.tensor "H" : f16 ["64", "64"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "E", "F" -> "G" accumulate
  }
  sketch.for "n" in "0" : "64" {
    sketch.reshape "G" from ["MMA_C", "MMA_M", "MMA_N"] to ["MMA_A", "MMA_M", "MMA_N_new"]
    sketch.gemm "G", "H" -> "I" accumulate
  }
}

// A new name computed from an accumulator is still in the accumulator layout;
// a tile copied to shared memory and back is not.
// CHECK-LABEL: sketch.kernel @derived_names
// CHECK:      sketch.assign "G2"
// CHECK:      sketch.reshape "G2" from
// CHECK-NEXT: sketch.gemm "G2", "H" -> "I"
// CHECK-NOT:  sketch.reshape
sketch.kernel @derived_names {
  sketch.tensor "E" : f16 ["M", "K"]
  sketch.tensor "F" : f16 ["K", "64"]
  sketch.tensor "H" : f16 ["64", "64"]
  sketch.tensor "G" : f16 ["M", "64"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "E", "F" -> "G" accumulate
  }
  sketch.assign "G2" {
    %0 = sketch.ref "G"
    %1 = sketch.call tanh(%0)
    sketch.yield %1
  }
  sketch.gemm "G2", "H" -> "I"
  sketch.copy "G" from register to shared
  sketch.gemm "G", "H" -> "J"
}

// A single GEMM gets nothing.
// CHECK-LABEL: sketch.kernel @gemm
// CHECK-NOT:  sketch.reshape
sketch.kernel @gemm {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}
