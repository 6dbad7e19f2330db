// MappedFile: see include/reprun/core/mapped_file.hpp.
#include "reprun/core/mapped_file.hpp"

#include <sys/mman.h>

namespace reprun {

std::unique_ptr<const MappedFile> MappedFile::map(int fd, size_t size) {
  void* p = size > 0 ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  if (p == MAP_FAILED) {
    return nullptr;
  }
  return std::unique_ptr<const MappedFile>(new MappedFile(static_cast<const char*>(p), size));
}

MappedFile::~MappedFile() { ::munmap(const_cast<char*>(m_data), m_size); }

} // namespace reprun
