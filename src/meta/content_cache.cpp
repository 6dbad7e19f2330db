// The content cache of exec's input record: see include/reprun/meta/content_cache.hpp.
#include "reprun/meta/content_cache.hpp"

#include "reprun/core/atomic_file.hpp"

#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace reprun {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_magic = "reprun.inputs-cache/1";

int64_t ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

std::string entry_path(const std::string& dir, const struct stat& st) {
  return fmt::format("{}/inputs-v1/{}-{}", dir, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
}

std::string key_line(const struct stat& st) {
  return fmt::format("{} {} {} {} {} {}", k_magic, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                     static_cast<uint64_t>(st.st_size), ns(st.st_mtim), ns(st.st_ctim));
}

} // namespace

bool content_cache_lookup(const std::string& dir, const struct stat& st, ContentSummary& out) {
  if (dir.empty() || static_cast<uint64_t>(st.st_size) < k_content_cache_min) {
    return false;
  }
  try {
    const std::string text = read_file(entry_path(dir, st));
    const size_t eol = text.find('\n');
    if (eol == std::string::npos || text.compare(0, eol, key_line(st)) != 0) {
      return false; // another state of the inode, or another format
    }
    ContentSummary c = content_from_json(nlohmann::ordered_json::parse(text.begin() + static_cast<long>(eol) + 1,
                                                                       text.end()));
    if (c.size != static_cast<uint64_t>(st.st_size) || c.sha256.size() != 64 || c.blocks.empty()) {
      return false;
    }
    out = std::move(c);
    return true;
  } catch (const std::exception&) { // none yet, unreadable, cut: a miss
    return false;
  }
}

void content_cache_store(const std::string& dir, const struct stat& st, const ContentSummary& c) {
  if (dir.empty() || static_cast<uint64_t>(st.st_size) < k_content_cache_min) {
    return;
  }
  const int64_t racy_ns = (static_cast<int64_t>(std::time(nullptr)) - 2) * 1'000'000'000;
  if (ns(st.st_mtim) >= racy_ns) { // as the hash cache (fingerprint.cpp)
    return;
  }
  try {
    std::error_code ec;
    fs::create_directories(dir + "/inputs-v1", ec);
    write_file_atomic(entry_path(dir, st), key_line(st) + "\n" + content_json(c).dump() + "\n");
  } catch (const std::exception&) { // a cache that cannot be written is no cache
  }
}

} // namespace reprun
