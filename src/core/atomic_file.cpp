// AtomicFile: temp file + fsync + rename. See include/reprun/atomic_file.hpp.
#include "reprun/core/atomic_file.hpp"

#include "reprun/core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace reprun {

AtomicFile::AtomicFile(std::string path) : m_path(std::move(path)) {
  m_tmp = m_path + ".tmp." + std::to_string(::getpid());
  m_fd = ::open(m_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (m_fd < 0) {
    throw Error(m_path, std::string("cannot create file: ") + std::strerror(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (m_fd >= 0) {
    ::close(m_fd);
    ::unlink(m_tmp.c_str());
  }
}

void write_all(int fd, std::string_view data, const std::string& path) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw Error(path, std::string("write failed: ") + std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void AtomicFile::write(std::string_view data) { write_all(m_fd, data, m_path); }

void AtomicFile::commit() {
  if (::fsync(m_fd) != 0) {
    throw Error(m_path, std::string("fsync failed: ") + std::strerror(errno));
  }
  if (::close(m_fd) != 0) {
    m_fd = -1;
    ::unlink(m_tmp.c_str());
    throw Error(m_path, std::string("close failed: ") + std::strerror(errno));
  }
  m_fd = -1;
  if (::rename(m_tmp.c_str(), m_path.c_str()) != 0) {
    ::unlink(m_tmp.c_str());
    throw Error(m_path, std::string("rename failed: ") + std::strerror(errno));
  }
  fsync_dir(std::filesystem::path(m_path).parent_path().string());
}

void write_file_atomic(const std::string& path, std::string_view data) {
  AtomicFile f(path);
  f.write(data);
  f.commit();
}

std::string read_file(const std::string& path) {
  // One read into a string of the file's size (run logs of 10,000 lines and more are read whole).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path, "is a directory, expected a file");
  }
  std::string text;
  // st_size is a hint: /proc files say 0, and a file may grow while it is read.
  text.resize(static_cast<size_t>(std::max<off_t>(st.st_size, 0)) + 1);
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      text.resize(std::max<size_t>(4096, 2 * text.size()));
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      ::close(fd);
      throw Error(path, "read failed");
    }
    if (n == 0) {
      break;
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  return text;
}

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace reprun
