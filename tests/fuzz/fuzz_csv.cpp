// libFuzzer target: the CSV reader (header auto-detection, label column last).
#include "reprun/train/data.hpp"
#include "reprun/core/error.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  long label = -1;
  std::string header = "auto";
  try {
    reprun::parse_csv({{"fuzz.csv", std::string(reinterpret_cast<const char*>(data), size)}}, label, header, 0);
  } catch (const reprun::Error&) {
  }
  return 0;
}
