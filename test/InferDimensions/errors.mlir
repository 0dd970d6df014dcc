// Programs the dimension inference cannot complete: each error sits at a
// statement, with a note at the other place involved.
// RUN: sketch-opt --sketch-infer-dimensions --split-input-file --verify-diagnostics %s

// The chained GEMM keeps D0 (M x N0) in registers: N0 must be a literal.
sketch.kernel @b2b_symbolic_n0 {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "N0"]
  sketch.tensor "B1" : f16 ["N0", "128"]
  sketch.tensor "D1" : f16 ["M", "128"]
  sketch.for "k" in "0" : "K0" {
    sketch.copy "A0" from global to shared
    sketch.copy "B0" from global to shared
    // expected-note @+1 {{'D0' is computed here}}
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.for "n" in "0" : "N0" {
    sketch.copy "B1" from global to shared
    // expected-error @+1 {{'N0' must be known at compile time: 'D0' (the result of an earlier GEMM, M x N0) stays in registers as this GEMM's A operand, a whole row per block; declare it as a literal or bind it with -D N0=...}}
    sketch.gemm "D0", "B1" -> "D1" accumulate
  }
}

// -----

// The second GEMM of a b2b computes whole rows of D1: N1 must be a literal.
sketch.kernel @b2b_symbolic_n1 {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "N1"]
  sketch.tensor "D1" : f16 ["M", "N1"]
  sketch.for "k" in "0" : "K0" {
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  // expected-error @+1 {{'N1' must be known at compile time: this GEMM consumes a register-held result, so each block computes whole rows of 'D1'}}
  sketch.gemm "D0", "B1" -> "D1" accumulate
}

// -----

// Attention with a symbolic head dimension: Q is taken whole along it.
sketch.kernel @attention_symbolic_head {
  sketch.tensor "Q" : f16 ["B", "H", "S", "D"]
  sketch.tensor "K" : f16 ["B", "H", "L", "D"]
  sketch.tensor "V" : f16 ["B", "H", "L", "D"]
  sketch.tensor "O" : f16 ["B", "H", "S", "D"]
  sketch.copy "Q" from global to shared
  sketch.for "j" in "0" : "L" {
    sketch.copy "K" from global to shared
    // expected-error @+1 {{'D' must be known at compile time: no surrounding `for` runs over this GEMM's reduction}}
    sketch.gemm "Q", "K" transposed -> "P"
    sketch.softmax "P"
    sketch.copy "V" from global to shared
    sketch.gemm "P", "V" -> "O" accumulate
  }
}

// -----

// The GEMM's result disagrees with the declared output.
sketch.kernel @result_mismatch {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  // expected-note @+1 {{'D' is declared here as [M, N2]}}
  sketch.tensor "D" : f16 ["M", "N2"]
  sketch.for "k" in "0" : "K" {
    // expected-error @+1 {{GEMM result 'D' is M x N here but declared M x N2}}
    sketch.gemm "A", "B" -> "D" accumulate
  }
}

// -----

// A batched GEMM writing an output with other batch dimensions.
sketch.kernel @batch_mismatch {
  sketch.tensor "A" : f16 ["Bt", "M", "K"]
  sketch.tensor "B" : f16 ["Bt", "K", "N"]
  // expected-note @+1 {{'C' is declared here as [Bt2, M, N]}}
  sketch.tensor "C" : f16 ["Bt2", "M", "N"]
  sketch.for "k" in "0" : "K" {
    // expected-error @+1 {{GEMM result 'C' has batch dimensions [Bt2] but 'A' has [Bt]}}
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// -----

// A loop over no dimension of the GEMM inside it.
sketch.kernel @loop_mismatch {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  // expected-error @+1 {{this loop runs over K2, which is none of the dimensions of the GEMM in it (M = M, N = N, K = K)}}
  sketch.for "k" in "0" : "K2" {
    // expected-note @+1 {{the loop's gemm is here}}
    sketch.gemm "A", "B" -> "D" accumulate
  }
}

// -----

// A bias along neither dimension of the tile.
sketch.kernel @bias_mismatch {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  // expected-note @+1 {{'bias' is declared here as [K]}}
  sketch.tensor "bias" : f16 ["K"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "D" accumulate
  }
  // expected-error @+1 {{'bias' [K] does not fit 'D', which is M x N}}
  sketch.elementwise Bias "D" ["bias"]
}

// -----

// An epilogue tensor of another shape in an expression.
sketch.kernel @epilogue_mismatch {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  // expected-note @+1 {{'C' is declared here as [N, M]}}
  sketch.tensor "C" : f16 ["N", "M"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "D" accumulate
  }
  // expected-error @+1 {{'C' [N, M] does not fit 'D', which is M x N}}
  sketch.assign "D" {
    %0 = sketch.ref "D"
    %1 = sketch.ref "C"
    %2 = sketch.binary add %0, %1
    sketch.yield %2
  }
}

// -----

// An Allocate in global that is not the tensor's shape.
sketch.kernel @allocate_mismatch {
  // expected-note @+1 {{'A' is declared here as [M, K]}}
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  // expected-error @+1 {{Allocate of 'A' in global as [K, M] does not match its declaration}}
  sketch.allocate "A" in global ["K", "M"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "D" accumulate
  }
}

// -----

// Literal sizes: the output height does not follow from the input.
sketch.kernel @conv_literal_mismatch {
  sketch.tensor "In" : f32 ["1", "64", "32", "32"] layout nchw
  sketch.tensor "Wei" : f32 ["128", "64", "3", "3"] layout kcrs
  // expected-note @+1 {{'Out' is declared here as [1, 128, 30, 32]}}
  sketch.tensor "Out" : f32 ["1", "128", "30", "32"] layout nchw
  sketch.for "i" in "0" : "64*3*3" {
    // expected-error @+1 {{Conv2d output height is 32 (input 32, filter 3, stride 1, pad 1, dilation 1) but 'Out' declares 30}}
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
}

// -----

// A literal output size that depends on a run-time input size.
sketch.kernel @conv_literal_symbolic {
  sketch.tensor "In" : f32 ["N", "C", "H", "32"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "3", "3"] layout kcrs
  // expected-note @+1 {{'Out' is declared here}}
  sketch.tensor "Out" : f32 ["N", "K", "30", "32"] layout nchw
  sketch.for "i" in "0" : "C*3*3" {
    // expected-error @+1 {{Conv2d output height is declared 30 but it is H, not known at compile time}}
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
}

// -----

// An output size symbol that also names another size cannot be derived.
sketch.kernel @conv_symbol_reused {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "R", "S"] layout kcrs
  // expected-note @+1 {{'Out' is declared here}}
  sketch.tensor "Out" : f32 ["N", "K", "C", "Q"] layout nchw
  sketch.for "i" in "0" : "C*R*S" {
    // expected-error @+1 {{Conv2d output height 'C' must be H - R + 3; give it a symbol of its own (it is then derived) or a literal}}
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
}

// -----

// Channels of activation and filter disagree.
sketch.kernel @conv_channels {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  // expected-note @+1 {{'Wei' is declared here as [K, C2, R, S]}}
  sketch.tensor "Wei" : f32 ["K", "C2", "R", "S"] layout kcrs
  sketch.tensor "Out" : f32 ["N", "K", "P", "Q"] layout nchw
  sketch.for "i" in "0" : "C*R*S" {
    // expected-error @+1 {{Conv2d channels differ: C here, C2 in 'Wei'}}
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
}

// -----

// The filter is larger than the padded input.
sketch.kernel @conv_too_small {
  sketch.tensor "In" : f32 ["1", "8", "2", "2"] layout nchw
  sketch.tensor "Wei" : f32 ["8", "8", "5", "5"] layout kcrs
  sketch.tensor "Out" : f32 ["1", "8", "P", "Q"] layout nchw
  sketch.for "i" in "0" : "8*5*5" {
    // expected-error @+1 {{Conv2d output height would be -2: the filter is larger than the padded input}}
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [0, 0] dilation [1, 1]
  }
}

// -----

// A Copy whose tensor no statement uses.
sketch.kernel @copy_unused {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  // expected-error @+1 {{cannot tell the tile of 'B': no GEMM, convolution or elementwise statement here uses it; write it, as in `Copy B (BM, BN) from ...`}}
  sketch.copy "B" from global to shared
}

// -----

// A convolution outside a loop over C*R*S with symbolic channels.
sketch.kernel @conv_no_loop {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "3", "3"] layout kcrs
  sketch.tensor "Out" : f32 ["N", "K", "P", "Q"] layout nchw
  // expected-error @+1 {{'C*3*3' must be known at compile time: no surrounding `for` runs over this convolution's reduction}}
  sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
}
