// ulp_distance (audit/diff.hpp), by which a tolerance in ULPs compares losses: in the losses'
// own format, across zero, signs and infinities.
#include "reprun/audit/diff.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

using namespace reprun;
using ojson = nlohmann::ordered_json;

TEST_CASE("ulp_distance in a narrower format counts that format's ULPs") {
  const double one = 1.0, next32 = static_cast<double>(std::nextafter(1.0f, 2.0f));
  CHECK(ulp_distance(one, next32, FloatFormat::float32) == 1);
  CHECK(ulp_distance(one, next32) == (1ULL << 29));
  CHECK(ulp_distance(-next32, next32, FloatFormat::float32) == 2 * ulp_distance(0.0, next32, FloatFormat::float32));
  CHECK(ulp_distance(0.0, 1.0, FloatFormat::float32) == (127ULL << 23)); // 1.0f's bits: 0x3f800000
  const double sub = static_cast<double>(std::numeric_limits<float>::denorm_min());
  CHECK(ulp_distance(sub, -sub, FloatFormat::float32) == 2);
  CHECK(ulp_distance(static_cast<double>(std::numeric_limits<float>::min()), 0.0, FloatFormat::float32) == (1ULL << 23));
  CHECK(ulp_distance(2.0, 1.0, FloatFormat::float32) == (1ULL << 23));
  CHECK(ulp_distance(1.0, 1.0 + 1.0 / 1024, FloatFormat::float16) == 1);
  CHECK(ulp_distance(1.0, 1.0 + 1.0 / 128, FloatFormat::bfloat16) == 1);
  // Not a value of the format (a double the program printed): counted in float64.
  CHECK(ulp_distance(1.0, std::nextafter(1.0, 2.0), FloatFormat::float32) == 1);
  CHECK(ulp_distance(1.0, std::nan(""), FloatFormat::float32) == std::numeric_limits<uint64_t>::max());
  CHECK(float_format_named("torch.float32") == FloatFormat::float32);
  CHECK(float_format_named("float64") == FloatFormat::float64);
  const ojson f32 = {{"framework", {{"loss_dtype", "float32"}}}};
  CHECK(loss_format(f32, f32) == FloatFormat::float32);
  CHECK(loss_format(f32, ojson::object()) == FloatFormat::float64);
}

TEST_CASE("ulp_distance across zero, signs and infinities") {
  const double tiny = std::numeric_limits<double>::denorm_min();
  CHECK(ulp_distance(1.0, 1.0) == 0);
  CHECK(ulp_distance(tiny, -tiny) == 2);
  CHECK(ulp_distance(-tiny, 0.0) == 1);
  CHECK(ulp_distance(2.0, 1.0) == ulp_distance(1.0, 2.0));
  CHECK(ulp_distance(1.0, 2.0) == (1ULL << 52));
  CHECK(ulp_distance(std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity()) == 1);
  CHECK(ulp_distance(-1.0, 1.0) == 2 * ulp_distance(0.0, 1.0));
  CHECK(ulp_distance(1.0, std::nan("")) == std::numeric_limits<uint64_t>::max());
}
