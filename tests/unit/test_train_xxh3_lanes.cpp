// xxh3_lanes.hpp (XXH3-64 cut into block lanes and lane chains, as the CUDA backend computes it)
// against core/hash.hpp's xxh3_64 on the host: the same digest, bit for bit, at every length the
// cut treats differently (one block exactly, a block and a stripe, a partial last stripe, many
// blocks, the mnist-mlp tensors).
#include "reprun/core/hash.hpp"
#include "reprun/train/xxh3_lanes.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace reprun;

namespace {

// The digest of `len` bytes (a multiple of 4) as the device computes it: every block's lanes, then
// each lane's chain, then the merge.
uint64_t by_lanes(const uint32_t* words, size_t len) {
  namespace x = xxh3_lanes;
  const size_t nb = x::full_blocks(len);
  std::vector<uint64_t> lanes((nb + 1) * 8);
  for (size_t n = 0; n <= nb; ++n) {
    for (int j = 0; j < 8; ++j) {
      lanes[n * 8 + static_cast<size_t>(j)] = x::block_lane(words, len, n, j, x::k_secret);
    }
  }
  uint64_t acc[8];
  for (int j = 0; j < 8; ++j) {
    acc[j] = x::chain_lane(lanes.data(), words, len, j, x::k_secret);
  }
  return x::merge(acc, len, x::k_secret);
}

} // namespace

TEST_CASE("XXH3 by block lanes and lane chains equals xxh3_64 at every length that cuts differently") {
  std::vector<uint32_t> words(802816 / 4 + 64);
  uint64_t s = 0x9E3779B97F4A7C15ULL;
  for (auto& w : words) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    w = static_cast<uint32_t>(s >> 32);
  }
  std::vector<size_t> lengths = {244, 248, 252, 256, 320, 1020, 1024, 1028, 1084, 1088, 1092, 2044, 2048, 2052,
                                 4096, 16384 * 4, 1024 * 4, 65536 * 4, 256 * 256 * 4, 802816};
  for (size_t len = 244; len <= 3200; len += 4) {
    lengths.push_back(len);
  }
  for (size_t len : lengths) {
    CAPTURE(len);
    REQUIRE(by_lanes(words.data(), len) == xxh3_64(words.data(), len));
  }
}
