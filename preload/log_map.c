/* The preload library's log in its mapped form: see log_map.h. */
#define _GNU_SOURCE
#include "log_map.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
  k_seg_shift = 20,
  k_seg = 1 << k_seg_shift, /* a segment: allocated and mapped whole, by the process that writes into it */
  k_max_segs = 4096,        /* 4 GiB of records at most */
};

/* This process's mappings of the file's segments, each made at the first record it writes there. */
static char* _Atomic g_seg[k_max_segs];
static const char* g_path;
static dev_t g_dev;
static ino_t g_ino;

static _Atomic uint64_t* field(size_t at) { return (_Atomic uint64_t*)(void*)(atomic_load(&g_seg[0]) + at); }

/* The library's own descriptor for the file, by system call: never recorded, never a hook's. */
static int own_open(const char* path, int flags) { return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0644); }
static void own_close(int fd) { syscall(SYS_close, fd); }

/* Whether segment k may be allocated: within 4 GiB and within RLIMIT_FSIZE (beyond it fallocate
 * raises SIGXFSZ, which kills the program), read again each time (the program may lower it). */
static int segment_allowed(uint64_t k) {
  struct rlimit lim;
  return k < k_max_segs && (getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY ||
                            ((uint64_t)k + 1) << k_seg_shift <= (uint64_t)lim.rlim_cur);
}

/* Segment k of the file open read-write as fd: its blocks allocated (mode 0: the file grows to hold
 * it, never shrinks), then mapped; NULL when either fails. */
static char* map_segment(int fd, uint64_t k) {
  if (!segment_allowed(k)) {
    return NULL;
  }
  const off_t at = (off_t)(k << k_seg_shift);
  int r;
  while ((r = fallocate(fd, 0, at, k_seg)) != 0 && errno == EINTR) {
  }
  if (r != 0) {
    return NULL;
  }
  void* p = mmap(NULL, k_seg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
  return p == MAP_FAILED ? NULL : p;
}

/* This process's mapping of segment k, made now when it has none: through a descriptor of the log's
 * path, used only when it is the log still (a chroot, a mount namespace or a rename could make the
 * path name another file, which must never be grown or written). */
static char* segment(uint64_t k) {
  char* p = atomic_load_explicit(&g_seg[k], memory_order_acquire);
  if (p != NULL || !segment_allowed(k)) {
    return p;
  }
  const int fd = own_open(g_path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return NULL;
  }
  struct stat st;
  char* fresh = fstat(fd, &st) == 0 && st.st_dev == g_dev && st.st_ino == g_ino ? map_segment(fd, k) : NULL;
  own_close(fd);
  if (fresh == NULL) {
    return NULL;
  }
  char* expected = NULL;
  if (!atomic_compare_exchange_strong(&g_seg[k], &expected, fresh)) { /* another thread mapped it */
    munmap(fresh, k_seg);
    return expected;
  }
  return fresh;
}

/* File systems whose fallocated blocks a write fault never fails on (a full disk is fallocate's
 * error, not a SIGBUS): ext4, xfs, tmpfs, and overlayfs (Docker's overlay2 sits on ext4 or xfs). Not
 * btrfs (a page made dirty reserves space again), not ZFS, NFS or FUSE (no fallocate, or no shared
 * mapping): the appended form there. */
static int mappable(int fd) {
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0) {
    return 0;
  }
  switch ((unsigned long)fs.f_type) {
  case EXT4_SUPER_MAGIC:
  case XFS_SUPER_MAGIC:
  case TMPFS_MAGIC:
  case OVERLAYFS_SUPER_MAGIC: return 1;
  default: return 0;
  }
}

int log_map_start(const char* path, int fd, const struct stat* st) {
  static const char magic[] = k_map_magic;
  const size_t magic_len = sizeof magic - 1;
  /* Ours: empty, or a header of the magic's bytes, each maybe not yet copied (zero) by the process
   * that made the file. */
  if (st->st_size > 0) {
    char head[sizeof magic - 1];
    const ssize_t n = pread(fd, head, magic_len, 0);
    if (n < 0) {
      return 0;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (head[i] != 0 && head[i] != magic[i]) {
        return 0;
      }
    }
  }
  static _Atomic uint64_t probe;
  if (!mappable(fd) || !atomic_is_lock_free(&probe)) { /* one counter for processes: lock-free atomics */
    return st->st_size > 0 ? -1 : 0;
  }
  char* first = map_segment(fd, 0);
  if (first == NULL) {
    if (st->st_size == 0) {
      return 0; /* not made a mapped log: appended to instead */
    }
    const char one = 1;
    (void)!pwrite(fd, &one, 1, k_map_unmapped_at);
    return -1;
  }
  g_path = path;
  g_dev = st->st_dev;
  g_ino = st->st_ino;
  atomic_store(&g_seg[0], first);
  if (memcmp(first, magic, magic_len) != 0) {
    memcpy(first, magic, magic_len);
  }
  return 1;
}

int log_map_active(void) { return atomic_load_explicit(&g_seg[0], memory_order_relaxed) != NULL; }

void log_map_write(const char* buf, size_t len) {
  if (len == 0) {
    return;
  }
  const uint64_t at = k_map_header + atomic_fetch_add(field(k_map_reserved_at), (uint64_t)len);
  const uint64_t last = at + len - 1;
  const uint64_t k0 = at >> k_seg_shift, k1 = last >> k_seg_shift;
  const int saved = errno;
  char* s0 = segment(k0);
  char* s1 = s0 != NULL && k1 != k0 ? segment(k1) : s0;
  errno = saved;
  if (s1 == NULL) {
    atomic_fetch_add(field(k_map_lost_at), 1u);
    return;
  }
  /* A record across two segments is copied in two pieces; the newline last, whichever holds it: a
   * record without it (a process killed while copying) is skipped. */
  const size_t in_first = k1 == k0 ? len - 1 : (size_t)((k1 << k_seg_shift) - at);
  memcpy(s0 + (at & (k_seg - 1)), buf, in_first);
  memcpy(s1 + ((at + in_first) & (k_seg - 1)), buf + in_first, len - 1 - in_first);
  __atomic_store_n(s1 + (last & (k_seg - 1)), buf[len - 1], __ATOMIC_RELEASE);
}
