// -D bindings: each bound symbol becomes its literal everywhere (parameters,
// loop bounds, Allocates, Copy tiles), so the completed program is
// self-contained. Binding N0 makes the chained GEMM's width known.
// RUN: sketch-opt --sketch-infer-dimensions="bind=N0=64,C=32" %s | FileCheck %s

// CHECK-LABEL: sketch.kernel @b2b
// CHECK:      sketch.tensor "B0" : f16 ["K0", "64"]
// CHECK-NEXT: sketch.tensor "B1" : f16 ["64", "128"]
// CHECK:      sketch.allocate "B0" in global ["K0", "64"]
// CHECK:      sketch.copy "B0" tile ["BK", "64"] at "k" from global to shared
// CHECK:      sketch.for "n" in "0" : "64" {
// CHECK-NEXT:   sketch.copy "B1" tile ["BK", "128"] at "n" from global to shared
sketch.kernel @b2b {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "N0"]
  sketch.tensor "B1" : f16 ["N0", "128"]
  sketch.tensor "D1" : f16 ["M", "128"]
  sketch.allocate "B0" in global ["K0", "N0"]
  sketch.for "k" in "0" : "K0" {
    sketch.copy "A0" from global to shared
    sketch.copy "B0" from global to shared
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.for "n" in "0" : "N0" {
    sketch.copy "B1" from global to shared
    sketch.gemm "D0", "B1" -> "D1" accumulate
  }
  sketch.copy "D1" from register to global
}

// Bindings apply to every kernel that has the symbol; the product keeps its form.
// CHECK-LABEL: sketch.kernel @conv2d
// CHECK:      sketch.tensor "In" : f32 ["N", "32", "H", "W"] layout nchw
// CHECK:      sketch.for "i" in "0" : "32*R*S" {
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
