// libFuzzer target: the config parser. Any input must give a Config or a reprun::Error.
#include "reprun/train/config.hpp"
#include "reprun/core/error.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    reprun::parse_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json", "/nonexistent", {});
  } catch (const reprun::Error&) {
  }
  return 0;
}
