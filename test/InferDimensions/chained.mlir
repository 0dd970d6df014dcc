// Chained GEMMs. Attention: the loop over the keys runs over the first GEMM's
// N and the second GEMM's K, so it steps by BN; Q is copied once, outside the
// loop, with the whole head dimension. b2b: the first result is kept whole
// (64 columns), and the second loop steps over its 64 columns by BK.
// RUN: sketch-opt --sketch-infer-dimensions %s | FileCheck %s
// RUN: sketch-opt --sketch-infer-dimensions %s | sketch-opt --sketch-infer-dimensions | FileCheck %s

// CHECK-LABEL: sketch.kernel @attention
// CHECK:      sketch.copy "Q" tile ["BM", "128"] from global to shared
// CHECK-NEXT: sketch.for "j" in "0" : "L" {
// CHECK-NEXT:   sketch.copy "K" tile ["BN", "128"] at "j" from global to shared
// CHECK:        sketch.copy "V" tile ["BN", "128"] at "j" from global to shared
// CHECK:      } {sketch.step = "BN", sketch.trip_count = "(L + BN - 1) / BN"}
// CHECK-NEXT: sketch.copy "O" tile ["BM", "128"] from register to global
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

// Causal self-attention over S keys: the loop extent S is also the query
// count, yet it covers the first GEMM's N, not its M.
// CHECK-LABEL: sketch.kernel @attention_causal
// CHECK:      sketch.copy "Q" tile ["BM", "64"] from global to shared
// CHECK:        sketch.copy "K" tile ["BN", "64"] at "j" from global to shared
// CHECK:        sketch.copy "V" tile ["BN", "64"] at "j" from global to shared
// CHECK:      } {sketch.step = "BN", sketch.trip_count = "(S + BN - 1) / BN"}
// CHECK-NEXT: sketch.copy "O" tile ["BM", "64"] from register to global
sketch.kernel @attention_causal {
  sketch.tensor "Q" : f16 ["B", "H", "S", "64"]
  sketch.tensor "K" : f16 ["B", "H", "S", "64"]
  sketch.tensor "V" : f16 ["B", "H", "S", "64"]
  sketch.tensor "O" : f16 ["B", "H", "S", "64"]
  sketch.copy "Q" from global to shared
  sketch.for "j" in "0" : "S" {
    sketch.copy "K" from global to shared
    sketch.gemm "Q", "K" transposed -> "P"
    sketch.mask "P" causal
    sketch.softmax "P"
    sketch.copy "V" from global to shared
    sketch.gemm "P", "V" -> "O" accumulate
  }
  sketch.copy "O" from register to global
}

// CHECK-LABEL: sketch.kernel @b2b
// CHECK:      sketch.copy "A0" tile ["BM", "BK"] at "k" from global to shared
// CHECK-NEXT: sketch.copy "B0" tile ["BK", "64"] at "k" from global to shared
// CHECK:      } {sketch.step = "BK", sketch.trip_count = "(K0 + BK - 1) / BK"}
// CHECK:      sketch.copy "B1" tile ["BK", "128"] at "n" from global to shared
// CHECK:      } {sketch.step = "BK", sketch.trip_count = "(64 + BK - 1) / BK"}
// CHECK:      sketch.copy "D1" tile ["BM", "128"] from register to global
sketch.kernel @b2b {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "128"]
  sketch.tensor "C1" : f16 ["M", "128"]
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
  sketch.elementwise Add "D1" ["C1"]
  sketch.copy "D1" from register to global
}
