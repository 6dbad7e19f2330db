/* One record of the preload library's log (the format: the comment atop reprun_preload.c), built in
 * a caller's stack buffer: numbers in decimal, the path escaped so that the record stays one line,
 * and cut (marked "\c") where the buffer ends. Formatting only: no I/O, no allocation, no lock. */
#pragma once

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* The longest record: the fields, then a path of PATH_MAX bytes and room for its escapes. */
enum { k_line_max = 4096 + PATH_MAX };

typedef struct Line {
  char buf[k_line_max];
  char* p;
  char* end; /* leaves room for the cut mark and the newline */
  int cut;   /* something did not fit: nothing more is added */
} Line;

void line_init(Line* l);
void put_bytes(Line* l, const char* s, size_t n);
void put_i64(Line* l, int64_t v);
/* A path's bytes, escaped (\\ \t \n \xHH; bytes >= 0x80 as they are). */
void put_escaped(Line* l, const char* s, size_t n);
/* pid, event, a (a_text when not NULL, else the number a), b, size, mtime_ns and dev:ino:ctime_ns of
 * st (0, 0, 0:0:0 when st is NULL), then where (escaped; "-" when where_len is 0), each followed by a
 * tab: all but the path. */
void put_head(Line* l, int64_t pid, char event, const char* a_text, int64_t a, int64_t b,
              const struct stat* st, const char* where, size_t where_len);
/* Ends the record (the cut mark when it was cut, then the newline); returns its length. */
size_t line_finish(Line* l);
/* v in decimal into out (at least 20 bytes), not terminated; returns the length. */
size_t format_u64(char* out, uint64_t v);
