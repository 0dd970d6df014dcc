// lab (conv_parity_patches): the stride-2 convolution's A operand as *tiled* TMA boxes of
// the input's parity view, traversed at stride 1, over tiles that are patches of output
// pixels: patch_q columns x patch_p rows x patch_n images (4 x 4 x 8 = 128 by default).
// X [N][H][W][C] with H, W even is the 5-D tensor {2C, W/2, 2, H/2, N} (innermost first;
// conv_parity_view). For pad 1, tap (r, s) of output pixel (p, q) reads column pair
// q - 1 + (s + 1) / 2 from channel ((s + 1) & 1) C, row pair p - 1 + (r + 1) / 2 of parity
// (r + 1) & 1: for a patch, one tiled box {64, patch_q, 1, patch_p, patch_n} whose rows
// (q fastest, then p, then n) are the tile's accumulator rows; positions outside the
// image (pair -1, images past N) read as zero. The output goes back by rank-4 boxes
// {64, patch_q, patch_p, patch_n} of Y, which the copy engine clips at Q, P and N.
__device__ __forceinline__ void lab_load_patch(uint32_t dst, const CUtensorMap *map, int c0, int c, int q0,
                                               int p0, int n0, int r, int s, uint32_t bar) {
  const int cp = c0 + ((s + 1) & 1) * c, w2 = q0 - 1 + ((s + 1) >> 1), ph = (r + 1) & 1,
            h2 = p0 - 1 + ((r + 1) >> 1);
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(cp), "r"(w2), "r"(ph), "r"(h2), "r"(n0), "r"(bar)
               : "memory");
}

namespace lab_patch {

struct Patch {
  int q = 0, p = 0, n = 0;  // output columns, rows and images a tile; q == 0: not applicable
  int rows() const { return q * p * n; }
  int64_t tiles(const sketch::ConvShape &s) const {
    return (int64_t)((s.q + q - 1) / q) * ((s.p + p - 1) / p) * ((s.n + n - 1) / n);
  }
};

/// LAB_PATCH="q,p,n" (default 4,4,8; at most 128 rows, each at most 256); q == 0 where the
/// view does not apply (3x3, stride 2, pad 1, dilation 1, even H and W, C % 64 == 0) or
/// LAB_PATCH_OFF is set.
inline Patch choose(const sketch::ConvShape &shape) {
  Patch pa;
  if (getenv("LAB_PATCH_OFF") || shape.r != 3 || shape.s != 3 || shape.stride_h != 2 || shape.stride_w != 2 ||
      shape.pad_h != 1 || shape.pad_w != 1 || shape.dil_h != 1 || shape.dil_w != 1 || shape.h % 2 ||
      shape.w % 2 || shape.c % 64)
    return pa;
  Patch want;
  want.q = 4, want.p = 4, want.n = 8;
  if (const char *v = getenv("LAB_PATCH"))
    sscanf(v, "%d,%d,%d", &want.q, &want.p, &want.n);
  if (want.q < 1 || want.p < 1 || want.n < 1 || want.rows() > 128 || want.q > 256 || want.p > 256 || want.n > 256)
    return pa;
  return want;
}

/// X's parity view, read in boxes {64, patch.q, 1, patch.p, patch.n}.
inline bool encode_x(CUtensorMap *map, const void *x, int e, const sketch::ConvShape &s, const Patch &pa) {
  const uint64_t c = s.c;
  const cuuint64_t dims[5] = {2 * c, (cuuint64_t)s.w / 2, 2, (cuuint64_t)s.h / 2, (cuuint64_t)s.n};
  const cuuint64_t strides[4] = {2 * c * e, (uint64_t)s.w * c * e, 2 * (uint64_t)s.w * c * e,
                                 (uint64_t)s.h * s.w * c * e};
  const cuuint32_t box[5] = {64, (cuuint32_t)pa.q, 1, (cuuint32_t)pa.p, (cuuint32_t)pa.n};
  return sketch::encode_tensor_map(map, x, e, 5, dims, strides, box);
}

/// Y [N][P][Q][K] in boxes {64, patch.q, patch.p, patch.n}.
inline bool encode_y(CUtensorMap *map, const void *y, int e, const sketch::ConvShape &s, const Patch &pa) {
  const uint64_t k = s.k;
  const cuuint64_t dims[4] = {k, (cuuint64_t)s.q, (cuuint64_t)s.p, (cuuint64_t)s.n};
  const cuuint64_t strides[3] = {k * e, (uint64_t)s.q * k * e, (uint64_t)s.p * s.q * k * e};
  const cuuint32_t box[4] = {64, (cuuint32_t)pa.q, (cuuint32_t)pa.p, (cuuint32_t)pa.n};
  return sketch::encode_tensor_map(map, y, e, 4, dims, strides, box);
}

}  // namespace lab_patch
