/* The native half of reprun_capture's fingerprints: XXH3-64 of a tensor's bytes, in place.
 * Built by CMake into the package folder (libreprun_fingerprint.so) and called through ctypes,
 * which releases the GIL for the call. Without it the package falls back to zlib's CRC-32. */
#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t reprun_xxh3(const void* data, size_t size, uint64_t seed) {
  return XXH3_64bits_withSeed(data, size, seed);
}
