// Tile sizes, warps and stages by problem kind, element type and target
// (the table in docs/passes.md).
// RUN: sketch-opt --sketch-choose-defaults %s | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: sketch-opt --sketch-choose-defaults="arch=sm_90a" %s | FileCheck %s --check-prefixes=CHECK,SM90
// Choosing twice changes nothing.
// RUN: sketch-opt --sketch-choose-defaults %s | sketch-opt --sketch-choose-defaults | FileCheck %s --check-prefixes=CHECK,SM80

// f16 GEMM on tensor cores: 128x128x32, 4 warps, 3 stages; sm_90a (wgmma): 128x256x64, 8 warps, 4 stages.
// Its tile being the default, `split_k auto`: the split form beside it is 64 x 128 with
// the same BK (and stages on sm_80), K split over 2 warp groups of 4 warps (sm_80) or over the
// blocks of a cluster, counted at run time, with the stages that fit, 8 (sm_90a); there also
// a kernel of 128 x 128 tiles (B is MN-major: tiles 64 wide; where K-major, 128 x 96 and
// 128 x 48), 7 stages.
// SM80: sketch.kernel @gemm_f16 attributes {sketch.split = {beside = 1 : i64, cluster = 0 : i64, slices = 2 : i64, square_stages = 0 : i64, stages = 3 : i64, tall_stages = 0 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 4 : i64, wave_m = array<i64>, wave_n = array<i64>, wave_stages = array<i64>}, split_k = "auto", stages = 3 : i64, tile_k = 32 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 4 : i64}
// SM90: sketch.kernel @gemm_f16 attributes {sketch.split = {beside = 1 : i64, cluster = 1 : i64, slices = 0 : i64, square_stages = 8 : i64, stages = 8 : i64, tall_stages = 8 : i64, tile_k = 64 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 4 : i64, wave_m = array<i64: 128>, wave_n = array<i64: 128>, wave_stages = array<i64: 7>}, split_k = "auto", stages = 4 : i64, tile_k = 64 : i64, tile_m = 128 : i64, tile_n = 256 : i64, warps = 8 : i64}
sketch.kernel @gemm_f16 {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// bf16 is treated as f16.
// SM80: sketch.kernel @gemm_bf16 attributes {sketch.split = {beside = 1 : i64, cluster = 0 : i64, slices = 2 : i64, square_stages = 0 : i64, stages = 3 : i64, tall_stages = 0 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 4 : i64, wave_m = array<i64>, wave_n = array<i64>, wave_stages = array<i64>}, split_k = "auto", stages = 3 : i64, tile_k = 32 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 4 : i64}
// SM90: sketch.kernel @gemm_bf16 attributes {sketch.split = {beside = 1 : i64, cluster = 1 : i64, slices = 0 : i64, square_stages = 8 : i64, stages = 8 : i64, tall_stages = 8 : i64, tile_k = 64 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 4 : i64, wave_m = array<i64: 128>, wave_n = array<i64: 128>, wave_stages = array<i64: 7>}, split_k = "auto", stages = 4 : i64, tile_k = 64 : i64, tile_m = 128 : i64, tile_n = 256 : i64, warps = 8 : i64}
sketch.kernel @gemm_bf16 {
  sketch.tensor "A" : bf16 ["M", "K"]
  sketch.tensor "B" : bf16 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// f32 GEMM: on sm_80 the CUDA cores' 128x128x16, 8 warps (8x8 per thread), double buffering;
// on sm_90 (the f64 tensor cores, warps 1 x 2: sketch.f64_mma) 64x64x16, 2 warps, and
// split_k auto: the tile splits itself (sketch.simt_split) on small grids, K over a cluster's blocks.
// SM80: sketch.kernel @gemm_f32 attributes {sketch.simt, stages = 2 : i64, tile_k = 16 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 8 : i64}
// SM90: sketch.kernel @gemm_f32 attributes {sketch.f64_mma = [1, 2], sketch.simt, sketch.simt_split = array<i64: 64, 64>, split_k = "auto", stages = 2 : i64, tile_k = 16 : i64, tile_m = 64 : i64, tile_n = 64 : i64, warps = 2 : i64}
sketch.kernel @gemm_f32 {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// f32 convolution: 128x128x16 with 8 warps, and the 64-channel x 256-pixel tile the host
// launches when K <= 64; on sm_90a (the f64 tensor cores) 64 pixels x 128 channels with
// 4 warps (2 x 2 warps of f64 MMAs), and 128 pixels x 64 channels when K <= 64 (4 x 1).
// SM80: sketch.kernel @conv_f32 attributes {sketch.narrow_variant = [256, 64, 16, 8], sketch.simt, stages = 2 : i64, tile_k = 16 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 8 : i64}
// SM90: sketch.kernel @conv_f32 attributes {sketch.f64_mma = [2, 2], sketch.narrow_f64_mma = [4, 1], sketch.narrow_variant = [128, 64, 16, 4], sketch.simt, stages = 2 : i64, tile_k = 16 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 4 : i64}
sketch.kernel @conv_f32 {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "R", "S"] layout kcrs
  sketch.tensor "Out" : f32 ["N", "K", "P", "Q"] layout nchw
  sketch.for "i" in "0" : "C*R*S" {
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
}

// f16 NHWC convolution: 128x128x32, 4 warps, 3 stages; sm_90a (wgmma): 4 stages. The
// 128 x 64 tile (same pixels, half the channels) the host launches when K <= 64.
// SM80: sketch.kernel @conv_f16 attributes {sketch.narrow_variant = [128, 64, 32, 4], stages = 3 : i64, tile_k = 32 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 4 : i64}
// SM90: sketch.kernel @conv_f16 attributes {sketch.narrow_variant = [128, 64, 32, 4], stages = 4 : i64, tile_k = 32 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 4 : i64}
sketch.kernel @conv_f16 {
  sketch.tensor "In" : f16 ["N", "H", "W", "C"] layout nhwc
  sketch.tensor "Wei" : f16 ["K", "R", "S", "C"] layout krsc
  sketch.tensor "Out" : f16 ["N", "P", "Q", "K"] layout nhwc
  sketch.for "i" in "0" : "C*R*S" {
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
}

// A strided f16 NHWC convolution: on sm_90a also the taller tile (192 pixels x 128) whose
// persistent kernel the host launches where it moves fewer operand rows an SM.
// SM80: sketch.kernel @conv_f16_strided attributes {sketch.narrow_variant = [128, 64, 32, 4], stages = 3 : i64, tile_k = 32 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 4 : i64}
// SM90: sketch.kernel @conv_f16_strided attributes {sketch.narrow_variant = [128, 64, 32, 4], sketch.tall_variant = [192, 128], stages = 4 : i64, tile_k = 32 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 4 : i64}
sketch.kernel @conv_f16_strided {
  sketch.tensor "In" : f16 ["N", "H", "W", "C"] layout nhwc
  sketch.tensor "Wei" : f16 ["K", "R", "S", "C"] layout krsc
  sketch.tensor "Out" : f16 ["N", "P", "Q", "K"] layout nhwc
  sketch.for "i" in "0" : "C*R*S" {
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 2] pad [1, 1] dilation [1, 1]
  }
}

// b2b, N0 = 64 and N1 = 128: BN = N0; 4 warps split the rows only, each
// keeping 16 rows of both accumulators (16 x 192 / 32 = 96 registers per
// thread; 32 rows would need 192), so BM = 64.
// CHECK: sketch.kernel @b2b attributes {stages = 3 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 64 : i64, warps = 4 : i64}
sketch.kernel @b2b {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "128"]
  sketch.tensor "D1" : f16 ["M", "128"]
  sketch.for "k" in "0" : "K0" {
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.for "n" in "0" : "64" {
    sketch.gemm "D0", "B1" -> "D1" accumulate
  }
}

// A narrow b2b (N0 = 32, N1 = 64): 32 rows per warp fit, so BM = 128.
// CHECK: sketch.kernel @b2b_narrow attributes {stages = 3 : i64, tile_k = 32 : i64, tile_m = 128 : i64, tile_n = 32 : i64, warps = 4 : i64}
sketch.kernel @b2b_narrow {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "32"]
  sketch.tensor "B1" : f16 ["32", "64"]
  sketch.for "k" in "0" : "K0" {
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.gemm "D0", "B1" -> "D1"
}

// Too wide for both accumulators even at 16 rows per warp: 16 rows all the
// same (sketch-choose-b2b-residency then stages D0 in shared memory).
// CHECK: sketch.kernel @b2b_wide attributes {stages = 3 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 256 : i64, warps = 4 : i64}
sketch.kernel @b2b_wide {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "256"]
  sketch.tensor "B1" : f16 ["256", "256"]
  sketch.for "k" in "0" : "K0" {
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.gemm "D0", "B1" -> "D1"
}

// Attention, head dimension 128: BM 128, BN 64, BK = 128, 4 warps, 2 stages; sm_90a
// (wgmma, two consumer warpgroups of 64 rows): BM 128, BN 128, 8 warps; sketch.hopper_attention:
// the sm_90a kernel's shared memory (Q, 3 stages of K and V, 1024 bytes of alignment, the
// mbarriers); sketch.key_splits: its keys may split over the blocks of a cluster (no statement
// on the scores reads a tensor); sketch.short_grid_rows64: without a mask and with two consumer
// warpgroups, a short grid may take the 64-row kernel.
// SM80: sketch.kernel @attention_d128 attributes {stages = 2 : i64, tile_k = 128 : i64, tile_m = 128 : i64, tile_n = 64 : i64, warps = 4 : i64}
// SM90: sketch.kernel @attention_d128 attributes {sketch.hopper_attention = 230512 : i64, sketch.key_splits, sketch.short_grid_rows64, stages = 3 : i64, tile_k = 128 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 8 : i64}
sketch.kernel @attention_d128 {
  sketch.tensor "Q" : f16 ["B", "H", "S", "128"]
  sketch.tensor "K" : f16 ["B", "H", "L", "128"]
  sketch.tensor "V" : f16 ["B", "H", "L", "128"]
  sketch.for "j" in "0" : "L" {
    sketch.gemm "Q", "K" transposed -> "P"
    sketch.softmax "P"
    sketch.gemm "P", "V" -> "O" accumulate
  }
}

// Head dimension 64: 4 warps; sm_90a: one consumer warpgroup at 128 keys a step (BM 64,
// BN 128, 4 warps), whose shared memory (3 stages) and registers fit half an SM:
// sketch.two_blocks_per_sm.
// SM80: sketch.kernel @attention_d64 attributes {stages = 2 : i64, tile_k = 64 : i64, tile_m = 128 : i64, tile_n = 64 : i64, warps = 4 : i64}
// SM90: sketch.kernel @attention_d64 attributes {sketch.hopper_attention = 107632 : i64, sketch.key_splits, sketch.two_blocks_per_sm, stages = 3 : i64, tile_k = 64 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 4 : i64}
sketch.kernel @attention_d64 {
  sketch.tensor "Q" : f16 ["B", "H", "S", "64"]
  sketch.tensor "K" : f16 ["B", "H", "S", "64"]
  sketch.tensor "V" : f16 ["B", "H", "S", "64"]
  sketch.for "j" in "0" : "S" {
    sketch.gemm "Q", "K" transposed -> "P"
    sketch.softmax "P"
    sketch.gemm "P", "V" -> "O" accumulate
  }
}

// ... and with a causal Mask step the same.
// SM90: sketch.kernel @attention_d64_causal attributes {sketch.hopper_attention = 107632 : i64, sketch.key_splits, sketch.two_blocks_per_sm, stages = 3 : i64, tile_k = 64 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 4 : i64}
sketch.kernel @attention_d64_causal {
  sketch.tensor "Q" : f16 ["B", "H", "S", "64"]
  sketch.tensor "K" : f16 ["B", "H", "S", "64"]
  sketch.tensor "V" : f16 ["B", "H", "S", "64"]
  sketch.for "j" in "0" : "S" {
    sketch.gemm "Q", "K" transposed -> "P"
    sketch.mask "P" causal
    sketch.softmax "P"
    sketch.gemm "P", "V" -> "O" accumulate
  }
}
