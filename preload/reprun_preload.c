/* libreprun_preload.so: an LD_PRELOAD library that records, for every process of a program, each
 * file it opens, each directory it lists and each program it execs, one line per event, in the log
 * named by REPRUN_FILES_LOG (an absolute path; `reprun exec` reads the log after the run, issue 36).
 * Without REPRUN_FILES_LOG it records nothing and only passes each call on.
 * It is not a sandbox and does not see everything: opens glibc makes inside itself (dlopen's and the
 * loader's, popen, system, mkstemp, tmpfile), raw system calls (syscall(SYS_openat), io_uring) and
 * statically linked programs escape it; an X record says when a child will not be recorded. It
 * never changes what the program sees: arguments, results, errno and environments pass untouched.
 * Files: this one (the session, the log, the hooks), line.c (a record's formatting), exec_target.c
 * (an exec's program: PATH search, static check, the child's environment), py_audit.c (a Python
 * process's audit hook in C: the program's line of each open), log_map.c and log_fd.c (the log),
 * cwd.c (the current directory a relative path is joined with, kept between records).
 *
 * The log, format reprun.files/3 (reprun reads /2 too, whose records lack ctime_ns; the version
 * lives here and in docs/ARCHITECTURE.md; the mapped form's header, log_map.h, names the form): one
 * record per line, nine fields split by tabs.
 *   line  := pid TAB event TAB a TAB b TAB size TAB mtime_ns TAB dev ":" ino ":" ctime_ns TAB where
 *            TAB path LF
 *   event  a                        b              what
 *   S      ppid                     0              a program image started (every process the
 *                                                  library is loaded into; a child of fork() too,
 *                                                  whose image is its parent's): /proc/self/exe
 *   O      open flags, decimal      fd or -errno   open, open64, openat(64), __open(64)_2,
 *                                                  __openat(64)_2, creat(64), fopen(64), freopen(64)
 *   D      0                        0 or -errno    opendir, fdopendir
 *   X      ok | cleared | static    0              execve, execv, execvp, execvpe, execl, execlp,
 *                                                  execle, posix_spawn, posix_spawnp (before the call)
 *   L      0                        0              readlink, readlinkat: a symbolic link the
 *                                                  program read (Python's os.path.realpath,
 *                                                  Path.resolve); where: its target as stored
 *                                                  (escaped as path is); not /proc's own links
 *   A      argument index           0              an argument of a program image that names an
 *                                                  existing file or folder (after its S; the part
 *                                                  after '=' of a "-x=VALUE" argument; never the
 *                                                  log; of the command after "-c", each word
 *                                                  that names a regular file: `sh -c 'python3
 *                                                  t.py < /data/x.csv'`), at most k_max_named_args
 *                                                  a process
 *   e.g. (tabs shown as spaces)
 *          4711 S 4700 0 1265648 1745016454000000000 65024:247101:1745016454000000000 - /usr/bin/bash
 *          4711 O 1073742401 3 0 1795648802891856258 65024:10971053:1795648802891856258 - /work/run/out.txt
 *          4711 X ok 0 118456 1663687647000000000 65024:248060:1663687647000000000 - /usr/bin/sort
 *          4712 O 524288 3 3072 1795648802891856258 65024:10971060:1795648802891856258 train.py:31 /work/data/a.npy
 * - O's flags are those the program passed (fopen: those its mode means: r 0,
 *   w O_WRONLY|O_CREAT|O_TRUNC, a O_WRONLY|O_CREAT|O_APPEND, + O_RDWR, x O_EXCL, e O_CLOEXEC), with
 *   0x40000000 added when the call created the file (O_CREAT, the file was not there just before,
 *   and the open succeeded).
 * - X: cleared: the child's environment lacks an LD_PRELOAD entry naming this library or an
 *   absolute REPRUN_FILES_LOG; static: the program (for a #! script, its interpreter) has no
 *   PT_INTERP. Either way the child writes no record. An X is an attempt: a failed exec leaves an X
 *   and no S; a program that searches PATH itself (Python's subprocess) leaves one X per candidate.
 * - size, mtime_ns (st_mtim in nanoseconds), dev:ino:ctime_ns (st_dev, st_ino and st_ctim in
 *   nanoseconds, decimal): fstat of what was opened (S: of /proc/self/exe; X: of the program; A: stat
 *   of what the argument names); 0, 0, 0:0:0 when the call failed or the file was not found. With
 *   the ctime, reprun can find a file's digests in its content cache by its state at the open,
 *   without a stat after the run.
 * - where: "-", or, on an O record of a Python process whose capture armed the audit hook in C
 *   (py_audit.c), the program's line that opened it ("file:line", the file relative to the
 *   directory the capture started in when under it) or "import" (the import system: a module's
 *   source or .pyc). Escaped as path is.
 * - path: absolute, a relative path joined with the current directory (as getcwd last said it, kept
 *   until a chdir, fchdir or chroot: cwd.h) or with dirfd's directory, symlinks and ".." left as
 *   they are; S: /proc/self/exe resolved; X: after the PATH search of
 *   execvp, execvpe, execlp and posix_spawnp (not found in PATH: the name as given). A path that
 *   does not start with '/' (or is empty) is as the program gave it: its directory was unknown.
 *   Escaped so that a record stays one line: '\' -> "\\", TAB -> "\t", LF -> "\n", other bytes
 *   below 0x20 and 0x7f -> "\xHH" (lower-case hex); bytes from 0x80 as they are (maybe not UTF-8).
 *   A path that does not fit in a record (k_line_max bytes, line.h) is cut and ends with "\c".
 * - pid: S, X and A records: getpid(); O, D and L records: the pid the process had at its start or
 *   at its last fork() (the library's, kept: no system call at each open). A child of vfork() or
 *   clone() (Python's subprocess uses vfork), which runs its parent's program in its parent's
 *   memory until it execs, writes its O, D and L records under its parent's pid (the same program,
 *   whose name they are read by), as does a child of a raw clone() or _Fork(), which runs no fork
 *   handler, until it execs; its X records under its own.
 * - A Python file object's open (py_audit.h) is written at the fstat the file object makes of it next
 *   (fstat, fstat64: hooked for this, and passed on), with that fstat's result; a waiting record is
 *   written at the thread's next hooked call or at _exit, with an fstat of the library's. Only once
 *   the process's file objects were seen to fstat through the hook (Deferred, below).
 * - Order: each process's records are in the order of its calls. A child of vfork() or clone()
 *   writes its X records under its own pid before that pid's S, which is the new program's; after an
 *   exec the same pid writes a new S.
 * - Never recorded: the library's own reads (the log, /proc/self, the programs it checks), any open
 *   of the log itself, and a call a hooked function makes into another hook.
 * Why this shape: hooks run anywhere (a DataLoader worker forked from a threaded process, a vfork
 * child sharing its parent's memory), so a record is built on the stack and copied into a place of
 * the mapped log one atomic add reserves (or written by one O_APPEND write()): no allocation, no
 * lock, no buffer shared by threads; lines never interleave; a process killed by SIGKILL leaves
 * every record up to its last call, whole (but a file object's open it had not yet fstat'ed, whose
 * file it had not read). Text, for people (`tail -c +4097` of the mapped form). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "cwd.h"
#include "exec_target.h"
#include "line.h"
#include "log_fd.h"
#include "py_audit.h"

#define EXPORT __attribute__((visibility("default")))

extern char** environ;

/* glibc's fortified entry points (declared by its headers only under _FORTIFY_SOURCE). */
int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);

enum {
  k_created = 0x40000000, /* added to an O record's flags: the call created the file */
  k_max_exec_args = 4096, /* execl's arguments copied to the stack */
  k_max_named_args = 1024, /* A records of one program image */
};

/* ---- Session: read from the environment once, in the constructor ------------------------- */

enum { k_unloaded, k_loading, k_recording, k_passive };

/* The only memory outside the stack: the log's path, then this library's path. */
static char g_buffer[2 * PATH_MAX];
static const char* g_log_path = g_buffer;
static LibraryFile g_self = {g_buffer + PATH_MAX, 0, 0};
static atomic_int g_state = k_unloaded;
/* Set while a hook of this thread records: a call the real function makes into another hook is
 * passed on unrecorded. Initial-exec TLS: no allocation on first access (the library is preloaded,
 * never dlopen'ed). */
static __thread int t_in_hook __attribute__((tls_model("initial-exec")));

/* ---- Linker: each real function, found once with dlsym(RTLD_NEXT) ---------------------------- */

enum Real {
  r_open, r_open64, r_openat, r_openat64, r_open_2, r_open64_2, r_openat_2, r_openat64_2,
  r_creat, r_creat64, r_fopen, r_fopen64, r_freopen, r_freopen64, r_opendir, r_fdopendir,
  r_execve, r_execv, r_execvp, r_execvpe, r_posix_spawn, r_posix_spawnp, r_readlink, r_readlinkat,
  r_fstat, r_fstat64, r__exit, r_count
};
static const char* const k_real_names[r_count] = {
  "open", "open64", "openat", "openat64", "__open_2", "__open64_2", "__openat_2", "__openat64_2",
  "creat", "creat64", "fopen", "fopen64", "freopen", "freopen64", "opendir", "fdopendir",
  "execve", "execv", "execvp", "execvpe", "posix_spawn", "posix_spawnp", "readlink", "readlinkat",
  "fstat", "fstat64", "_exit"};
static void* _Atomic g_real[r_count];

/* The constructor resolves them all; a hook called before it (by another library's constructor)
 * resolves its own. */
static void* real(enum Real which) {
  void* fn = atomic_load_explicit(&g_real[which], memory_order_acquire);
  if (fn == NULL) {
    fn = dlsym(RTLD_NEXT, k_real_names[which]);
    atomic_store_explicit(&g_real[which], fn, memory_order_release);
  }
  return fn;
}

typedef int (*OpenFn)(const char*, int, ...);
typedef int (*OpenatFn)(int, const char*, int, ...);
typedef int (*Open2Fn)(const char*, int);
typedef int (*Openat2Fn)(int, const char*, int);
typedef int (*CreatFn)(const char*, mode_t);
typedef FILE* (*FopenFn)(const char*, const char*);
typedef FILE* (*FreopenFn)(const char*, const char*, FILE*);
typedef DIR* (*OpendirFn)(const char*);
typedef DIR* (*FdopendirFn)(int);
typedef int (*ExecveFn)(const char*, char* const[], char* const[]);
typedef int (*ExecvFn)(const char*, char* const[]);
typedef int (*SpawnFn)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                       const posix_spawnattr_t*, char* const[], char* const[]);
typedef int (*FstatFn)(int, struct stat*);
typedef void (*ExitFn)(int);
typedef ssize_t (*ReadlinkFn)(const char*, char*, size_t);
typedef ssize_t (*ReadlinkatFn)(int, const char*, char*, size_t);

/* The library's own readlink (/proc/self/fd/N, /proc/self/exe): the real one, never recorded. */
static ssize_t own_readlink(const char* path, char* buf, size_t size) {
  ReadlinkFn fn = (ReadlinkFn)real(r_readlink);
  if (fn == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return fn(path, buf, size);
}

/* The real fstat or fstat64 (a glibc before 2.33 exports neither: the system call, whose struct
 * stat is glibc's on x86-64 and arm64). */
static int real_fstat(enum Real which, int fd, struct stat* st) {
  FstatFn fn = (FstatFn)real(which);
  return fn != NULL ? fn(fd, st) : (int)syscall(SYS_fstat, fd, st);
}

/* The library's own fstat: never taken for the program's (do_fstat below). */
static int own_fstat(int fd, struct stat* st) { return real_fstat(r_fstat, fd, st); }

/* Writes a finished line (log_fd.c: one write, never into a file of the program's). */
static void emit(Line* l) {
  size_t len = line_finish(l);
  log_fd_write(l->buf, len);
}

/* ---- Paths ---------------------------------------------------------------------------------- */

/* The directory a relative path of dirfd starts from, into dir[PATH_MAX]; 0 when unknown. */
static int base_dir(int dirfd, char* dir) {
  if (dirfd == AT_FDCWD) {
    return cwd_get(dir);
  }
  if (dirfd < 0) {
    return 0;
  }
  char link[40] = "/proc/self/fd/";
  link[14 + format_u64(link + 14, (uint64_t)dirfd)] = '\0';
  ssize_t n = own_readlink(link, dir, PATH_MAX - 1);
  if (n <= 0) {
    return 0;
  }
  dir[n] = '\0';
  return dir[0] == '/';
}

/* The path of an event: absolute paths as they are, relative ones after their directory (an
 * empty path stays empty). */
static void put_path(Line* l, int dirfd, const char* path) {
  if (path[0] != '/' && path[0] != '\0') {
    char dir[PATH_MAX];
    if (base_dir(dirfd, dir)) {
      size_t n = strlen(dir);
      put_escaped(l, dir, n);
      if (n == 0 || dir[n - 1] != '/') {
        put_bytes(l, "/", 1);
      }
    }
  }
  put_escaped(l, path, strlen(path));
}

/* The path of an event as put_path writes it, unescaped, into out (2 * PATH_MAX + 2 bytes): for an
 * open that succeeded, whose path the kernel took (shorter than PATH_MAX), whole. */
static size_t joined_path(int dirfd, const char* path, char* out) {
  size_t n = 0;
  if (path[0] != '/' && path[0] != '\0' && base_dir(dirfd, out)) {
    n = strlen(out);
    if (n == 0 || out[n - 1] != '/') {
      out[n++] = '/';
    }
  }
  size_t len = strnlen(path, PATH_MAX);
  memcpy(out + n, path, len);
  return n + len;
}

/* ---- Hooks' common steps ---------------------------------------------------------------------- */

/* glibc declares most path arguments nonnull, so the compiler would drop a NULL check of them; a
 * program may still pass NULL (and get EFAULT), so every such check goes through this. */
static inline int is_null(const void* p) {
  __asm__("" : "+r"(p));
  return p == NULL;
}

/* A Python file object's open (py_audit.h), whose O record waits for the fstat the file object makes
 * of its new descriptor next, in the same thread, before anything reads it: the record then takes
 * that fstat's result, and the open costs no fstat of the library's (a third of what recording an
 * open costs). Any other hooked call of the thread first writes a waiting record with an fstat of
 * its own, as do _exit and a fork's child handler (which drops its copy: the parent writes it).
 * Only in a process whose file objects were seen to fstat so (g_fstat_follows): one whose
 * interpreter calls a function this library does not hook writes each record at its open. */
typedef struct Deferred {
  int active;
  int fd;
  int64_t a; /* the O record's flags */
  size_t where_len;
  char where[1024];
  size_t path_len;
  char path[2 * PATH_MAX + 2]; /* unescaped, joined with its directory */
} Deferred;
static __thread Deferred t_deferred __attribute__((tls_model("initial-exec")));
/* The descriptor of this thread's last file-object open recorded at once, until its next hooked
 * call: an fstat of it then says that file objects fstat through this library's hook. */
static __thread int t_fstat_expected __attribute__((tls_model("initial-exec")));
static atomic_int g_fstat_follows;

static void write_deferred(const struct stat* st) {
  Deferred* d = &t_deferred;
  d->active = 0;
  if (st != NULL && log_fd_is(st)) {
    return;
  }
  Line l;
  line_init(&l);
  put_head(&l, log_fd_pid(), 'O', NULL, d->a, d->fd, st, d->where, d->where_len);
  put_escaped(&l, d->path, d->path_len);
  emit(&l);
}

/* A waiting record written with an fstat of the library's own (another call came first). */
static void flush_deferred(void) {
  if (t_deferred.active) {
    struct stat st;
    write_deferred(own_fstat(t_deferred.fd, &st) == 0 ? &st : NULL);
  }
}

/* Whether this call records: the session is on and this thread is not already inside a hook. */
static int hook_enter(void) {
  if (atomic_load_explicit(&g_state, memory_order_acquire) != k_recording || t_in_hook) {
    return 0;
  }
  t_in_hook = 1;
  t_fstat_expected = 0;
  flush_deferred();
  return 1;
}

static void hook_leave(void) { t_in_hook = 0; }

static void record_start(void) {
  Line l;
  line_init(&l);
  char exe[PATH_MAX];
  ssize_t n = own_readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  struct stat st;
  int have = stat("/proc/self/exe", &st) == 0;
  put_head(&l, getpid(), 'S', NULL, getppid(), 0, have ? &st : NULL, NULL, 0);
  put_escaped(&l, exe, strlen(exe));
  emit(&l);
}

/* An O or D record of a call that returned result (a descriptor, 0, or -1 with error), whose new
 * descriptor (or -1) is fd. */
static void record_open(char event, int dirfd, const char* path, int64_t a, int64_t result,
                        int error, int fd) {
  int file_object = 0;
  char where[1024];
  size_t where_len = event == 'O' ? py_audit_take(path, where, sizeof where, &file_object) : 0;
  if (file_object && fd >= 0 && result == fd && atomic_load_explicit(&g_fstat_follows, memory_order_relaxed)) {
    Deferred* d = &t_deferred; /* hook_enter wrote the last one */
    d->fd = fd;
    d->a = a;
    d->where_len = where_len;
    memcpy(d->where, where, where_len);
    d->path_len = joined_path(dirfd, path, d->path);
    d->active = 1;
    return;
  }
  struct stat st;
  int have = fd >= 0 && own_fstat(fd, &st) == 0;
  if (have && log_fd_is(&st)) {
    return;
  }
  t_fstat_expected = file_object && fd >= 0 ? fd + 1 : 0;
  Line l;
  line_init(&l);
  put_head(&l, log_fd_pid(), event, NULL, a, result < 0 ? -(int64_t)error : result, have ? &st : NULL,
           where, where_len);
  put_path(&l, dirfd, path);
  emit(&l);
}

/* One open-family call: begun before the real function runs, ended with its result. */
typedef struct OpenCall {
  int recording;
  int saved_errno;
  int created; /* k_created: O_CREAT and the file was not there before the call */
} OpenCall;

static void open_begin(OpenCall* c, int dirfd, const char* path, int flags) {
  c->saved_errno = errno;
  c->created = 0;
  c->recording = !is_null(path) && hook_enter();
  if (c->recording && (flags & O_CREAT) != 0 && faccessat(dirfd, path, F_OK, 0) != 0 &&
      errno == ENOENT) {
    c->created = k_created;
  }
  errno = c->saved_errno;
}

/* An O record's a: the flags, and k_created when the call made the file. */
static int64_t open_flags(const OpenCall* c, int flags, int opened) {
  return (int64_t)(((unsigned)flags & ~(unsigned)k_created) | (opened ? (unsigned)c->created : 0u));
}

static int open_end(OpenCall* c, int dirfd, const char* path, int flags, int fd) {
  if (!c->recording) {
    return fd;
  }
  int error = errno;
  record_open('O', dirfd, path, open_flags(c, flags, fd >= 0), fd, error, fd);
  hook_leave();
  errno = error;
  return fd;
}

static int needs_mode(int flags) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

/* The open flags an fopen mode means (what glibc passes to open). */
static int mode_flags(const char* mode) {
  int flags = 0;
  switch (mode[0]) {
  case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
  case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
  default: flags = O_RDONLY; break;
  }
  for (const char* m = mode + 1; *m != '\0' && *m != ','; ++m) {
    if (*m == '+') {
      flags = (flags & ~O_WRONLY) | O_RDWR;
    } else if (*m == 'x') {
      flags |= O_EXCL;
    } else if (*m == 'e') {
      flags |= O_CLOEXEC;
    }
  }
  return flags;
}

static FILE* fopen_common(enum Real which, const char* path, const char* mode, FILE* stream) {
  int flags = !is_null(mode) ? mode_flags(mode) : 0;
  OpenCall c;
  open_begin(&c, AT_FDCWD, !is_null(mode) ? path : NULL, flags);
  FILE* f;
  if (which == r_freopen || which == r_freopen64) {
    FreopenFn fn = (FreopenFn)real(which);
    f = fn != NULL ? fn(path, mode, stream) : (errno = ENOSYS, (FILE*)NULL);
  } else {
    FopenFn fn = (FopenFn)real(which);
    f = fn != NULL ? fn(path, mode) : (errno = ENOSYS, (FILE*)NULL);
  }
  if (c.recording) {
    int error = errno;
    int fd = f != NULL ? fileno(f) : -1;
    record_open('O', AT_FDCWD, path, open_flags(&c, flags, f != NULL), f != NULL ? fd : -1, error, fd);
    hook_leave();
    errno = error;
  }
  return f;
}

/* ---- Exec: where the child's program is and whether it will be recorded ----------------------- */

/* The X record of an exec or spawn of file (searched in PATH when search is set and file has no
 * '/') with the child's environment envp. */
static void record_exec(const char* file, int search, char* const envp[]) {
  char found[PATH_MAX];
  const char* exe = file;
  int not_found = 0; /* searched in PATH and not there: the exec will fail */
  if (search && strchr(file, '/') == NULL) {
    not_found = file[0] == '\0' || !exec_search_path(file, found);
    exe = found;
  }
  const char* reason = "ok";
  if (is_null(envp) || !exec_env_records_child(envp, &g_self)) {
    reason = "cleared";
  } else if (!not_found && exec_is_static(exe)) {
    reason = "static";
  }
  struct stat st;
  int have = !not_found && stat(exe, &st) == 0;
  Line l;
  line_init(&l);
  put_head(&l, getpid(), 'X', reason, 0, 0, have ? &st : NULL, NULL, 0);
  if (not_found) {
    put_escaped(&l, file, strlen(file)); /* the name as given */
  } else {
    put_path(&l, AT_FDCWD, exe);
  }
  emit(&l);
}

/* Records an exec before it happens. The hook is left before the real call: a vfork child's
 * successful exec never returns, and its thread-local flag is its parent's. */
static void exec_begin(const char* file, int search, char* const envp[]) {
  int saved = errno;
  if (!is_null(file) && hook_enter()) {
    record_exec(file, search, envp);
    hook_leave();
  }
  errno = saved;
}

static int call_execve(const char* path, char* const argv[], char* const envp[]) {
  ExecveFn fn = (ExecveFn)real(r_execve);
  return fn != NULL ? fn(path, argv, envp) : (errno = ENOSYS, -1);
}

static int call_execv(enum Real which, const char* path, char* const argv[]) {
  ExecvFn fn = (ExecvFn)real(which);
  return fn != NULL ? fn(path, argv) : (errno = ENOSYS, -1);
}

static int call_execvpe(const char* file, char* const argv[], char* const envp[]) {
  ExecveFn fn = (ExecveFn)real(r_execvpe);
  return fn != NULL ? fn(file, argv, envp) : (errno = ENOSYS, -1);
}

/* ---- Process start and fork ------------------------------------------------------------------- */

/* The A record of argument i naming arg, when it names an existing file or folder (only a regular
 * file when files_only); 1 when written. */
static int record_arg(int64_t pid, int i, const char* arg, int files_only) {
  struct stat st;
  const size_t n = strlen(arg);
  if (n == 0 || n >= PATH_MAX || stat(arg, &st) != 0 || log_fd_is(&st) || (files_only && !S_ISREG(st.st_mode))) {
    return 0;
  }
  Line l;
  line_init(&l);
  put_head(&l, pid, 'A', NULL, i, 0, &st, NULL, 0);
  put_path(&l, AT_FDCWD, arg);
  emit(&l);
  return 1;
}

/* A character between a command's words: blanks, the shell's operators and quotes. */
static int is_word_break(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '<' || c == '>' || c == '|' || c == '&' || c == ';' ||
         c == '(' || c == ')' || c == '`' || c == '\'' || c == '"' || c == '=' || c == ',';
}

/* The words of the command argument i (after "-c") that name a regular file: a file a shell reads
 * itself (`python3 sum.py < /data/nums.csv`), which no process's arguments name. Not a folder: `cd
 * /tmp && ...` names no data. Returns the count of records written. */
static int record_command_words(int64_t pid, int i, const char* cmd, int named) {
  char word[PATH_MAX];
  int written = 0;
  const char* p = cmd;
  while (*p != '\0' && named + written < k_max_named_args) {
    while (*p != '\0' && is_word_break(*p)) {
      ++p;
    }
    size_t n = 0;
    int fits = 1;
    for (; *p != '\0' && !is_word_break(*p); ++p) {
      if (n + 1 < sizeof word) {
        word[n++] = *p;
      } else {
        fits = 0;
      }
    }
    word[n] = '\0';
    if (n > 0 && fits) {
      written += record_arg(pid, i, word, 1);
    }
  }
  return written;
}

/* The arguments of a program image that name an existing file or folder, one A record each: a file
 * that a wrapper script hands to its child by path is named in the arguments, as one given to
 * `reprun exec` itself is. Only at an image's start (glibc hands the constructor argc and argv), not
 * in a forked child, whose arguments are its parent's. */
static void record_args(int argc, char** argv) {
  if (argv == NULL) {
    return;
  }
  const int64_t pid = getpid();
  int named = 0;
  for (int i = 1; i < argc && argv[i] != NULL && named < k_max_named_args; ++i) {
    const char* arg = argv[i];
    const char* eq = arg[0] == '-' ? strchr(arg, '=') : NULL;
    if (eq != NULL) {
      arg = eq + 1; /* --data=train.csv */
    }
    const char* prev = argv[i - 1];
    const size_t plen = i > 1 ? strlen(prev) : 0;
    if (plen >= 2 && prev[0] == '-' && prev[1] != '-' && prev[plen - 1] == 'c' && strpbrk(arg, " \t\n<>|&;") != NULL) {
      named += record_command_words(pid, i, arg, named); /* sh -c 'COMMAND', bash -lc, python3 -c 'CODE' */
    } else {
      named += record_arg(pid, i, arg, 0);
    }
  }
}

static void on_fork_child(void) {
  t_deferred.active = 0; /* the parent's open: the parent writes it */
  t_fstat_expected = 0;
  if (atomic_load(&g_state) != k_recording) {
    return;
  }
  int saved = errno;
  log_fd_forked();
  cwd_forked();
  record_start();
  errno = saved;
}

__attribute__((constructor)) static void on_load(int argc, char** argv, char** envp) {
  (void)envp;
  int expected = k_unloaded;
  if (!atomic_compare_exchange_strong(&g_state, &expected, k_loading)) {
    return;
  }
  int saved = errno;
  for (int i = 0; i < r_count; ++i) {
    real((enum Real)i);
  }
  int state = k_passive;
  const char* log = getenv("REPRUN_FILES_LOG");
  size_t len = log != NULL ? strlen(log) : 0;
  /* Only an absolute path: a relative one would name another file in each child's directory. */
  if (len > 0 && log[0] == '/' && len < PATH_MAX) {
    memcpy(g_buffer, log, len + 1);
    Dl_info info;
    struct stat st;
    if (dladdr((void*)&on_load, &info) != 0 && info.dli_fname != NULL &&
        strlen(info.dli_fname) < PATH_MAX) {
      memcpy(g_buffer + PATH_MAX, info.dli_fname, strlen(info.dli_fname) + 1);
      if (stat(g_self.path, &st) == 0) {
        g_self.dev = st.st_dev;
        g_self.ino = st.st_ino;
      }
    }
    if (log_fd_start(g_log_path) == 0) {
      pthread_atfork(NULL, NULL, on_fork_child);
      state = k_recording;
    }
  }
  atomic_store_explicit(&g_state, state, memory_order_release);
  if (state == k_recording) {
    record_start();
    record_args(argc, argv);
    py_audit_install();
  }
  errno = saved;
}

/* ---- The interposed functions: thin, each handing off to the helpers above -------------------- */

#define MODE_ARG(flags, last)                  \
  mode_t mode = 0;                             \
  if (needs_mode(flags)) {                     \
    va_list ap;                                \
    va_start(ap, last);                        \
    mode = (mode_t)va_arg(ap, int);            \
    va_end(ap);                                \
  }

static int do_open(enum Real which, const char* path, int flags, mode_t mode) {
  OpenCall c;
  open_begin(&c, AT_FDCWD, path, flags);
  OpenFn fn = (OpenFn)real(which);
  int fd = fn != NULL ? fn(path, flags, mode) : (errno = ENOSYS, -1);
  return open_end(&c, AT_FDCWD, path, flags, fd);
}

static int do_openat(enum Real which, int dirfd, const char* path, int flags, mode_t mode) {
  OpenCall c;
  open_begin(&c, dirfd, path, flags);
  OpenatFn fn = (OpenatFn)real(which);
  int fd = fn != NULL ? fn(dirfd, path, flags, mode) : (errno = ENOSYS, -1);
  return open_end(&c, dirfd, path, flags, fd);
}

static int do_open_2(enum Real which, const char* path, int flags) {
  OpenCall c;
  open_begin(&c, AT_FDCWD, path, flags);
  Open2Fn fn = (Open2Fn)real(which);
  int fd = fn != NULL ? fn(path, flags) : (errno = ENOSYS, -1);
  return open_end(&c, AT_FDCWD, path, flags, fd);
}

static int do_openat_2(enum Real which, int dirfd, const char* path, int flags) {
  OpenCall c;
  open_begin(&c, dirfd, path, flags);
  Openat2Fn fn = (Openat2Fn)real(which);
  int fd = fn != NULL ? fn(dirfd, path, flags) : (errno = ENOSYS, -1);
  return open_end(&c, dirfd, path, flags, fd);
}

static int do_creat(enum Real which, const char* path, mode_t mode) {
  int flags = O_CREAT | O_WRONLY | O_TRUNC;
  OpenCall c;
  open_begin(&c, AT_FDCWD, path, flags);
  CreatFn fn = (CreatFn)real(which);
  int fd = fn != NULL ? fn(path, mode) : (errno = ENOSYS, -1);
  return open_end(&c, AT_FDCWD, path, flags, fd);
}

EXPORT int open(const char* path, int flags, ...) {
  MODE_ARG(flags, flags);
  return do_open(r_open, path, flags, mode);
}

EXPORT int open64(const char* path, int flags, ...) {
  MODE_ARG(flags, flags);
  return do_open(r_open64, path, flags, mode);
}

EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags, flags);
  return do_openat(r_openat, dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags, flags);
  return do_openat(r_openat64, dirfd, path, flags, mode);
}

EXPORT int __open_2(const char* path, int flags) { return do_open_2(r_open_2, path, flags); }

EXPORT int __open64_2(const char* path, int flags) { return do_open_2(r_open64_2, path, flags); }

EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return do_openat_2(r_openat_2, dirfd, path, flags);
}

EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return do_openat_2(r_openat64_2, dirfd, path, flags);
}

EXPORT int creat(const char* path, mode_t mode) { return do_creat(r_creat, path, mode); }

EXPORT int creat64(const char* path, mode_t mode) { return do_creat(r_creat64, path, mode); }

EXPORT FILE* fopen(const char* path, const char* mode) {
  return fopen_common(r_fopen, path, mode, NULL);
}

EXPORT FILE* fopen64(const char* path, const char* mode) {
  return fopen_common(r_fopen64, path, mode, NULL);
}

/* freopen(NULL, mode, stream) changes a stream's mode, opening no other file: not recorded. */
EXPORT FILE* freopen(const char* path, const char* mode, FILE* stream) {
  return fopen_common(r_freopen, path, mode, stream);
}

EXPORT FILE* freopen64(const char* path, const char* mode, FILE* stream) {
  return fopen_common(r_freopen64, path, mode, stream);
}

EXPORT DIR* opendir(const char* path) {
  int saved = errno;
  int recording = !is_null(path) && hook_enter();
  errno = saved;
  OpendirFn fn = (OpendirFn)real(r_opendir);
  DIR* dir = fn != NULL ? fn(path) : (errno = ENOSYS, (DIR*)NULL);
  if (recording) {
    int error = errno;
    record_open('D', AT_FDCWD, path, 0, dir != NULL ? 0 : -1, error, dir != NULL ? dirfd(dir) : -1);
    hook_leave();
    errno = error;
  }
  return dir;
}

EXPORT DIR* fdopendir(int fd) {
  int saved = errno;
  char path[PATH_MAX];
  int recording = hook_enter();
  if (recording && !base_dir(fd, path)) {
    path[0] = '\0';
  }
  errno = saved;
  FdopendirFn fn = (FdopendirFn)real(r_fdopendir);
  DIR* dir = fn != NULL ? fn(fd) : (errno = ENOSYS, (DIR*)NULL);
  if (recording) {
    int error = errno;
    record_open('D', AT_FDCWD, path, 0, dir != NULL ? 0 : -1, error, dir != NULL ? fd : -1);
    hook_leave();
    errno = error;
  }
  return dir;
}

/* An L record: the program read the symbolic link path (of dirfd), whose target (n bytes, as
 * stored) goes in the where field. Not the kernel's own links (/proc/self/fd/3, /proc/self/exe). */
static void record_link(int dirfd, const char* path, const char* target, ssize_t n) {
  if (n <= 0 || strncmp(path, "/proc/", 6) == 0 || (n == 1 && target[0] == '-')) {
    return;
  }
  Line l;
  line_init(&l);
  put_head(&l, log_fd_pid(), 'L', NULL, 0, 0, NULL, target, (size_t)n);
  put_path(&l, dirfd, path);
  emit(&l);
}

/* After a readlink of the real function returned n: its L record, errno kept. */
static ssize_t readlink_end(int dirfd, const char* path, const char* buf, ssize_t n) {
  if (n > 0 && !is_null(path) && !is_null(buf) && hook_enter()) {
    int saved = errno;
    record_link(dirfd, path, buf, n);
    hook_leave();
    errno = saved;
  }
  return n;
}

EXPORT ssize_t readlink(const char* path, char* buf, size_t size) {
  ReadlinkFn fn = (ReadlinkFn)real(r_readlink);
  return readlink_end(AT_FDCWD, path, buf, fn != NULL ? fn(path, buf, size) : (errno = ENOSYS, -1));
}

EXPORT ssize_t readlinkat(int dirfd, const char* path, char* buf, size_t size) {
  ReadlinkatFn fn = (ReadlinkatFn)real(r_readlinkat);
  return readlink_end(dirfd, path, buf, fn != NULL ? fn(dirfd, path, buf, size) : (errno = ENOSYS, -1));
}

EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  exec_begin(path, 0, envp);
  return call_execve(path, argv, envp);
}

EXPORT int execv(const char* path, char* const argv[]) {
  exec_begin(path, 0, environ);
  return call_execv(r_execv, path, argv);
}

EXPORT int execvp(const char* file, char* const argv[]) {
  exec_begin(file, 1, environ);
  return call_execv(r_execvp, file, argv);
}

EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  exec_begin(file, 1, envp);
  return call_execvpe(file, argv, envp);
}

/* execl, execlp, execle: the arguments copied to an argv on the stack (at most k_max_exec_args;
 * more is refused with E2BIG), then the exec as execv, execvp and execve. */
static size_t count_args(const char* arg, va_list ap) {
  size_t n = 0;
  while (!is_null(arg) && n < k_max_exec_args) { /* execl's arg is declared nonnull */
    ++n;
    arg = va_arg(ap, const char*);
  }
  return is_null(arg) ? n : k_max_exec_args + 1;
}

#define EXEC_ARGV(arg)                                  \
  va_list ap;                                           \
  va_start(ap, arg);                                    \
  size_t argc = count_args(arg, ap);                    \
  va_end(ap);                                           \
  if (argc > k_max_exec_args) {                         \
    errno = E2BIG;                                      \
    return -1;                                          \
  }                                                     \
  char* argv[argc + 1];                                 \
  va_start(ap, arg);                                    \
  argv[0] = (char*)arg;                                 \
  for (size_t i = 1; i <= argc; ++i) {                  \
    argv[i] = i < argc ? va_arg(ap, char*) : NULL;      \
  }

EXPORT int execl(const char* path, const char* arg, ...) {
  EXEC_ARGV(arg);
  va_end(ap);
  exec_begin(path, 0, environ);
  return call_execv(r_execv, path, argv);
}

EXPORT int execlp(const char* file, const char* arg, ...) {
  EXEC_ARGV(arg);
  va_end(ap);
  exec_begin(file, 1, environ);
  return call_execv(r_execvp, file, argv);
}

EXPORT int execle(const char* path, const char* arg, ...) {
  EXEC_ARGV(arg);
  if (argc > 0) {
    (void)va_arg(ap, char*); /* the NULL that ends the arguments */
  }
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  exec_begin(path, 0, envp);
  return call_execve(path, argv, envp);
}

static int do_spawn(enum Real which, pid_t* pid, const char* path,
                    const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
                    char* const argv[], char* const envp[]) {
  exec_begin(path, which == r_posix_spawnp, envp);
  SpawnFn fn = (SpawnFn)real(which);
  return fn != NULL ? fn(pid, path, actions, attr, argv, envp) : ENOSYS;
}

EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                       const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  return do_spawn(r_posix_spawn, pid, path, actions, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                        const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  return do_spawn(r_posix_spawnp, pid, file, actions, attr, argv, envp);
}

/* fstat: the program's call passed on; when it is of the descriptor a file object's open waits with
 * (Deferred above), that open's record is written with its result. */
static int do_fstat(enum Real which, int fd, struct stat* st) {
  int r = real_fstat(which, fd, st);
  if ((t_deferred.active || t_fstat_expected != 0) && !t_in_hook &&
      atomic_load_explicit(&g_state, memory_order_acquire) == k_recording) {
    int saved = errno;
    t_in_hook = 1;
    if (t_fstat_expected == fd + 1) {
      atomic_store_explicit(&g_fstat_follows, 1, memory_order_relaxed);
    }
    t_fstat_expected = 0;
    if (t_deferred.active && t_deferred.fd == fd) {
      write_deferred(r == 0 ? st : NULL);
    } else {
      flush_deferred();
    }
    t_in_hook = 0;
    errno = saved;
  }
  return r;
}

EXPORT int fstat(int fd, struct stat* st) { return do_fstat(r_fstat, fd, st); }

EXPORT int fstat64(int fd, struct stat64* st) { return do_fstat(r_fstat64, fd, (struct stat*)st); }

EXPORT void _exit(int status) {
  if (t_deferred.active && !t_in_hook) {
    t_in_hook = 1;
    flush_deferred();
    t_in_hook = 0; /* a vfork child's: its parent's thread-local flag */
  }
  ExitFn fn = (ExitFn)real(r__exit);
  if (fn != NULL) {
    fn(status);
  }
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
