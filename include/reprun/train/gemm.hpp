// The CPU backend's matrix kernel (backend.hpp states the contract): C += A * B where every
// element of C is a single chain of fused multiply-adds over k = 0..K-1 in order, starting from
// C's current value.
//
// That definition is what makes the trainer's bits independent of everything but the data:
// - threads split C into fixed tiles; no element's sum is ever split, so the thread count cannot
//   change a bit;
// - a sum over a batch split into micro-batches continues the same chain (C keeps the running
//   value), so gradient accumulation 1x128, 4x32 or 8x16 gives the same bits;
// - the AVX-512 and AVX2 kernels (vfmadd) and the portable one (std::fma) round identically.
#pragma once

#include "reprun/train/backend.hpp"

#include <functional>
#include <string>

namespace reprun {

class ThreadPool;

// C (M x N, row-major, leading dimension ldc) += A (M x K) * B (K x N, row-major, ldb).
void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc,
              ThreadPool* pool);

// C = row + A * B: each row of C starts from `row` (N floats: a bias; nullptr: +0.0) instead of C's
// own value, in the kernel's registers. The same bits as filling C with `row` (or zeros) and calling
// gemm_acc, without that pass over C.
void gemm_set(long M, long N, long K, MatView A, const float* B, long ldb, const float* row, float* C, long ldc,
              ThreadPool* pool);

// What gemm_set_then does with each tile of C once it is complete: an element-wise pass over rows
// [i0, i0 + m) and columns [j0, j0 + n) of C, on the thread that computed the tile, while the tile
// is in its cache.
using TileDone = std::function<void(long i0, long j0, long m, long n)>;

// gemm_set, each tile then handed to `done`: a pass over the product's output (an activation, its
// gradient) split as the product's tiles are, instead of a pass of its own over C. The tiles and
// the threads that take them are gemm_set's; `done` must only touch what its tile owns.
void gemm_set_then(long M, long N, long K, MatView A, const float* B, long ldb, const float* row, float* C, long ldc,
                   ThreadPool* pool, const TileDone& done);

// Which kernel runs on this CPU: "avx512", "avx2-fma" or "portable".
std::string gemm_kernel_name();
// Use at most this kernel ("avx512", "avx2-fma", "portable"; "" = the best the CPU has). Tests
// compare them; REPRUN_GEMM_KERNEL in the environment does the same for a whole run.
void gemm_force_kernel(const std::string& name);
// Throws Error (exit 2) when REPRUN_GEMM_KERNEL names no kernel set (portable, avx2, avx2-fma,
// avx512): a mistyped cap must not silently mean "no cap".
void gemm_check_kernel_env();
void gemm_force_portable(bool on); // same as gemm_force_kernel("portable") / ("")

namespace detail {
// Tile kernels (single-threaded), exposed for tests: C tile of m x n, k from 0..K-1. `init`: nullptr
// to start each element's chain from C's value, else from init[j] (the same row for every row of
// the tile; n floats).
void gemm_tile_portable(long m, long n, long K, MatView A, const float* B, long ldb, float* C,
                        long ldc, const float* init = nullptr);
void gemm_tile_avx2(long m, long n, long K, MatView A, const float* B, long ldb, float* C, long ldc,
                    const float* init = nullptr);
void gemm_tile_avx512(long m, long n, long K, MatView A, const float* B, long ldb, float* C, long ldc,
                      const float* init = nullptr);
} // namespace detail

} // namespace reprun
