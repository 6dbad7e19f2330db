// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11). Every random value is a pure
// function of (seed, stream, coordinates), so there is no generator state to save, share or race
// on; thread count, checkpoint and resume cannot change which number a draw gets.
#pragma once

#include <array>
#include <cstdint>

namespace reprun {

using Philox4 = std::array<uint32_t, 4>;

// One Philox4x32-10 block: counter (4 words) and key (2 words) to 4 output words.
Philox4 philox4x32_10(Philox4 ctr, std::array<uint32_t, 2> key);

// The independent streams the trainer draws from. Values are part of the run-record format: a new
// stream gets a new number, an existing one never changes.
enum class Stream : uint32_t {
  init = 1,       // weight init: (layer, tensor, element/4)
  split = 2,      // train/validation split: (sample/2)
  shuffle = 3,    // per-epoch order: (epoch, position/2)
  dropout = 4,    // (step, layer, sample-in-batch, unit/4)
  data_means = 5, // synthetic data: class centres (class, feature/4)
  data_noise = 6, // synthetic data: sample noise (sample, feature)
  data_labels = 7, // synthetic data: sample labels (sample/4)
  search = 8,      // reprun search: trial values (trial, space key, 0) and TPE candidates (trial, key, 1 + draw)
  trial_seed = 9   // reprun search: the seed of trial k (k)
};

// A draw of 4 words at coordinates (a, b, c) of `stream` under experiment seed `seed`.
inline Philox4 draw(uint64_t seed, Stream stream, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
  return philox4x32_10({a, b, c, static_cast<uint32_t>(stream)},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// Uniform float in [0, 1) from 24 random bits (exactly representable).
inline float to_unit_float(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
// Uniform double in [0, 1) from 53 random bits of two words.
inline double to_unit_double(uint32_t hi, uint32_t lo) {
  uint64_t v = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(v & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}
// Uniform integer in [0, n) from 64 random bits (multiply-shift; bias below 2^-32 for n < 2^32).
inline uint32_t to_below(uint32_t hi, uint32_t lo, uint32_t n) {
  uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
  __extension__ typedef unsigned __int128 u128;
  return static_cast<uint32_t>((static_cast<u128>(v) * n) >> 64);
}

} // namespace reprun
