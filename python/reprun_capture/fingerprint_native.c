/* The native half of reprun_capture's fingerprints: XXH3-64 of a tensor's bytes, in place.
 * Built by CMake into the package folder (libreprun_fingerprint.so) and called through ctypes
 * (reprun_xxh3_many keeping the GIL: see FixedTensors in fingerprint.py).
 * Without it the package falls back to zlib's CRC-32. */
#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t reprun_xxh3(const void* data, size_t size, uint64_t seed) {
  return XXH3_64bits_withSeed(data, size, seed);
}

/* out[i] = reprun_xxh3(data[i], sizes[i], seeds[i]) for i < n: the checksums of an optimizer's
 * parameters in one ctypes call (each call costs about a microsecond of argument conversion). */
void reprun_xxh3_many(size_t n, const void* const* data, const size_t* sizes, const uint64_t* seeds,
                      uint64_t* out) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = XXH3_64bits_withSeed(data[i], sizes[i], seeds[i]);
  }
}
