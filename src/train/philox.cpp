// Philox4x32-10, checked against Random123's published known-answer vectors in
// tests/unit/test_train_rng.cpp.
#include "reprun/train/rng.hpp"

namespace reprun {

namespace {
constexpr uint32_t k_m0 = 0xD2511F53u;
constexpr uint32_t k_m1 = 0xCD9E8D57u;
constexpr uint32_t k_w0 = 0x9E3779B9u;
constexpr uint32_t k_w1 = 0xBB67AE85u;

inline void round(Philox4& c, const std::array<uint32_t, 2>& k) {
  uint64_t p0 = static_cast<uint64_t>(k_m0) * c[0];
  uint64_t p1 = static_cast<uint64_t>(k_m1) * c[2];
  c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
       static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
}
} // namespace

Philox4 philox4x32_10(Philox4 ctr, std::array<uint32_t, 2> key) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key[0] += k_w0;
      key[1] += k_w1;
    }
    round(ctr, key);
  }
  return ctr;
}

} // namespace reprun
