// The content cache of exec's input record (meta/content_cache.hpp): a large file's summary found
// again under its exact state only, never for a small, changed or just-written file, and a cut or
// foreign entry a miss; the folder cache of small files held to the same rules, and its one-line
// form of a summary read back the same.
#include "reprun/meta/content_cache.hpp"
#include "reprun/core/atomic_file.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/stat.h>

using namespace reprun;
using testing::stat_of;
namespace fs = std::filesystem;

namespace {

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

TEST_CASE("Folder cache: a small file's summary is found again while its state is unchanged, text and binary alike") {
  testing::TempDir t;
  const std::string cache = t / "cache";
  const std::string folder = t / "data";
  std::string text;
  for (int i = 0; i < 9000; ++i) { // more lines than the tail keeps
    text += "row " + std::to_string(i) + "\n";
  }
  testing::write(folder + "/a.csv", text);
  testing::write(folder + "/b.bin", std::string("\0\1\2binary", 9));
  testing::backdate(folder + "/a.csv");
  testing::backdate(folder + "/b.bin");
  for (const std::string name : {"a.csv", "b.bin"}) {
    const std::string file = folder + "/" + name;
    const ContentSummary fresh = summarize_content(file);
    ContentSummary got;
    {
      FolderCache c(cache);
      c.load({folder});
      CHECK_FALSE(c.lookup(folder, stat_of(file), got));
      c.store(folder, stat_of(file), fresh);
      c.flush();
    }
    FolderCache again(cache);
    again.load({folder});
    REQUIRE(again.lookup(folder, stat_of(file), got));
    CHECK(content_json(got).dump() == content_json(fresh).dump());
  }
  // Both entries stay when the second run stored only the second file.
  FolderCache both(cache);
  both.load({folder});
  ContentSummary got;
  CHECK(both.lookup(folder, stat_of(folder + "/a.csv"), got));
  CHECK(got.text);
  CHECK(got.tail.size() == 8192);

  testing::write(folder + "/a.csv", text + "one more\n"); // another state: a miss
  FolderCache after(cache);
  after.load({folder});
  CHECK_FALSE(after.lookup(folder, stat_of(folder + "/a.csv"), got));
}

TEST_CASE("Folder cache: a file changed in the last seconds is not kept, and a cut or foreign file is a miss") {
  testing::TempDir t;
  const std::string cache = t / "cache";
  const std::string folder = t / "data";
  testing::write(folder + "/new.bin", std::string(100, '\0')); // just written: racy
  {
    FolderCache c(cache);
    c.load({folder});
    c.store(folder, stat_of(folder + "/new.bin"), summarize_content(folder + "/new.bin"));
    c.flush();
  }
  CHECK_FALSE(fs::exists(cache + "/inputs-v1"));

  testing::write(folder + "/old.bin", std::string(100, '\1'));
  testing::backdate(folder + "/old.bin");
  {
    FolderCache c(cache);
    c.load({folder});
    c.store(folder, stat_of(folder + "/old.bin"), summarize_content(folder + "/old.bin"));
    c.flush();
  }
  REQUIRE(fs::exists(cache + "/inputs-v1"));
  const std::string entry = fs::directory_iterator(cache + "/inputs-v1")->path().string();
  const std::string whole = read_file(entry);
  ContentSummary got;
  for (const std::string& damaged : {whole.substr(0, whole.size() - 20), std::string("reprun.inputs-folder/1 /elsewhere\n") +
                                                                             whole.substr(whole.find('\n') + 1),
                                     std::string("garbage\n"), std::string()}) { // an empty file maps nothing
    testing::write(entry, damaged);
    FolderCache c(cache);
    c.load({folder});
    CHECK_FALSE(c.lookup(folder, stat_of(folder + "/old.bin"), got));
  }
}

TEST_CASE("Folder cache: a summary's one-line form reads back the same, and a line that is not one is refused") {
  ContentSummary text;
  text.size = 10;
  text.sha256 = std::string(64, 'a');
  text.text = true;
  text.lines = 2;
  text.block_lines = 64;
  text.blocks = {"0123456789abcdef"};
  text.tail_from = 0;
  text.tail = {0xdeadbeef, 7};
  ContentSummary empty_bin;
  empty_bin.sha256 = std::string(64, 'b');
  empty_bin.block_bytes = 1 << 20;
  for (const ContentSummary& c : {text, empty_bin}) {
    ContentSummary back;
    REQUIRE(FolderCache::decode(FolderCache::encode(c), c.size, back));
    CHECK(content_json(back).dump() == content_json(c).dump());
  }
  ContentSummary back;
  const std::string line = FolderCache::encode(text);
  CHECK_FALSE(FolderCache::decode(line.substr(0, line.size() - 3), 10, back));    // a cut tail
  CHECK_FALSE(FolderCache::decode(line + " extra", 10, back));                     // a field too many
  CHECK_FALSE(FolderCache::decode("x " + std::string(64, 'a') + " 1 -", 10, back)); // another kind
  CHECK_FALSE(FolderCache::decode("b " + std::string(63, 'a') + " 1 -", 10, back)); // a short digest
}

TEST_CASE("Folder cache: an entry is found by its key's exact text only") {
  testing::TempDir t;
  const std::string cache = t / "cache";
  const std::string folder = t / "data";
  testing::write(folder + "/a.bin", std::string(100, '\2'));
  testing::backdate(folder + "/a.bin");
  const struct stat st = stat_of(folder + "/a.bin");
  {
    FolderCache c(cache);
    c.load({folder});
    c.store(folder, st, summarize_content(folder + "/a.bin"));
    c.flush();
  }
  const std::string entry = fs::directory_iterator(cache + "/inputs-v1")->path().string();
  const std::string whole = read_file(entry);
  const size_t body = whole.find('\n') + 1;
  const std::string key = fmt::format("{} {} {} {}", st.st_dev, st.st_ino, st.st_size,
                                      st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
  const int64_t ctime = st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
  REQUIRE(whole.compare(body, key.size(), key) == 0);
  const std::string summary = whole.substr(whole.find(' ', body + key.size() + 1)); // " b SHA ..."
  ContentSummary got;
  auto finds = [&](const std::string& key_text) {
    testing::write(entry, whole.substr(0, body) + key_text + summary);
    FolderCache c(cache);
    c.load({folder});
    return c.lookup(folder, st, got);
  };
  CHECK(finds(fmt::format("{} {}", key, ctime)));
  CHECK_FALSE(finds(fmt::format("{} 0{}", key, ctime)));     // a leading zero: another text
  CHECK_FALSE(finds(fmt::format("{} +{}", key, ctime)));     // a sign
  CHECK_FALSE(finds(fmt::format("{} {} 0", key, ctime)));    // a field too many
  CHECK_FALSE(finds(fmt::format("{} {}x", key, ctime)));     // not a number
  CHECK_FALSE(finds(fmt::format("{} {}", key, ctime + 1)));  // another state
}
