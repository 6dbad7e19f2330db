// A regular file's bytes mapped read-only: the page cache's pages, several mapped at a fault, and no
// copy of reprun's own to fault in and clear (a log or a cache file of some MB, read once). Used where
// the file is replaced by a rename or removed, never written in place while it is mapped.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace reprun {

class MappedFile {
public:
  // `size` bytes (> 0) of the regular file open as `fd`, which the caller still closes; null when
  // the file system maps no files (errno: mmap's error).
  static std::unique_ptr<const MappedFile> map(int fd, size_t size);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::string_view text() const { return {m_data, m_size}; }

private:
  MappedFile(const char* data, size_t size) : m_data(data), m_size(size) {}
  const char* m_data;
  size_t m_size;
};

} // namespace reprun
