// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11). Every random value is a pure
// function of (seed, stream, coordinates), so there is no generator state to save, share or race
// on; thread count, checkpoint and resume cannot change which number a draw gets.
#pragma once

#include "reprun/train/hd.hpp"

#include <array>
#include <cstdint>

namespace reprun {

using Philox4 = std::array<uint32_t, 4>;

// One Philox4x32-10 block in place: counter c (4 words) to 4 output words under key (k0, k1).
// REPRUN_HD: the CPU and the CUDA kernels draw their dropout masks from this one source.
// Checked against Random123's published known-answer vectors in tests/unit/test_train_rng.cpp.
REPRUN_HD inline void philox4x32_10_words(uint32_t* c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t k_m0 = 0xD2511F53u;
  constexpr uint32_t k_m1 = 0xCD9E8D57u;
  constexpr uint32_t k_w0 = 0x9E3779B9u;
  constexpr uint32_t k_w1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += k_w0;
      k1 += k_w1;
    }
    const uint64_t p0 = static_cast<uint64_t>(k_m0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(k_m1) * c[2];
    const uint32_t c1 = c[1], c3 = c[3];
    c[0] = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    c[1] = static_cast<uint32_t>(p1);
    c[2] = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c[3] = static_cast<uint32_t>(p0);
  }
}

// One Philox4x32-10 block: counter (4 words) and key (2 words) to 4 output words.
inline Philox4 philox4x32_10(Philox4 ctr, std::array<uint32_t, 2> key) {
  philox4x32_10_words(ctr.data(), key[0], key[1]);
  return ctr;
}

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

// A draw of 4 words at coordinates (a, b, c) of `stream` under experiment seed `seed`, into out.
REPRUN_HD inline void draw_words(uint64_t seed, Stream stream, uint32_t a, uint32_t b, uint32_t c, uint32_t* out) {
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = static_cast<uint32_t>(stream);
  philox4x32_10_words(out, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// The same draw as an array.
inline Philox4 draw(uint64_t seed, Stream stream, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
  Philox4 r;
  draw_words(seed, stream, a, b, c, r.data());
  return r;
}

// Uniform float in [0, 1) from 24 random bits (exactly representable).
REPRUN_HD inline float to_unit_float(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
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
