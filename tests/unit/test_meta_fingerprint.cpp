#include "reprun/core/error.hpp"
#include "reprun/meta/fingerprint.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

using namespace reprun;

namespace {
HashOptions no_cache() {
  HashOptions o;
  o.use_cache = false;
  return o;
}
} // namespace

TEST_CASE("The root of a two-file tree matches the known answer") {
  testing::TempDir t;
  testing::write(t / "tree/a.txt", "abc");
  testing::write(t / "tree/d/b.txt", "hello\n");
  HashResult r = hash_paths({t / "tree"}, no_cache());
  // Computed independently with Python's hashlib from the format in fingerprint.hpp.
  CHECK(r.root == "sha256:5ff7336ce74b79da9499c6c5200ac8e786d192201eb633c266bb0c46d3e98d17");
  REQUIRE(r.entries.size() == 2);
  CHECK(r.entries[0].path == "a.txt");
  CHECK(r.entries[0].sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(r.entries[1].path == "d/b.txt");
  CHECK(r.total_bytes == 9);
}

TEST_CASE("An empty file and an empty tree have stable roots") {
  testing::TempDir t;
  std::filesystem::create_directories(t / "empty");
  HashResult e = hash_paths({t / "empty"}, no_cache());
  CHECK(e.entries.empty());
  testing::write(t / "z", "");
  HashResult z = hash_paths({t / "z"}, no_cache());
  REQUIRE(z.entries.size() == 1);
  CHECK(z.entries[0].sha256 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(e.root != z.root);
}

TEST_CASE("The root depends on content, not on creation order or location") {
  testing::TempDir t;
  testing::write(t / "one/x", "1");
  testing::write(t / "one/y", "2");
  testing::write(t / "two/y", "2");
  testing::write(t / "two/x", "1");
  CHECK(hash_paths({t / "one"}, no_cache()).root == hash_paths({t / "two"}, no_cache()).root);
  testing::write(t / "two/x", "3");
  CHECK(hash_paths({t / "one"}, no_cache()).root != hash_paths({t / "two"}, no_cache()).root);
  // A renamed file changes the root even with the same bytes.
  testing::write(t / "three/x2", "1");
  testing::write(t / "three/y", "2");
  CHECK(hash_paths({t / "one"}, no_cache()).root != hash_paths({t / "three"}, no_cache()).root);
}

TEST_CASE("Symlinks are recorded as links unless followed; FIFOs are skipped with a note") {
  testing::TempDir t;
  testing::write(t / "d/real", "data");
  std::filesystem::create_symlink("real", t / "d/link");
  REQUIRE(::mkfifo((t / "d/pipe").c_str(), 0600) == 0);
  HashResult r = hash_paths({t / "d"}, no_cache());
  REQUIRE(r.entries.size() == 2);
  CHECK(r.entries[0].path == "link");
  CHECK(r.entries[0].type == "symlink");
  CHECK(r.entries[0].target == "real");
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("skipped (FIFO)") != std::string::npos);
  HashOptions follow = no_cache();
  follow.follow_symlinks = true;
  HashResult f = hash_paths({t / "d"}, follow);
  CHECK(f.entries[0].type == "file");
  CHECK(f.entries[0].sha256 == f.entries[1].sha256);
}

TEST_CASE("Excluded globs leave files and folders out") {
  testing::TempDir t;
  testing::write(t / "d/keep.csv", "1");
  testing::write(t / "d/skip.tmp", "2");
  testing::write(t / "d/.git/HEAD", "3");
  HashOptions o = no_cache();
  o.excludes = {"*.tmp", ".git"};
  HashResult r = hash_paths({t / "d"}, o);
  REQUIRE(r.entries.size() == 1);
  CHECK(r.entries[0].path == "keep.csv");
}

TEST_CASE("The cache hits for unchanged files and is invalidated by a touch or a replacement") {
  testing::TempDir t;
  HashOptions o;
  o.cache_dir = t / "cache";
  testing::write(t / "d/a", "alpha");
  testing::write(t / "d/b", "beta");
  testing::backdate(t / "d/a");
  testing::backdate(t / "d/b");
  HashResult cold = hash_paths({t / "d"}, o);
  CHECK(cold.cache_hits == 0);
  CHECK(cold.cache_misses == 2);
  HashResult warm = hash_paths({t / "d"}, o);
  CHECK(warm.cache_hits == 2);
  CHECK(warm.root == cold.root);
  CHECK(cold.threads >= 1);
  CHECK(warm.threads == 0); // every file cached: no thread started
  // Same content, new mtime: the entry is not trusted.
  testing::write(t / "d/a", "alpha");
  testing::backdate(t / "d/a", 60);
  HashResult touched = hash_paths({t / "d"}, o);
  CHECK(touched.cache_hits == 1);
  CHECK(touched.root == cold.root);
  // Replaced by a file with other content and the old mtime: a new inode, so a miss.
  testing::write(t / "d/b.new", "BETA");
  std::filesystem::last_write_time(t / "d/b.new", std::filesystem::last_write_time(t / "d/b"));
  std::filesystem::rename(t / "d/b.new", t / "d/b");
  HashResult replaced = hash_paths({t / "d"}, o);
  CHECK(replaced.root != cold.root);
  CHECK(replaced.entries[1].sha256 != cold.entries[1].sha256);
  // Files changed in the last seconds are hashed but not cached.
  testing::write(t / "d/fresh", "new");
  hash_paths({t / "d"}, o);
  HashResult again = hash_paths({t / "d"}, o);
  CHECK(again.cache_misses == 1);
}

TEST_CASE("A missing path is an error naming it") {
  testing::TempDir t;
  CHECK_THROWS_WITH_AS(hash_paths({t / "nope"}, no_cache()), doctest::Contains("no such file or directory"), Error);
}
