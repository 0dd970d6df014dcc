// Lab (README.md): X read through one im2col map a stride phase, so that the copy engine
// traverses every map at stride 1. Phase (a, b) of a convolution of strides (sh, sw) is the
// image of the input rows a, a + sh, ... and columns b, b + sw, ...: an nhwc tensor at
// X + (a W + b) C whose pixels are sw C elements apart and rows sh W C. Tap (r, s) reads
// phase ((r dil_h - pad_h) mod sh, (s dil_w - pad_w) mod sw) at the offsets
// floor((r dil_h - pad_h) / sh) and floor((s dil_w - pad_w) / sw) from the output pixel.
namespace lab_phase {

struct Maps {
  CUtensorMap m[4];  // phase a sw + b; strides at most 2
  int lo_h, lo_w;    // the least tap offsets: every map's lower corner
};

__host__ __device__ inline int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// Tap (r, s)'s map and im2col offsets from the map's lower corner.
__device__ __forceinline__ const CUtensorMap *tap(const Maps &maps, const sketch::ConvShape &cs, int r, int s,
                                                  uint16_t &off_w, uint16_t &off_h) {
  const int th = r * cs.dil_h - cs.pad_h, tw = s * cs.dil_w - cs.pad_w;
  const int oh = floor_div(th, cs.stride_h), ow = floor_div(tw, cs.stride_w);
  off_h = (uint16_t)(oh - maps.lo_h);
  off_w = (uint16_t)(ow - maps.lo_w);
  return &maps.m[(th - oh * cs.stride_h) * cs.stride_w + (tw - ow * cs.stride_w)];
}

inline bool encode_phase(CUtensorMap *map, const void *x, const sketch::ConvShape &cs, int a, int b, int lo_h,
                         int lo_w, uint32_t pixels) {
  using Encode = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const int *, const int *, cuuint32_t, cuuint32_t,
                              const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess || found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<Encode>(fn);
  }();
  const int64_t w = (cs.w - b + cs.stride_w - 1) / cs.stride_w, h = (cs.h - a + cs.stride_h - 1) / cs.stride_h;
  if (encode == nullptr || w < 1 || h < 1) return false;
  const cuuint64_t dims[4] = {(cuuint64_t)cs.c, (cuuint64_t)w, (cuuint64_t)h, (cuuint64_t)cs.n};
  const uint64_t pixel = (uint64_t)cs.c * 2;
  const cuuint64_t strides[3] = {pixel * cs.stride_w, pixel * cs.w * cs.stride_h, pixel * cs.w * cs.h};
  // the bounding box holds Q x P first positions, from the least offset
  const int lower[2] = {lo_w, lo_h};
  const int upper[2] = {(int)(cs.q - w + lo_w), (int)(cs.p - h + lo_h)};
  const cuuint32_t ones[4] = {1, 1, 1, 1};
  void *base = (char *)const_cast<void *>(x) + ((int64_t)a * cs.w + b) * pixel;
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 4, base, dims, strides, lower, upper, 64, pixels, ones,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// The phase maps of the phases some tap reads; false under LAB_OFF, for strides above 2 or
/// where the driver refuses one (then the generated path runs).
inline bool encode(Maps *maps, const void *x, const sketch::ConvShape &cs, uint32_t pixels) {
  if (getenv("LAB_OFF") || cs.stride_h > 2 || cs.stride_w > 2) return false;
  *maps = Maps{};
  maps->lo_h = floor_div(-cs.pad_h, cs.stride_h);
  maps->lo_w = floor_div(-cs.pad_w, cs.stride_w);
  bool used[2][2] = {};
  for (int r = 0; r < cs.r; ++r)
    for (int s = 0; s < cs.s; ++s) {
      const int th = r * cs.dil_h - cs.pad_h, tw = s * cs.dil_w - cs.pad_w;
      used[th - floor_div(th, cs.stride_h) * cs.stride_h][tw - floor_div(tw, cs.stride_w) * cs.stride_w] = true;
    }
  for (int a = 0; a < cs.stride_h; ++a)
    for (int b = 0; b < cs.stride_w; ++b)
      if (used[a][b] && !encode_phase(&maps->m[a * cs.stride_w + b], x, cs, a, b, maps->lo_h, maps->lo_w, pixels))
        return false;
  return true;
}

}  // namespace lab_phase
