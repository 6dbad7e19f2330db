/* The preload library's log in its mapped form (issue 36): every process maps the file it writes
 * into (MAP_SHARED), a segment of a MiB at a time, and copies each record at a place it reserves
 * with one atomic add on a counter in the file's first page, which all the processes share through
 * the page cache. A record costs a copy and no system call: no write, no check of a descriptor (none
 * is kept open, so a program that closes or takes descriptor numbers cannot meet it), no lock on the
 * file that two processes' writes would contend for (a DataLoader's workers). A process killed by
 * SIGKILL leaves what it copied in the page cache; its record in flight lacks its newline (stored
 * last), and the reader skips it. A segment is allocated by fallocate before it is mapped (the file
 * grows to hold it, never shrinks), by the first process that writes into it, through a descriptor
 * opened for it (and used only when it is the log still), then closed: a process maps only the
 * segments it wrote into. Only on ext4, xfs, tmpfs and overlayfs, where a write to an allocated
 * block does not fault (a full disk is fallocate's error, counted as records lost); and within
 * RLIMIT_FSIZE (past it fallocate raises SIGXFSZ). Elsewhere the appended form (log_fd.c). A
 * program that truncates the log while it runs gets SIGBUS: no program has a reason to.
 *
 * The file (read by record/files_log.cpp; the records' format: reprun_preload.c):
 *   bytes 0..4095    the header: k_map_magic at 0; at 64 the bytes reserved for records (uint64,
 *                    native order, atomic); at 72 the records lost (a segment that could not be
 *                    allocated or mapped, past 4 GiB, RLIMIT_FSIZE, a full disk); at 80 nonzero when
 *                    a process could not map the first segment (it recorded nothing)
 *   4096..           the records, one line each, in the order their places were reserved; a place
 *                    reserved and never filled (a process killed, a record lost) holds zero bytes up
 *                    to and with its newline's place; after the reserved bytes, zeros to the end of
 *                    the last segment
 * A log that already holds something else (an earlier library's lines) is appended to as before. */
#pragma once

#include <stddef.h>
#include <sys/stat.h>

#define k_map_magic "reprun.files/3 mapped\n"
enum {
  k_map_header = 4096,
  k_map_reserved_at = 64,
  k_map_lost_at = 72,
  k_map_unmapped_at = 80,
};

/* The log `path`, open read-write as fd (st: its fstat): 1 when this process records into its
 * mapping (the path is kept for the segments it maps later); 0 when the file is not a mapped log,
 * nor empty, or the file system is not one for it (append to it); -1 when it is one this process
 * cannot map (flagged in the file: it records nothing). */
int log_map_start(const char* path, int fd, const struct stat* st);

/* Whether this process records into the mapping. */
int log_map_active(void);

/* Copies one finished record (ending with its newline) into the log. */
void log_map_write(const char* buf, size_t len);
