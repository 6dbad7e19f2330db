/* The native half of reprun_capture's fingerprints: XXH3-64 of a tensor's bytes, in place.
 * Built by CMake into the package folder (libreprun_fingerprint.so) and called through ctypes
 * (reprun_xxh3_many keeping the GIL: see FixedTensors in fingerprint.py).
 * Without it the package falls back to zlib's CRC-32. Inputs past 240 bytes are hashed with AVX2
 * where the CPU has it (the build targets plain x86-64, whose SSE2 loop is 1.5x slower); XXH3 gives
 * the same value whichever loop computes it. AVX-512 is left out: on the EPYC this was measured
 * on it was faster on cached data but slower on data just out of cache, which weights after an
 * optimizer step are. */
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define REPRUN_XXH3_AVX2 1
#define XXH_DISPATCH_AVX2 1 /* xxhash.h defines its AVX2 loop, for functions marked as below */
#define XXH_TARGET_AVX2 __attribute__((__target__("avx2")))
#include <immintrin.h>
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

#ifdef REPRUN_XXH3_AVX2
XXH_NO_INLINE XXH_TARGET_AVX2 uint64_t xxh3_long_avx2(const void* data, size_t size, uint64_t seed) {
  return XXH3_hashLong_64b_withSeed_internal(data, size, seed, XXH3_accumulate_512_avx2,
                                             XXH3_scrambleAcc_avx2, XXH3_initCustomSecret_avx2);
}

static int has_avx2(void) {
  static int known = -1; /* a benign race: every thread computes the same answer */
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  return known;
}
#endif

static uint64_t xxh3(const void* data, size_t size, uint64_t seed) {
#ifdef REPRUN_XXH3_AVX2
  if (size > XXH3_MIDSIZE_MAX && has_avx2()) {
    return xxh3_long_avx2(data, size, seed);
  }
#endif
  return XXH3_64bits_withSeed(data, size, seed);
}

uint64_t reprun_xxh3(const void* data, size_t size, uint64_t seed) {
  return xxh3(data, size, seed);
}

/* out[i] = reprun_xxh3(data[i], sizes[i], seeds[i]) for i < n: the checksums of an optimizer's
 * parameters in one ctypes call (each call costs about a microsecond of argument conversion). */
void reprun_xxh3_many(size_t n, const void* const* data, const size_t* sizes, const uint64_t* seeds,
                      uint64_t* out) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = xxh3(data[i], sizes[i], seeds[i]);
  }
}
