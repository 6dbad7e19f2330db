// The CPU backend's optimizer update and the weight norms' sums of squares, as loops that each
// kernel set compiles for its own vectors: backend_cpu.cpp (portable: SSE2), update_avx2.cpp
// (-mavx2) and update_avx512.cpp (-mavx512f). Each element's arithmetic is the same IEEE float
// expression whatever the vector width (the build has -ffp-contract=off and no fast-math: nothing is
// fused or reordered), and each sum of squares keeps sum_squares_8lane's eight chains, so the
// kernel set changes the speed, never a bit.
//
// Everything here has internal linkage (an anonymous namespace): a function compiled with AVX-512
// must never be the copy the linker keeps for a caller in another file, as one inline function of
// a shared header would be. backend.hpp's UpdateTask and UpdateRule are the only types it uses.
#pragma once

#include "reprun/train/backend.hpp"

#include <cmath>
#include <cstddef>

namespace reprun::detail {

// One kernel set's loops (update_kernels_avx2(), update_kernels_avx512(); the portable set is the
// CPU backend's own). Each applies its rule to the task's elements and, with `sq`, writes the sum
// of squares of the updated weights, sum_squares_8lane's eight chains, in the same pass: the update
// streams w, g and the state from memory, and the chains' float64 adds (which alone wait on the
// adder's latency) hide behind it.
struct UpdateKernels {
  void (*sgd)(const UpdateRule& u, const UpdateTask& k, double* sq);
  void (*adam)(const UpdateRule& u, const UpdateTask& k, double* sq);
};

const UpdateKernels& update_kernels_avx2();
const UpdateKernels& update_kernels_avx512();

namespace {

// Lane j of eight takes the squares of x[from + j], x[from + j + 8], ... up to `to`, in order, in
// float64 (sum_squares_8lane's chains, continued from where a previous call left them when that
// call ended on a multiple of 8).
inline void add_squares(const float* x, size_t from, size_t to, double* lane) {
  size_t i = from;
  for (; i + 8 <= to; i += 8) {
    for (size_t j = 0; j < 8; ++j) {
      const double v = static_cast<double>(x[i + j]);
      lane[j] += v * v;
    }
  }
  for (size_t j = 0; i < to; ++i, ++j) {
    lane[j] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
}

// The eight lanes added 0..7.
inline double lanes_sum(const double* lane) {
  double s = 0.0;
  for (int j = 0; j < 8; ++j) {
    s += lane[j];
  }
  return s;
}

// The task's elements through `range(from, to)` (the update's loop over [from, to), which the
// compiler vectorizes), 256 at a time; with sq, after each 256 (still in L1) the squares of the
// updated weights into eight lanes: lane j takes the weights j, j+8, ... from k.begin in order,
// sum_squares_8lane(k.w + k.begin, n)'s chains, and the lanes are added 0..7.
template <class Range> void update_task(const UpdateTask& k, double* sq, Range&& range) {
  constexpr size_t k_block = 256; // a multiple of 8: each block starts at lane 0
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t from = k.begin; from < k.end; from += k_block) {
    const size_t to = k.end - from > k_block ? from + k_block : k.end;
    range(from, to);
    if (sq != nullptr) {
      add_squares(k.w, from, to, lane);
    }
  }
  if (sq != nullptr) {
    *sq = lanes_sum(lane);
  }
}

// Each element's expression is the one the other backends compute (elementwise.hpp's sgd, adam).
void sgd_loop(const UpdateRule& u, const UpdateTask& k, double* sq) {
  float* w = k.w;
  const float* g = k.g;
  float* v = k.m;
  const float lr = u.lr, wd = u.weight_decay, mu = u.momentum;
  if (wd != 0.0f) { // branch-free loops per case, so that they vectorize
    update_task(k, sq, [=](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) {
        const float gi = g[i] + wd * w[i];
        v[i] = mu * v[i] + gi;
        w[i] = w[i] - lr * v[i];
      }
    });
  } else {
    update_task(k, sq, [=](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) {
        v[i] = mu * v[i] + g[i];
        w[i] = w[i] - lr * v[i];
      }
    });
  }
}

void adam_loop(const UpdateRule& u, const UpdateTask& k, double* sq) {
  float* w = k.w;
  const float* g = k.g;
  float* m = k.m;
  float* v = k.v;
  const float wd = u.weight_decay, b1 = u.beta1, b2 = u.beta2, eps = u.eps;
  const float bc2_sqrt = u.bias_correction2_sqrt, step_size = u.step_size;
  update_task(k, sq, [=](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      const float gi = wd != 0.0f ? g[i] + wd * w[i] : g[i];
      m[i] = b1 * m[i] + (1.0f - b1) * gi;
      v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
      const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      w[i] = w[i] - step_size * (m[i] / denom);
    }
  });
}

} // namespace

} // namespace reprun::detail
