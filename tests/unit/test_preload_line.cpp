// The preload library's record formatting (preload/line.c): its numbers and escapes, byte for byte
// what reprun's reader of the files log expects (record/files_log.cpp).
extern "C" {
#include "preload/line.h"
}

#include <doctest/doctest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

std::string formatted(uint64_t v) {
  char out[24];
  return std::string(out, format_u64(out, v));
}

std::string line_of(int64_t v) {
  static Line l; // 8 KiB: not on the test's stack
  line_init(&l);
  put_i64(&l, v);
  return std::string(l.buf, static_cast<size_t>(l.p - l.buf));
}

} // namespace

TEST_CASE("Preload line: numbers in decimal, every digit count and its edges, as printf writes them") {
  std::vector<uint64_t> values{0, 1, 9, 10, 11, 99, 100, 101, 12345678, 99999999, 100000000, 100000001,
                               1795923949562792034ull, std::numeric_limits<uint64_t>::max(),
                               std::numeric_limits<uint64_t>::max() - 1};
  uint64_t p = 1;
  for (int k = 0; k < 20; ++k) { // 10^k - 1, 10^k and 10^k + 1: where the digit count changes
    values.push_back(p - 1);
    values.push_back(p);
    values.push_back(p + 1);
    values.push_back(p * 7 + 3);
    if (k < 19) {
      p *= 10;
    }
  }
  for (int bit = 0; bit < 64; ++bit) { // each bit length, where the count's estimate changes
    values.push_back(uint64_t{1} << bit);
    values.push_back((uint64_t{1} << bit) - 1);
  }
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 2000; ++i) { // and numbers of every size in between
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    values.push_back(x >> (i % 64));
  }
  for (uint64_t v : values) {
    char want[32];
    std::snprintf(want, sizeof want, "%" PRIu64, v);
    CHECK_MESSAGE(formatted(v) == want, v);
    if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      CHECK(line_of(static_cast<int64_t>(v)) == want);
      std::snprintf(want, sizeof want, "%" PRId64, -static_cast<int64_t>(v));
      CHECK(line_of(-static_cast<int64_t>(v)) == want);
    }
  }
  CHECK(line_of(std::numeric_limits<int64_t>::min()) == "-9223372036854775808");
}

TEST_CASE("Preload line: a number that does not fit cuts the record, never half-written") {
  static Line l;
  line_init(&l);
  l.p = l.end - 3; // room for three bytes
  put_i64(&l, 123);
  CHECK(l.cut == 0);
  CHECK(std::string(l.end - 3, 3) == "123");
  line_init(&l);
  l.p = l.end - 3;
  put_i64(&l, 1234);
  CHECK(l.cut == 1);
  CHECK(l.p == l.end - 3);
  const size_t n = line_finish(&l);
  CHECK(std::string(l.buf + n - 3, 3) == "\\c\n");
}

TEST_CASE("Preload line: a record's head and its path, escaped") {
  static Line l;
  line_init(&l);
  struct stat st {};
  st.st_size = 3072;
  st.st_mtim.tv_sec = 1795923949;
  st.st_mtim.tv_nsec = 562792034;
  st.st_dev = 2049;
  st.st_ino = 1234567;
  st.st_ctim.tv_sec = 1795923949;
  st.st_ctim.tv_nsec = 5;
  put_head(&l, 4242, 'O', nullptr, 524288, 7, &st, "train.py:12", 11);
  const char path[] = "data/a\tb\\c\nd\x01.bin";
  put_escaped(&l, path, sizeof path - 1);
  const size_t n = line_finish(&l);
  CHECK(std::string(l.buf, n) ==
        "4242\tO\t524288\t7\t3072\t1795923949562792034\t2049:1234567:1795923949000000005\ttrain.py:12\t"
        "data/a\\tb\\\\c\\nd\\x01.bin\n");
  line_init(&l);
  put_head(&l, 1, 'D', "-", 0, -2, nullptr, nullptr, 0);
  CHECK(std::string(l.buf, static_cast<size_t>(l.p - l.buf)) == "1\tD\t-\t-2\t0\t0\t0:0:0\t-\t");
}
