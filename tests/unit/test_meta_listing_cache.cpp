// The listing cache of exec's input record (meta/listing_cache.hpp): a folder's names found again
// under its exact state only, whatever bytes they hold, never for a folder changed in the last
// seconds, and a cut, foreign or other state's entry a miss.
#include "reprun/meta/listing_cache.hpp"
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/hash.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <ctime>
#include <filesystem>
#include <string>
#include <sys/stat.h>

using namespace reprun;
using testing::stat_of;
namespace fs = std::filesystem;

namespace {

std::string cache_file(const std::string& cache, const std::string& folder) {
  return cache + "/inputs-v1/listing-" + hex64(xxh3_64(folder.data(), folder.size()));
}

} // namespace

TEST_CASE("Listing cache: a folder's names are found again while its state is unchanged, whatever bytes they hold") {
  testing::TempDir t;
  const std::string folder = t / "data";
  const std::string cache = t / "cache";
  fs::create_directories(folder);
  FolderNames n;
  n.names = {"a.npy", std::string("b\nc.npy"), std::string("d\x80\xff", 3), "e\tf", "sub"};
  n.maybe_folder = {0, 0, 0, 0, 1};
  const struct stat st = stat_of(folder);
  FolderNames got;
  CHECK_FALSE(listing_cache_lookup(cache, folder, st, got));
  listing_cache_store(cache, folder, st, n, std::time(nullptr) + 10); // the folder as if made 10 s ago
  REQUIRE(listing_cache_lookup(cache, folder, st, got));
  CHECK(got.names == n.names);
  CHECK(got.maybe_folder == n.maybe_folder);
  // No names is a listing too.
  const std::string empty = t / "empty";
  fs::create_directories(empty);
  listing_cache_store(cache, empty, stat_of(empty), FolderNames{}, std::time(nullptr) + 10);
  REQUIRE(listing_cache_lookup(cache, empty, stat_of(empty), got));
  CHECK(got.names.empty());

  testing::write(folder + "/new.npy", "x"); // a name added: another mtime and ctime
  CHECK_FALSE(listing_cache_lookup(cache, folder, stat_of(folder), got));
  // Under its own state the entry still reads (an unchanged folder is found), under no other.
  struct stat other = st;
  other.st_ino += 1;
  CHECK_FALSE(listing_cache_lookup(cache, folder, other, got));
  CHECK(listing_cache_lookup(cache, folder, st, got));
}

TEST_CASE("Listing cache: a folder changed in the last seconds is not kept; a cut, foreign or malformed file is a miss") {
  testing::TempDir t;
  const std::string folder = t / "data";
  const std::string cache = t / "cache";
  fs::create_directories(folder);
  FolderNames n;
  n.names = {"a", "b"};
  n.maybe_folder = {0, 0};
  const struct stat st = stat_of(folder);
  listing_cache_store(cache, folder, st, n); // made just now: racy
  CHECK_FALSE(fs::exists(cache_file(cache, folder)));
  testing::backdate(folder); // its mtime an hour ago, its ctime now (set by the change of mtime)
  listing_cache_store(cache, folder, stat_of(folder), n);
  CHECK_FALSE(fs::exists(cache_file(cache, folder)));

  listing_cache_store(cache, folder, st, n, std::time(nullptr) + 10);
  const std::string file = cache_file(cache, folder);
  const std::string whole = read_file(file);
  FolderNames got;
  REQUIRE(listing_cache_lookup(cache, folder, st, got));
  for (size_t cut : {whole.size() - 1, whole.size() - 2, whole.find('\n'), size_t{3}, size_t{0}}) {
    CAPTURE(cut);
    write_file_atomic(file, whole.substr(0, cut));
    CHECK_FALSE(listing_cache_lookup(cache, folder, st, got));
  }
  // Another folder's entry under this name, a count that is not the entries', an entry of no type.
  const std::string path_at = whole.substr(whole.find('\n') + 1, folder.size());
  REQUIRE(path_at == folder);
  std::string foreign = whole;
  foreign.replace(whole.find('\n') + 1, folder.size(), folder.substr(0, folder.size() - 1) + "X");
  std::string count = whole;
  count.replace(whole.find('\n') - 1, 1, "3");
  std::string untyped = whole;
  untyped[whole.find('\0') + 1] = 'x';
  for (const std::string& text : {foreign, count, untyped}) {
    write_file_atomic(file, text);
    CHECK_FALSE(listing_cache_lookup(cache, folder, st, got));
  }
  write_file_atomic(file, whole);
  CHECK(listing_cache_lookup(cache, folder, st, got));
  // No cache folder: nothing kept, nothing found.
  listing_cache_store("", folder, st, n, std::time(nullptr) + 10);
  CHECK_FALSE(listing_cache_lookup("", folder, st, got));
}
