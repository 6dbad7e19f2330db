// The CUDA emulator's own test cases (tests/e2e/test_cuda_emu_selftest.sh runs each one and checks
// how it ends): the emulator must catch what would go wrong on a GPU, or its green runs of the
// CUDA backend would prove nothing. usage: reprun_cudaemu_selftest CASE
#include "cuda_runtime.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int k_n = 256;

// Reverses each block's 256 elements through shared memory: right only with the barrier.
__global__ void reverse_block(const float* in, float* out) {
  __shared__ float tile[k_n];
  const unsigned t = threadIdx.x, base = blockIdx.x * k_n;
  tile[t] = in[base + t];
  __syncthreads();
  out[base + t] = tile[k_n - 1 - t];
}

// Threads with an odd index return before the barrier.
__global__ void divergent_barrier(float* out) {
  if (threadIdx.x % 2 == 1) {
    return;
  }
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

// Reads out[n] of an n-element buffer.
__global__ void read_past_end(const float* in, float* out, long n) {
  if (threadIdx.x == 0) {
    out[0] = in[n];
  }
}

__global__ void copy(const float* in, float* out, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i];
  }
}

// Every block adds its 256 values into one float with atomicAdd.
__global__ void atomic_sum(const float* in, float* sum) { atomicAdd(sum, in[blockIdx.x * k_n + threadIdx.x]); }

float* device_floats(const std::vector<float>& host) {
  float* d = nullptr;
  cudaMalloc(&d, host.size() * sizeof(float));
  cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  return d;
}

std::vector<float> to_host(const float* d, size_t n) {
  std::vector<float> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
  return h;
}

int fail(const char* what) {
  std::fprintf(stderr, "selftest: %s\n", what);
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  std::vector<float> h(4 * k_n);
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<float>(i);
  }
  if (what == "barrier") { // right answer with the barrier, every element
    float* in = device_floats(h);
    float* out = device_floats(std::vector<float>(h.size(), 0.0f));
    REPRUN_LAUNCH(reverse_block, 4, k_n)(in, out);
    const std::vector<float> r = to_host(out, h.size());
    for (int b = 0; b < 4; ++b) {
      for (int t = 0; t < k_n; ++t) {
        if (r[b * k_n + t] != h[b * k_n + k_n - 1 - t]) {
          return fail("reverse_block gave a wrong element");
        }
      }
    }
    std::puts("barrier ok");
    return 0;
  }
  if (what == "divergent-barrier") { // aborts
    float* out = device_floats(std::vector<float>(k_n, 0.0f));
    REPRUN_LAUNCH(divergent_barrier, 1, k_n)(out);
    return fail("a barrier half the threads never reached went unnoticed");
  }
  if (what == "host-pointer") { // aborts
    float* out = device_floats(h);
    REPRUN_LAUNCH(copy, 4, k_n)(h.data(), out, static_cast<long>(h.size()));
    return fail("a host pointer passed to a kernel went unnoticed");
  }
  if (what == "past-end") { // faults
    float* in = device_floats(h);
    float* out = device_floats(h);
    REPRUN_LAUNCH(read_past_end, 1, 32)(in, out, static_cast<long>(h.size()));
    return fail("a read past the end of a cudaMalloc went unnoticed");
  }
  if (what == "memcpy-past-end") { // aborts
    float* d = device_floats(h);
    std::vector<float> bigger(h.size() + 1);
    cudaMemcpy(d, bigger.data(), bigger.size() * sizeof(float), cudaMemcpyHostToDevice);
    return fail("a copy past the end of a cudaMalloc went unnoticed");
  }
  if (what == "grid-y") { // aborts
    float* out = device_floats(h);
    REPRUN_LAUNCH(copy, dim3(1, 70000), k_n)(out, out, 0L);
    return fail("grid.y above 65535 went unnoticed");
  }
  if (what == "uninitialized") { // fresh device memory is NaN
    float* d = nullptr;
    cudaMalloc(&d, 64 * sizeof(float));
    float* out = device_floats(std::vector<float>(64, 0.0f));
    REPRUN_LAUNCH(copy, 1, 64)(d, out, 64L);
    for (float v : to_host(out, 64)) {
      if (!std::isnan(v)) {
        return fail("fresh device memory read as a number");
      }
    }
    std::puts("uninitialized ok");
    return 0;
  }
  if (what == "atomic-sum") { // prints the sum's bits: they depend on the order the blocks ran in
    std::vector<float> v(64 * k_n);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = std::ldexp(1.0f + static_cast<float>(i % 97) / 97.0f, static_cast<int>(i % 41) - 20);
    }
    float* in = device_floats(v);
    float* sum = device_floats({0.0f});
    REPRUN_LAUNCH(atomic_sum, 64, k_n)(in, sum);
    const float s = to_host(sum, 1)[0];
    uint32_t bits = 0;
    std::memcpy(&bits, &s, sizeof bits);
    std::printf("%08x\n", bits);
    return 0;
  }
  std::fprintf(stderr, "usage: reprun_cudaemu_selftest barrier|divergent-barrier|host-pointer|past-end|"
                       "memcpy-past-end|grid-y|uninitialized|atomic-sum\n");
  return 2;
}
