/* The preload library's current directory, kept between records: see cwd.h. */
#define _GNU_SOURCE
#include "cwd.h"

#include "log_fd.h"
#include "real_fn.h"

#include <dlfcn.h>
#include <errno.h>
#include <fts.h>
#include <ftw.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* g_state: a change count times 4, plus what g_dir holds: */
enum { k_empty = 0, k_filling = 1, k_kept = 2, k_mask = 3, k_step = 4 };
static _Atomic uint64_t g_state = k_empty;
static char g_dir[PATH_MAX];
static _Atomic size_t g_len;
/* Calls in flight that change the directory (chdir, fchdir, chroot) or may inside glibc (nftw with
 * FTW_CHDIR); and whether one that may until the process ends was made (fts without FTS_NOCHDIR).
 * Either: nothing kept. */
static atomic_int g_unseen_calls;
static atomic_int g_unseen_forever;

/* A change began: what is kept is stale, and a keeping in progress will not be stored. */
static void changed(void) {
  uint64_t s = atomic_load(&g_state);
  while (!atomic_compare_exchange_weak(&g_state, &s, (s & ~(uint64_t)k_mask) + k_step)) {
  }
}

static int keeping_allowed(void) {
  return atomic_load_explicit(&g_unseen_calls, memory_order_acquire) == 0 &&
         atomic_load_explicit(&g_unseen_forever, memory_order_acquire) == 0;
}

int cwd_get(char* dir) {
  const uint64_t s = atomic_load_explicit(&g_state, memory_order_acquire);
  if ((s & k_mask) == k_kept && keeping_allowed()) {
    const size_t len = atomic_load_explicit(&g_len, memory_order_relaxed); /* < PATH_MAX: a getcwd's */
    memcpy(dir, g_dir, len);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&g_state, memory_order_relaxed) == s) {
      dir[len] = '\0';
      return 1;
    }
  }
  if (getcwd(dir, PATH_MAX) == NULL) {
    return 0;
  }
  /* Kept when nothing changed since s was read (before the getcwd), by the log's own process. */
  uint64_t expected = s;
  if ((s & k_mask) == k_empty && keeping_allowed() && dir[0] == '/' && (int64_t)getpid() == log_fd_pid() &&
      atomic_compare_exchange_strong(&g_state, &expected, s + k_filling)) {
    const size_t len = strlen(dir);
    memcpy(g_dir, dir, len);
    atomic_store_explicit(&g_len, len, memory_order_relaxed);
    expected = s + k_filling;
    atomic_compare_exchange_strong_explicit(&g_state, &expected, s + k_kept, memory_order_release,
                                            memory_order_relaxed);
  }
  return 1;
}

void cwd_forked(void) { changed(); }

/* ---- Hooks: passed on, and what they change is asked again --------------------------------- */

typedef int (*ChdirFn)(const char*);
typedef int (*FchdirFn)(int);
typedef int (*NftwFn)(const char*, int (*)(const char*, const struct stat*, int, struct FTW*), int, int);
typedef FTS* (*FtsOpenFn)(char* const*, int, int (*)(const FTSENT**, const FTSENT**));
typedef FTS64* (*Fts64OpenFn)(char* const*, int, int (*)(const FTSENT64**, const FTSENT64**));

/* Around a call that changes the directory, or may inside glibc: nothing is kept while it runs (a
 * record made meanwhile asks getcwd), and what was kept before it is stale after it. */
static void unseen_begin(void) {
  atomic_fetch_add(&g_unseen_calls, 1);
  changed();
}

static void unseen_end(void) {
  const int saved = errno;
  changed();
  atomic_fetch_sub(&g_unseen_calls, 1);
  errno = saved;
}

/* chdir or chroot: each changes what a relative path names. */
static int change(ChdirFn fn, const char* path) {
  if (fn == NULL) {
    errno = ENOSYS;
    return -1;
  }
  unseen_begin();
  const int r = fn(path);
  unseen_end();
  return r;
}

EXPORT int chdir(const char* path) {
  REAL(ChdirFn, chdir);
  return change(fn, path);
}

EXPORT int chroot(const char* path) {
  REAL(ChdirFn, chroot);
  return change(fn, path);
}

EXPORT int fchdir(int fd) {
  REAL(FchdirFn, fchdir);
  if (fn == NULL) {
    errno = ENOSYS;
    return -1;
  }
  unseen_begin();
  const int r = fn(fd);
  unseen_end();
  return r;
}

typedef int (*WalkFn)(const char*, const struct stat*, int, struct FTW*);
typedef int (*Walk64Fn)(const char*, const struct stat64*, int, struct FTW*);
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "nftw64's callback is nftw's (64-bit glibc)");

static int walk(NftwFn fn, const char* dir, WalkFn f, int fds, int flags) {
  if (fn == NULL) {
    errno = ENOSYS;
    return -1;
  }
  if (!(flags & FTW_CHDIR)) {
    return fn(dir, f, fds, flags);
  }
  unseen_begin();
  const int r = fn(dir, f, fds, flags);
  unseen_end();
  return r;
}

EXPORT int nftw(const char* dir, WalkFn f, int fds, int flags) {
  REAL(NftwFn, nftw);
  return walk(fn, dir, f, fds, flags);
}

EXPORT int nftw64(const char* dir, Walk64Fn f, int fds, int flags) {
  REAL(NftwFn, nftw64);
  return walk(fn, dir, (WalkFn)f, fds, flags);
}

/* fts without FTS_NOCHDIR: fts_read changes the directory at will, until fts_close, in whichever
 * thread calls it: nothing is kept from then on in this process. */
static void fts_begin(int options) {
  if (!(options & FTS_NOCHDIR)) {
    atomic_store(&g_unseen_forever, 1);
    changed();
  }
}

EXPORT FTS* fts_open(char* const* paths, int options, int (*cmp)(const FTSENT**, const FTSENT**)) {
  REAL(FtsOpenFn, fts_open);
  if (fn == NULL) {
    errno = ENOSYS;
    return NULL;
  }
  fts_begin(options);
  return fn(paths, options, cmp);
}

EXPORT FTS64* fts64_open(char* const* paths, int options, int (*cmp)(const FTSENT64**, const FTSENT64**)) {
  REAL(Fts64OpenFn, fts64_open);
  if (fn == NULL) {
    errno = ENOSYS;
    return NULL;
  }
  fts_begin(options);
  return fn(paths, options, cmp);
}
