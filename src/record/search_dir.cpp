// SearchDir: the one owner of a search directory's names. Format: include/reprun/record/search_dir.hpp.
#include "reprun/record/search_dir.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {
std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }
} // namespace

const char* SearchDir::name(SearchFile f) {
  static constexpr const char* k_names[] = {"search.json", "leaderboard.json", "leaderboard.txt", "leaderboard.md",
                                            "report.html", "timings.json",     ".lock"};
  return k_names[static_cast<int>(f)];
}

SearchDir SearchDir::create(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    if (!fs::is_directory(fs::symlink_status(path, ec))) {
      throw Error(path, "exists and is not a directory; choose another -o");
    }
    if (holds_search(path)) {
      throw Error(path, "already holds a search; continue it with --resume or choose another -o");
    }
    if (!fs::is_empty(path, ec)) {
      throw Error(path, "is not empty; choose another -o");
    }
  }
  fs::create_directories(path, ec);
  if (ec) {
    throw Error(path, "cannot create search directory: " + ec.message());
  }
  return SearchDir(path);
}

SearchDir SearchDir::open(const std::string& path) {
  if (!holds_search(path)) {
    throw Error(path, fmt::format("not a search directory (no {})", name(SearchFile::manifest)));
  }
  return SearchDir(path);
}

bool SearchDir::holds_search(const std::string& path) {
  std::error_code ec;
  const std::string m = join(path, name(SearchFile::manifest));
  return fs::is_directory(fs::symlink_status(path, ec)) && fs::is_regular_file(fs::symlink_status(m, ec));
}

std::string SearchDir::file(SearchFile f) const { return join(m_path, name(f)); }

std::string SearchDir::trial_dir(long k) const { return join(m_path, fmt::format("trial-{:04d}", k)); }

std::string SearchDir::trial_log(long k) const {
  const std::string dir = join(m_path, "logs");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(dir, "cannot create: " + ec.message());
  }
  return join(dir, fmt::format("trial-{:04d}.log", k));
}

RunLock SearchDir::lock() const { return lock_directory(file(SearchFile::lock), m_path, "search directory"); }

void SearchDir::write_manifest(const ojson& m) const { write_json(file(SearchFile::manifest), m); }

ojson SearchDir::read_manifest() const {
  const std::string path = file(SearchFile::manifest);
  refuse_link(path);
  ojson m = read_json_object(path, "search manifest");
  if (const auto f = m.find("format"); f == m.end() || *f != k_search_format) { // a number there too: named, never thrown
    throw Error(path, fmt::format("format is {}, expected \"{}\"", m.contains("format") ? m["format"].dump() : "absent",
                                  k_search_format));
  }
  return m;
}

void SearchDir::write(SearchFile f, std::string_view content) const {
  const std::string path = file(f);
  refuse_link(path);
  write_file_atomic(path, content);
}

} // namespace reprun
