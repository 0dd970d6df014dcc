// sketch/winograd.cuh - Winograd F(2x2, 3x3) forward convolution helpers (f32, nchw/kcrs).
//
// A 3x3 stride-1 convolution computes each 2x2 block of outputs (a "tile") from
// the 4x4 input patch under it as
//   Y = A^T [ sum over c of (G g_c G^T) .* (B^T d_c B) ] A
// where .* is elementwise over the 16 Winograd components. Per component xi the
// sum over input channels is a GEMM: M[xi][k][tile] = sum_c U[xi][k][c] V[xi][c][tile],
// U = G g G^T the transformed filters, V = B^T d B the transformed patches.
// 2.25x fewer multiplications than the direct convolution.
//
//   B^T = | 1  0 -1  0 |     G = | 1    0    0   |     A^T = | 1  1  1  0 |
//         | 0  1  1  0 |         | 1/2  1/2  1/2 |           | 0  1 -1 -1 |
//         | 0 -1  1  0 |         | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |         | 0    0    1   |
//
//   WinogradShape / make_winograd_shape(conv shape)   tile counts and their divisors
//   filter_transform(g[9], u[16])        U = G g G^T (component xi = 4 i + j)
//   input_transform_half(d, half, v)     V = B^T d B, rows 2 half, 2 half + 1, for two
//                                        lanes (lane ^ 1) holding rows 0-1 and 2-3 of d
//   output_transform(m[16], y[2][2])     Y = A^T M A
//   WinogradInputLoader<BT, BC>          4x4 input patches -> V[16][BC][BT] in shared memory
//   WinogradFilterLoader<BK, BC, LD>     3x3 filters -> U[16][BC][LD] in shared memory
// Both loaders split `fetch` (global -> registers, zero outside the image and
// past C, K or the last tile) from `stash` (transform, registers -> shared), so
// the loads of the next channel step are in flight during the current one's math.
#ifndef SKETCH_WINOGRAD_CUH
#define SKETCH_WINOGRAD_CUH

#include <cstdint>
#include <cuda_runtime.h>

#include "sketch/conv.cuh"

namespace sketch {
namespace winograd {

/// The output tiles of a convolution: N * ceil(P / 2) * ceil(Q / 2) of 2x2 outputs.
struct WinogradShape {
  int tiles_p, tiles_q, tiles; // tiles down, across one image; in all
  FastDivmod div_tiles_q, div_tiles_pq;
};

inline WinogradShape make_winograd_shape(const ConvShape &cs) {
  WinogradShape ws;
  ws.tiles_p = (cs.p + 1) / 2;
  ws.tiles_q = (cs.q + 1) / 2;
  ws.tiles = cs.n * ws.tiles_p * ws.tiles_q;
  ws.div_tiles_q = FastDivmod(ws.tiles_q);
  ws.div_tiles_pq = FastDivmod(ws.tiles_p * ws.tiles_q);
  return ws;
}

/// A tile's image and the top-left output (oh0, ow0) of its 2x2 block.
struct TileCoord {
  int image, oh0, ow0;
  __device__ __forceinline__ TileCoord(const WinogradShape &ws, int tile) {
    int rest, tw;
    image = ws.div_tiles_pq.divmod(tile, rest);
    const int th = ws.div_tiles_q.divmod(rest, tw);
    oh0 = 2 * th;
    ow0 = 2 * tw;
  }
};

/// U = G g G^T for one 3x3 filter g (row-major); u[4 i + j] = U[i][j].
__device__ __forceinline__ void filter_transform(const float (&g)[9], float (&u)[16]) {
  float t[4][3]; // G g: 4 rows of 3
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const float g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
    t[0][j] = g0;
    t[1][j] = 0.5f * (g0 + g1 + g2);
    t[2][j] = 0.5f * (g0 - g1 + g2);
    t[3][j] = g2;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) { // (G g) G^T
    u[4 * i + 0] = t[i][0];
    u[4 * i + 1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
    u[4 * i + 2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
    u[4 * i + 3] = t[i][2];
  }
}

/// B^T applied to 4 values: (x0 - x2, x1 + x2, x2 - x1, x1 - x3).
__device__ __forceinline__ void bt4(const float (&x)[4], float (&y)[4]) {
  y[0] = x[0] - x[2];
  y[1] = x[1] + x[2];
  y[2] = x[2] - x[1];
  y[3] = x[1] - x[3];
}

/// V = B^T d B, split between two lanes (lane and lane ^ 1; all 32 lanes call
/// it): `half` 0 holds rows 0, 1 of the patch d in `d`, half 1 rows 2, 3. Each
/// gets rows 2 half and 2 half + 1 of V (v[r][j] = V[2 half + r][j]), trading
/// one row-transformed row with its partner (4 shuffles).
__device__ __forceinline__ void input_transform_half(const float (&d)[2][4], int half,
                                                     float (&v)[2][4]) {
  float a[4], b[4]; // d B: the rows transformed (B^T on each row)
  bt4(d[0], a);
  bt4(d[1], b);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // half 0 (rows T0, T1) needs T2; half 1 (rows T2, T3) needs T1.
    const float o = __shfl_xor_sync(0xffffffffu, half ? a[j] : b[j], 1);
    v[0][j] = a[j] - o;                   // V0 = T0 - T2  |  V2 = T2 - T1
    v[1][j] = half ? o - b[j] : b[j] + o; // V1 = T1 + T2  |  V3 = T1 - T3
  }
}

/// Y = A^T M A for one tile's 16 components m[4 i + j].
__device__ __forceinline__ void output_transform(const float (&m)[16], float (&y)[2][2]) {
  float s[2][4]; // A^T M
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    s[0][j] = m[j] + m[4 + j] + m[8 + j];
    s[1][j] = m[4 + j] - m[8 + j] - m[12 + j];
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) { // (A^T M) A
    y[r][0] = s[r][0] + s[r][1] + s[r][2];
    y[r][1] = s[r][1] - s[r][2] - s[r][3];
  }
}

/// The input patches of one channel step: BT tiles x BC channels, two threads a
/// patch (thread 2 p + half loads rows 2 half, 2 half + 1 of patch p; patch p
/// is tile p % BT of channel p / BT), 2 * BT * BC threads. Shared V[16][BC][BT].
template <int BT, int BC>
struct WinogradInputLoader {
  static constexpr int kThreads = 2 * BT * BC;
  const float *x;
  int offset;  // element (image, c = chan, h0, w0) of x: may lie outside when masked
  int plane;   // H * W
  int width;   // W
  int chan, tile, half, channels;
  unsigned mask; // bit 4 r + j: element (r, j) of this thread's two rows is in the image
  float d[2][4];

  __device__ WinogradInputLoader(const float *x_, const ConvShape &cs, const WinogradShape &ws,
                                 int tile0)
      : x(x_), plane(cs.h * cs.w), width(cs.w), channels(cs.c) {
    const int patch = threadIdx.x >> 1;
    half = threadIdx.x & 1;
    chan = patch / BT;
    tile = patch % BT;
    mask = 0;
    offset = 0;
    if (tile0 + tile < ws.tiles) {
      const TileCoord tc(ws, tile0 + tile);
      const int h0 = tc.oh0 - cs.pad_h + 2 * half, w0 = tc.ow0 - cs.pad_w;
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (h0 + r >= 0 && h0 + r < cs.h && w0 + j >= 0 && w0 + j < cs.w)
            mask |= 1u << (4 * r + j);
      offset = (tc.image * cs.c + chan) * plane + h0 * cs.w + w0;
    }
  }

  /// Global -> registers: rows of channel c0 + chan (zero outside).
  __device__ __forceinline__ void fetch(int c0) {
    const unsigned live = c0 + chan < channels ? mask : 0u;
    const float *p = x + (offset + c0 * plane);
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        d[r][j] = (live >> (4 * r + j)) & 1u ? __ldg(p + r * width + j) : 0.f;
  }

  /// Transform (with the partner lane) and store V[xi][chan][tile].
  __device__ __forceinline__ void stash(float (*v)[BC][BT]) const {
    float t[2][4];
    input_transform_half(d, half, t);
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        v[4 * (2 * half + r) + j][chan][tile] = t[r][j];
  }
};

/// The filters of one channel step: BK output channels x BC input channels, one
/// 3x3 filter a thread (thread t: channel k0 + t / BC, input channel c0 + t % BC,
/// so 8 neighbouring threads read 8 * 9 consecutive floats), BK * BC threads.
/// Shared U[16][BC][LD] (LD = BK + 4: the transposed stores hit 32 banks).
template <int BK, int BC, int LD>
struct WinogradFilterLoader {
  static constexpr int kThreads = BK * BC;
  const float *w;
  int offset; // element (k0 + k, c, 0, 0)
  int k, c, channels;
  bool k_live;
  float g[9];

  __device__ WinogradFilterLoader(const float *w_, const ConvShape &cs, int k0) : w(w_) {
    k = threadIdx.x / BC;
    c = threadIdx.x % BC;
    channels = cs.c;
    k_live = k0 + k < cs.k;
    offset = k_live ? ((k0 + k) * cs.c + c) * 9 : 0;
  }

  __device__ __forceinline__ void fetch(int c0) {
    const bool live = k_live && c0 + c < channels;
    const float *p = w + (offset + c0 * 9);
#pragma unroll
    for (int e = 0; e < 9; ++e)
      g[e] = live ? __ldg(p + e) : 0.f;
  }

  /// Transform and store U[xi][c][k].
  __device__ __forceinline__ void stash(float (*u)[BC][LD]) const {
    float t[16];
    filter_transform(g, t);
#pragma unroll
    for (int xi = 0; xi < 16; ++xi)
      u[xi][c][k] = t[xi];
  }
};

} // namespace winograd
} // namespace sketch

#endif // SKETCH_WINOGRAD_CUH
