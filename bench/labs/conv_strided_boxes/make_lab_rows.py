"""The second form of the strided-box lab (README.md): rewrites the generated tall kernels of the
stride-2 layers (`bc_{f16,bf16}_s2p1_default_ws_tall`, 192 x 128) in .gen/ab/new.cu so that they
keep everything they have (the persistent schedule, the split tail over clusters, the TMA
store) but tile whole output rows and load A as strided tiled boxes:
  - a kernel parameter `tile_rows`; tiles are (image, row_tiles of tile_rows rows, channel tile);
    m0 is the tile's first pixel, so the window start, the split tail's rows and the epilogue's
    rows follow as generated;
  - tap (r, s)'s A is tma_load_4d of the strided map at (c0, x_w + s dil_w, x_h + r dil_h, n), its
    transaction bytes tile_rows Q 128;
  - the output by rank-4 boxes {64, Q, tile_rows, 1} (clipped at P), the split tail's rows the
    tile's pixels.
The host's tall branch takes it where lab_rows::rows (rows.cuh, shared with the hand kernel)
finds a row count (else the 128 x 128 path
as generated)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import rewrite, sub_exact  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"

HELPER = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rows.cuh")).read()


def kernel(part):
    part = sub_exact(part, "const __grid_constant__ CUtensorMap y_map) {",
                     "const __grid_constant__ CUtensorMap y_map, int tile_rows) {", 1)
    part = sub_exact(part, "  const int tile_count = (int)sketch::ceil_div(size_m, BM) * tiles_n;  // channel tiles fastest\n",
                     "  const int row_tiles = (shape.p + tile_rows - 1) / tile_rows;  // lab: tiles of whole output rows\n"
                     "  const int tile_count = shape.n * row_tiles * tiles_n;  // channel tiles fastest\n", 1)
    for t in ("tile", "split_tile"):
        old = f"const int64_t m0 = (int64_t)({t} / tiles_n) * BM, n0 = (int64_t)({t} % tiles_n) * BN;"
        new = (f"const int img = {t} / tiles_n / row_tiles, p0 = {t} / tiles_n % row_tiles * tile_rows;  // lab\n"
               f"        const int64_t m0 = ((int64_t)img * shape.p + p0) * shape.q, n0 = (int64_t)({t} % tiles_n) * BN;")
        n = part.count(old)
        assert n >= 2, (t, n)
        part = part.replace(old, new)
    part = sub_exact(part, "sketch::mbarrier_arrive_expect_tx(full, A_STAGE_BYTES + B_STAGE_BYTES);",
                     "sketch::mbarrier_arrive_expect_tx(full, tile_rows * (int)shape.q * 128 + B_STAGE_BYTES);", 2)
    part = sub_exact(part, "sketch::tma_load_im2col_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w, x_h, x_n, "
                           "(uint16_t)(s * shape.dil_w), (uint16_t)(r * shape.dil_h), full);",
                     "sketch::tma_load_4d(a_smem + (k_step % STAGES) * A_STAGE_BYTES, &x_map, c0, x_w + s * shape.dil_w, "
                     "x_h + r * shape.dil_h, x_n, full);", 2)
    part = sub_exact(part, "sketch::tma_store_2d(&y_map, staged_smem + b * 24576, (int)n0 + b * 64, (int)m0);",
                     "sketch::tma_store_4d(&y_map, staged_smem + b * 24576, (int)n0 + b * 64, 0, p0, img);", 1)
    part = sub_exact(part, "const int rows_in = (int)min(size_m - m0, (int64_t)BM);  // tile rows inside the output",
                     "const int rows_in = min(tile_rows, shape.p - p0) * shape.q;  // lab: the tile's pixels", 1)
    return part


def host(part, name):
    part = sub_exact(part, "if (sketch::wave_rows(pixels, K, 1, sms, 192, 128) < sketch::wave_rows(pixels, K, 1, sms, 128, 128)) {",
                     "if (const int rows = lab_rows::rows(shape, 192)) {  // lab: row tiles", 1)
    part = sub_exact(part, "const int64_t blocks = sketch::ceil_div(pixels, 192) * sketch::ceil_div(K, 128);",
                     "const int64_t blocks = (int64_t)shape.n * ((shape.p + rows - 1) / rows) * sketch::ceil_div(K, 128);", 1)
    part = sub_exact(part, "sketch::encode_tensor_map_im2col(&x_map, X, 2, shape.n, shape.h, shape.w, shape.c, shape.pad_h, "
                           "shape.pad_w, (shape.r - 1) * shape.dil_h, (shape.s - 1) * shape.dil_w, shape.stride_h, "
                           "shape.stride_w, 64, 192)",
                     "lab_rows::encode_x(&x_map, X, shape, rows)", 1)
    part = sub_exact(part, "sketch::encode_tensor_map_2d(&y_map, Y, shape.k, pixels, shape.k * 2, 64, 192, 2)",
                     "sketch::encode_tensor_map_nhwc(&y_map, Y, 2, shape.n, shape.p, shape.q, shape.k, 64, shape.q, rows)", 1)
    part = sub_exact(part, f"launch_kernel({name}_ws_tall, dim3(unsigned(grid)), 512, smem_bytes, split.slices, blocks <= grid, "
                           "stream, X, Wt, Y, N, H, W, C, K, shape, x_map, w_map, y_map);",
                     f"launch_kernel({name}_ws_tall, dim3(unsigned(grid)), 512, smem_bytes, split.slices, blocks <= grid, "
                     "stream, X, Wt, Y, N, H, W, C, K, shape, x_map, w_map, y_map, rows);", 1)
    return part, 1


rewrite(path, r"__global__ void __launch_bounds__\(512, 1\) (bc_(f16|bf16)_s2p1_default)_ws_tall\(", kernel,
        r'extern "C" cudaError_t (bc_(f16|bf16)_s2p1_default)\(', host, HELPER, "host functions")
