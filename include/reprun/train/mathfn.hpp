// Own exp, log and tanh built from +, *, fused multiply-add and exact operations (ldexp, frexp,
// floor). Nothing from libm's transcendental functions reaches the weights, so a libc upgrade or
// another vendor's libm cannot change a bit. Accuracy is a few ulp, which training does not notice.
//
// Defined here, REPRUN_HD, so that the CPU backend and the CUDA kernels run this one source: the
// host compiles it with -ffp-contract=off and nvcc with -fmad=false, so the operation order written
// here is the order executed on both, on every compiler and optimisation level.
#pragma once

#include "reprun/train/hd.hpp"

#include <cstdint>

namespace reprun::mathfn {

REPRUN_HD inline double exp(double x) {
  constexpr double k_ln2_hi = 6.93147180369123816490e-01; // high bits of ln 2, exact in n*ln2_hi
  constexpr double k_ln2_lo = 1.90821492927058770002e-10;
  constexpr double k_log2e = 1.44269504088896338700e+00;
  if (hd::isnan(x)) {
    return x;
  }
  if (x > 709.782712893384) {
    return hd::infinity();
  }
  if (x < -745.1332191019412) {
    return 0.0;
  }
  // x = n ln2 + r, |r| <= ln2/2; e^r by its Taylor series to degree 13 (error < 1e-17), Horner
  // from 1/13! down to 1.
  double n = hd::floor(x * k_log2e + 0.5);
  double r = (x - n * k_ln2_hi) - n * k_ln2_lo;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // p * 2^n: exact. For n in the normal range the power of two is built from its bits (what
  // ldexp does, without the call); near the ends ldexp handles the subnormal and overflow cases.
  const int ni = static_cast<int>(n);
  if (ni > -1022 && ni < 1023) {
    return p * hd::from_bits(static_cast<uint64_t>(ni + 1023) << 52);
  }
  return hd::ldexp(p, ni);
}

REPRUN_HD inline double log(double x) {
  constexpr double k_ln2_hi = 6.93147180369123816490e-01;
  constexpr double k_ln2_lo = 1.90821492927058770002e-10;
  if (hd::isnan(x) || x < 0.0) {
    return hd::quiet_nan();
  }
  if (x == 0.0) {
    return -hd::infinity();
  }
  if (hd::isinf(x)) {
    return x;
  }
  int e = 0;
  double m = hd::frexp(x, &e); // x = m 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  // log m = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716: odd series to s^23.
  double s = (m - 1.0) / (m + 1.0);
  double s2 = s * s;
  double p = 1.0 / 23.0;
  for (int k = 21; k >= 1; k -= 2) {
    p = p * s2 + 1.0 / k;
  }
  double lm = 2.0 * s * p;
  double de = static_cast<double>(e);
  return de * k_ln2_hi + (lm + de * k_ln2_lo);
}

REPRUN_HD inline float tanh(float x) {
  if (hd::isnan(x)) {
    return x;
  }
  double a = hd::fabs(static_cast<double>(x));
  if (a > 20.0) {
    return x > 0 ? 1.0f : -1.0f;
  }
  double t;
  if (a < 0.5) {
    // Small arguments: tanh a = a - a^3/3 + 2a^5/15 - ..., via e^{2a}-1 computed from the series
    // to avoid cancellation: tanh a = (e^{2a}-1)/(e^{2a}+1).
    double y = 2.0 * a;
    double em1 = 0.0; // e^y - 1 by Taylor to degree 16 (|y| < 1)
    double term = 1.0;
    for (int k = 1; k <= 16; ++k) {
      term = term * y / k;
      em1 = em1 + term;
    }
    t = em1 / (em1 + 2.0);
  } else {
    double e = exp(-2.0 * a);
    t = (1.0 - e) / (1.0 + e);
  }
  return static_cast<float>(x < 0 ? -t : t);
}

} // namespace reprun::mathfn
