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
// CPU backend's own).
struct UpdateKernels {
  void (*sgd)(const UpdateRule& u, const UpdateTask& k);
  void (*adam)(const UpdateRule& u, const UpdateTask& k);
  // out[t] = sum_squares_8lane(x[t], n[t]) for t < count (at most k_squares_at_once), the chains
  // of the arrays interleaved: one array's chains wait on the adder's latency, four keep it busy.
  void (*sum_squares)(const float* const* x, const size_t* n, int count, double* out);
};
inline constexpr int k_squares_at_once = 4;

const UpdateKernels& update_kernels_avx2();
const UpdateKernels& update_kernels_avx512();

namespace {

// Branch-free loops per case, so they vectorize; each is the expression the other backends compute.
void sgd_loop(const UpdateRule& u, const UpdateTask& k) {
  float* w = k.w;
  const float* g = k.g;
  float* v = k.m;
  const float lr = u.lr, wd = u.weight_decay, mu = u.momentum;
  if (wd != 0.0f) {
    for (size_t i = k.begin; i < k.end; ++i) {
      const float gi = g[i] + wd * w[i];
      v[i] = mu * v[i] + gi;
      w[i] = w[i] - lr * v[i];
    }
  } else {
    for (size_t i = k.begin; i < k.end; ++i) {
      v[i] = mu * v[i] + g[i];
      w[i] = w[i] - lr * v[i];
    }
  }
}

void adam_loop(const UpdateRule& u, const UpdateTask& k) {
  float* w = k.w;
  const float* g = k.g;
  float* m = k.m;
  float* v = k.v;
  const float wd = u.weight_decay, b1 = u.beta1, b2 = u.beta2, eps = u.eps;
  const float bc2_sqrt = u.bias_correction2_sqrt, step_size = u.step_size;
  for (size_t i = k.begin; i < k.end; ++i) {
    const float gi = wd != 0.0f ? g[i] + wd * w[i] : g[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    w[i] = w[i] - step_size * (m[i] / denom);
  }
}

// Lane j of x's chains takes the elements j, j+8, ... from `from` (a multiple of 8) to n, in order.
inline void add_squares(const float* x, size_t from, size_t n, double* lane) {
  size_t i = from;
  for (; i + 8 <= n; i += 8) {
    for (size_t j = 0; j < 8; ++j) {
      const double v = static_cast<double>(x[i + j]);
      lane[j] += v * v;
    }
  }
  for (size_t j = 0; i < n; ++i, ++j) {
    lane[j] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
}

inline double lanes_sum(const double* lane) {
  double s = 0.0;
  for (int j = 0; j < 8; ++j) {
    s += lane[j];
  }
  return s;
}

void sum_squares_loop(const float* const* x, const size_t* n, int count, double* out) {
  double lane[k_squares_at_once][8] = {};
  size_t common = 0; // the elements every array has, in whole groups of 8: done side by side
  if (count == k_squares_at_once) {
    common = n[0];
    for (int t = 1; t < count; ++t) {
      common = n[t] < common ? n[t] : common;
    }
    common -= common % 8;
    const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    for (size_t i = 0; i < common; i += 8) {
      for (size_t j = 0; j < 8; ++j) {
        const double v0 = static_cast<double>(x0[i + j]), v1 = static_cast<double>(x1[i + j]);
        const double v2 = static_cast<double>(x2[i + j]), v3 = static_cast<double>(x3[i + j]);
        lane[0][j] += v0 * v0;
        lane[1][j] += v1 * v1;
        lane[2][j] += v2 * v2;
        lane[3][j] += v3 * v3;
      }
    }
  }
  for (int t = 0; t < count; ++t) {
    add_squares(x[t], common, n[t], lane[t]);
    out[t] = lanes_sum(lane[t]);
  }
}

} // namespace

} // namespace reprun::detail
