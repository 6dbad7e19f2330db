// ULP distances and the floating-point format of a logged value (diff.hpp): how far apart two
// losses are, counted in the format the loss was computed in. Pure functions of their arguments.
#include "reprun/audit/diff.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace reprun {

uint64_t ulp_distance(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::numeric_limits<uint64_t>::max();
  }
  auto ordered = [](double x) {
    int64_t i;
    std::memcpy(&i, &x, sizeof(i));
    // Map the sign-magnitude bit pattern onto a monotonic integer line (+0 and -0 both to 0).
    return i < 0 ? -(i & std::numeric_limits<int64_t>::max()) : i;
  };
  int64_t ia = ordered(a), ib = ordered(b);
  return ia > ib ? static_cast<uint64_t>(ia) - static_cast<uint64_t>(ib)
                 : static_cast<uint64_t>(ib) - static_cast<uint64_t>(ia);
}

FloatFormat float_format_named(const std::string& dtype) {
  std::string n = dtype.rfind("torch.", 0) == 0 ? dtype.substr(6) : dtype;
  if (n == "float32" || n == "float") {
    return FloatFormat::float32;
  }
  if (n == "float16" || n == "half") {
    return FloatFormat::float16;
  }
  return n == "bfloat16" ? FloatFormat::bfloat16 : FloatFormat::float64;
}

const char* float_format_name(FloatFormat f) {
  switch (f) {
  case FloatFormat::float32: return "float32";
  case FloatFormat::float16: return "float16";
  case FloatFormat::bfloat16: return "bfloat16";
  case FloatFormat::float64: break;
  }
  return "float64";
}

namespace {

// The position of a non-negative value on the line of format (p significand bits, smallest normal
// exponent emin): consecutive values of the format are consecutive integers. False when v is not a
// finite value of the format. frexp and ldexp are exact.
bool format_position(double v, int p, int emin, double& pos) {
  if (!std::isfinite(v)) {
    return false;
  }
  int e = 0;
  const double f = std::frexp(v, &e); // v = f * 2^e, f in [0.5, 1)
  if (v == 0 || e - 1 < emin) {
    pos = std::ldexp(v, p - 1 - emin); // subnormal spacing 2^(emin - p + 1)
    return pos == std::floor(pos);
  }
  const double m = std::ldexp(f, p); // the significand as an integer of p bits when v is of the format
  if (m != std::floor(m)) {
    return false;
  }
  pos = static_cast<double>(e - emin - 1) * std::ldexp(1.0, p - 1) + m;
  return true;
}

} // namespace

uint64_t ulp_distance(double a, double b, FloatFormat f) {
  int p = 53, emin = -1022;
  switch (f) {
  case FloatFormat::float32: p = 24, emin = -126; break;
  case FloatFormat::float16: p = 11, emin = -14; break;
  case FloatFormat::bfloat16: p = 8, emin = -126; break;
  case FloatFormat::float64: return ulp_distance(a, b);
  }
  double pa = 0, pb = 0;
  if (std::isnan(a) || std::isnan(b) || !format_position(std::fabs(a), p, emin, pa) ||
      !format_position(std::fabs(b), p, emin, pb)) {
    return ulp_distance(a, b); // not values of that format (or NaN): counted in float64
  }
  const double d = (std::signbit(a) ? -pa : pa) - (std::signbit(b) ? -pb : pb);
  return static_cast<uint64_t>(std::fabs(d));
}

FloatFormat loss_format(const nlohmann::ordered_json& ma, const nlohmann::ordered_json& mb) {
  auto of = [](const nlohmann::ordered_json& m) {
    const nlohmann::ordered_json::json_pointer p("/framework/loss_dtype");
    return m.is_object() && m.contains(p) && m.at(p).is_string() ? float_format_named(m.at(p).get<std::string>())
                                                                 : FloatFormat::float64;
  };
  const FloatFormat a = of(ma);
  return a == of(mb) ? a : FloatFormat::float64;
}

} // namespace reprun
