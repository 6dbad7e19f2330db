// GEMM throughput on the mnist-mlp layer shapes: reprun's gemm_acc (the kernel the CPU gets, and
// the portable one) beside OpenBLAS's cblas_sgemm (loaded with dlopen when present), one thread.
// Prints one JSON object per shape; bench/run.sh turns them into the table.
#include "reprun/train/gemm.hpp"
#include "reprun/core/threadpool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <dlfcn.h>
#include <string>
#include <vector>

using namespace reprun;

namespace {
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
constexpr int k_row_major = 101, k_no_trans = 111, k_trans = 112;

template <class F>
double best_seconds(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
} // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  SgemmFn sgemm = nullptr;
  ThreadPool pool(threads);
  const std::string kernel = gemm_kernel_name(); // what this CPU (and REPRUN_GEMM_KERNEL) selects
  struct Shape {
    const char* name;
    long M, N, K;
    bool transA;
  };
  // forward dense_1 (x W), weight gradient dense_1 (x^T dY), data gradient dense_2 (dY W^T)
  const Shape shapes[] = {{"fwd 128x256x784", 128, 256, 784, false},
                          {"wgrad 784x256x128", 784, 256, 128, true},
                          {"fwd 128x256x256", 128, 256, 256, false},
                          {"dgrad 128x256x256", 128, 256, 256, false}};
  // reprun first for every shape, then OpenBLAS: OpenBLAS's worker threads keep spinning after a
  // call and would take a core from reprun's pool if the two alternated.
  const size_t count = sizeof(shapes) / sizeof(shapes[0]);
  std::vector<double> t_rep(count), t_port(count), t_blas(count, 0.0);
  auto run_shape = [&](size_t i, int which) {
    const Shape& s = shapes[i];
    std::vector<float> A(static_cast<size_t>(s.M * s.K), 0.5f), B(static_cast<size_t>(s.K * s.N), 0.25f),
        C(static_cast<size_t>(s.M * s.N), 0.0f);
    // A stored (K x M) for transA, like the activations of a weight gradient.
    MatView a = s.transA ? MatView{A.data(), 1, s.M} : MatView{A.data(), s.K, 1};
    if (which == 0) {
      t_rep[i] = best_seconds([&] { gemm_acc(s.M, s.N, s.K, a, B.data(), s.N, C.data(), s.N, &pool); }, 40);
      gemm_force_kernel("portable");
      t_port[i] = best_seconds([&] { gemm_acc(s.M, s.N, s.K, a, B.data(), s.N, C.data(), s.N, &pool); }, 3);
      gemm_force_kernel(kernel);
    } else if (sgemm) {
      t_blas[i] = best_seconds(
          [&] {
            sgemm(k_row_major, s.transA ? k_trans : k_no_trans, k_no_trans, static_cast<int>(s.M), static_cast<int>(s.N),
                  static_cast<int>(s.K), 1.0f, A.data(), static_cast<int>(s.transA ? s.M : s.K), B.data(),
                  static_cast<int>(s.N), 1.0f, C.data(), static_cast<int>(s.N));
          },
          40);
    }
  };
  // Untimed warm-up (clock ramp-up, first-touch page faults, waking the pool's workers).
  for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300);) {
    run_shape(0, 0);
  }
  for (size_t i = 0; i < count; ++i) {
    run_shape(i, 0);
  }
  // OpenBLAS is loaded only now: loading it starts its threads, which spin for a while.
  for (const char* lib : {"libopenblas.so.0", "libopenblas.so"}) {
    if (void* h = dlopen(lib, RTLD_NOW)) {
      sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
      if (auto set = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"))) {
        set(threads);
      }
      break;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    run_shape(i, 1);
  }
  for (size_t i = 0; i < count; ++i) {
    const Shape& s = shapes[i];
    const double flops = 2.0 * static_cast<double>(s.M * s.N * s.K);
    std::printf("{\"shape\":\"%s\",\"threads\":%d,\"kernel\":\"%s\",\"reprun_gflops\":%.2f,\"portable_gflops\":%.2f,"
                "\"openblas_gflops\":%s}\n",
                s.name, threads, kernel.c_str(), flops / t_rep[i] / 1e9, flops / t_port[i] / 1e9,
                sgemm ? std::to_string(flops / t_blas[i] / 1e9).c_str() : "null");
  }
  return 0;
}
