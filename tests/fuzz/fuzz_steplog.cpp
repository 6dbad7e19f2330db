// libFuzzer target: step-log lines, the quick scanners and the full parser.
#include "reprun/core/error.hpp"
#include "reprun/record/steplog.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  long lineno = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    ++lineno;
    (void)reprun::quick_step(line);
    double loss = 0;
    (void)reprun::quick_loss(line, loss);
    try {
      reprun::parse_step_line(line, "fuzz.jsonl", lineno);
    } catch (const reprun::Error&) {
    }
    if (nl == std::string_view::npos) {
      break;
    }
    pos = nl + 1;
  }
  return 0;
}
