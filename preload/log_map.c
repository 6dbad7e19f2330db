/* The preload library's log in its mapped form: see log_map.h. */
#define _GNU_SOURCE
#include "log_map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { k_step = 1 << 20 }; /* the file grows a MiB at a time, and starts with one after its header */

static char* g_base;             /* the mapping of the file's first g_window bytes; NULL: not mapped */
static uint64_t g_window;
static const char* g_path;
static _Atomic uint64_t g_allocated; /* bytes of the file this process knows to be allocated */

static _Atomic uint64_t* field(size_t at) { return (_Atomic uint64_t*)(void*)(g_base + at); }

/* The library's own descriptor for the file, by system call: never recorded, never a hook's. */
static int own_open(const char* path, int flags) { return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0644); }
static void own_close(int fd) { syscall(SYS_close, fd); }

/* `known` raised to at least v, in the header (for the other processes) and here. */
static void publish(uint64_t v) {
  _Atomic uint64_t* shared = field(k_map_allocated_at);
  uint64_t have = atomic_load(shared);
  while (have < v && !atomic_compare_exchange_weak(shared, &have, v)) {
  }
  have = atomic_load(&g_allocated);
  while (have < v && !atomic_compare_exchange_weak(&g_allocated, &have, v)) {
  }
}

/* Whether the file's first `need` bytes are allocated, growing it when they are not. fallocate from
 * what this process knows to be allocated: [0, known) is (each process publishes only what a
 * fallocate of its own, from a known end, or the header told it). */
static int allocated(uint64_t need) {
  uint64_t known = atomic_load(&g_allocated);
  if (need <= known) {
    return 1;
  }
  const uint64_t shared = atomic_load(field(k_map_allocated_at));
  if (shared > known) {
    publish(shared);
    known = shared;
    if (need <= known) {
      return 1;
    }
  }
  uint64_t target = (need + k_step + k_step - 1) / k_step * k_step;
  if (target > g_window) {
    target = g_window;
  }
  const int fd = own_open(g_path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  const int ok = fallocate(fd, 0, (off_t)known, (off_t)(target - known)) == 0;
  own_close(fd);
  if (ok) {
    publish(target);
  }
  return ok;
}

/* The window to map: 4 GiB of address space (nothing of it is memory until written), or a 32nd of
 * an address-space limit the process runs under (RLIMIT_AS: the mapping counts against it, and must
 * not leave the program short), between 16 MiB and 4 GiB. */
static uint64_t window_size(void) {
  uint64_t w = (uint64_t)1 << 32;
  struct rlimit lim;
  if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const uint64_t part = (uint64_t)lim.rlim_cur / 32 / k_step * k_step;
    w = part < ((uint64_t)16 << 20) ? (uint64_t)16 << 20 : part < w ? part : w;
  }
  return w;
}

int log_map_start(const char* path, int fd, const struct stat* st) {
  static const char magic[] = k_map_magic;
  const size_t magic_len = sizeof magic - 1;
  if (st->st_size > 0) { /* ours (maybe its header not yet written by the process that made it), or not */
    char head[sizeof magic - 1];
    const ssize_t n = pread(fd, head, magic_len, 0);
    if (n < 0) {
      return 0;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (head[i] != 0 && (n != (ssize_t)magic_len || memcmp(head, magic, magic_len) != 0)) {
        return 0;
      }
    }
  }
  if (!atomic_is_lock_free(&g_allocated)) { /* one counter for processes needs lock-free atomics */
    return st->st_size > 0 ? -1 : 0;
  }
  uint64_t size = (uint64_t)st->st_size;
  if (size < (uint64_t)k_map_header + k_step) {
    if (fallocate(fd, 0, 0, (off_t)k_map_header + k_step) != 0) {
      /* No fallocate on this file system (or no room): an empty log is appended to instead. */
      return size == 0 ? 0 : -1;
    }
    size = (uint64_t)k_map_header + k_step;
  }
  g_window = window_size();
  void* base = mmap(NULL, g_window, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (base == MAP_FAILED) {
    const char one = 1;
    (void)!pwrite(fd, &one, 1, k_map_unmapped_at);
    return -1;
  }
  g_base = base;
  g_path = path;
  if (memcmp(g_base, magic, magic_len) != 0) {
    memcpy(g_base, magic, magic_len);
  }
  publish(size < g_window ? size : g_window);
  return 1;
}

int log_map_active(void) { return g_base != NULL; }

void log_map_write(const char* buf, size_t len) {
  if (len == 0) {
    return;
  }
  const uint64_t at = k_map_header + atomic_fetch_add(field(k_map_reserved_at), (uint64_t)len);
  const uint64_t end = at + len;
  const int saved = errno;
  const int room = end <= g_window && allocated(end);
  errno = saved;
  if (!room) {
    atomic_fetch_add(field(k_map_lost_at), 1u);
    return;
  }
  char* dst = g_base + at;
  memcpy(dst, buf, len - 1);
  /* The newline last: a record without it (a process killed while copying) is skipped. */
  __atomic_store_n(dst + len - 1, buf[len - 1], __ATOMIC_RELEASE);
}
