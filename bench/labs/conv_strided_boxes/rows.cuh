// Lab (README.md): the row tiles both forms share, so that they measure the same tiling.
namespace lab_rows {

inline int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v ? atoi(v) : fallback;
}

/// Output rows a tile of bm rows: at most bm / Q (and LAB_ROWS), as even over the image's P
/// rows as that allows; 0 under LAB_OFF, where under half the tile's rows would be pixels,
/// or where a box would pass 256 elements.
inline int rows(const sketch::ConvShape &shape, int bm) {
  if (getenv("LAB_OFF")) return 0;
  const int most = std::min(bm / shape.q, env_int("LAB_ROWS", 1 << 20));
  if (most < 1) return 0;
  const int tiles_image = (shape.p + most - 1) / most, r = (shape.p + tiles_image - 1) / tiles_image;
  if (r * shape.q * 2 < bm || (shape.q - 1) * shape.stride_w + 1 > 256 || (r - 1) * shape.stride_h + 1 > 256)
    return 0;
  return r;
}

/// X's rank-4 nhwc map read in boxes {64 channels, Q, rows, 1} traversed at the convolution's
/// strides: (Q - 1) stride_w + 1 by (rows - 1) stride_h + 1 elements, every stride-th one.
inline bool encode_x(CUtensorMap *map, const void *x, const sketch::ConvShape &shape, int rows) {
  const cuuint64_t dims[4] = {(cuuint64_t)shape.c, (cuuint64_t)shape.w, (cuuint64_t)shape.h, (cuuint64_t)shape.n};
  const cuuint64_t pixel = (cuuint64_t)shape.c * 2;
  const cuuint64_t strides[3] = {pixel, pixel * shape.w, pixel * shape.w * shape.h};
  const cuuint32_t box[4] = {64, (cuuint32_t)((shape.q - 1) * shape.stride_w + 1),
                             (cuuint32_t)((rows - 1) * shape.stride_h + 1), 1};
  const cuuint32_t element_strides[4] = {1, (cuuint32_t)shape.stride_w, (cuuint32_t)shape.stride_h, 1};
  return sketch::encode_tensor_map(map, x, 2, 4, dims, strides, box, element_strides);
}

}  // namespace lab_rows
