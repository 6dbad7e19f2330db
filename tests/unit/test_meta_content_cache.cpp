// The content cache of exec's input record (meta/content_cache.hpp): a large file's summary found
// again under its exact state only, never for a small, changed or just-written file, and a cut or
// foreign entry a miss.
#include "reprun/meta/content_cache.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/stat.h>

using namespace reprun;
namespace fs = std::filesystem;

namespace {

struct stat stat_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st;
}

std::string big_content(char fill) {
  std::string s(k_content_cache_min + 4096, fill);
  s[0] = '\0'; // binary: fixed-size blocks
  return s;
}

} // namespace

TEST_CASE("Content cache: a large file's summary is found again while its state is unchanged, the same as a fresh read") {
  testing::TempDir t;
  const std::string file = t / "data/big.bin";
  const std::string cache = t / "cache";
  testing::write(file, big_content('a'));
  testing::backdate(file);
  const struct stat st = stat_of(file);
  const ContentSummary fresh = summarize_content(file);
  ContentSummary got;
  CHECK_FALSE(content_cache_lookup(cache, st, got));
  content_cache_store(cache, st, fresh);
  REQUIRE(content_cache_lookup(cache, st, got));
  CHECK(content_json(got).dump() == content_json(fresh).dump());
  CHECK(got.blocks.size() == 2);

  testing::write(file, big_content('b')); // rewritten: another mtime and ctime
  ContentSummary after;
  CHECK_FALSE(content_cache_lookup(cache, stat_of(file), after));
}

TEST_CASE("Content cache: small files and files changed in the last seconds are not kept") {
  testing::TempDir t;
  const std::string cache = t / "cache";
  testing::write(t / "small.bin", std::string(100, '\0'));
  testing::backdate(t / "small.bin");
  const struct stat small = stat_of(t / "small.bin");
  content_cache_store(cache, small, summarize_content(t / "small.bin"));
  testing::write(t / "new.bin", big_content('c')); // just written: racy
  const struct stat fresh = stat_of(t / "new.bin");
  content_cache_store(cache, fresh, summarize_content(t / "new.bin"));
  ContentSummary got;
  CHECK_FALSE(content_cache_lookup(cache, small, got));
  CHECK_FALSE(content_cache_lookup(cache, fresh, got));
  CHECK_FALSE(fs::exists(cache + "/inputs-v1"));
}

TEST_CASE("Content cache: a cut or foreign entry is a miss, never an error") {
  testing::TempDir t;
  const std::string file = t / "big.bin";
  const std::string cache = t / "cache";
  testing::write(file, big_content('d'));
  testing::backdate(file);
  const struct stat st = stat_of(file);
  content_cache_store(cache, st, summarize_content(file));
  const std::string entry = cache + "/inputs-v1/" + std::to_string(static_cast<uint64_t>(st.st_dev)) + "-" +
                            std::to_string(static_cast<uint64_t>(st.st_ino));
  REQUIRE(fs::exists(entry));
  const std::string whole = [&] {
    std::ifstream in(entry, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  ContentSummary got;
  testing::write(entry, whole.substr(0, whole.size() / 2)); // cut
  CHECK_FALSE(content_cache_lookup(cache, st, got));
  testing::write(entry, "reprun.inputs-cache/2" + whole.substr(whole.find(' '))); // another version
  CHECK_FALSE(content_cache_lookup(cache, st, got));
  testing::write(entry, whole);
  CHECK(content_cache_lookup(cache, st, got));
}
