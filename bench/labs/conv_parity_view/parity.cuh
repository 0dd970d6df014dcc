// lab (conv_parity_view): a stride-2 input read through its parity view, so that the
// im2col box traverses every dimension at stride 1.
// X [N][H][W][C] with H, W even is the 5-D tensor {2C, W/2, 2, H/2, N} (innermost first):
// a pair of neighbouring columns is one pixel of 2C channels, and a row's parity is a
// dimension of its own. Input column 2q - 1 + s (pad 1) is pair q - 1 + (s + 1) / 2,
// channels ((s + 1) & 1) C onward; input row 2p - 1 + r is row pair p - 1 + (r + 1) / 2,
// parity (r + 1) & 1. The im2col box traverses w' (Q pairs), h' (P row pairs) and the
// images; the parity dimension's bounding box is one position wide, the tap's offset
// picks it.
__device__ __forceinline__ void lab_load_parity(uint32_t dst, const CUtensorMap *map, int c0, int c,
                                                int x_w, int x_h, int n, int r, int s, uint32_t bar) {
  const int cp = c0 + ((s + 1) & 1) * c;
  const uint16_t off_w = (uint16_t)((s + 1) >> 1), off_ph = (uint16_t)((r + 1) & 1),
                 off_h = (uint16_t)((r + 1) >> 1);
  // base: pair (x_w >> 1) = q - 1, parity 0, row pair (x_h >> 1) = p - 1
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};\n" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(cp), "r"(x_w >> 1), "r"(0), "r"(x_h >> 1),
               "r"(n), "r"(bar), "h"(off_w), "h"(off_ph), "h"(off_h)
               : "memory");
}

// The parity view's map for a 3x3, stride-2, pad-1, dilation-1 convolution over even H, W
// (boxes of `pixels` output pixels x 64 channels); false where it does not apply or the
// driver refuses it, or LAB_PARITY=0.
static inline bool lab_parity_map(CUtensorMap *map, const void *base, int elem_bytes,
                                  const sketch::ConvShape &shape, uint32_t pixels) {
  const char *v = getenv("LAB_PARITY");
  if (v && atoi(v) == 0)
    return false;
  if (shape.r != 3 || shape.s != 3 || shape.stride_h != 2 || shape.stride_w != 2 || shape.pad_h != 1 ||
      shape.pad_w != 1 || shape.dil_h != 1 || shape.dil_w != 1 || shape.h % 2 || shape.w % 2 || shape.c % 64)
    return false;
  using Encode = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                              const cuuint64_t *, const cuuint64_t *, const int *, const int *,
                              cuuint32_t, cuuint32_t, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess || found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<Encode>(fn);
  }();
  if (encode == nullptr)
    return false;
  const uint64_t c = shape.c, w2 = shape.w / 2, h2 = shape.h / 2, e = elem_bytes;
  const cuuint64_t dims[5] = {2 * c, w2, 2, h2, (cuuint64_t)shape.n};
  const cuuint64_t strides[4] = {2 * c * e, (uint64_t)shape.w * c * e, 2 * (uint64_t)shape.w * c * e,
                                 (uint64_t)shape.h * shape.w * c * e};
  // bounding boxes: Q pairs from -1, one parity from 0, P row pairs from -1
  const int lower[3] = {-1, 0, -1};
  const int upper[3] = {shape.q - (int)w2 - 1, -1, shape.p - (int)h2 - 1};
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult res = encode(map, elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_UINT32,
                              5, const_cast<void *>(base), dims, strides, lower, upper, 64, pixels,
                              element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  static bool told = false;
  if (res != CUDA_SUCCESS && !told) {
    told = true;
    fprintf(stderr, "lab_parity_map: the driver refused the map (%d)\n", (int)res);
  }
  return res == CUDA_SUCCESS;
}
