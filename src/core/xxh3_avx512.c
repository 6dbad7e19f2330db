/* XXH3 compiled from its header for the AVX-512 (this file is compiled with -mavx512f). */
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX512
#include <xxhash.h>

unsigned long long reprun_xxh3_avx512(const void* p, size_t n) { return XXH3_64bits(p, n); }
void reprun_xxh3_reset_avx512(void* s) { XXH3_64bits_reset((XXH3_state_t*)s); }
void reprun_xxh3_update_avx512(void* s, const void* p, size_t n) { XXH3_64bits_update((XXH3_state_t*)s, p, n); }
unsigned long long reprun_xxh3_digest_avx512(const void* s) { return XXH3_64bits_digest((const XXH3_state_t*)s); }
