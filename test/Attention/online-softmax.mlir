// The attention loop GEMM -> scale -> Softmax -> GEMM becomes an online
// softmax: scale folded into exp2, running max and sum, O rescaled inside the
// loop, one division after it, P kept in registers as the A operand of P·V.
// RUN: sketchc --arch sm_80 %s --emit=cuda | FileCheck %s

// CHECK-LABEL: namespace attention_tiles {
// CHECK: using T = __half;
// CHECK: constexpr int BM = 128, BN = 64;
// CHECK: constexpr int DQK = 128, DV = 128;
// CHECK: constexpr int WARPS = 4, THREADS = 32 * WARPS;
// CHECK: constexpr bool CAUSAL = false;
// CHECK: __global__ void __launch_bounds__(attention_tiles::THREADS, 1)
// CHECK-NEXT: attention_kernel(const __half *__restrict__ Q, const __half *__restrict__ K, const __half *__restrict__ V, __half *__restrict__ O, float scale, int64_t B, int64_t H, int64_t S, int64_t L, const float P_scale)
// CHECK: const T *Q_g = Q + (int64_t(i0) * H + i1) * S * DQK;
// CHECK: const int64_t KV_head = (int64_t(i0) * H + i1);
// CHECK: const T *K_g = K + KV_head * L * DQK;
// CHECK: const T *V_g = V + KV_head * L * DV;
// CHECK: copy_tile_async<BM, DQK, THREADS>(Q_s, Q_g, m0, S_rows);
// CHECK: float O_r[MT][NT_O][4] = {};
// CHECK: P_max[m][0] = P_max[m][1] = -CUDART_INF_F;
// CHECK: // P_scale = scale * 1.4426950408889634f (a parameter: the host computes it).
// The loop over keys: double-buffered K and V, prefetched one step ahead.
// CHECK: for (int j = 0; j < tiles; ++j) {
// CHECK: cp_async_wait<1>();
// CHECK: copy_tile_async<BN, DQK, THREADS>(K_s + (stage ^ 1) * TILE_K, K_g, n0 + BN, L_rows);
// CHECK: copy_tile_async<BN, DV, THREADS>(V_s + (stage ^ 1) * TILE_V, V_g, n0 + BN, L_rows);
// CHECK: // Compute GEMM Q, K^T and get P
// CHECK: ldmatrix_x4(kb[0][0], kb[0][1], kb[1][0], kb[1][1], K_lane.at(2 * k, n * 8, K_stage));
// CHECK: mma_m16n8k16<T>(P[m][n], q[m], kb[0]);
// CHECK: scale_tile(P, P_scale);
// CHECK: mask_tile(P, diagonal0 + warp_row, n0, L_rows, CAUSAL);
// CHECK: // Compute Softmax P: online across j
// CHECK-NEXT: online_softmax_step(P, P_max, P_sum, O_r);
// CHECK: cp_async_wait<2>();
// CHECK: // Reshape P from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new)
// CHECK: reshape_c_to_a<T>(P[m][2 * k], P[m][2 * k + 1], p[m]);
// CHECK: ldmatrix_x4_trans(vb[0][0], vb[0][1], vb[1][0], vb[1][1], V_lane.at(n, 16 * k, V_stage));
// CHECK: mma_m16n8k16<T>(O_r[m][n], p[m], vb[0]);
// The division by the row sums comes once, after the loop.
// CHECK: cp_async_wait_all();
// CHECK-NEXT: // Softmax P, finished
// CHECK-NEXT: online_softmax_finish(P_sum, O_r);
// CHECK: __syncwarp(); // these rows lie in
// CHECK: store_rows_global<MT * 16, DV>(O_g, Q_s, warp_row, m0 + warp_row, S_rows);
// CHECK: extern "C" cudaError_t attention(const __half *Q, const __half *K, const __half *V, __half *O, float scale, int64_t B, int64_t H, int64_t S, int64_t L, cudaStream_t stream) {
// CHECK: attention_kernel<<<grid, THREADS, SMEM, stream>>>(Q, K, V, O, scale, B, H, S, L, float(scale * 1.4426950408889634f));

sketch.kernel @attention attributes {tile_m = 128 : i64, tile_n = 64 : i64, tile_k = 128 : i64, warps = 4 : i64, stages = 2 : i64} {
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
