// Step and eval lines; the layout is described in include/reprun/record/step_record.hpp.
#include "reprun/record/step_record.hpp"

#include "reprun/core/hash.hpp"

#include <cmath>
#include <fmt/format.h>

namespace reprun {

std::string json_number(double v) {
  if (std::isnan(v)) {
    return "\"NaN\"";
  }
  if (std::isinf(v)) {
    return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  }
  if (v == 0.0 && std::signbit(v)) {
    return "-0.0"; // "-0" would read back as the integer 0, losing the sign bit
  }
  return fmt::format("{}", v);
}

namespace {
void append_tensors(std::string& s, const std::vector<TensorSum>& tensors) {
  s += ",\"tensors\":{";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    s += fmt::format("{}\"{}\":{{\"xxh3\":\"{}\",\"norm\":{}}}", i ? "," : "", t.name, hex64(t.xxh3),
                     json_number(t.norm));
  }
  s += "}";
}

void append_trace(std::string& s, const char* key, const std::vector<TraceEntry>& v) {
  if (v.empty()) {
    return;
  }
  s += fmt::format(",\"{}\":[", key);
  for (size_t i = 0; i < v.size(); ++i) {
    s += fmt::format("{}{{\"name\":\"{}\",\"xxh3\":\"{}\"}}", i ? "," : "", v[i].name, hex64(v[i].xxh3));
  }
  s += "]";
}
} // namespace

std::string format_initial_line(const StepRecord& r) {
  std::string s = "{\"step\":0,\"epoch\":0";
  append_tensors(s, r.tensors);
  s += "}\n";
  return s;
}

std::string format_step_line(const StepRecord& r) {
  std::string s;
  s.reserve(128 + r.tensors.size() * 80 + (r.forward.size() + r.backward.size()) * 60);
  s += fmt::format("{{\"step\":{},\"epoch\":{},\"loss\":{},\"batch\":\"{}\"", r.step, r.epoch,
                   json_number(r.loss), hex64(r.batch));
  if (!r.tensors.empty()) {
    append_tensors(s, r.tensors);
  }
  append_trace(s, "forward", r.forward);
  append_trace(s, "backward", r.backward);
  s += "}\n";
  return s;
}

std::string format_eval_line(const EvalRecord& r) {
  return fmt::format("{{\"step\":{},\"val_loss\":{},\"val_accuracy\":{},\"val_samples\":{}}}\n", r.step,
                     json_number(r.val_loss), json_number(r.val_accuracy), r.val_samples);
}

std::string format_loss_line(long step, double loss) {
  return fmt::format("{{\"step\":{},\"loss\":{}}}\n", step, json_number(loss));
}

} // namespace reprun
