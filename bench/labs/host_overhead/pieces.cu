// Host cost of the pieces a generated host function runs on every call (lab; H200).
//   nvcc -O2 -std=c++17 -arch=sm_90a -I runtime/include pieces.cu -o pieces && ./pieces
#include <sketch/host.h>
#include <sketch/tma.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void empty_kernel(int) {}
__global__ void big_kernel(const void *, const void *, void *, int64_t, int64_t, int64_t,
                           CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap) {}

template <class F> double us_per_call(F f, int calls = 20000) {
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      f();
    auto end = std::chrono::steady_clock::now();
    runs.push_back(std::chrono::duration<double, std::micro>(end - start).count() / calls);
    cudaDeviceSynchronize();
  }
  std::sort(runs.begin(), runs.end());
  return runs[2];
}

int main() {
  void *a = nullptr, *b = nullptr, *c = nullptr;
  cudaMalloc(&a, 1 << 24);
  cudaMalloc(&b, 1 << 24);
  cudaMalloc(&c, 1 << 24);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  int device = 0;
  CUtensorMap m1{}, m2{}, m3{}, m4{};
  printf("| piece | us a call |\n| --- | --- |\n");
  printf("| cudaGetDevice | %.3f |\n", us_per_call([&] { cudaGetDevice(&device); }));
  printf("| sketch::sm_count (cached) | %.3f |\n", us_per_call([&] { (void)sketch::sm_count(); }));
  printf("| cudaFuncSetAttribute(max dynamic smem) | %.3f |\n", us_per_call([&] {
           cudaFuncSetAttribute(big_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200000);
         }));
  printf("| encode_tensor_map_2d | %.3f |\n", us_per_call([&] {
           sketch::encode_tensor_map_2d(&m1, a, 4096, 4096, 8192, 64, 128, 2);
         }));
  printf("| encode_tensor_map_im2col | %.3f |\n", us_per_call([&] {
           sketch::encode_tensor_map_im2col(&m2, a, 2, 32, 56, 56, 64, 1, 1, 2, 2, 1, 1, 64, 128);
         }));
  printf("| empty_kernel<<<1, 128>>> | %.3f |\n",
         us_per_call([&] { empty_kernel<<<1, 128, 0, stream>>>(0); }));
  printf("| big_kernel (4 tensor maps) <<<132, 384, 200000>>> | %.3f |\n", us_per_call([&] {
           big_kernel<<<132, 384, 200000, stream>>>(a, b, c, 1, 2, 3, m1, m2, m3, m4);
         }));
  printf("| launch_kernel (4 maps, plain) | %.3f |\n", us_per_call([&] {
           sketch::launch_kernel(big_kernel, dim3(132), 384, 200000, 1, false, stream, a, b, c,
                                 int64_t(1), int64_t(2), int64_t(3), m1, m2, m3, m4);
         }));
  printf("| launch_kernel (4 maps, programmatic dependent) | %.3f |\n", us_per_call([&] {
           sketch::launch_kernel(big_kernel, dim3(132), 384, 200000, 1, true, stream, a, b, c,
                                 int64_t(1), int64_t(2), int64_t(3), m1, m2, m3, m4);
         }));
  printf("| launch_kernel (4 maps, cluster 2) | %.3f |\n", us_per_call([&] {
           sketch::launch_kernel(big_kernel, dim3(132), 384, 200000, 2, false, stream, a, b, c,
                                 int64_t(1), int64_t(2), int64_t(3), m1, m2, m3, m4);
         }));
  cudaDeviceSynchronize();
  printf("\nerror: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
