// AVX-512 tile kernel (this file alone is compiled with -mavx512f -mfma; called only after a
// run-time CPU check). Register block of up to 12 rows x 32 columns; each C element is one vfmadd
// chain over k in order, exactly like the AVX2 and portable kernels, so all three give the same
// bits. Column tails use masked loads and stores (the masked-off lanes are never stored).
#include "reprun/train/gemm.hpp"

#include <immintrin.h>

namespace reprun::detail {

namespace {
constexpr long k_kc = 256; // k block: the B panel (256 x 32 floats) stays in L1

// `a` is a packed panel: a[k * MR + r] = A(r, k0 + k).
// `init`: nullptr, or the row each C row's chain starts from (the first k block of gemm_set).
template <int MR, int NV>
void block(long kn, const float* a, const float* B, long ldb, float* C, long ldc, __mmask16 tail, const float* init) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? tail : static_cast<__mmask16>(0xffff);
      acc[r][v] = _mm512_maskz_loadu_ps(m, init ? init + v * 16 : C + r * ldc + v * 16);
    }
  }
  for (long k = 0; k < kn; ++k) {
    __m512 b[NV];
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? tail : static_cast<__mmask16>(0xffff);
      b[v] = _mm512_maskz_loadu_ps(m, B + k * ldb + v * 16);
    }
    for (int r = 0; r < MR; ++r) {
      const __m512 x = _mm512_set1_ps(a[k * MR + r]);
      for (int v = 0; v < NV; ++v) {
        acc[r][v] = _mm512_fmadd_ps(x, b[v], acc[r][v]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? tail : static_cast<__mmask16>(0xffff);
      _mm512_mask_storeu_ps(C + r * ldc + v * 16, m, acc[r][v]);
    }
  }
}

template <int MR>
void pack(long k0, long kn, MatView A, float* out) {
  for (long k = 0; k < kn; ++k) {
    for (int r = 0; r < MR; ++r) {
      out[k * MR + r] = A.data[r * A.rs + (k0 + k) * A.cs];
    }
  }
}

// One group of MR rows against all columns of the tile, for k in [k0, k0 + kn).
template <int MR>
void group(long n, long k0, long kn, MatView A, const float* B, long ldb, float* C, long ldc, float* panel,
           const float* init) {
  pack<MR>(k0, kn, A, panel);
  const float* b = B + k0 * ldb;
  long j = 0;
  for (; j + 32 <= n; j += 32) {
    block<MR, 2>(kn, panel, b + j, ldb, C + j, ldc, 0xffff, init ? init + j : nullptr);
  }
  for (; j < n; j += 16) {
    const long w = n - j < 16 ? n - j : 16;
    block<MR, 1>(kn, panel, b + j, ldb, C + j, ldc, static_cast<__mmask16>((1u << w) - 1), init ? init + j : nullptr);
  }
}
} // namespace

void gemm_tile_avx512(long m, long n, long K, MatView A, const float* B, long ldb, float* C, long ldc,
                      const float* init) {
  alignas(64) float panel[12 * k_kc];
  // k blocks outermost: C carries the running value between blocks, so the chain is unchanged (the
  // first block starts from `init` when given).
  for (long k0 = 0; k0 < K; k0 += k_kc) {
    const long kn = k0 + k_kc < K ? k_kc : K - k0;
    const float* start = k0 == 0 ? init : nullptr;
    long i = 0;
    for (; i + 12 <= m; i += 12) {
      group<12>(n, k0, kn, MatView{A.data + i * A.rs, A.rs, A.cs}, B, ldb, C + i * ldc, ldc, panel, start);
    }
    for (; i + 4 <= m; i += 4) {
      group<4>(n, k0, kn, MatView{A.data + i * A.rs, A.rs, A.cs}, B, ldb, C + i * ldc, ldc, panel, start);
    }
    for (; i < m; ++i) {
      group<1>(n, k0, kn, MatView{A.data + i * A.rs, A.rs, A.cs}, B, ldb, C + i * ldc, ldc, panel, start);
    }
  }
}

} // namespace reprun::detail
