// MappedFile (core/mapped_file.hpp): a file's bytes mapped read-only, as the files log and the
// folder cache read them.
#include "reprun/core/mapped_file.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace reprun;

TEST_CASE("MappedFile: a file's bytes as mapped; nothing for an empty file") {
  testing::TempDir t;
  const std::string path = t / "f.txt";
  std::ofstream(path, std::ios::binary) << "one\ntwo\n";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const auto m = MappedFile::map(fd, 8);
  ::close(fd);
  REQUIRE(m != nullptr);
  CHECK(m->text() == "one\ntwo\n");
  CHECK(MappedFile::map(fd, 0) == nullptr);
}
