/* The preload library's log in its mapped form (issue 36): every process of the program maps the
 * same file (MAP_SHARED) and copies each record into it, at a place it reserves with one atomic add
 * on a counter in the file's first page, which all the processes share. A record costs a copy and
 * no system call: no write, no check of a descriptor (none is kept open, so a program that closes
 * or takes descriptor numbers cannot meet it), no lock on the file that two processes' writes
 * would contend for (a DataLoader's workers). A process killed by SIGKILL leaves what it copied in
 * the page cache, which the file holds, and its record in flight without its newline (stored last),
 * which the reader skips. The file grows by fallocate (blocks allocated before a page is written:
 * a full disk is an error of fallocate, never a SIGBUS in the program) a MiB at a time, through a
 * descriptor opened and closed for it.
 *
 * The file (read by record/files_log.cpp; the records' format: reprun_preload.c):
 *   bytes 0..4095    the header: k_map_magic at 0; at 64 the bytes reserved for records (uint64,
 *                    native order, atomic); at 72 the records lost (the file could not grow, or a
 *                    window was full); at 80 nonzero when a process could not map the file (it
 *                    recorded nothing); at 88 the bytes allocated (a hint for the others)
 *   4096..           the records, one line each, in the order their places were reserved; a place
 *                    reserved and never filled (a process killed) holds zero bytes up to and with
 *                    its newline's; after the reserved bytes, zeros to the end of the file
 * A log that already holds something else (an earlier library's lines) is appended to as before
 * (log_fd.c). */
#pragma once

#include <stddef.h>
#include <sys/stat.h>

#define k_map_magic "reprun.files/3 mapped\n"
enum {
  k_map_header = 4096,
  k_map_reserved_at = 64,
  k_map_lost_at = 72,
  k_map_unmapped_at = 80,
  k_map_allocated_at = 88,
};

/* The log `path`, open read-write as fd (st: its fstat): 1 when this process records into its
 * mapping (the path is kept for growing it); 0 when the file is not a mapped log, nor empty (append
 * to it); -1 when it is one this process cannot map (flagged in the file: it records nothing). */
int log_map_start(const char* path, int fd, const struct stat* st);

/* Whether this process records into the mapping. */
int log_map_active(void);

/* Copies one finished record (ending with its newline) into the log. */
void log_map_write(const char* buf, size_t len);
