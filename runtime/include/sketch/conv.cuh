// sketch/conv.cuh - implicit-GEMM convolution helpers (forward conv2d).
//
//   ConvShape                sizes, stride, pad, dilation; make_conv_shape(...) derives P, Q
//   Im2colNchwLoader<...>    the SIMT mainloop's loader of nchw activations (see simt.cuh)
//   PointwiseNchwLoader<...> the same for a 1x1, stride-1, pad-0 convolution: 16-byte copies
//   KcrsFilterLoader<...>    the SIMT mainloop's loader of a kcrs filter beside nhwc input
//   PixelCoord               output pixel -> (image, oh, ow) and its input window origin
//   nchw_offset, store_nchw_row<Vec>(...)  one micro-tile row of an nchw output (SIMT path)
//   nhwc_offset, store_nhwc_channel, store_nchw_pixel
//                            the SIMT kernels' rows in the other output layout
//   WindowNhwc / window_nhwc, ReductionIndex, ReductionNhwc / reduction_nhwc, im2col_reads,
//   load_im2col_nhwc_16<kVec>
//                            the tensor-core path's im2col A-tile loader for nhwc input
//   load_filter_kcrs_16<kVec> its filter B-tile loader for a kcrs filter (a gather)
//   Im2colNhwcLoader<...>    the SIMT mainloop's loader of f32 nhwc activations
//   HaloPlan, halo_stages    the halo convolution's tiles and shared memory (stride 1: each
//                            input row comes into shared memory once a tile, not once a tap)
//   halo_pays                whether its tiles end no later than the im2col kernels'
//
// The implicit GEMM: output pixels (N*P*Q) by output channels (K), reduced over
// C*R*S. Input element for pixel (n, oh, ow) and reduction index (c, r, s):
//   h = oh * stride_h - pad_h + r * dil_h,  w = ow * stride_w - pad_w + s * dil_w,
// zero when (h, w) falls outside the image (the padding).
#ifndef SKETCH_CONV_CUH
#define SKETCH_CONV_CUH

#include <cstdint>
#include <cuda_runtime.h>
#include <type_traits>

#include "sketch/copy.cuh"
#include "sketch/host.h" // FastDivmod
#include "sketch/simt.cuh"

namespace sketch {

/// A forward convolution's sizes. P, Q follow from the others.
struct ConvShape {
  int n, c, h, w;        // input
  int k, r, s;           // filter (output channels, height, width)
  int p, q;              // output height, width
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  FastDivmod div_rs, div_s, div_c; // reduction index splits: (c, r, s) or (r, s, c)
  FastDivmod div_pq, div_q;        // output pixel splits
};

/// Output size of one spatial dimension; < 1 when the window does not fit (the
/// span is tested first: C++ division rounds -1 / 2 up to 0, which would give 1).
__host__ __device__ constexpr int64_t conv_out_size(int64_t in, int64_t filter, int64_t stride,
                                                    int64_t pad, int64_t dil) {
  const int64_t span = in + 2 * pad - dil * (filter - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

inline ConvShape make_conv_shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                                 int64_t s, int stride_h, int stride_w, int pad_h, int pad_w,
                                 int dil_h, int dil_w) {
  ConvShape cs;
  cs.n = int(n), cs.c = int(c), cs.h = int(h), cs.w = int(w);
  cs.k = int(k), cs.r = int(r), cs.s = int(s);
  cs.p = int(conv_out_size(h, r, stride_h, pad_h, dil_h));
  cs.q = int(conv_out_size(w, s, stride_w, pad_w, dil_w));
  cs.stride_h = stride_h, cs.stride_w = stride_w, cs.pad_h = pad_h, cs.pad_w = pad_w;
  cs.dil_h = dil_h, cs.dil_w = dil_w;
  cs.div_rs = FastDivmod(int(r * s));
  cs.div_s = FastDivmod(int(s));
  cs.div_c = FastDivmod(int(c));
  cs.div_pq = FastDivmod(cs.p > 0 && cs.q > 0 ? cs.p * cs.q : 1);
  cs.div_q = FastDivmod(cs.q > 0 ? cs.q : 1);
  return cs;
}

/// An output pixel's image and the top-left input position of its window.
struct PixelCoord {
  int image, oh, ow, h0, w0;
  __device__ PixelCoord(const ConvShape &cs, int pixel) {
    int pq, ow_;
    image = cs.div_pq.divmod(pixel, pq);
    oh = cs.div_q.divmod(pq, ow_);
    ow = ow_;
    h0 = oh * cs.stride_h - cs.pad_h;
    w0 = ow * cs.stride_w - cs.pad_w;
  }
};

/// Reduction index k = (r * S + s) * C + c of a krsc filter's rows (nhwc, or nchw with
/// krsc) as (c, s, r), and the next index's by one step (no division).
struct ReductionIndex {
  int c, s, r;
  __host__ __device__ void next(int channels, int filter_w) {
    if (++c == channels) {
      c = 0;
      if (++s == filter_w)
        s = 0, ++r;
    }
  }
};

__device__ __forceinline__ ReductionIndex reduction_index(const ConvShape &cs, int k) {
  ReductionIndex at;
  at.r = cs.div_s.divmod(cs.div_c.divmod(k, at.c), at.s);
  return at;
}

namespace simt {

/// The im2col operand of an nchw convolution, k-major in shared memory:
/// tile[k][pixel] = X[n][c][h][w] for reduction index k = (c, r, s) (c slowest; with
/// Krsc, (r, s, c)).
/// A thread owns one pixel of the tile (a warp: 32 consecutive pixels, so the
/// loads coalesce) and chunks of 4 consecutive reduction indices; the pixel's
/// window origin is computed once, and (c, r, s) is split once per chunk. Each
/// element goes straight to shared memory (4-byte cp.async, zero-filled in the
/// padding and past the end): no registers held across the math.
/// (Measured on an H100: k tiles of channels at one filter tap instead, which
/// make the mask per tile, not per element, ran 1.2-1.4x slower: strided
/// filter loads, and each tile touches BK input planes.)
/// T = f16 / bf16 (a 16-bit input: no 2-byte cp.async): the elements are loaded
/// into registers, converted to f32 and stored by `stash`, like KContiguousLoader's.
/// Krsc: the filter is krsc, so the reduction runs k = (r, s, c), c fastest, the order
/// of its rows (the input's elements are gathers either way).
template <int Cols, int BK, int Threads, typename T = float, bool Krsc = false>
struct Im2colNchwLoader {
  static constexpr int kChunks = Cols * BK / 4 / Threads;
  static constexpr int kStep = Threads / Cols * 4; // reduction rows between a thread's chunks
  static_assert(kChunks >= 1 && Threads % Cols == 0, "tile does not fit the block");
  static constexpr bool kAsync = std::is_same<T, float>::value;
  const T *x;
  const ConvShape &cs;
  int pixel, krow;
  int offset;  // image base + h0 * W + w0
  int h0, w0;  // window origin; h0 very negative for a pixel past the end
  int depth;   // C * R * S
  float v[kAsync ? 1 : kChunks][4]; // the staged elements of a 16-bit input

  __device__ Im2colNchwLoader(const T *x_, const ConvShape &cs_, int col0)
      : x(x_), cs(cs_) {
    pixel = threadIdx.x % Cols;
    krow = threadIdx.x / Cols * 4;
    depth = cs.c * cs.r * cs.s;
    h0 = -(1 << 30), w0 = 0, offset = 0;
    if (col0 + pixel < cs.n * cs.p * cs.q) {
      PixelCoord pc(cs, col0 + pixel);
      h0 = pc.h0, w0 = pc.w0;
      offset = pc.image * cs.c * cs.h * cs.w + pc.h0 * cs.w + pc.w0;
    }
  }

  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Cols)]) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int k = kt * BK + krow + c * kStep;
      // (c, r, s) of index k; the kcrs order's code is as before Krsc (its PTX unchanged:
      // holding them in a ReductionIndex for both orders cost sm_80 kernels 3 registers)
      int ch, r, s;
      if constexpr (Krsc) {
        const ReductionIndex at = reduction_index(cs, k);
        ch = at.c, r = at.r, s = at.s;
      } else {
        int rs;
        ch = cs.div_rs.divmod(k, rs);
        r = cs.div_s.divmod(rs, s);
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int dy = r * cs.dil_h, dx = s * cs.dil_w;
        const bool in = k + e < depth &&
                        static_cast<unsigned>(h0 + dy) < static_cast<unsigned>(cs.h) &&
                        static_cast<unsigned>(w0 + dx) < static_cast<unsigned>(cs.w);
        if constexpr (kAsync)
          cp_async_4(smem_addr(&tile[krow + c * kStep + e][pixel]),
                     in ? x + offset + (ch * cs.h + dy) * cs.w + dx : x, in);
        else
          v[c][e] = in ? to_float(__ldg(x + offset + (ch * cs.h + dy) * cs.w + dx)) : 0.f;
        if constexpr (Krsc) { // next reduction index
          ReductionIndex at{ch, s, r};
          at.next(cs.c, cs.s);
          ch = at.c, s = at.s, r = at.r;
        } else if (++s == cs.s) {
          s = 0;
          if (++r == cs.r)
            r = 0, ++ch;
        }
      }
    }
  }

  /// Nothing for an f32 input (fetch copied into the tile), else the staged elements.
  __device__ __forceinline__ void stash(float (*tile)[padded(Cols)]) const {
    if constexpr (!kAsync) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          tile[krow + c * kStep + e][pixel] = v[c][e];
    }
  }
};

/// A kcrs filter ([K][C][R][S]) as the B operand of an f32 nhwc convolution on the SIMT
/// mainloop, whose reduction runs k = (r, s, c), c fastest (the nhwc input's order):
/// tile[k][row] = W[k0 + row][c][r][s], a gather. Each float is its own 4-byte cp.async
/// (zero-filled past the K rows and past C*R*S), dealt like KContiguousLoader's scalar
/// floats; a thread's floats share kAcross reduction indices (one where the threads are a
/// multiple of BK), each split once a k-tile.
template <int Rows, int BK, int Threads>
struct KcrsFilterLoader {
  using Deal = ChunkDeal<Rows, BK, Threads, 1>;
  static constexpr int kChunks = Deal::kChunks, kAcross = Deal::kAcross;
  static constexpr bool kAsync = true;
  const float *w;    // the filter (the zero-fill's source)
  const ConvShape &cs;
  int row, koff;
  int rows_left;     // filter rows from this thread's first row on
  int depth;         // C * R * S, the distance between filter rows
  int row_offset;    // this thread's first row's offset

  __device__ KcrsFilterLoader(const float *w_, const ConvShape &cs_, int row0) : w(w_), cs(cs_) {
    row = Deal::line(threadIdx.x);
    koff = Deal::offset(threadIdx.x);
    rows_left = cs.k - row0 - row;
    depth = cs.c * cs.r * cs.s;
    row_offset = (row0 + row) * depth;
  }

  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Rows)]) {
    int tap[kAcross]; // offset of (c, r, s) in a filter row; -1 past C*R*S
#pragma unroll
    for (int a = 0; a < kAcross; ++a) {
      const int k = kt * BK + koff + Deal::offset_step(a);
      const ReductionIndex at = reduction_index(cs, k);
      tap[a] = k < depth ? (at.c * cs.r + at.r) * cs.s + at.s : -1;
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int dr = Deal::line_step(c), t = tap[c % kAcross];
      const bool in = dr < rows_left && t >= 0;
      cp_async_4(smem_addr(&tile[koff + Deal::offset_step(c)][row + dr]),
                 in ? w + row_offset + dr * depth + t : w, in);
    }
  }

  /// Nothing: fetch copied into the tile.
  __device__ __forceinline__ void stash(float (*)[padded(Rows)]) const {}
};

/// Whether PointwiseNchwLoader can deal a Cols x BK tile to Threads threads.
__host__ __device__ constexpr bool pointwise_deal_fits(int cols, int bk, int threads) {
  return cols % 4 == 0 && threads % (cols / 4) == 0 && bk * (cols / 4) % threads == 0;
}

/// The im2col operand of a pointwise convolution (R = S = 1, stride 1, pad 0,
/// so P * Q = H * W and tile[c][pixel] = X[n][c][pixel of image n]) when
/// H * W % 4 == 0 and X is 16-byte aligned: 4 consecutive pixels of a chunk
/// lie in one image, one 16-byte cp.async. A thread owns one 4-pixel chunk
/// column (its image offset computed once) and channel rows kStep apart.
template <int Cols, int BK, int Threads>
struct PointwiseNchwLoader {
  static constexpr int kChunkCols = Cols / 4;
  static_assert(pointwise_deal_fits(Cols, BK, Threads), "tile does not fit the block");
  static constexpr int kStep = Threads / kChunkCols; // channel rows between a thread's chunks
  static constexpr int kChunks = BK / kStep;
  static constexpr bool kAsync = true;
  const float *x;
  int plane;   // H * W: the distance between channels
  int offset;  // image base + pixel in the image; -1 past the last pixel
  int pixel, crow, channels;

  __device__ PointwiseNchwLoader(const float *x_, const ConvShape &cs, int col0) : x(x_) {
    pixel = threadIdx.x % kChunkCols * 4;
    crow = threadIdx.x / kChunkCols;
    plane = cs.h * cs.w;
    channels = cs.c;
    offset = -1;
    if (col0 + pixel < cs.n * plane) {
      int in_image;
      const int image = cs.div_pq.divmod(col0 + pixel, in_image);
      offset = image * cs.c * plane + in_image;
    }
  }

  __device__ __forceinline__ void fetch(int kt, float (*tile)[padded(Cols)]) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int ch = kt * BK + crow + c * kStep;
      const bool in = offset >= 0 && ch < channels;
      cp_async_16(smem_addr(&tile[crow + c * kStep][pixel]), in ? x + offset + ch * plane : x,
                  in);
    }
  }

  __device__ __forceinline__ void stash(float (*)[padded(Cols)]) const {}
};

} // namespace simt
/// `ptr` is a multiple of `bytes` (device side of sketch::aligned_to).
__device__ __forceinline__ bool aligned_to_device(const void *ptr, unsigned bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

/// Element offset of (pixel, channel) in an nchw output; -1 past the last pixel.
__device__ __forceinline__ int nchw_offset(const ConvShape &cs, int pixel, int channel) {
  const int pq = cs.p * cs.q;
  if (pixel >= cs.n * pq)
    return -1;
  int rest;
  const int image = cs.div_pq.divmod(pixel, rest);
  return (image * cs.k + channel) * pq + rest;
}

/// Element offset of (pixel, channel) in an nhwc output; -1 past the last pixel.
__device__ __forceinline__ int nhwc_offset(const ConvShape &cs, int pixel, int channel) {
  return pixel < cs.n * cs.p * cs.q ? pixel * cs.k + channel : -1;
}

/// Stores one output channel's micro-tile row into an nhwc output (the nchw kernel's
/// rows are channels): out[j] is (pixel pix0 + t.col(j), `channel`), pixels K apart;
/// nothing past the last pixel.
template <typename Tile, typename T>
__device__ __forceinline__ void store_nhwc_channel(T *y, const ConvShape &cs, const Tile &t,
                                                   int pix0, int channel,
                                                   const float (&out)[Tile::kCols]) {
#pragma unroll
  for (int j = 0; j < Tile::kCols; ++j) {
    const int at = nhwc_offset(cs, pix0 + t.col(j), channel);
    if (at >= 0)
      y[at] = from_float<T>(out[j]);
  }
}

/// Stores one output pixel's micro-tile row into an nchw output (the nhwc kernel's rows
/// are pixels): out[j] is (the pixel, channel k0 + t.col(j)), channels P*Q apart from
/// `y_row`, the pixel's channel-0 offset (nchw_offset: the pixel is inside the output);
/// channels past K are not stored.
template <typename Tile, typename T>
__device__ __forceinline__ void store_nchw_pixel(T *y, const ConvShape &cs, const Tile &t,
                                                 int y_row, int k0,
                                                 const float (&out)[Tile::kCols]) {
  const int plane = cs.p * cs.q;
#pragma unroll
  for (int j = 0; j < Tile::kCols; ++j) {
    const int channel = k0 + t.col(j);
    if (channel < cs.k)
      y[y_row + channel * plane] = from_float<T>(out[j]);
  }
}

/// Stores one output channel's micro-tile row of an nchw output: out[j] is
/// (pixel pix0 + t.col(j), `channel`); `Tile` is simt::MicroTile or simt::DmmaTile. With
/// `vec` (P*Q % 4 == 0 and `y` 16-byte aligned) the V pixels of a piece (V = kVecCols,
/// 4 or 2, its first column a multiple of V) are consecutive in one image: one store.
template <bool Vec, typename Tile, typename T>
__device__ __forceinline__ void store_nchw_row(T *y, const ConvShape &cs, const Tile &t,
                                               int pix0, int channel,
                                               const float (&out)[Tile::kCols], bool vec) {
  constexpr int V = Tile::kVecCols, TN = Tile::kCols;
#pragma unroll
  for (int piece = 0; piece < TN; piece += V) {
    const int pixel = pix0 + t.col(piece);
    if constexpr (Vec && V > 1 && std::is_same<T, float>::value) {
      if (vec) {
        const int at = nchw_offset(cs, pixel, channel);
        if (at >= 0)
          simt::store_vector<V>(y + at, &out[piece]);
        continue;
      }
    }
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int at = nchw_offset(cs, pixel + e, channel);
      if (at >= 0)
        y[at] = from_float<T>(out[piece + e]);
    }
  }
}

/// An output pixel's input window in an nhwc tensor: the element offset of its
/// top-left corner (channel 0; negative or past the image when the window
/// starts in the padding, never dereferenced there) and its origin (h0, w0).
struct WindowNhwc {
  int offset, h0, w0;
};

__device__ __forceinline__ WindowNhwc window_nhwc(const ConvShape &cs, int64_t pixel) {
  WindowNhwc win{0, -(1 << 30), 0}; // past the last pixel: every row is out of the image
  if (pixel < int64_t(cs.n) * cs.p * cs.q) {
    PixelCoord pc(cs, int(pixel));
    win.h0 = pc.h0, win.w0 = pc.w0;
    win.offset = ((pc.image * cs.h + pc.h0) * cs.w + pc.w0) * cs.c;
  }
  return win;
}

/// Reduction index k of an nhwc/krsc convolution (c fastest): the window offsets (dy, dx),
/// and the element offset `delta` from a window's corner.
struct ReductionNhwc {
  int dy, dx, delta;
  bool live; // k < C*R*S
};

/// The offsets of index k, split as `at`.
__device__ __forceinline__ ReductionNhwc reduction_offsets(const ConvShape &cs,
                                                           const ReductionIndex &at, int k) {
  ReductionNhwc red;
  red.dy = at.r * cs.dil_h;
  red.dx = at.s * cs.dil_w;
  red.delta = (red.dy * cs.w + red.dx) * cs.c + at.c;
  red.live = k < cs.c * cs.r * cs.s;
  return red;
}

__device__ __forceinline__ ReductionNhwc reduction_nhwc(const ConvShape &cs, int k) {
  return reduction_offsets(cs, reduction_index(cs, k), k);
}

/// Whether index `red` of the pixel of `win` reads the input: inside the reduction and
/// not in the padding.
__device__ __forceinline__ bool im2col_reads(const ConvShape &cs, const WindowNhwc &win,
                                             const ReductionNhwc &red) {
  return red.live && static_cast<unsigned>(win.h0 + red.dy) < static_cast<unsigned>(cs.h) &&
         static_cast<unsigned>(win.w0 + red.dx) < static_cast<unsigned>(cs.w);
}

/// Copies reduction indices k .. k+7 of one im2col row (the pixel of `win`) to
/// the 16 bytes at shared address `dst`; zero in the padding and past the end.
///   kVec = true:  one cp.async (C % 8 == 0 and `x` 16-byte aligned: the 8
///                 channels share one (r, s) and are contiguous).
///   kVec = false: element loads, each with its own (r, s, c), one 16-byte store.
template <bool kVec, typename T>
__device__ __forceinline__ void load_im2col_nhwc_16(uint32_t dst, const T *x, const ConvShape &cs,
                                                    const WindowNhwc &win,
                                                    const ReductionNhwc &red, int k) {
  if constexpr (kVec) {
    const bool in = im2col_reads(cs, win, red);
    cp_async_16(dst, in ? x + win.offset + red.delta : x, in);
  } else {
    using Bits = element_bits<T>;
    union {
      Bits e[8];
      uint4 v;
    } chunk;
    // index k split once, then stepped: 8 divisions a chunk held 20-40 more registers
    // (ptxas spilled beside a 64 x 64 mma.sync warp tile)
    ReductionIndex at = reduction_index(cs, k);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const ReductionNhwc one = reduction_offsets(cs, at, k + e);
      chunk.e[e] = im2col_reads(cs, win, one)
                       ? reinterpret_cast<const Bits *>(x)[win.offset + one.delta]
                       : Bits(0);
      at.next(cs.c, cs.s);
    }
    st_shared_128(dst, chunk.v);
  }
}

/// Copies reduction indices k .. k+7 (k = (r, s, c), c fastest, split as `at`) of filter
/// row `row` from a kcrs filter ([K][C][R][S]: the 8 elements lie apart) to the 16 bytes at
/// shared address `dst`; zero past the K rows and past C*R*S. Element loads, one 16-byte
/// store. kVec (C % 8 == 0): the 8 are channels of one tap, R*S apart.
template <bool kVec, typename T>
__device__ __forceinline__ void load_filter_kcrs_16(uint32_t dst, const T *w, const ConvShape &cs,
                                                    int row, ReductionIndex at, int k) {
  using Bits = element_bits<T>;
  union {
    Bits e[8];
    uint4 v;
  } chunk;
  const int depth = cs.c * cs.r * cs.s;
  const Bits *filter_row = reinterpret_cast<const Bits *>(w) + (row < cs.k ? row : 0) * depth;
  if constexpr (kVec) {
    const int taps = cs.r * cs.s, first = (at.c * cs.r + at.r) * cs.s + at.s;
    const bool in = row < cs.k && k < depth;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      chunk.e[e] = in ? filter_row[first + e * taps] : Bits(0);
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      chunk.e[e] = row < cs.k && k + e < depth
                       ? filter_row[(at.c * cs.r + at.r) * cs.s + at.s]
                       : Bits(0);
      at.next(cs.c, cs.s);
    }
  }
  st_shared_128(dst, chunk.v);
}

/// The im2col operand of an f32 nhwc convolution on the SIMT mainloop: the A
/// operand, rows are output pixels and the reduction index k = (r, s, c) runs
/// along each row (c fastest, as in memory), so it is dealt and stored like a
/// row-major [M, K] matrix (simt::KContiguousLoader: chunks of V indices along
/// k, transposed into tile[k][pixel]). Each chunk's pixel window is found again
/// at every k-tile (two divisions: fewer registers held across the math).
/// Vec (C % 4 == 0, X 16-byte aligned): a chunk's V indices share one filter
/// tap and are contiguous, one V-float load; otherwise each element finds its
/// own (r, s, c). Zero in the padding and past the last pixel and index.
template <int Rows, int BK, int Threads, bool Vec>
struct Im2colNhwcLoader {
  using Deal = simt::ChunkDeal<Rows, BK, Threads>;
  static constexpr int V = Deal::kVector, kChunks = Deal::kChunks;
  static constexpr bool kAsync = false;
  const float *x;
  const ConvShape &cs;
  int pixel, row, koff; // this thread's first pixel (pix0 + row), its tile row and k offset
  float v[kChunks][V];

  __device__ Im2colNhwcLoader(const float *x_, const ConvShape &cs_, int pix0) : x(x_), cs(cs_) {
    row = Deal::line(threadIdx.x);
    koff = Deal::offset(threadIdx.x);
    pixel = pix0 + row;
  }

  __device__ __forceinline__ bool inside(const WindowNhwc &w, const ReductionNhwc &red) const {
    return red.live && static_cast<unsigned>(w.h0 + red.dy) < static_cast<unsigned>(cs.h) &&
           static_cast<unsigned>(w.w0 + red.dx) < static_cast<unsigned>(cs.w);
  }

  __device__ __forceinline__ void fetch(int kt, float (*)[simt::padded(Rows)]) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int k = kt * BK + koff + Deal::offset_step(c);
      const WindowNhwc win = window_nhwc(cs, int64_t(pixel) + Deal::line_step(c));
      if (Vec) {
        const ReductionNhwc red = reduction_nhwc(cs, k);
#pragma unroll
        for (int e = 0; e < V; ++e)
          v[c][e] = 0.f;
        if (inside(win, red))
          simt::load_vector<V, true>(x + win.offset + red.delta, v[c]);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const ReductionNhwc red = reduction_nhwc(cs, k + e);
          v[c][e] = inside(win, red) ? __ldg(x + win.offset + red.delta) : 0.f;
        }
      }
    }
  }

  /// Transposed store: tile[k][pixel].
  __device__ __forceinline__ void stash(float (*tile)[simt::padded(Rows)]) const {
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int e = 0; e < V; ++e)
        tile[koff + Deal::offset_step(c) + e][row + Deal::line_step(c)] = v[c][e];
  }
};

/// The halo convolution (stride 1, sm_90a; docs/backend.md "The halo form"). A tile is
/// `tile_rows` whole output rows of one image, each row `slots` accumulator rows (Q plus
/// the filter's reach, so the pixels past Q are computed and never stored), tile_rows x
/// slots <= bm. Its input rows (`patch_rows` of `slots` pixels, from input row
/// oh0 - pad_h and column -pad_w; outside the image zero) come into shared memory once,
/// as `panels` boxes of 64 channels (128-byte rows), and filter tap (r, s)'s A operand is
/// that patch from pixel r dil_h slots + s dil_w on: consecutive rows, so one wgmma
/// descriptor. The filter's bn rows of C*R*S stay in shared memory for the block's life,
/// one bn x 64 panel a (tap, channel panel). Shared memory: the filter, `stages` patches,
/// the staging tile (staging_bytes), the mbarriers; 1024 bytes of slack for the alignment.
struct HaloPlan {
  int slots = 0, tile_rows = 0, patch_rows = 0, panels = 0, row_tiles = 0, stages = 0;
  int64_t box_bytes = 0, panel_bytes = 0, stage_bytes = 0, filter_bytes = 0;
  int64_t patches_offset = 0, staging_offset = 0, bars_offset = 0, smem_bytes = 0;

  __host__ __device__ HaloPlan(const ConvShape &cs, int bm, int bn, int64_t staging_bytes,
                               int stages_) {
    slots = cs.q + (cs.s - 1) * cs.dil_w;
    tile_rows = slots >= 1 && slots <= bm ? bm / slots : 0;
    patch_rows = tile_rows + (cs.r - 1) * cs.dil_h;
    panels = cs.c / 64;
    row_tiles = tile_rows > 0 ? (cs.p + tile_rows - 1) / tile_rows : 0;
    stages = stages_;
    box_bytes = (int64_t)patch_rows * slots * 128;
    panel_bytes = (box_bytes + 1023) / 1024 * 1024;
    stage_bytes = panels * panel_bytes;
    filter_bytes = (int64_t)cs.r * cs.s * panels * bn * 128;
    patches_offset = (filter_bytes + 1023) / 1024 * 1024;
    staging_offset = patches_offset + stages * stage_bytes;
    bars_offset = (staging_offset + staging_bytes + 7) / 8 * 8;
    smem_bytes = bars_offset + 8 * (2 * stages + 1) + 1024;
  }
};

/// The most patch stages (at most `most`) with which the halo form fits in `limit` bytes
/// of shared memory, or 0 where it does not apply: a stride other than 1, channels not
/// whole panels of 64, an output row wider than the tile (slots > bm), a box side over
/// 256, fewer than two stages.
inline int halo_stages(const ConvShape &cs, int bm, int bn, int64_t staging_bytes,
                       int64_t limit, int most) {
  if (cs.stride_h != 1 || cs.stride_w != 1 || cs.c % 64 != 0 || cs.c == 0)
    return 0;
  if (cs.r < 1 || cs.s < 1 || cs.dil_h < 1 || cs.dil_w < 1 || cs.p < 1 || cs.q < 1)
    return 0;
  const int64_t slots = (int64_t)cs.q + (int64_t)(cs.s - 1) * cs.dil_w;
  const int64_t reach_h = (int64_t)(cs.r - 1) * cs.dil_h;
  if (slots > bm || bm / slots + reach_h > 256)
    return 0;
  for (int stages = most; stages >= 2; --stages)
    if (HaloPlan(cs, bm, bn, staging_bytes, stages).smem_bytes <= limit)
      return stages;
  return 0;
}

/// Whether the halo form's tiles end no later than the im2col kernels' BM x BN tiles on `sms`
/// multiprocessors (each runs a tile at a time): a round of halo tiles, which load each input
/// row once and not once a tap, took about 3/4 the time of a round of im2col tiles (H200,
/// C64 K64 3x3, 7x7 to 56x56 images, N = 64 and 256, CUDA graphs), so the halo form is taken
/// where its rounds are at most 4/3 of theirs. Small images at large N fail it: 7x7 at N = 256
/// pads 49 pixels to a 63-row tile, 256 halo tiles (2 rounds) against 98 im2col ones (1), and
/// the halo kernel ran 1.22x the im2col kernels' time there.
inline bool halo_pays(const ConvShape &cs, const HaloPlan &halo, int bm, int bn, int sms) {
  if (sms < 1 || halo.row_tiles < 1)
    return false;
  const int64_t channel_tiles = ceil_div(cs.k, bn);
  const int64_t halo_tiles = (int64_t)cs.n * halo.row_tiles * channel_tiles;
  const int64_t im2col_tiles = ceil_div((int64_t)cs.n * cs.p * cs.q, bm) * channel_tiles;
  return 3 * ceil_div(halo_tiles, sms) <= 4 * ceil_div(im2col_tiles, sms);
}

} // namespace sketch

#endif // SKETCH_CONV_CUH
