/* The next definition of a function this library hooks (glibc's), found with dlsym(RTLD_NEXT) at its
 * first use and kept: REAL(type, name) declares `fn`, the real `name` as `type` (NULL when no later
 * object defines it). For the hooks of log_fd.c and cwd.c; reprun_preload.c resolves its own table
 * in its constructor. */
#pragma once

#include <dlfcn.h>
#include <stdatomic.h>

static inline void* real_fn(void* _Atomic* slot, const char* name) {
  void* fn = atomic_load_explicit(slot, memory_order_acquire);
  if (fn == NULL) {
    fn = dlsym(RTLD_NEXT, name);
    atomic_store_explicit(slot, fn, memory_order_release);
  }
  return fn;
}

#define REAL(type, name)            \
  static void* _Atomic slot_##name; \
  type fn = (type)real_fn(&slot_##name, #name)
