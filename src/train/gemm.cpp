// gemm_acc: tiling, threading and dispatch. The per-element arithmetic is defined in the header;
// this file only decides who computes which tile.
#include "reprun/gemm.hpp"

#include "reprun/threadpool.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace reprun {

namespace {
// Tile sizes are constants, never derived from the thread count.
constexpr long k_tile_m = 48;
constexpr long k_tile_n = 64;
std::atomic<bool> g_force_portable{false};

bool cpu_has_avx2_fma() {
  static const bool k_has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return k_has;
}
} // namespace

std::string gemm_kernel_name() {
  return (cpu_has_avx2_fma() && !g_force_portable.load()) ? "avx2-fma" : "portable";
}

void gemm_force_portable(bool on) { g_force_portable.store(on); }

namespace detail {
void gemm_tile_portable(long m, long n, long K, MatView A, const float* B, long ldb, float* C,
                        long ldc) {
  for (long i = 0; i < m; ++i) {
    float* c = C + i * ldc;
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

void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc,
              ThreadPool* pool) {
  if (M <= 0 || N <= 0 || K <= 0) {
    return;
  }
  const bool use_avx2 = cpu_has_avx2_fma() && !g_force_portable.load();
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
    if (!(use_avx2 && detail::gemm_tile_avx2(m, n, K, a, b, ldb, c, ldc))) {
      detail::gemm_tile_portable(m, n, K, a, b, ldb, c, ldc);
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

} // namespace reprun
