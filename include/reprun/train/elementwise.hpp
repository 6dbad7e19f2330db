// The per-element arithmetic of the trainer's kernels, REPRUN_HD: the CUDA backend's kernels are
// these functions called once per element (or row, or lane); the CPU backend calls the softmax and
// dropout ones too, and the unit tests run the rest on the CPU and compare them bit for bit with
// the CPU backend's own loops (test_train_elementwise).
// Each body is the CPU backend's expression, operation for operation: float where it uses float,
// double where it uses double, fma only where it calls fma. Host code compiles with
// -ffp-contract=off and device code with -fmad=false, so nothing else is ever fused.
// Not here: who computes which element (tiles, threads, blocks) — that cannot change a bit.
#pragma once

#include "reprun/train/hd.hpp"
#include "reprun/train/mathfn.hpp"
#include "reprun/train/rng.hpp"

#include <cstdint>

namespace reprun::elem {

// One element of C += A B: c, then c = fma(A(i,k), B(k,j), c) for k = 0..K-1 in order. A(i,k) is
// a[i*rs + k*cs] (a transposed view swaps the strides), B(k,j) is b[k*ldb + j].
REPRUN_HD inline float gemm_chain(const float* a, long rs, long cs, const float* b, long ldb, long i, long j, long K,
                                  float c) {
  for (long k = 0; k < K; ++k) {
    c = hd::fma(a[i * rs + k * cs], b[k * ldb + j], c);
  }
  return c;
}

// Column o of g (m x out) added to c in row order: the bias gradient's chain.
REPRUN_HD inline float column_sum(const float* g, long m, long out, long o, float c) {
  for (long r = 0; r < m; ++r) {
    c += g[r * out + o];
  }
  return c;
}

REPRUN_HD inline float relu(float z) { return z > 0.0f ? z : 0.0f; }
REPRUN_HD inline float relu_grad(float z, float dh) { return z > 0.0f ? dh : 0.0f; }
REPRUN_HD inline float tanh_grad(float z, float dh) {
  const float t = mathfn::tanh(z);
  return dh * (1.0f - t * t);
}

// Dropout of units [u, u+4) (u a multiple of 4) of sample `row` of the step's batch in a layer of
// n units: one Philox draw at (step, layer << 24 | row, u / 4); mask 0 or keep_scale, act scaled.
// act and mask point at the row's first unit.
REPRUN_HD inline void dropout_quad(uint64_t seed, long step, long layer, uint32_t row, long u, long n, float p,
                                   float keep_scale, float* act, float* mask) {
  uint32_t rnd[4];
  draw_words(seed, Stream::dropout, static_cast<uint32_t>(step), (static_cast<uint32_t>(layer) << 24) | row,
             static_cast<uint32_t>(u / 4), rnd);
  for (long k = 0; k < 4 && u + k < n; ++k) {
    mask[u + k] = to_unit_float(rnd[k]) < p ? 0.0f : keep_scale;
    act[u + k] = act[u + k] * mask[u + k];
  }
}

// Softmax cross-entropy of one row z (C logits, label y) in float64: returns the row's loss and
// writes g (C) = (softmax - onehot(y)) * inv_batch. The exponentials are computed twice rather
// than kept (a GPU thread has no row buffer): mathfn::exp is a pure function, so the values are
// those a kept copy would hold.
REPRUN_HD inline double softmax_xent_row(const float* z, int32_t y, long C, double inv_batch, float* g) {
  float zmax = z[0];
  for (long j = 1; j < C; ++j) {
    zmax = zmax < z[j] ? z[j] : zmax; // std::max(zmax, z[j])
  }
  double sum = 0.0;
  for (long j = 0; j < C; ++j) {
    sum += mathfn::exp(static_cast<double>(z[j]) - static_cast<double>(zmax));
  }
  const double loss = mathfn::log(sum) - (static_cast<double>(z[y]) - static_cast<double>(zmax));
  for (long j = 0; j < C; ++j) {
    const double p = mathfn::exp(static_cast<double>(z[j]) - static_cast<double>(zmax)) / sum;
    g[j] = static_cast<float>((p - (j == y ? 1.0 : 0.0)) * inv_batch);
  }
  return loss;
}

// Evaluation of one row: returns its loss; *hit = 1 when the first largest logit is y's.
REPRUN_HD inline double softmax_eval_row(const float* z, int32_t y, long C, int* hit) {
  long best = 0;
  for (long j = 1; j < C; ++j) {
    if (z[j] > z[best]) {
      best = j;
    }
  }
  const float zmax = z[best];
  double sum = 0.0;
  for (long j = 0; j < C; ++j) {
    sum += mathfn::exp(static_cast<double>(z[j]) - static_cast<double>(zmax));
  }
  *hit = best == y ? 1 : 0;
  return mathfn::log(sum) - (static_cast<double>(z[y]) - static_cast<double>(zmax));
}

// SGD with momentum on element i. The CPU's two loops (with and without weight decay) are this
// expression: without decay the gradient is taken as it is (g + 0*w could turn -0 into +0).
REPRUN_HD inline void sgd(float lr, float wd, float mu, float* w, const float* g, float* v, size_t i) {
  const float gi = wd != 0.0f ? g[i] + wd * w[i] : g[i];
  v[i] = mu * v[i] + gi;
  w[i] = w[i] - lr * v[i];
}

// Adam on element i, as written in the CPU backend.
REPRUN_HD inline void adam(float wd, float b1, float b2, float eps, float bc2_sqrt, float step_size, float* w,
                           const float* g, float* m, float* v, size_t i) {
  const float gi = wd != 0.0f ? g[i] + wd * w[i] : g[i];
  m[i] = b1 * m[i] + (1.0f - b1) * gi;
  v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
  const float denom = hd::sqrt(v[i]) / bc2_sqrt + eps;
  w[i] = w[i] - step_size * (m[i] / denom);
}

// Lane j (0..7) of sum_squares_8lane over x (n): elements j, j+8, ... in index order, in float64.
REPRUN_HD inline double square_lane(const float* x, size_t n, int j) {
  double s = 0.0;
  for (size_t i = static_cast<size_t>(j); i < n; i += 8) {
    const double v = static_cast<double>(x[i]);
    s += v * v;
  }
  return s;
}

// The eight lanes added 0..7: sum_squares_8lane's result.
REPRUN_HD inline double add_lanes(const double* lane) {
  double s = 0.0;
  for (int j = 0; j < 8; ++j) {
    s += lane[j];
  }
  return s;
}

} // namespace reprun::elem
