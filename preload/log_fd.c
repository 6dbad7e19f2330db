/* The preload library's log descriptor, and the program taking its number: see log_fd.h. */
#define _GNU_SOURCE
#include "log_fd.h"
#include "log_map.h"
#include "real_fn.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  k_yield_spins = 1 << 20, /* a bound on the wait for the records in flight (seconds at most) */
  k_write_attempts = 1024,  /* a record given up after so many descriptors taken under it */
};

static const char* g_path;
static atomic_int g_fd = -1;
static atomic_int g_pid = 0;         /* the process g_fd belongs to */
/* Records between their load of g_fd and the end of their write, counted in two slots by the parity
 * of the generation they began in: a yield starts a new generation and waits for the old one's
 * slot, which no new record joins (a wait on one count could starve under many threads), twice. */
static atomic_uint g_gen = 0;
static atomic_uint g_writers[2];
static atomic_int g_reopening = 0; /* a thread is opening the log again */
static dev_t g_dev;
static ino_t g_ino;
static rlim_t g_fsize = RLIM_INFINITY; /* RLIMIT_FSIZE when the log was opened */
/* Set while this thread writes a record: it cannot wait for itself. */
static __thread int t_writing __attribute__((tls_model("initial-exec")));

typedef int (*OpenFn)(const char*, int, ...);
typedef int (*CloseFn)(int);
typedef int (*Dup2Fn)(int, int);
typedef int (*Dup3Fn)(int, int, int);
typedef int (*CloseRangeFn)(unsigned, unsigned, int);
typedef void (*ClosefromFn)(int);

/* Opens the log on a high descriptor (out of the way of programs that dup2 onto low numbers). */
static int open_log(void) {
  REAL(OpenFn, open);
  if (fn == NULL) {
    return -1;
  }
  int fd = fn(g_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  struct rlimit lim;
  if (fd >= 0 && getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur >= 64) {
    long low = (lim.rlim_cur > 1024 ? 1024 : (long)lim.rlim_cur) - 24;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, low);
    if (high >= 0) {
      close(fd);
      fd = high;
    }
  }
  return fd;
}

int log_fd_start(const char* path) {
  g_path = path;
  /* The mapped log where it can be (log_map.h): no descriptor kept, no write a record. */
  REAL(OpenFn, open);
  struct stat st;
  int fd = fn != NULL ? fn(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
  if (fd >= 0) {
    const int mapped = fstat(fd, &st) == 0 ? log_map_start(path, fd, &st) : 0;
    close(fd);
    if (mapped != 0) {
      g_dev = st.st_dev;
      g_ino = st.st_ino;
      atomic_store(&g_pid, getpid());
      return mapped > 0 ? 0 : -1;
    }
  }
  struct rlimit lim;
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0) {
    g_fsize = lim.rlim_cur;
  }
  fd = open_log();
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) {
      close(fd);
    }
    return -1;
  }
  g_dev = st.st_dev;
  g_ino = st.st_ino;
  atomic_store(&g_fd, fd);
  atomic_store(&g_pid, getpid());
  return 0;
}

int log_fd_is(const struct stat* st) { return g_path != NULL && st->st_dev == g_dev && st->st_ino == g_ino; }

/* Whether descriptor fd is open on the log. statx asks for the inode alone: fstat would also ask for
 * the times, and a file system with fine-grained timestamps on demand (Linux 6.13 on: ext4, xfs,
 * btrfs, tmpfs) then gives the next write a new mtime of its own, an inode update in its journal at
 * every record (an fstat and a write took 2.7 us a record, a statx and a write 1.6 us, on ext4).
 * fstat where statx is refused (a kernel before 4.11, a seccomp filter that does not know it). */
static int fd_is_log(int fd, uint64_t* size) {
  if (fd < 0) {
    return 0;
  }
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO | STATX_SIZE, &sx) == 0) {
    *size = sx.stx_size;
    return g_path != NULL && makedev(sx.stx_dev_major, sx.stx_dev_minor) == g_dev && (sx.stx_mask & STATX_INO) != 0 &&
           sx.stx_ino == g_ino;
  }
  if (errno == EBADF) {
    return 0;
  }
  struct stat st;
  *size = 0;
  return fstat(fd, &st) == 0 && (*size = (uint64_t)st.st_size, log_fd_is(&st));
}

/* Whether a record of len bytes fits under the file-size limit the process started with: a write
 * past RLIMIT_FSIZE raises SIGXFSZ, which kills a program that does not ignore it (bash). Past it,
 * records are dropped. */
static int fits(uint64_t size, size_t len) { return g_fsize == RLIM_INFINITY || size + len <= (uint64_t)g_fsize; }

void log_fd_forked(void) {
  atomic_store(&g_pid, getpid());
  atomic_store(&g_writers[0], 0u); /* the threads that were writing are not in this process */
  atomic_store(&g_writers[1], 0u);
  atomic_store(&g_reopening, 0);
}

int log_fd_owner(void) { return getpid() == atomic_load(&g_pid); }

int64_t log_fd_pid(void) { return atomic_load_explicit(&g_pid, memory_order_relaxed); }

void log_fd_write(const char* buf, size_t len) {
  if (log_map_active()) {
    log_map_write(buf, len);
    return;
  }
  for (int attempt = 0; attempt < k_write_attempts; ++attempt) {
    t_writing = 1;
    const unsigned slot = atomic_load(&g_gen) & 1u;
    atomic_fetch_add(&g_writers[slot], 1u);
    int fd = atomic_load(&g_fd);
    uint64_t size = 0;
    const int ok = fd_is_log(fd, &size);
    if (ok && fits(size, len)) { /* the program cannot take this number until the write is done (yield below) */
      while (write(fd, buf, len) < 0 && errno == EINTR) {
      }
    }
    atomic_fetch_sub(&g_writers[slot], 1u);
    t_writing = 0;
    if (ok) {
      return;
    }
    /* Closed, or its number taken: opened again. A vfork child (sharing its parent's memory, not its
     * descriptors) writes through a descriptor of its own and closes it. */
    if (!log_fd_owner()) {
      int fresh = open_log();
      uint64_t size = 0;
      if (fresh >= 0 && fd_is_log(fresh, &size) && fits(size, len)) {
        while (write(fresh, buf, len) < 0 && errno == EINTR) {
        }
      }
      if (fresh >= 0) {
        close(fresh);
      }
      return;
    }
    /* One thread opens it again, the others wait for it: a descriptor two threads opened, one of
     * them closing its own, could be closed after the program put a file of its own on its number.
     * Published before any write through it, so that the program's dup2 onto its number waits for
     * the write; then written as above (checked again: the number may have been taken already). */
    int expected = 0;
    if (atomic_compare_exchange_strong(&g_reopening, &expected, 1)) {
      if (atomic_load(&g_fd) == fd) {
        int fresh = open_log();
        if (fresh < 0) {
          atomic_store(&g_reopening, 0);
          return;
        }
        atomic_store(&g_fd, fresh);
      }
      atomic_store(&g_reopening, 0);
    } else {
      sched_yield();
    }
  }
}

/* The program takes descriptor number fd (closes it, or puts another file on it): when it is the
 * log's, the log gives it up, after the records being written through it are written. */
static void yield(int first, int last) {
  int fd = atomic_load(&g_fd);
  if (fd < first || fd > last || fd < 0 || !log_fd_owner() || !atomic_compare_exchange_strong(&g_fd, &fd, -1)) {
    return;
  }
  /* Two new generations, each waited out: a record begun in any earlier one (its slot is either
   * parity) has ended, and one begun since loads -1. */
  for (int flip = 0; flip < 2 && !t_writing; ++flip) {
    const unsigned slot = atomic_fetch_add(&g_gen, 1u) & 1u;
    for (int i = 0; i < k_yield_spins && atomic_load(&g_writers[slot]) != 0u; ++i) {
      sched_yield();
    }
  }
}

/* ---- The program's calls that take a descriptor's number ------------------------------------ */

EXPORT int close(int fd) {
  REAL(CloseFn, close);
  yield(fd, fd);
  return fn != NULL ? fn(fd) : (errno = ENOSYS, -1);
}

EXPORT int dup2(int oldfd, int newfd) {
  REAL(Dup2Fn, dup2);
  if (oldfd != newfd) {
    yield(newfd, newfd);
  }
  return fn != NULL ? fn(oldfd, newfd) : (errno = ENOSYS, -1);
}

EXPORT int dup3(int oldfd, int newfd, int flags) {
  REAL(Dup3Fn, dup3);
  if (oldfd != newfd) {
    yield(newfd, newfd);
  }
  return fn != NULL ? fn(oldfd, newfd, flags) : (errno = ENOSYS, -1);
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34)) /* both since 2.34 */
EXPORT int close_range(unsigned first, unsigned last, int flags) {
  REAL(CloseRangeFn, close_range);
  if ((flags & CLOSE_RANGE_CLOEXEC) == 0) { /* only marking them close-on-exec takes nothing */
    yield(first > (unsigned)__INT_MAX__ ? __INT_MAX__ : (int)first, last > (unsigned)__INT_MAX__ ? __INT_MAX__ : (int)last);
  }
  return fn != NULL ? fn(first, last, flags) : (errno = ENOSYS, -1);
}

EXPORT void closefrom(int lowfd) {
  REAL(ClosefromFn, closefrom);
  yield(lowfd < 0 ? 0 : lowfd, __INT_MAX__);
  if (fn != NULL) {
    fn(lowfd);
  }
}
#endif
