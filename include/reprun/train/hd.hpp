// REPRUN_HD marks arithmetic that the host compiler and nvcc's device pass both compile from this
// one source (mathfn, Philox, the per-element bodies of the backends), so a CPU run and a GPU run
// execute the very same operations. It is empty for the host compiler. The few primitives that
// are spelled differently on the device (fma, sqrt, floor, ...) are wrapped here, each exactly
// rounded on both sides; nothing here is an approximation.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__CUDACC__)
#define REPRUN_HD __host__ __device__
#else
#define REPRUN_HD
#endif

namespace reprun::hd {

// a * b + c rounded once (IEEE fusedMultiplyAdd).
REPRUN_HD inline float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Correctly rounded square root.
REPRUN_HD inline float sqrt(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

REPRUN_HD inline bool isnan(double x) {
#if defined(__CUDA_ARCH__)
  return ::isnan(x);
#else
  return std::isnan(x);
#endif
}

REPRUN_HD inline bool isinf(double x) {
#if defined(__CUDA_ARCH__)
  return ::isinf(x);
#else
  return std::isinf(x);
#endif
}

// The exact operations mathfn builds on.
REPRUN_HD inline double floor(double x) {
#if defined(__CUDA_ARCH__)
  return ::floor(x);
#else
  return std::floor(x);
#endif
}

REPRUN_HD inline double fabs(double x) {
#if defined(__CUDA_ARCH__)
  return ::fabs(x);
#else
  return std::fabs(x);
#endif
}

REPRUN_HD inline double ldexp(double x, int e) {
#if defined(__CUDA_ARCH__)
  return ::ldexp(x, e);
#else
  return std::ldexp(x, e);
#endif
}

REPRUN_HD inline double frexp(double x, int* e) {
#if defined(__CUDA_ARCH__)
  return ::frexp(x, e);
#else
  return std::frexp(x, e);
#endif
}

REPRUN_HD inline double infinity() {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(0x7ff0000000000000ll);
#else
  return std::numeric_limits<double>::infinity();
#endif
}

REPRUN_HD inline double quiet_nan() {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(0x7ff8000000000000ll); // std::numeric_limits<double>::quiet_NaN()
#else
  return std::numeric_limits<double>::quiet_NaN();
#endif
}

// The double whose bits are `bits`.
REPRUN_HD inline double from_bits(uint64_t bits) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
#endif
}

} // namespace reprun::hd
