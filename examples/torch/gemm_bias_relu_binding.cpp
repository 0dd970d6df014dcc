// PyTorch binding of the generated host function gemm_bias_relu (from
// examples/gemm_bias_relu.sketch): D = relu(A @ B + bias), f16, on the
// caller's current CUDA stream. Checks what the host function cannot:
// dtypes, devices, contiguity and matching shapes.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "gemm_bias_relu.h"

namespace {

void checkInput(const torch::Tensor &t, const char *name, int64_t dims) {
  TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
  TORCH_CHECK(t.scalar_type() == torch::kHalf, name, " must be float16, got ", t.scalar_type());
  TORCH_CHECK(t.dim() == dims, name, " must have ", dims, " dimensions, got ", t.dim());
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous (row-major)");
}

const __half *halfData(const torch::Tensor &t) {
  return reinterpret_cast<const __half *>(t.data_ptr<at::Half>());
}

torch::Tensor gemmBiasRelu(const torch::Tensor &a, const torch::Tensor &b,
                           const torch::Tensor &bias) {
  checkInput(a, "A", 2);
  checkInput(b, "B", 2);
  checkInput(bias, "bias", 1);
  TORCH_CHECK(b.device() == a.device() && bias.device() == a.device(),
              "A, B and bias must be on one device");
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(b.size(0) == k, "A is ", m, "x", k, " but B has ", b.size(0), " rows");
  TORCH_CHECK(bias.size(0) == n, "bias has ", bias.size(0), " elements, B has ", n, " columns");
  c10::cuda::CUDAGuard guard(a.device());
  torch::Tensor d = torch::empty({m, n}, a.options());
  cudaError_t err = gemm_bias_relu(halfData(a), halfData(b), halfData(bias),
                                   reinterpret_cast<__half *>(d.data_ptr<at::Half>()), m, k, n,
                                   at::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "gemm_bias_relu: ", cudaGetErrorString(err));
  return d;
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.def("gemm_bias_relu", &gemmBiasRelu, "D = relu(A @ B + bias); f16 A[M,K], B[K,N], bias[N]",
             pybind11::arg("A"), pybind11::arg("B"), pybind11::arg("bias"));
}
