// libFuzzer target: the checkpoint reader, against a small model's tensor list.
#include "reprun/core/error.hpp"
#include "reprun/record/checkpoint_file.hpp"

#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<float> w(6), b(3), m(6);
  std::vector<reprun::NamedTensor> tensors = {
      {"dense_1.weight", w.data(), w.size()}, {"dense_1.bias", b.data(), b.size()}, {"dense_1.weight.momentum", m.data(), m.size()}};
  try {
    reprun::read_checkpoint_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.ckpt", "d", tensors);
  } catch (const reprun::Error&) {
  }
  return 0;
}
