// Lab: an f32 GEMM on the f64 tensor cores (mma.sync .f64), against cuBLAS SGEMM and DGEMM.
// The products of f32 values are exact in f64 and the sums are f64, rounded once to f32:
// at least as accurate as FFMA. Question: does the DMMA path beat cuBLAS's FFMA SGEMM?
#include "../sgemm_lab.cuh"

using namespace sgemm_labs;

// ---- peak rate of the f64 mma shapes (8 independent accumulators a warp) ----
template <int K>
__device__ __forceinline__ void dmma(double (&d)[4], const double *a, const double *b);
template <>
__device__ __forceinline__ void dmma<4>(double (&d)[4], const double *a, const double *b) {
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(b[0]));
}
template <>
__device__ __forceinline__ void dmma<8>(double (&d)[4], const double *a, const double *b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}
template <>
__device__ __forceinline__ void dmma<16>(double (&d)[4], const double *a, const double *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
               "{%12,%13,%14,%15}, {%0,%1,%2,%3};"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                 "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}

template <int K>
__global__ void dmma_peak(double *out, int iters) {
  double acc[8][4] = {};
  double a[K / 2], b[K / 4];
  for (int i = 0; i < K / 2; ++i) a[i] = threadIdx.x * 1e-3 + i;
  for (int i = 0; i < K / 4; ++i) b[i] = threadIdx.x * 2e-3 + i;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < 8; ++c) dmma<K>(acc[c], a, b);
  double s = 0;
  for (int c = 0; c < 8; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (s == 12345.0) out[threadIdx.x] = s;
}

// ---- the GEMM: BM x BN x BK block tile, WM x WN warps, f64 tiles in shared memory ----
// A [M, K] and B [K, N] row-major f32, D [M, N] f32. M % BM == N % BN == K % BK == 0 (lab).
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MIN_BLOCKS>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32, MIN_BLOCKS)
    dmma_sgemm(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ D, int M, int N,
               int K) {
  constexpr int T = WARPS_M * WARPS_N * 32;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
  constexpr int MT = WM / 16, NT = WN / 8;              // mma tiles a warp
  constexpr int LDA = BM + 4, LDB = BN + 4;            // f64 units: t * LD % 16 in {0,4,8,12}
  constexpr int A_LOADS = BM * BK / 4 / T, B_LOADS = BK * BN / 4 / T;
  static_assert(A_LOADS * T * 4 == BM * BK && B_LOADS * T * 4 == BK * BN, "tile copies");
  extern __shared__ double smem[];
  double *As = smem;                   // [2][BK][LDA], k-major
  double *Bs = smem + 2 * BK * LDA;    // [2][BK][LDB]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const float *a_base = A + size_t(m0) * K, *b_base = B + n0;

  float4 ra[A_LOADS], rb[B_LOADS];
  // A: a warp's lanes take 32 consecutive rows at one k chunk (conflict-free transposed stores).
  auto load = [&](int kt) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int idx = tid + i * T, row = idx % BM, kc = (idx / BM) * 4;
      ra[i] = *reinterpret_cast<const float4 *>(a_base + size_t(row) * K + kt * BK + kc);
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int idx = tid + i * T, k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
      rb[i] = *reinterpret_cast<const float4 *>(b_base + size_t(kt * BK + k) * N + nc);
    }
  };
  auto store = [&](int buf) {
    double *as = As + buf * BK * LDA, *bs = Bs + buf * BK * LDB;
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int idx = tid + i * T, row = idx % BM, kc = (idx / BM) * 4;
      as[(kc + 0) * LDA + row] = ra[i].x;
      as[(kc + 1) * LDA + row] = ra[i].y;
      as[(kc + 2) * LDA + row] = ra[i].z;
      as[(kc + 3) * LDA + row] = ra[i].w;
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int idx = tid + i * T, k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
      double2 *p = reinterpret_cast<double2 *>(bs + k * LDB + nc);
      p[0] = make_double2(rb[i].x, rb[i].y);
      p[1] = make_double2(rb[i].z, rb[i].w);
    }
  };

  double acc[MT][NT][4] = {};
  const int ktiles = K / BK;
  load(0);
  store(0);
  __syncthreads();
  for (int kt = 0; kt < ktiles; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < ktiles) load(kt + 1);
    const double *as = As + buf * BK * LDA + wm * WM + g;
    const double *bs = Bs + buf * BK * LDB + wn * WN + g;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 4) {
      double fa[MT][2], fb[NT][1];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        fa[i][0] = as[(kk + t) * LDA + i * 16];
        fa[i][1] = as[(kk + t) * LDA + i * 16 + 8];
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) fb[j][0] = bs[(kk + t) * LDB + j * 8];
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) dmma<4>(acc[i][j], fa[i], fb[j]);
    }
    if (kt + 1 < ktiles) store(buf ^ 1);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int row = m0 + wm * WM + i * 16 + g, col = n0 + wn * WN + j * 8 + 2 * t;
      *reinterpret_cast<float2 *>(D + size_t(row) * N + col) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2 *>(D + size_t(row + 8) * N + col) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MIN_BLOCKS>
Variant dmma_variant(const char *name) {
  return {name, [](const float *a, const float *b, float *d, int m, int n, int k) {
            auto kernel = dmma_sgemm<BM, BN, BK, WARPS_M, WARPS_N, MIN_BLOCKS>;
            const int bytes = 2 * BK * ((BM + 4) + (BN + 4)) * 8;
            static bool once = [&] {
              cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
              return true;
            }();
            (void)once;
            kernel<<<dim3(n / BN, m / BM), WARPS_M * WARPS_N * 32, bytes>>>(a, b, d, m, n, k);
          }};
}

// The exact product's relative error: max |x - exact| / max |exact|, exact from DGEMM on the same inputs.
static double error_vs_exact(const float *x, const double *exact, size_t count) {
  std::vector<float> hx(count);
  std::vector<double> he(count);
  cudaMemcpy(hx.data(), x, count * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(he.data(), exact, count * 8, cudaMemcpyDeviceToHost);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < count; ++i) {
    scale = std::max(scale, std::abs(he[i]));
    worst = std::isnan(hx[i]) ? 1e30 : std::max(worst, std::abs(hx[i] - he[i]));
  }
  return worst / scale;
}

__global__ void widen(const float *x, double *y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

int main() {
  double *sink;
  cudaMalloc(&sink, 4096 * 8);
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  auto peak = [&](auto kernel, int k, const char *name) {
    const int blocks = sms * 8, threads = 128, iters = 2048;
    auto f = [&] { kernel<<<blocks, threads>>>(sink, iters); };
    f();
    const float ms = median_ms(f, 10);
    const double flops = 2.0 * blocks * (threads / 32) * iters * 8 * 16 * 8 * k;
    printf("peak %-10s %.3f ms  %.1f TFLOP/s\n", name, ms, flops / ms / 1e9);
  };
  peak(dmma_peak<4>, 4, "m16n8k4");
  peak(dmma_peak<8>, 8, "m16n8k8");
  peak(dmma_peak<16>, 16, "m16n8k16");

  std::vector<Variant> vs = {cublas_variant(),
                             dmma_variant<128, 128, 16, 2, 4, 1>("dmma128x128w8"),
                             dmma_variant<128, 64, 16, 2, 2, 2>("dmma128x64w4"),
                             dmma_variant<64, 128, 16, 1, 4, 2>("dmma64x128w4"),
                             dmma_variant<128, 128, 8, 2, 4, 1>("dmma128x128x8"),
                             dmma_variant<128, 128, 32, 2, 4, 1>("dmma128x128x32")};
  cublasHandle_t dh;
  cublasCreate(&dh);
  for (int size : {4096, 8192}) {
    const int m = size, n = size, k = size;
    Problem p = make_problem(m, n, k);
    auto errs = check_variants(vs, p.a, p.b, p.ref, p.out, m, n, k);
    // DGEMM on the widened inputs: the exact reference and cuBLAS's f64 rate.
    const size_t elems = std::max(size_t(m) * k, size_t(k) * n);
    double *a64, *b64, *d64;
    cudaMalloc(&a64, elems * 8);
    cudaMalloc(&b64, elems * 8);
    cudaMalloc(&d64, size_t(m) * n * 8);
    widen<<<1024, 256>>>(p.a, a64, elems);
    widen<<<1024, 256>>>(p.b, b64, elems);
    const double one = 1, zero = 0;
    auto dgemm = [&] { cublasDgemm(dh, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b64, n, a64, k, &zero, d64, n); };
    dgemm();
    cudaDeviceSynchronize();
    printf("\n%dx%dx%d: error vs f64 exact: cublas SGEMM %.2e", m, n, k, error_vs_exact(p.ref, d64, size_t(m) * n));
    for (size_t v = 1; v < vs.size(); ++v) {
      cudaMemset(p.out, 0xff, size_t(m) * n * 4);
      vs[v].run(p.a, p.b, p.out, m, n, k);
      cudaDeviceSynchronize();
      printf(", %s %.2e (vs SGEMM %.2e)", vs[v].name.c_str(), error_vs_exact(p.out, d64, size_t(m) * n), errs[v]);
    }
    printf("\n");
    const float dms = median_ms(dgemm, 10);
    printf("cuBLAS DGEMM %.3f ms %.1f TFLOP/s\n", dms, 2.0 * m * n * k / dms / 1e9);
    time_and_print(vs, p, m, n, k);
    cudaFree(a64), cudaFree(b64), cudaFree(d64);
    cudaFree(p.a), cudaFree(p.b), cudaFree(p.ref), cudaFree(p.out);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
