// XXH3-64 (XXH3_64bits: seed 0, the default secret) of inputs longer than 240 bytes, cut so that
// a GPU can compute it, bit for bit the digest core/hash.hpp's xxh3_64 gives on the host. XXH3's
// long hash adds each 64-byte stripe into eight 64-bit accumulators (additions modulo 2^64, so
// associative) and scrambles them after every 1 KiB block (16 stripes): the eight lane sums of a
// block can be computed independently (block_lane), and only the scramble between blocks runs in
// order, lane by lane (chain_lane); merge() combines the lanes. The CUDA backend runs this for
// trace "weights" so that a step downloads 8 bytes per tensor instead of the tensor
// (docs/determinism.md); tests/unit/test_train_xxh3_lanes.cpp holds it to xxh3_64.
// Not here: inputs of 240 bytes or less (XXH3's short paths; the backend hashes those on the host).
#pragma once

#include "reprun/train/hd.hpp"

#include <cstddef>
#include <cstdint>

namespace reprun::xxh3_lanes {

constexpr size_t k_min_len = 241;            // shorter inputs take XXH3's other paths
constexpr size_t k_stripe = 64;              // bytes a stripe
constexpr size_t k_stripes_per_block = 16;   // (secret size - stripe) / 8
constexpr size_t k_block = k_stripe * k_stripes_per_block;
constexpr size_t k_secret_size = 192;
constexpr uint64_t k_prime32_1 = 0x9E3779B1ULL, k_prime32_2 = 0x85EBCA77ULL, k_prime32_3 = 0xC2B2AE3DULL;
constexpr uint64_t k_prime64_1 = 0x9E3779B185EBCA87ULL, k_prime64_2 = 0xC2B2AE3D27D4EB4FULL,
                   k_prime64_3 = 0x165667B19E3779F9ULL, k_prime64_4 = 0x85EBCA77C2B2AE63ULL,
                   k_prime64_5 = 0x27D4EB2F165667C5ULL;

// XXH3_kSecret (xxhash.h), which a device copies into its own memory.
inline constexpr uint8_t k_secret[k_secret_size] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

// Full blocks before the last (partial) one, as XXH3_hashLong_internal_loop counts them; block
// index full_blocks(len) is the partial block.
REPRUN_HD inline size_t full_blocks(size_t len) { return (len - 1) / k_block; }
// Stripes of the partial block.
REPRUN_HD inline size_t last_stripes(size_t len) { return ((len - 1) - k_block * full_blocks(len)) / k_stripe; }

// Little-endian 64-bit reads: the secret byte by byte (its offsets are not aligned), the data as
// two 32-bit words (a tensor of floats is 4-byte aligned; byte offsets are multiples of 4).
REPRUN_HD inline uint64_t read_secret(const uint8_t* s) {
  uint64_t v = 0;
  for (int b = 7; b >= 0; --b) {
    v = (v << 8) | s[b];
  }
  return v;
}
REPRUN_HD inline uint64_t read_data(const uint32_t* words, size_t byte_off) {
  const size_t w = byte_off / 4;
  return static_cast<uint64_t>(words[w]) | (static_cast<uint64_t>(words[w + 1]) << 32);
}

// What one stripe at byte_off adds to accumulator lane j (XXH3_accumulate_512: lane j^1's input
// word, and the 32x32 product of lane j's word xor the secret at `secret`).
REPRUN_HD inline uint64_t stripe_lane(const uint32_t* words, size_t byte_off, int j, const uint8_t* secret) {
  const uint64_t swapped = read_data(words, byte_off + 8 * static_cast<size_t>(j ^ 1));
  const uint64_t key = read_data(words, byte_off + 8 * static_cast<size_t>(j)) ^ read_secret(secret + 8 * j);
  return swapped + (key & 0xFFFFFFFFULL) * (key >> 32);
}

// Lane j's sum over the stripes of block n (n <= full_blocks(len)), modulo 2^64.
REPRUN_HD inline uint64_t block_lane(const uint32_t* words, size_t len, size_t n, int j, const uint8_t* secret) {
  const size_t stripes = n < full_blocks(len) ? k_stripes_per_block : last_stripes(len);
  uint64_t s = 0;
  for (size_t k = 0; k < stripes; ++k) {
    s += stripe_lane(words, n * k_block + k * k_stripe, j, secret + 8 * k);
  }
  return s;
}

// Accumulator lane j at the end of the long loop, from the block lane sums (lanes[n * 8 + j] for
// n = 0..full_blocks(len)): the initial value, each full block added then scrambled, the partial
// block added, then the last stripe (at len - 64, with the secret at 192 - 64 - 7).
REPRUN_HD inline uint64_t chain_lane(const uint64_t* lanes, const uint32_t* words, size_t len, int j,
                                     const uint8_t* secret) {
  const uint64_t init[8] = {k_prime32_3, k_prime64_1, k_prime64_2, k_prime64_3,
                            k_prime64_4, k_prime32_2, k_prime64_5, k_prime32_1};
  uint64_t acc = init[j];
  const uint64_t key = read_secret(secret + k_secret_size - k_stripe + 8 * j);
  const size_t nb = full_blocks(len);
  for (size_t n = 0; n < nb; ++n) {
    acc += lanes[n * 8 + static_cast<size_t>(j)];
    acc ^= acc >> 47;
    acc ^= key;
    acc *= k_prime32_1;
  }
  acc += lanes[nb * 8 + static_cast<size_t>(j)];
  acc += stripe_lane(words, len - k_stripe, j, secret + k_secret_size - k_stripe - 7);
  return acc;
}

// The low and high halves of a 64x64-bit product, xored (XXH3_mul128_fold64).
REPRUN_HD inline uint64_t mul128_fold64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  __extension__ using u128 = unsigned __int128; // a GCC and Clang extension: -Wpedantic is told so
  const u128 p = static_cast<u128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
#endif
}

// The digest from the eight final lanes (XXH3_mergeAccs with the secret at 11, then XXH3_avalanche).
REPRUN_HD inline uint64_t merge(const uint64_t* acc, size_t len, const uint8_t* secret) {
  uint64_t r = static_cast<uint64_t>(len) * k_prime64_1;
  for (int i = 0; i < 4; ++i) {
    const uint8_t* k = secret + 11 + 16 * i;
    r += mul128_fold64(acc[2 * i] ^ read_secret(k), acc[2 * i + 1] ^ read_secret(k + 8));
  }
  r ^= r >> 37;
  r *= 0x165667919E3779F9ULL;
  r ^= r >> 32;
  return r;
}

} // namespace reprun::xxh3_lanes
