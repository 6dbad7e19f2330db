#include "reprun/train/mathfn.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <limits>

using namespace reprun;

namespace {
// Relative error in units of double epsilon (about one ulp).
double ulps(double a, double b) { return std::fabs(a - b) / std::fabs(b) / std::numeric_limits<double>::epsilon(); }
} // namespace

TEST_CASE("exp agrees with libm to a few ulp over its range") {
  for (double x = -700.0; x <= 700.0; x += 0.731) {
    REQUIRE(ulps(mathfn::exp(x), std::exp(x)) < 4.0);
  }
  for (double x = -1.0; x <= 1.0; x += 0.001) {
    REQUIRE(ulps(mathfn::exp(x), std::exp(x)) < 4.0);
  }
  CHECK(mathfn::exp(0.0) == 1.0);
  CHECK(mathfn::exp(800.0) == INFINITY);
  CHECK(mathfn::exp(-800.0) == 0.0);
  CHECK(std::isnan(mathfn::exp(NAN)));
}

TEST_CASE("log agrees with libm to a few ulp, and handles the edges") {
  for (double x = 1e-300; x < 1e300; x *= 1.37) {
    REQUIRE(std::fabs(mathfn::log(x) - std::log(x)) <= 4e-16 * std::max(1.0, std::fabs(std::log(x))));
  }
  for (double x = 0.5; x < 2.0; x += 0.0007) {
    REQUIRE(std::fabs(mathfn::log(x) - std::log(x)) <= 4e-16);
  }
  CHECK(mathfn::log(1.0) == 0.0);
  CHECK(mathfn::log(0.0) == -INFINITY);
  CHECK(std::isnan(mathfn::log(-1.0)));
}

TEST_CASE("tanh agrees with libm within one float ulp") {
  for (float x = -25.0f; x <= 25.0f; x += 0.0137f) {
    float ref = static_cast<float>(std::tanh(static_cast<double>(x)));
    REQUIRE(std::fabs(mathfn::tanh(x) - ref) <= std::fabs(std::nextafter(ref, 2.0f) - ref) + 1e-30f);
  }
  CHECK(mathfn::tanh(0.0f) == 0.0f);
  CHECK(mathfn::tanh(1e-20f) == 1e-20f);
}
