/* The preload library's records, formatted (line.h). Nothing here knows where a record goes. */
#include "line.h"

#include <string.h>

void line_init(Line* l) {
  l->p = l->buf;
  l->end = l->buf + sizeof l->buf - 3;
  l->cut = 0;
}

void put_bytes(Line* l, const char* s, size_t n) {
  if (l->cut || (size_t)(l->end - l->p) < n) {
    l->cut = 1;
    return;
  }
  memcpy(l->p, s, n);
  l->p += n;
}

/* How many decimal digits v has (1 for 0): from its bit length, then one comparison. */
static size_t decimal_digits(uint64_t v) {
  static const uint64_t pow10[20] = {1ull,
                                     10ull,
                                     100ull,
                                     1000ull,
                                     10000ull,
                                     100000ull,
                                     1000000ull,
                                     10000000ull,
                                     100000000ull,
                                     1000000000ull,
                                     10000000000ull,
                                     100000000000ull,
                                     1000000000000ull,
                                     10000000000000ull,
                                     100000000000000ull,
                                     1000000000000000ull,
                                     10000000000000000ull,
                                     100000000000000000ull,
                                     1000000000000000000ull,
                                     10000000000000000000ull};
  v |= 1;
  const unsigned t = ((unsigned)(64 - __builtin_clzll(v)) * 1233u) >> 12; /* floor(log10) or one more */
  return t + 1 - (v < pow10[t]);
}

/* v's n decimal digits (decimal_digits(v)) into out[0..n), from the last: two at a time from a table,
 * eight at a time in 32-bit arithmetic (a time in nanoseconds has 19 digits; a record holds eight
 * numbers, written straight into the record, no copy). */
static void write_decimal(char* out, size_t n, uint64_t v) {
  static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                 "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                 "8081828384858687888990919293949596979899";
  char* q = out + n;
  while (v >= 100000000u) {
    uint32_t low = (uint32_t)(v % 100000000u);
    v /= 100000000u;
    for (int i = 0; i < 4; ++i) {
      q -= 2;
      memcpy(q, pairs + 2 * (low % 100u), 2);
      low /= 100u;
    }
  }
  uint32_t w = (uint32_t)v;
  while (w >= 100u) {
    q -= 2;
    memcpy(q, pairs + 2 * (w % 100u), 2);
    w /= 100u;
  }
  if (w >= 10u) {
    memcpy(q - 2, pairs + 2 * w, 2);
  } else {
    q[-1] = (char)('0' + w);
  }
}

size_t format_u64(char* out, uint64_t v) {
  const size_t n = decimal_digits(v);
  write_decimal(out, n, v);
  return n;
}

static void put_u64(Line* l, uint64_t v) {
  const size_t n = decimal_digits(v);
  if (l->cut || (size_t)(l->end - l->p) < n) {
    l->cut = 1;
    return;
  }
  write_decimal(l->p, n, v);
  l->p += n;
}

void put_i64(Line* l, int64_t v) {
  if (v < 0) {
    put_bytes(l, "-", 1);
    put_u64(l, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(l, (uint64_t)v);
  }
}

static void put_tab(Line* l) { put_bytes(l, "\t", 1); }

/* A byte that put_escaped writes as an escape. */
static int needs_escape(unsigned char c) { return c < 0x20 || c == 0x7f || c == '\\'; }

/* Where the bytes from s[i] that need no escape end (n when none does): eight at a time, then one by
 * one from the word that holds one. A word has a byte under 0x20 when (x - 0x20..) & ~x has a high
 * bit set, and a byte equal to c when x ^ c.. has a zero byte: both exact as to whether there is one
 * (a borrow starts only at such a byte), so that no word with one is skipped. */
static size_t plain_run_end(const char* s, size_t i, size_t n) {
  const uint64_t ones = 0x0101010101010101ull;
  const uint64_t highs = 0x8080808080808080ull;
  while (n - i >= 8) {
    uint64_t x;
    memcpy(&x, s + i, sizeof x);
    const uint64_t backslash = x ^ (ones * (unsigned char)'\\');
    const uint64_t del = x ^ (ones * 0x7fu);
    const uint64_t hit = ((x - ones * 0x20u) & ~x) | ((backslash - ones) & ~backslash) | ((del - ones) & ~del);
    if ((hit & highs) != 0) {
      break;
    }
    i += 8;
  }
  while (i < n && !needs_escape((unsigned char)s[i])) {
    ++i;
  }
  return i;
}

/* An escape is never split: a byte whose escape does not fit ends the path there. The bytes between
 * escapes (all of a usual path) are copied a run at a time, as far as they fit. */
void put_escaped(Line* l, const char* s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t i = 0;
  while (i < n && !l->cut) {
    size_t run = plain_run_end(s, i, n);
    if (run > i) {
      const size_t room = (size_t)(l->end - l->p);
      if (run - i > room) {
        memcpy(l->p, s + i, room); /* as many as fit, then cut, as byte by byte */
        l->p += room;
        l->cut = 1;
        return;
      }
      memcpy(l->p, s + i, run - i);
      l->p += run - i;
      i = run;
      continue;
    }
    unsigned char c = (unsigned char)s[i++];
    char e[4] = {'\\', 0, 0, 0};
    size_t len = 2;
    if (c == '\\') {
      e[1] = '\\';
    } else if (c == '\t') {
      e[1] = 't';
    } else if (c == '\n') {
      e[1] = 'n';
    } else {
      e[1] = 'x';
      e[2] = hex[c >> 4];
      e[3] = hex[c & 15];
      len = 4;
    }
    put_bytes(l, e, len);
  }
}

void put_head(Line* l, int64_t pid, char event, const char* a_text, int64_t a, int64_t b,
              const struct stat* st, const char* where, size_t where_len) {
  put_i64(l, pid);
  put_tab(l);
  put_bytes(l, &event, 1);
  put_tab(l);
  if (a_text != NULL) {
    put_bytes(l, a_text, strlen(a_text));
  } else {
    put_i64(l, a);
  }
  put_tab(l);
  put_i64(l, b);
  put_tab(l);
  if (st != NULL) {
    put_i64(l, st->st_size);
    put_tab(l);
    put_i64(l, (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec);
    put_tab(l);
    put_u64(l, st->st_dev);
    put_bytes(l, ":", 1);
    put_u64(l, st->st_ino);
    put_bytes(l, ":", 1);
    put_i64(l, (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec);
  } else {
    put_bytes(l, "0\t0\t0:0:0", 9);
  }
  put_tab(l);
  if (where_len > 0) {
    put_escaped(l, where, where_len);
  } else {
    put_bytes(l, "-", 1);
  }
  put_tab(l);
}

size_t line_finish(Line* l) {
  if (l->cut) {
    memcpy(l->p, "\\c", 2); /* line_init kept the room */
    l->p += 2;
  }
  *l->p++ = '\n';
  return (size_t)(l->p - l->buf);
}
