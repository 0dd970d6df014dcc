// Every Copy gets its tile from the role of its tensor in the GEMM of the same
// loop, and the coordinate [L = k] of the loop it sits in; each loop records
// the tile symbol it steps by and its trip count in tiles.
// RUN: sketch-opt --sketch-infer-dimensions %s | FileCheck %s
// Completing twice changes nothing.
// RUN: sketch-opt --sketch-infer-dimensions %s | sketch-opt --sketch-infer-dimensions | FileCheck %s

// CHECK-LABEL: sketch.kernel @gemm_bias_relu
// CHECK:      sketch.for "k" in "0" : "K" {
// CHECK-NEXT:   sketch.copy "A" tile ["BM", "BK"] at "k" from global to shared
// CHECK-NEXT:   sketch.copy "B" tile ["BK", "BN"] at "k" from global to shared
// CHECK-NEXT:   sketch.gemm "A", "B" -> "D" accumulate
// CHECK-NEXT: } {sketch.step = "BK", sketch.trip_count = "(K + BK - 1) / BK"}
// CHECK:      sketch.copy "D" tile ["BM", "BN"] from register to global
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

// A transposed operand is copied in its stored orientation: B is [N, K].
// CHECK-LABEL: sketch.kernel @gemm_bt
// CHECK:      sketch.copy "A" tile ["BM", "BK"] at "k" from global to shared
// CHECK-NEXT: sketch.copy "B" tile ["BN", "BK"] at "k" from global to shared
sketch.kernel @gemm_bt {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["N", "K"]
  sketch.tensor "C" : f16 ["M", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" from global to shared
    sketch.copy "B" from global to shared
    sketch.gemm "A", "B" transposed -> "C" accumulate
  }
  sketch.copy "C" from register to global
}

// Leading batch dimensions do not change the tile.
// CHECK-LABEL: sketch.kernel @batched_gemm
// CHECK:      sketch.copy "A" tile ["BM", "BK"] at "k" from global to shared
// CHECK-NEXT: sketch.copy "B" tile ["BK", "BN"] at "k" from global to shared
// CHECK:      sketch.copy "C" tile ["BM", "BN"] from register to global
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

// Tiles and coordinates already written are kept as they are; a missing
// coordinate is still added. A Copy loading the accumulator takes its tile.
// CHECK-LABEL: sketch.kernel @written
// CHECK:      sketch.copy "C" tile ["BM", "BN"] from global to register
// CHECK:      sketch.copy "A" tile ["64", "BK"] at "k" from global to shared
// CHECK-NEXT: sketch.copy "B" tile ["BK", "BN"] at "k" from global to shared
// CHECK:      sketch.copy "C" tile ["BM", "BN"] from register to global
sketch.kernel @written {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.tensor "C" : f16 ["M", "N"]
  sketch.copy "C" from global to register
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" tile ["64", "BK"] at "k" from global to shared
    sketch.copy "B" tile ["BK", "BN"] from global to shared
    sketch.gemm "A", "B" -> "C" accumulate
  }
  sketch.copy "C" from register to global
}

// A GEMM whose reduction is a literal needs no loop; a tensor read only by
// the epilogue is copied with the tile of the register tile it meets.
// CHECK-LABEL: sketch.kernel @no_loop
// CHECK:      sketch.copy "A" tile ["BM", "64"] from global to shared
// CHECK-NEXT: sketch.copy "B" tile ["64", "BN"] from global to shared
// CHECK:      sketch.copy "E" tile ["BM", "BN"] from global to register
sketch.kernel @no_loop {
  sketch.tensor "A" : f32 ["M", "64"]
  sketch.tensor "B" : f32 ["64", "N"]
  sketch.tensor "E" : f32 ["M", "N"]
  sketch.copy "A" from global to shared
  sketch.copy "B" from global to shared
  sketch.gemm "A", "B" -> "C"
  sketch.copy "E" from global to register
  sketch.elementwise Add "C" ["E"]
}
