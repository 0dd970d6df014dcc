// A register-held accumulator can only become an A operand.
// RUN: sketch-opt --sketch-insert-reshapes --split-input-file --verify-diagnostics %s

sketch.kernel @as_b_operand {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "M"]
  sketch.tensor "W" : f16 ["64", "M"]
  sketch.for "k" in "0" : "K" {
    // expected-note @+1 {{'C' is computed here}}
    sketch.gemm "A", "B" -> "C" accumulate
  }
  // expected-error @+1 {{'C' holds an earlier GEMM's result in registers and cannot be used as the B operand; only the A operand can reuse it (copy it to shared memory first)}}
  sketch.gemm "W", "C" -> "E"
}

// -----

sketch.kernel @transposed {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "64"]
  sketch.tensor "W" : f16 ["M", "32"]
  sketch.for "k" in "0" : "K" {
    // expected-note @+1 {{'C' is computed here}}
    sketch.gemm "A", "B" -> "C" accumulate
  }
  // expected-error @+1 {{'C' holds an earlier GEMM's result in registers and cannot be used transposed}}
  sketch.gemm "C" transposed, "W" -> "E"
}
