// AVX2/FMA tile kernel (this file alone is compiled with -mavx2 -mfma; called only after a
// run-time CPU check). Register block of up to 6 rows x 16 columns; each C element is one vfmadd
// chain over k in order, exactly like the portable kernel's std::fma chain, so both give the same
// bits. Column tails narrower than 8 use the same chain in scalar code.
#include "reprun/train/gemm.hpp"

#include <cmath>
#include <immintrin.h>

namespace reprun::detail {

namespace {
constexpr long k_kc = 256; // k block: the B panel (256 x 16 floats) stays in L1

// `init`: nullptr, or the row each C row's chain starts from (the first k block of gemm_set).
template <int MR, int NV>
void block(long k0, long k1, MatView A, const float* B, long ldb, float* C, long ldc, const float* init) {
  __m256 acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = _mm256_loadu_ps(init ? init + v * 8 : C + r * ldc + v * 8);
    }
  }
  for (long k = k0; k < k1; ++k) {
    __m256 b[NV];
    for (int v = 0; v < NV; ++v) {
      b[v] = _mm256_loadu_ps(B + k * ldb + v * 8);
    }
    const float* a = A.data + k * A.cs;
    for (int r = 0; r < MR; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * A.rs);
      for (int v = 0; v < NV; ++v) {
        acc[r][v] = _mm256_fmadd_ps(x, b[v], acc[r][v]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      _mm256_storeu_ps(C + r * ldc + v * 8, acc[r][v]);
    }
  }
}

template <int NV>
void rows(long m, long k0, long k1, MatView A, const float* B, long ldb, float* C, long ldc, const float* init) {
  long i = 0;
  for (; i + 6 <= m; i += 6) {
    block<6, NV>(k0, k1, MatView{A.data + i * A.rs, A.rs, A.cs}, B, ldb, C + i * ldc, ldc, init);
  }
  for (; i < m; ++i) {
    block<1, NV>(k0, k1, MatView{A.data + i * A.rs, A.rs, A.cs}, B, ldb, C + i * ldc, ldc, init);
  }
}

void scalar(long m, long k0, long k1, MatView A, const float* B, long ldb, float* C, long ldc, const float* init) {
  for (long i = 0; i < m; ++i) {
    float acc = init ? *init : C[i * ldc];
    for (long k = k0; k < k1; ++k) {
      acc = std::fma(A.data[i * A.rs + k * A.cs], B[k * ldb], acc);
    }
    C[i * ldc] = acc;
  }
}
} // namespace

void gemm_tile_avx2(long m, long n, long K, MatView A, const float* B, long ldb, float* C, long ldc,
                    const float* init) {
  for (long k0 = 0; k0 < K; k0 += k_kc) {
    const long k1 = k0 + k_kc < K ? k0 + k_kc : K;
    const float* start = k0 == 0 ? init : nullptr; // later k blocks go on from C
    long j = 0;
    for (; j + 16 <= n; j += 16) {
      rows<2>(m, k0, k1, A, B + j, ldb, C + j, ldc, start ? start + j : nullptr);
    }
    for (; j + 8 <= n; j += 8) {
      rows<1>(m, k0, k1, A, B + j, ldb, C + j, ldc, start ? start + j : nullptr);
    }
    for (; j < n; ++j) {
      scalar(m, k0, k1, A, B + j, ldb, C + j, ldc, start ? start + j : nullptr);
    }
  }
}

} // namespace reprun::detail
