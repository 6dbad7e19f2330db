// libFuzzer target: the IDX reader. The input is split into an image file and a label file at a
// position given by its first byte.
#include "reprun/train/data.hpp"
#include "reprun/core/error.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) {
    return 0;
  }
  std::string all(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t cut = all.empty() ? 0 : (static_cast<size_t>(data[0]) * all.size()) / 255;
  try {
    reprun::parse_idx(all.substr(0, cut), "images.idx", all.substr(cut), "labels.idx", 0);
  } catch (const reprun::Error&) {
  }
  return 0;
}
