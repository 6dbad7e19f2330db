/* XXH3 compiled from its header for the baseline x86-64 target (SSE2). */
#define XXH_INLINE_ALL
#include <xxhash.h>

unsigned long long reprun_xxh3_generic(const void* p, size_t n) { return XXH3_64bits(p, n); }
void reprun_xxh3_reset_generic(void* s) { XXH3_64bits_reset((XXH3_state_t*)s); }
void reprun_xxh3_update_generic(void* s, const void* p, size_t n) { XXH3_64bits_update((XXH3_state_t*)s, p, n); }
unsigned long long reprun_xxh3_digest_generic(const void* s) { return XXH3_64bits_digest((const XXH3_state_t*)s); }
size_t reprun_xxh3_state_size(void) { return sizeof(XXH3_state_t); }
