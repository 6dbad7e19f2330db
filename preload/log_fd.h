/* The preload library's log: its mapped form where it can be (log_map.h: no descriptor kept), else
 * the appended form, whose descriptor is this file's (issue 36): opened once per process on a high
 * number with O_APPEND, checked to be the log before every write (a program may close it, or put a file of its
 * own on that number), and handed over when the program takes its number through libc: close, dup2,
 * dup3, close_range and closefrom wait until no record is being written through it (a thread
 * between its check and its write would otherwise write into the program's file), then let the
 * program have it; the next record opens the log again. The waiting is bounded, and skipped in a
 * thread that is itself writing a record (a signal handler that closes it). A number taken by a
 * raw system call is still caught by the check, unless another thread does it between the check and
 * the write. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Opens the log at `path` (kept: a pointer to memory that lives as long as the library) for this
 * process, mapped when it is new or mapped already, else appended to; 0, or -1 when it cannot be
 * opened or mapped (nothing is recorded then). */
int log_fd_start(const char* path);

/* Whether st is the log's (a program's open of the log is not recorded). */
int log_fd_is(const struct stat* st);

/* In a child of fork(): the log is now this process's; no record of another thread is in flight. */
void log_fd_forked(void);

/* Whether this process is the one the log descriptor belongs to (not a vfork child sharing its
 * parent's memory). */
int log_fd_owner(void);

/* The pid of the process the log was last started or forked into: this process's, no system call
 * (getpid took 0.35 us of an open's 1.7); a vfork child's parent's (it shares its memory, and no
 * fork handler runs in it), as is that of a child of a raw clone() or _Fork(). */
int64_t log_fd_pid(void);

/* Writes one finished record (a copy into the mapping, or one write, O_APPEND). */
void log_fd_write(const char* buf, size_t len);
