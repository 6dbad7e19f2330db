// `make bench`, GPU section: the ordered CUDA GEMM (the CUDA backend's gemm_acc: every element one
// __fmaf_rn chain over k in increasing order, no split-K, no tensor cores) against cuBLAS FP32
// SGEMM in pedantic math (no TF32, no reduced precision) on the same device memory, at
// M = N = K = argv[1] (default 4096); and the backend's bits against the CPU backend's at 512^3.
// Prints one JSON line. A benchmark, not product code: it needs a GPU (exit 2 without one).
#include "reprun/train/backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace reprun;

namespace {

void must(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "gemm_cuda_bench: %s failed\n", what);
    std::exit(2);
  }
}

// Values in [-1, 1) from a fixed 64-bit LCG: the same inputs on every machine.
std::vector<float> values(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<double>(seed >> 40) / static_cast<double>(1ULL << 24) * 2.0 - 1.0);
  }
  return v;
}

template <class F>
double best_seconds(F&& f, int reps) {
  f(); // warm-up: the kernels loaded, the buffers allocated
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    must(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    const auto t0 = std::chrono::steady_clock::now();
    f();
    must(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// The CUDA backend's C against the CPU backend's for one n^3 product (the operands uploaded to the
// backend's device memory, C downloaded).
bool identical_to_cpu(Backend& gpu, long n) {
  const size_t elems = static_cast<size_t>(n * n);
  const auto a = values(elems, 1), b = values(elems, 2);
  auto c_cpu = values(elems, 3), c_gpu = c_cpu;
  auto cpu = make_cpu_backend(nullptr);
  cpu->gemm_acc(n, n, n, MatView{a.data(), n, 1}, b.data(), n, c_cpu.data(), n);
  Buffer<float> da(gpu, elems), db(gpu, elems), dc(gpu, elems);
  gpu.upload(da.data(), a.data(), da.bytes());
  gpu.upload(db.data(), b.data(), db.bytes());
  gpu.upload(dc.data(), c_gpu.data(), dc.bytes());
  gpu.gemm_acc(n, n, n, MatView{da.data(), n, 1}, db.data(), n, dc.data(), n);
  gpu.download(c_gpu.data(), dc.data(), dc.bytes());
  return std::memcmp(c_cpu.data(), c_gpu.data(), c_cpu.size() * sizeof(float)) == 0;
}

} // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 4096;
  if (const std::string why = cuda_unavailable(); !why.empty()) {
    std::fprintf(stderr, "gemm_cuda_bench: %s\n", why.c_str());
    return 2;
  }
  auto gpu = make_cuda_backend();
  const bool identical = identical_to_cpu(*gpu, 512);
  const size_t elems = static_cast<size_t>(n * n), bytes = elems * sizeof(float);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  must(cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess &&
           cudaMalloc(&c, bytes) == cudaSuccess, "cudaMalloc");
  must(cudaMemcpy(a, values(elems, 1).data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaMemcpy(b, values(elems, 2).data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaMemset(c, 0, bytes) == cudaSuccess, "cudaMemcpy");
  // Device memory: the backend computes on it in place (no copies in the timing).
  const double ordered = best_seconds([&] { gpu->gemm_acc(n, n, n, MatView{a, n, 1}, b, n, c, n); }, 5);
  cublasHandle_t h = nullptr;
  must(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  must(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH) == CUBLAS_STATUS_SUCCESS, "cublasSetMathMode");
  const float one = 1.0f;
  const int ni = static_cast<int>(n);
  // Row-major C += A B is column-major C^T += B^T A^T.
  const double cublas = best_seconds(
      [&] { must(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b, ni, a, ni, &one, c, ni) ==
                     CUBLAS_STATUS_SUCCESS, "cublasSgemm"); },
      5);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  std::printf("{\"m\": %ld, \"ordered_tflops\": %.3f, \"cublas_tflops\": %.3f, \"identical_to_cpu\": %s}\n", n,
              flops / ordered / 1e12, flops / cublas / 1e12, identical ? "true" : "false");
  return 0;
}
