#include "reprun/train/gemm.hpp"
#include "reprun/train/rng.hpp"
#include "reprun/core/threadpool.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <vector>

using namespace reprun;

namespace {
std::vector<float> random_matrix(long n, uint32_t tag) {
  std::vector<float> v(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = 2.0f * to_unit_float(draw(99, Stream::init, tag, static_cast<uint32_t>(i))[0]) - 1.0f;
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
} // namespace

TEST_CASE("gemm_acc matches a float64 reference on edge shapes") {
  for (auto [M, N, K] : {std::tuple{1L, 1L, 1L}, {5L, 17L, 3L}, {49L, 65L, 300L}, {128L, 10L, 256L}, {7L, 33L, 1L}}) {
    auto A = random_matrix(M * K, 1), B = random_matrix(K * N, 2), C = random_matrix(M * N, 3);
    auto C0 = C;
    gemm_acc(M, N, K, MatView{A.data(), K, 1}, B.data(), N, C.data(), N, nullptr);
    for (long i = 0; i < M; ++i) {
      for (long j = 0; j < N; ++j) {
        double ref = C0[static_cast<size_t>(i * N + j)];
        for (long k = 0; k < K; ++k) {
          ref += static_cast<double>(A[static_cast<size_t>(i * K + k)]) * B[static_cast<size_t>(k * N + j)];
        }
        REQUIRE(std::fabs(C[static_cast<size_t>(i * N + j)] - ref) <= 1e-5 * (1.0 + std::sqrt(static_cast<double>(K))));
      }
    }
  }
}

TEST_CASE("AVX-512, AVX2 and portable kernels give identical bits on every edge shape") {
  const std::string best = gemm_kernel_name();
  for (auto [M, N, K] : {std::tuple{53L, 77L, 301L}, {1L, 1L, 1L}, {13L, 10L, 700L}, {130L, 129L, 257L}, {4L, 33L, 5L}}) {
    auto A = random_matrix(M * K, 4), B = random_matrix(K * N, 5), C = random_matrix(M * N, 6);
    for (bool trans : {false, true}) {
      MatView a = trans ? MatView{A.data(), 1, M} : MatView{A.data(), K, 1};
      std::vector<std::vector<float>> out;
      for (const char* k : {"portable", "avx2-fma", "avx512"}) {
        gemm_force_kernel(k);
        auto c = C;
        gemm_acc(M, N, K, a, B.data(), N, c.data(), N, nullptr);
        out.push_back(c);
      }
      gemm_force_kernel(best);
      CHECK(same_bits(out[0], out[1]));
      CHECK(same_bits(out[0], out[2]));
    }
  }
}

TEST_CASE("Thread count and a split of K cannot change a bit") {
  const long M = 130, N = 260, K = 200;
  auto A = random_matrix(M * K, 7), B = random_matrix(K * N, 8);
  std::vector<float> ref(static_cast<size_t>(M * N), 0.0f);
  gemm_acc(M, N, K, MatView{A.data(), K, 1}, B.data(), N, ref.data(), N, nullptr);
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    std::vector<float> c(static_cast<size_t>(M * N), 0.0f);
    gemm_acc(M, N, K, MatView{A.data(), K, 1}, B.data(), N, c.data(), N, &pool);
    CHECK(same_bits(ref, c));
  }
  for (long split : {1L, 37L, 100L, 199L}) {
    std::vector<float> c(static_cast<size_t>(M * N), 0.0f);
    gemm_acc(M, N, split, MatView{A.data(), K, 1}, B.data(), N, c.data(), N, nullptr);
    gemm_acc(M, N, K - split, MatView{A.data() + split, K, 1}, B.data() + split * N, N, c.data(), N, nullptr);
    CHECK(same_bits(ref, c));
  }
}

TEST_CASE("gemm_set gives the bits of a fill and gemm_acc, on every kernel, edge shapes and threads") {
  const std::string best = gemm_kernel_name();
  ThreadPool pool(2);
  for (auto [M, N, K] : {std::tuple{53L, 77L, 301L}, {1L, 1L, 1L}, {13L, 10L, 700L}, {130L, 129L, 257L}, {4L, 33L, 5L},
                         {6L, 300L, 0L}}) {
    auto A = random_matrix(M * std::max(K, 1L), 7), B = random_matrix(std::max(K, 1L) * N, 8);
    auto bias = random_matrix(N, 9);
    bias[0] = -0.0f; // a row that holds a negative zero keeps it where nothing is added
    for (const char* k : {"portable", "avx2-fma", "avx512"}) {
      gemm_force_kernel(k);
      for (bool with_row : {true, false}) {
        std::vector<float> filled(static_cast<size_t>(M * N));
        for (long i = 0; i < M; ++i) {
          for (long j = 0; j < N; ++j) {
            filled[static_cast<size_t>(i * N + j)] = with_row ? bias[static_cast<size_t>(j)] : 0.0f;
          }
        }
        gemm_acc(M, N, K, MatView{A.data(), K, 1}, B.data(), N, filled.data(), N, nullptr);
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          std::vector<float> set = random_matrix(M * N, 10); // whatever C held before is not read
          gemm_set(M, N, K, MatView{A.data(), K, 1}, B.data(), N, with_row ? bias.data() : nullptr, set.data(), N, p);
          CHECK_MESSAGE(same_bits(set, filled), k << " M=" << M << " N=" << N << " K=" << K << " row=" << with_row);
        }
      }
    }
  }
  gemm_force_kernel(best);
}

TEST_CASE("gemm_set_then hands over every tile once, complete, with gemm_set's bits, on every kernel and thread count") {
  const std::string best = gemm_kernel_name();
  ThreadPool pool(2);
  // Batch-sized and tall shapes (24- and 96-row tiles), ragged columns, a single tile, K = 0.
  for (auto [M, N, K] : {std::tuple{128L, 256L, 784L}, {784L, 256L, 128L}, {53L, 300L, 17L}, {1L, 1L, 1L},
                         {6L, 130L, 0L}}) {
    auto A = random_matrix(M * std::max(K, 1L), 11), B = random_matrix(std::max(K, 1L) * N, 12);
    auto bias = random_matrix(N, 13);
    for (const char* k : {"portable", "avx2-fma", "avx512"}) {
      gemm_force_kernel(k);
      std::vector<float> ref(static_cast<size_t>(M * N));
      gemm_set(M, N, K, MatView{A.data(), K, 1}, B.data(), N, bias.data(), ref.data(), N, nullptr);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> c = random_matrix(M * N, 14);
        std::vector<float> seen(static_cast<size_t>(M * N), std::nanf(""));
        std::vector<int> times(static_cast<size_t>(M * N), 0);
        gemm_set_then(M, N, K, MatView{A.data(), K, 1}, B.data(), N, bias.data(), c.data(), N, p,
                      [&](long i0, long j0, long m, long n) {
                        // Each element of the tile is final when the tile is handed over: copied
                        // now, it must equal what gemm_set stores.
                        for (long i = i0; i < i0 + m; ++i) {
                          for (long j = j0; j < j0 + n; ++j) {
                            seen[static_cast<size_t>(i * N + j)] = c[static_cast<size_t>(i * N + j)];
                            ++times[static_cast<size_t>(i * N + j)];
                          }
                        }
                      });
        CHECK_MESSAGE(same_bits(c, ref), k << " M=" << M << " N=" << N << " K=" << K);
        CHECK_MESSAGE(same_bits(seen, ref), k << " M=" << M << " N=" << N << " K=" << K);
        CHECK(std::all_of(times.begin(), times.end(), [](int t) { return t == 1; }));
      }
    }
  }
  gemm_force_kernel(best);
}
