// sketch/winograd.cuh - Winograd F(m x m, 3x3) forward convolution helpers (f32, nchw/kcrs).
//
// A 3x3 stride-1 convolution computes each m x m block of outputs (a "tile") from
// the (m + 2) x (m + 2) input patch under it as
//   Y = A^T [ sum over c of (G g_c G^T) .* (B^T d_c B) ] A
// where .* is elementwise over the (m + 2)^2 Winograd components. Per component xi
// the sum over input channels is a GEMM: M[xi][k][tile] = sum_c U[xi][k][c] V[xi][c][tile],
// U = G g G^T the transformed filters, V = B^T d B the transformed patches.
// F(2x2, 3x3) does 2.25x fewer multiplications than the direct convolution,
// F(4x4, 3x3) 4x fewer (with about 8x the rounding error of F(2x2), still ~1e-5).
//
//   WinogradShape / make_winograd_shape(conv shape, m)   tile counts and their divisors
//   TileCoord(shape, tile, m)                    a tile's image and first output
//   Transforms<m>                                the 1-D transforms B^T, G, A^T
//   Transforms2d<m>::input / filter / output     V = B^T d B, U = G g G^T, Y = A^T M A
//   WinogradCopies<m, BT, BK, BC, LDU, LDV, THREADS, NHWC, VEC_FILTERS, KRSC>
//                                                a block's copies of one channel step:
//       cp.async of the patches (4 bytes) and filters (4 bytes, or 16 for quads of
//       filters) into raw shared buffers, then the transforms into the component
//       buffers V and U (each thread its own units)
#ifndef SKETCH_WINOGRAD_CUH
#define SKETCH_WINOGRAD_CUH

#include <cstdint>
#include <cuda_runtime.h>

#include "sketch/conv.cuh"
#include "sketch/copy.cuh"

namespace sketch {
namespace winograd {

/// The output tiles of a convolution: N * ceil(P / m) * ceil(Q / m) of m x m outputs.
struct WinogradShape {
  int tiles_p, tiles_q, tiles; // tiles down, across one image; in all
  FastDivmod div_tiles_q, div_tiles_pq;
};

/// The tiles of m x m outputs.
inline WinogradShape make_winograd_shape(const ConvShape &cs, int m) {
  WinogradShape ws;
  ws.tiles_p = (cs.p + m - 1) / m;
  ws.tiles_q = (cs.q + m - 1) / m;
  ws.tiles = cs.n * ws.tiles_p * ws.tiles_q;
  ws.div_tiles_q = FastDivmod(ws.tiles_q);
  ws.div_tiles_pq = FastDivmod(ws.tiles_p * ws.tiles_q);
  return ws;
}

/// A tile's image and the top-left output (oh0, ow0) of its m x m block.
struct TileCoord {
  int image, oh0, ow0;
  __device__ __forceinline__ TileCoord(const WinogradShape &ws, int tile, int m) {
    int rest, tw;
    image = ws.div_tiles_pq.divmod(tile, rest);
    const int th = ws.div_tiles_q.divmod(rest, tw);
    oh0 = m * th;
    ow0 = m * tw;
  }
};

//===----------------------------------------------------------------------===//
// F(M x M, 3x3) for M = 2 and 4: tiles of M x M outputs from (M + 2)^2 patches.
//
//   F(4x4, 3x3):  B^T = | 4  0 -5  0  1  0 |   G = |  1/4    0     0   |   A^T = | 1  1  1  1  1  0 |
//                       | 0 -4 -4  1  1  0 |       | -1/6  -1/6  -1/6  |         | 0  1 -1  2 -2  0 |
//                       | 0  4 -4 -1  1  0 |       | -1/6   1/6  -1/6  |         | 0  1  1  4  4  0 |
//                       | 0 -2 -1  2  1  0 |       |  1/24  1/12  1/6  |         | 0  1 -1  8 -8  1 |
//                       | 0  2 -1 -2  1  0 |       |  1/24 -1/12  1/6  |
//                       | 0  4  0 -5  0  1 |       |  0     0     1    |
//   F(2x2, 3x3):  B^T = | 1  0 -1  0 |       G = | 1    0    0   |   A^T = | 1  1  1  0 |
//                       | 0  1  1  0 |           | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
//                       | 0 -1  1  0 |           | 1/2 -1/2  1/2 |
//                       | 0  1  0 -1 |           | 0    0    1   |
//===----------------------------------------------------------------------===//

/// The 1-D transforms of F(M x M, 3x3): B^T (input), G (filter), A^T (output).
template <int M>
struct Transforms;

template <>
struct Transforms<2> {
  static constexpr int A = 4;
  __device__ __forceinline__ static void input(const float (&x)[4], float (&y)[4]) {
    y[0] = x[0] - x[2];
    y[1] = x[1] + x[2];
    y[2] = x[2] - x[1];
    y[3] = x[1] - x[3];
  }
  __device__ __forceinline__ static void filter(const float (&g)[3], float (&y)[4]) {
    y[0] = g[0];
    y[1] = 0.5f * (g[0] + g[1] + g[2]);
    y[2] = 0.5f * (g[0] - g[1] + g[2]);
    y[3] = g[2];
  }
  __device__ __forceinline__ static void output(const float (&m)[4], float (&y)[2]) {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
  }
};

template <>
struct Transforms<4> {
  static constexpr int A = 6;
  __device__ __forceinline__ static void input(const float (&x)[6], float (&y)[6]) {
    y[0] = 4.f * x[0] - 5.f * x[2] + x[4];
    y[1] = x[3] + x[4] - 4.f * (x[1] + x[2]);
    y[2] = 4.f * (x[1] - x[2]) + x[4] - x[3];
    y[3] = 2.f * (x[3] - x[1]) + x[4] - x[2];
    y[4] = 2.f * (x[1] - x[3]) + x[4] - x[2];
    y[5] = 4.f * x[1] - 5.f * x[3] + x[5];
  }
  __device__ __forceinline__ static void filter(const float (&g)[3], float (&y)[6]) {
    const float even = g[0] + g[2], quarter = 0.25f * g[0];
    y[0] = quarter;
    y[1] = -(1.f / 6.f) * (even + g[1]);
    y[2] = -(1.f / 6.f) * (even - g[1]);
    y[3] = (1.f / 24.f) * g[0] + (1.f / 12.f) * g[1] + (1.f / 6.f) * g[2];
    y[4] = (1.f / 24.f) * g[0] - (1.f / 12.f) * g[1] + (1.f / 6.f) * g[2];
    y[5] = g[2];
  }
  __device__ __forceinline__ static void output(const float (&m)[6], float (&y)[4]) {
    const float s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
    y[0] = m[0] + s12 + s34;
    y[1] = d12 + 2.f * d34;
    y[2] = s12 + 4.f * s34;
    y[3] = d12 + 8.f * d34 + m[5];
  }
};

/// The 2-D transforms: X^T z X applied as the 1-D transform on the columns, then on the rows.
template <int M>
struct Transforms2d {
  using T = Transforms<M>;
  static constexpr int A = T::A;

  /// V = B^T d B; v[A i + j] = V[i][j].
  __device__ __forceinline__ static void input(const float (&d)[A][A], float (&v)[A * A]) {
    float t[A][A]; // B^T d, stored transposed: t[j] is column j
#pragma unroll
    for (int j = 0; j < A; ++j) {
      float col[A];
#pragma unroll
      for (int i = 0; i < A; ++i)
        col[i] = d[i][j];
      T::input(col, t[j]);
    }
#pragma unroll
    for (int i = 0; i < A; ++i) {
      float row[A], out[A];
#pragma unroll
      for (int j = 0; j < A; ++j)
        row[j] = t[j][i];
      T::input(row, out);
#pragma unroll
      for (int j = 0; j < A; ++j)
        v[A * i + j] = out[j];
    }
  }

  /// U = G g G^T for a row-major 3x3 g; u[A i + j] = U[i][j].
  __device__ __forceinline__ static void filter(const float (&g)[9], float (&u)[A * A]) {
    float t[3][A]; // G g, stored transposed: t[j] is column j
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const float col[3] = {g[j], g[3 + j], g[6 + j]};
      T::filter(col, t[j]);
    }
#pragma unroll
    for (int i = 0; i < A; ++i) {
      const float row[3] = {t[0][i], t[1][i], t[2][i]};
      float out[A];
      T::filter(row, out);
#pragma unroll
      for (int j = 0; j < A; ++j)
        u[A * i + j] = out[j];
    }
  }

  /// Y = A^T m A for one tile's components m[A i + j].
  __device__ __forceinline__ static void output(const float (&m)[A * A], float (&y)[M][M]) {
    float t[A][M]; // A^T m, stored transposed: t[j] is column j
#pragma unroll
    for (int j = 0; j < A; ++j) {
      float col[A];
#pragma unroll
      for (int i = 0; i < A; ++i)
        col[i] = m[A * i + j];
      T::output(col, t[j]);
    }
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float row[A];
#pragma unroll
      for (int j = 0; j < A; ++j)
        row[j] = t[j][i];
      T::output(row, y[i]);
    }
  }
};

/// The copies of one channel step of a block: BT * BC input patches (patch p: tile
/// tile0 + p % BT, channel c0 + p / BT; nhwc: channel c0 + p % BC, tile tile0 + p / BC,
/// so that a warp's 4-byte loads take 8 channels of 4 pixels, a 32-byte sector each)
/// and the BK * BC 3x3 filters, dealt to THREADS
/// threads as units u = threadIdx.x + r * THREADS (patches first). A filter unit is one
/// filter (output channel k0 + f / BC, input channel c0 + f % BC), or with VEC_FILTERS
/// four (output channel k0 + q / (BC / 4), input channels c0 + q % (BC / 4) * 4 ..
/// + 3: 36 floats, nine 16-byte chunks in either layout; the host takes this form where
/// C % 4 == 0 and W is 16-byte aligned). `copy` issues a unit's elements as cp.async
/// (4 bytes, or 16 for filter quads; zero-filled outside the image and past C, K or the
/// last tile) into the raw buffers XR[A * A][BT * BC] and WR (9 x BK * BC floats:
/// [9][BK * BC], or a quad's 36 floats after another); `transform` reads back the same
/// thread's units (no barrier between them: wait for the thread's own copies) and stores
/// V[A * A][BC][LDV] and U[A * A][BC][LDU], the Winograd components; tile t of channel
/// c is V's column v_column(c, t).
/// NHWC: X is nhwc (else nchw): its strides and the patches' order. KRSC: W is krsc (else
/// kcrs): its strides and a quad's order.
template <int M, int BT, int BK, int BC, int LDU, int LDV, int THREADS, bool NHWC = false,
          bool VEC_FILTERS = false, bool KRSC = NHWC>
struct WinogradCopies {
  static constexpr int A = M + 2, NP = BT * BC, NF = BK * BC;
  static constexpr int PER_UNIT = VEC_FILTERS ? 4 : 1; // filters a filter unit
  static constexpr int UNITS = NP + NF / PER_UNIT;
  static constexpr int ROUNDS = (UNITS + THREADS - 1) / THREADS;
  static_assert(!VEC_FILTERS || BC % 4 == 0, "filter quads of 4 input channels");
  static_assert(!NHWC || (BT % 4 == 0 && (BT & (BT - 1)) == 0 && LDV % 4 == 0),
                "V's swizzled groups of 4 tiles");

  /// Patch unit u's channel within the step and tile within the block.
  __device__ __forceinline__ static int patch_channel(int u) { return NHWC ? u % BC : u / BT; }
  __device__ __forceinline__ static int patch_tile(int u) { return NHWC ? u / BC : u % BT; }
  /// Unit u's (first) input channel within the step: a patch's, or a filter (quad)'s.
  __device__ __forceinline__ static int unit_channel(int u) {
    if (u < NP)
      return patch_channel(u);
    return VEC_FILTERS ? (u - NP) % (BC / 4) * 4 : (u - NP) % BC;
  }

  /// V's column of tile t in channel row c. nhwc: a warp's transform stores 8 channels x 4
  /// tiles; where rows of LDV floats start at fewer than 8 bank offsets, tile group t / 4
  /// is XORed with a function of c that sends the 8 rows to distinct banks (the readers'
  /// float4 of 4 tiles stays whole). nchw: t.
  __device__ __forceinline__ static constexpr int v_column(int c, int t) {
    if constexpr (!NHWC) {
      return t;
    } else {
      // rows at distinct bank offsets: 32 / gcd(LDV, 32)
      constexpr int rows_a_bank_cycle = LDV % 32 == 0 ? 1 : LDV % 16 == 0 ? 2 : LDV % 8 == 0 ? 4 : 8;
      constexpr int groups = BT / 4 < 8 / rows_a_bank_cycle ? BT / 4 : 8 / rows_a_bank_cycle;
      const int swizzle = groups > 1 ? c / rows_a_bank_cycle % groups : 0;
      // (group ^ swizzle, written as its low 2 bits and the rest apart: the readers' group
      // is tx + 4 * piece with tx < 4; the form measured in bench/labs/winograd_nhwc_order)
      const int group = t / 4;
      return (((group & ~3) ^ (swizzle & ~3)) | ((group & 3) ^ (swizzle & 3))) * 4 + t % 4;
    }
  }
  const float *x, *w;
  int channels;
  int x_channel, x_row, x_col; // element strides of X between channels, rows, columns
  int w_channel, w_tap;        // element strides of W between input channels, filter taps
  int offset[ROUNDS];     // a patch's element (image, channel, h0, w0), a filter's (k, c, 0, 0)
  unsigned mask[ROUNDS];  // patch: rows in the image (bits 0..A-1), columns (bits 8..); filter: k live

  __device__ WinogradCopies(const float *x_, const float *w_, const ConvShape &cs,
                            const WinogradShape &ws, int tile0, int k0)
      : x(x_), w(w_), channels(cs.c) {
    x_channel = NHWC ? 1 : cs.h * cs.w;
    x_row = NHWC ? cs.w * cs.c : cs.w;
    x_col = NHWC ? cs.c : 1;
    w_channel = KRSC ? 1 : 9;
    w_tap = KRSC ? cs.c : 1;
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
      const int u = int(threadIdx.x) + r * THREADS;
      offset[r] = 0;
      mask[r] = 0;
      if (u < NP) {
        const int chan = patch_channel(u);
        const int tile = tile0 + patch_tile(u);
        if (tile >= ws.tiles)
          continue;
        const TileCoord tc(ws, tile, M);
        const int h0 = tc.oh0 - cs.pad_h, w0 = tc.ow0 - cs.pad_w;
#pragma unroll
        for (int i = 0; i < A; ++i) {
          if (h0 + i >= 0 && h0 + i < cs.h)
            mask[r] |= 1u << i;
          if (w0 + i >= 0 && w0 + i < cs.w)
            mask[r] |= 1u << (8 + i);
        }
        offset[r] = NHWC ? ((tc.image * cs.h + h0) * cs.w + w0) * cs.c + chan
                         : (tc.image * cs.c + chan) * x_channel + h0 * cs.w + w0;
      } else if (u < UNITS) {
        const int f = (u - NP) * PER_UNIT; // the unit's first filter, as without quads
        const int k = VEC_FILTERS ? (u - NP) / (BC / 4) : f / BC;
        if (k0 + k < cs.k) {
          mask[r] = 1;
          offset[r] = (k0 + k) * cs.c * 9 + unit_channel(u) * w_channel;
        }
      }
    }
  }

  /// Global -> raw shared buffers, channels c0 .. c0 + BC - 1 (not committed).
  __device__ __forceinline__ void copy(int c0, float (*xr)[NP], float (*wr)[NF]) const {
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
      const int u = int(threadIdx.x) + r * THREADS;
      const bool live = c0 + unit_channel(u) < channels;
      if (u < NP) {
        const float *p = x + (offset[r] + c0 * x_channel);
#pragma unroll
        for (int i = 0; i < A; ++i)
#pragma unroll
          for (int j = 0; j < A; ++j) {
            const bool in = live && ((mask[r] >> i) & (mask[r] >> (8 + j)) & 1u);
            cp_async_4(smem_addr(&xr[A * i + j][u]), in ? p + i * x_row + j * x_col : x, in);
          }
      } else if (u < UNITS) {
        const bool in = live && mask[r];
        const float *p = w + (offset[r] + c0 * w_channel);
        if constexpr (VEC_FILTERS) {
          // chunk j: kcrs floats 4j .. 4j + 3 of the quad's 36; krsc tap j of its 4 channels
          const uint32_t quad = smem_addr(&wr[0][0] + (u - NP) * 36);
#pragma unroll
          for (int j = 0; j < 9; ++j)
            cp_async_16(quad + 16 * j, in ? p + j * (KRSC ? channels : 4) : w, in);
        } else {
#pragma unroll
          for (int e = 0; e < 9; ++e)
            cp_async_4(smem_addr(&wr[e][u - NP]), in ? p + e * w_tap : w, in);
        }
      }
    }
  }

  /// Raw -> components: V[xi][channel][tile] and U[xi][channel][k] of this thread's units.
  __device__ __forceinline__ void transform(const float (*xr)[NP], const float (*wr)[NF],
                                            float (*v)[BC][LDV], float (*u_out)[BC][LDU]) const {
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
      const int u = int(threadIdx.x) + r * THREADS;
      if (u < NP) {
        float d[A][A], t[A * A];
#pragma unroll
        for (int i = 0; i < A; ++i)
#pragma unroll
          for (int j = 0; j < A; ++j)
            d[i][j] = xr[A * i + j][u];
        Transforms2d<M>::input(d, t);
#pragma unroll
        for (int xi = 0; xi < A * A; ++xi)
          v[xi][patch_channel(u)][v_column(patch_channel(u), patch_tile(u))] = t[xi];
      } else if (u < UNITS) {
        if constexpr (VEC_FILTERS) {
          const float *quad = &wr[0][0] + (u - NP) * 36;
          const int k = (u - NP) / (BC / 4);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            float g[9], t[A * A];
            if constexpr (KRSC) {
#pragma unroll
              for (int e = 0; e < 9; ++e) // krsc: tap e of the 4 channels is chunk e
                g[e] = quad[4 * e + i];
            } else {
              // kcrs: filter i is floats 9i .. 9i + 8, inside the 3 chunks from 9i / 4
              // (16-byte loads: consecutive quads hit distinct banks)
              float4 chunk[3];
#pragma unroll
              for (int j = 0; j < 3; ++j)
                chunk[j] = reinterpret_cast<const float4 *>(quad)[9 * i / 4 + j];
              const float *floats = reinterpret_cast<const float *>(chunk) + 9 * i % 4;
#pragma unroll
              for (int e = 0; e < 9; ++e)
                g[e] = floats[e];
            }
            Transforms2d<M>::filter(g, t);
#pragma unroll
            for (int xi = 0; xi < A * A; ++xi)
              u_out[xi][unit_channel(u) + i][k] = t[xi];
          }
        } else {
          const int f = u - NP;
          float g[9], t[A * A];
#pragma unroll
          for (int e = 0; e < 9; ++e)
            g[e] = wr[e][f];
          Transforms2d<M>::filter(g, t);
#pragma unroll
          for (int xi = 0; xi < A * A; ++xi)
            u_out[xi][f % BC][f / BC] = t[xi];
        }
      }
    }
  }
};

} // namespace winograd
} // namespace sketch

#endif // SKETCH_WINOGRAD_CUH
