// gemm_acc: tiling, threading and dispatch. The per-element arithmetic is defined in the header;
// this file only decides who computes which tile.
#include "reprun/train/gemm.hpp"

#include "reprun/core/error.hpp"
#include "reprun/core/threadpool.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

namespace reprun {

namespace {
// Tile sizes depend on the shape only, never on the thread count (and no element's sum is ever
// split, so they cannot change a bit): 24 rows for the batch-sized GEMMs, 96 for tall ones (the
// first layer's weight gradient has 784 rows), so that tasks are not too small to pay for.
constexpr long k_tile_n = 128;
long tile_rows(long M) { return M > 256 ? 96 : 24; }
enum Kernel { k_portable = 0, k_avx2 = 1, k_avx512 = 2 };

int cpu_best() {
  static const int k_best = [] {
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
      return k_avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      return k_avx2;
    }
    return k_portable;
  }();
  return k_best;
}

bool known_kernel(const std::string& name) {
  return name == "portable" || name == "avx2" || name == "avx2-fma" || name == "avx512";
}

int parse_kernel(const std::string& name) {
  return name == "portable" ? k_portable : name == "avx2-fma" || name == "avx2" ? k_avx2 : k_avx512;
}

std::atomic<int> g_cap{[] {
  const char* env = std::getenv("REPRUN_GEMM_KERNEL");
  return env && *env ? parse_kernel(env) : k_avx512;
}()};

int active_kernel() { return std::min(cpu_best(), g_cap.load()); }
} // namespace

std::string gemm_kernel_name() {
  switch (active_kernel()) {
  case k_avx512: return "avx512";
  case k_avx2: return "avx2-fma";
  default: return "portable";
  }
}

void gemm_force_kernel(const std::string& name) { g_cap.store(name.empty() ? k_avx512 : parse_kernel(name)); }

void gemm_check_kernel_env() {
  const char* env = std::getenv("REPRUN_GEMM_KERNEL");
  if (env && *env && !known_kernel(env)) {
    throw Error("REPRUN_GEMM_KERNEL", std::string("unknown kernel set '") + env +
                                          "'; expected portable, avx2 (or avx2-fma) or avx512, or unset it");
  }
}

void gemm_force_portable(bool on) { gemm_force_kernel(on ? "portable" : ""); }

namespace detail {
void gemm_tile_portable(long m, long n, long K, MatView A, const float* B, long ldb, float* C,
                        long ldc, const float* init) {
  for (long i = 0; i < m; ++i) {
    float* c = C + i * ldc;
    if (init) {
      std::copy(init, init + n, c);
    }
    for (long k = 0; k < K; ++k) {
      const float a = A.at(i, k);
      const float* b = B + k * ldb;
      for (long j = 0; j < n; ++j) {
        c[j] = std::fma(a, b[j], c[j]);
      }
    }
  }
}
} // namespace detail

namespace {

// With `done`, each tile once computed is handed to it (gemm_set_then).
void gemm_run(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc, ThreadPool* pool,
              bool set, const float* row, const TileDone* done = nullptr) {
  if (M <= 0 || N <= 0) {
    return;
  }
  // A zero row for gemm_set without a row: a tile is at most k_tile_n columns wide.
  alignas(64) static const float zeros[k_tile_n] = {};
  if (K <= 0) {
    if (set) {
      for (long i = 0; i < M; ++i) {
        for (long j = 0; j < N; ++j) {
          C[i * ldc + j] = row ? row[j] : 0.0f;
        }
      }
    }
    if (done) {
      (*done)(0, 0, M, N);
    }
    return;
  }
  const int kernel = active_kernel();
  const long k_tile_m = tile_rows(M);
  const long tiles_m = (M + k_tile_m - 1) / k_tile_m;
  const long tiles_n = (N + k_tile_n - 1) / k_tile_n;
  auto run_tile = [&](int t, int) {
    long i0 = (t / tiles_n) * k_tile_m;
    long j0 = (t % tiles_n) * k_tile_n;
    long m = std::min(k_tile_m, M - i0);
    long n = std::min(k_tile_n, N - j0);
    MatView a{A.data + i0 * A.rs, A.rs, A.cs};
    const float* b = B + j0;
    float* c = C + i0 * ldc + j0;
    const float* init = !set ? nullptr : row ? row + j0 : zeros;
    if (kernel == k_avx512) {
      detail::gemm_tile_avx512(m, n, K, a, b, ldb, c, ldc, init);
    } else if (kernel == k_avx2) {
      detail::gemm_tile_avx2(m, n, K, a, b, ldb, c, ldc, init);
    } else {
      detail::gemm_tile_portable(m, n, K, a, b, ldb, c, ldc, init);
    }
    if (done) {
      (*done)(i0, j0, m, n);
    }
  };
  const int tasks = static_cast<int>(tiles_m * tiles_n);
  if (pool && pool->size() > 1 && tasks > 1) {
    pool->parallel_for(tasks, run_tile);
  } else {
    for (int t = 0; t < tasks; ++t) {
      run_tile(t, 0);
    }
  }
}

} // namespace

void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc,
              ThreadPool* pool) {
  gemm_run(M, N, K, A, B, ldb, C, ldc, pool, false, nullptr);
}

void gemm_set(long M, long N, long K, MatView A, const float* B, long ldb, const float* row, float* C, long ldc,
              ThreadPool* pool) {
  gemm_run(M, N, K, A, B, ldb, C, ldc, pool, true, row);
}

void gemm_set_then(long M, long N, long K, MatView A, const float* B, long ldb, const float* row, float* C, long ldc,
                   ThreadPool* pool, const TileDone& done) {
  gemm_run(M, N, K, A, B, ldb, C, ldc, pool, true, row, &done);
}

} // namespace reprun
