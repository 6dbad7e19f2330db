// Helpers for unit tests: a temporary folder of the test's own, and small file utilities.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>

namespace testing {

class TempDir {
public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "reprun-unit.XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      throw std::runtime_error("mkdtemp failed");
    }
    m_path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  const std::string& path() const { return m_path; }
  std::string operator/(const std::string& rel) const { return m_path + "/" + rel; }

private:
  std::string m_path;
};

inline void write(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

// Moves a file's mtime into the past, so the hash cache may keep it (it skips files changed in
// the last seconds).
inline void backdate(const std::string& path, int seconds = 3600) {
  auto t = std::filesystem::last_write_time(path) - std::chrono::seconds(seconds);
  std::filesystem::last_write_time(path, t);
}

// The stat of `path`; throws when there is none.
inline struct stat stat_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw std::runtime_error("no stat of " + path);
  }
  return st;
}

// The message of the exception `f` throws, or "(no error)".
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace testing
