// AVX2/FMA tile kernel (this file alone is compiled with -mavx2 -mfma and only called after a
// run-time CPU check). Register block of 4 rows x 16 columns; each C element is one vfmadd chain
// over k in order, exactly as the portable kernel's std::fma chain, so both give the same bits.
// Edges that do not fill a register block use the same scalar fma chain.
#include "reprun/gemm.hpp"

#include <cmath>
#include <immintrin.h>

namespace reprun::detail {

namespace {
constexpr long k_mr = 4;
constexpr long k_nr = 16;
constexpr long k_kc = 256; // k block: keeps the B panel (k_kc x 16 floats) in L1

void block_4x16(long k0, long k1, MatView A, const float* B, long ldb, float* C, long ldc) {
  __m256 c00 = _mm256_loadu_ps(C), c01 = _mm256_loadu_ps(C + 8);
  __m256 c10 = _mm256_loadu_ps(C + ldc), c11 = _mm256_loadu_ps(C + ldc + 8);
  __m256 c20 = _mm256_loadu_ps(C + 2 * ldc), c21 = _mm256_loadu_ps(C + 2 * ldc + 8);
  __m256 c30 = _mm256_loadu_ps(C + 3 * ldc), c31 = _mm256_loadu_ps(C + 3 * ldc + 8);
  const float* a0 = A.data;
  const float* a1 = A.data + A.rs;
  const float* a2 = A.data + 2 * A.rs;
  const float* a3 = A.data + 3 * A.rs;
  for (long k = k0; k < k1; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb);
    const __m256 b1 = _mm256_loadu_ps(B + k * ldb + 8);
    const long ak = k * A.cs;
    __m256 a = _mm256_broadcast_ss(a0 + ak);
    c00 = _mm256_fmadd_ps(a, b0, c00);
    c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(a1 + ak);
    c10 = _mm256_fmadd_ps(a, b0, c10);
    c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(a2 + ak);
    c20 = _mm256_fmadd_ps(a, b0, c20);
    c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(a3 + ak);
    c30 = _mm256_fmadd_ps(a, b0, c30);
    c31 = _mm256_fmadd_ps(a, b1, c31);
  }
  _mm256_storeu_ps(C, c00);
  _mm256_storeu_ps(C + 8, c01);
  _mm256_storeu_ps(C + ldc, c10);
  _mm256_storeu_ps(C + ldc + 8, c11);
  _mm256_storeu_ps(C + 2 * ldc, c20);
  _mm256_storeu_ps(C + 2 * ldc + 8, c21);
  _mm256_storeu_ps(C + 3 * ldc, c30);
  _mm256_storeu_ps(C + 3 * ldc + 8, c31);
}

void block_1x8(long k0, long k1, const float* a, long acs, const float* B, long ldb, float* C) {
  __m256 c = _mm256_loadu_ps(C);
  for (long k = k0; k < k1; ++k) {
    c = _mm256_fmadd_ps(_mm256_broadcast_ss(a + k * acs), _mm256_loadu_ps(B + k * ldb), c);
  }
  _mm256_storeu_ps(C, c);
}

void scalar(long k0, long k1, const float* a, long acs, const float* B, long ldb, float* c) {
  float acc = *c;
  for (long k = k0; k < k1; ++k) {
    acc = std::fma(a[k * acs], B[k * ldb], acc);
  }
  *c = acc;
}
} // namespace

bool gemm_tile_avx2(long m, long n, long K, MatView A, const float* B, long ldb, float* C,
                    long ldc) {
  // k blocks outermost: C carries the running value between blocks, so the chain is unchanged.
  for (long k0 = 0; k0 < K; k0 += k_kc) {
    const long k1 = k0 + k_kc < K ? k0 + k_kc : K;
    long j = 0;
    for (; j + k_nr <= n; j += k_nr) {
      long i = 0;
      for (; i + k_mr <= m; i += k_mr) {
        block_4x16(k0, k1, MatView{A.data + i * A.rs, A.rs, A.cs}, B + j, ldb, C + i * ldc + j, ldc);
      }
      for (; i < m; ++i) {
        block_1x8(k0, k1, A.data + i * A.rs, A.cs, B + j, ldb, C + i * ldc + j);
        block_1x8(k0, k1, A.data + i * A.rs, A.cs, B + j + 8, ldb, C + i * ldc + j + 8);
      }
    }
    for (; j + 8 <= n; j += 8) {
      for (long i = 0; i < m; ++i) {
        block_1x8(k0, k1, A.data + i * A.rs, A.cs, B + j, ldb, C + i * ldc + j);
      }
    }
    for (; j < n; ++j) {
      for (long i = 0; i < m; ++i) {
        scalar(k0, k1, A.data + i * A.rs, A.cs, B + j, ldb, C + i * ldc + j);
      }
    }
  }
  return true;
}

} // namespace reprun::detail
