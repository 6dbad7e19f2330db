// The hash cache (meta/hash_cache.hpp): entries found under their exact key only, the log folded
// into the index once it grows, one entry kept per inode, and cache files it cannot use ignored.
#include "reprun/meta/hash_cache.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace reprun;
namespace fs = std::filesystem;

namespace {

std::string digest_of(uint64_t i) {
  std::string d = std::to_string(i);
  return std::string(64 - d.size(), 'a') + d;
}

StatKey key(uint64_t ino, int64_t ctime = 1000) { return {7, ino, 100 + ino, 500, ctime}; }

} // namespace

TEST_CASE("HashCache: the log is folded into the index once it passes k_compact_lines, and every entry is found") {
  testing::TempDir t;
  const std::string log = t / "cache/hash-cache-v1.log";
  const uint64_t n = HashCache::k_compact_lines + 10;
  {
    HashCache c(log);
    for (uint64_t i = 0; i < 10; ++i) {
      c.store(key(i), digest_of(i));
    }
    c.flush(); // short: stays a log
  }
  CHECK(fs::exists(log));
  CHECK_FALSE(fs::exists(t / "cache/hash-cache-v1.idx"));
  {
    HashCache c(log);
    CHECK(c.log_entries() == 10);
    std::string d;
    REQUIRE(c.lookup(key(3), d));
    CHECK(d == digest_of(3));
    for (uint64_t i = 10; i < n; ++i) {
      c.store(key(i), digest_of(i));
    }
    c.flush(); // past the threshold: compacted
  }
  CHECK_FALSE(fs::exists(log));
  CHECK(fs::file_size(t / "cache/hash-cache-v1.idx") == 32 + 72 * n);
  HashCache c(log);
  CHECK(c.index_entries() == n);
  CHECK(c.log_entries() == 0);
  std::string d;
  for (uint64_t i = 0; i < n; ++i) {
    REQUIRE(c.lookup(key(i), d));
    CHECK(d == digest_of(i));
  }
  // Only the exact key: any field changed is a miss.
  CHECK_FALSE(c.lookup(key(5, 1001), d));
  StatKey other_size = key(5);
  other_size.size += 1;
  CHECK_FALSE(c.lookup(other_size, d));
  CHECK_FALSE(c.lookup(key(n), d));
}

TEST_CASE("HashCache: compaction keeps one entry per inode, its newest state; new entries go to a new log") {
  testing::TempDir t;
  const std::string log = t / "hash-cache-v1.log";
  {
    HashCache c(log);
    c.store(key(1, 9000), digest_of(9)); // written first, but the newer state of inode 1
    c.store(key(1, 5000), digest_of(5));
    for (uint64_t i = 2; i < HashCache::k_compact_lines + 5; ++i) {
      c.store(key(i), digest_of(i));
    }
    c.flush();
  }
  {
    HashCache c(log);
    CHECK(c.index_entries() == HashCache::k_compact_lines + 4);
    std::string d;
    REQUIRE(c.lookup(key(1, 9000), d));
    CHECK(d == digest_of(9));
    CHECK_FALSE(c.lookup(key(1, 5000), d)); // an older state can never match again
    c.store(key(1, 12000), digest_of(12));
    c.flush();
  }
  HashCache c(log);
  CHECK(c.log_entries() == 1);
  std::string d;
  REQUIRE(c.lookup(key(1, 12000), d)); // from the log
  CHECK(d == digest_of(12));
  REQUIRE(c.lookup(key(1, 9000), d)); // from the index, until the next compaction
  CHECK(d == digest_of(9));
}

TEST_CASE("HashCache: a cut log line, a foreign or cut index and no cache at all are misses, never errors") {
  testing::TempDir t;
  const std::string log = t / "hash-cache-v1.log";
  testing::write(log, "v1 7 1 101 500 1000 " + digest_of(1) + "\nv1 7 2 102 500 1000 " + digest_of(2).substr(0, 30) +
                          "\nv1 7 3 103 500 1000 " + digest_of(3).substr(0, 63) + "X\nv1 7 4 104 500");
  std::string d;
  {
    HashCache c(log);
    CHECK(c.log_entries() == 1);
    CHECK(c.lookup(key(1), d));
    CHECK_FALSE(c.lookup(key(2), d));
  }
  for (const std::string& index : {std::string("not an index"), std::string(32, '\0'),
                                   std::string("reprun.hashidx/1") + std::string(8, '\5') + std::string(8, '\0')}) {
    testing::write(t / "hash-cache-v1.idx", index);
    HashCache c(log);
    CHECK(c.index_entries() == 0);
    CHECK(c.lookup(key(1), d));
  }
  HashCache none("");
  none.store(key(1), digest_of(1));
  none.flush();
  CHECK_FALSE(none.lookup(key(1), d));
}
