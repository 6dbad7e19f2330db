// Files written atomically: content goes to a temporary file beside the target; commit() fsyncs
// and renames it into place. A destructor never commits, so a crash or an exception leaves either
// the old file or none, never a half-written one.
#pragma once

#include <string>
#include <string_view>

namespace reprun {

class AtomicFile {
public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view data);
  void commit();

private:
  std::string m_path;
  std::string m_tmp;
  int m_fd = -1;
};

// Writes all of `data` to `fd` (retrying short writes and EINTR); throws Error naming `path`.
void write_all(int fd, std::string_view data, const std::string& path);

// Convenience: write `data` to `path` atomically.
void write_file_atomic(const std::string& path, std::string_view data);
// Reads a whole file; throws Error naming the file.
std::string read_file(const std::string& path);
// fsync a directory so that a rename inside it is durable.
void fsync_dir(const std::string& dir);

} // namespace reprun
