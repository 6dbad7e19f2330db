// The reader of files.log in its mapped form (record/files_log.hpp, preload/log_map.h): the records
// after the header page, up to the bytes reserved; a place a killed process reserved and left
// (zeros up to its newline's place) skipped and counted, the record after it whole; the header's
// lost records and unmapped flag read.
#include "reprun/record/files_log.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

using namespace reprun;

namespace {

std::string record(long pid, const std::string& path) {
  return std::to_string(pid) + "\tO\t0\t3\t5\t11\t1:2:13\t-\t" + path + "\n";
}

// A mapped log: the header (reserved = the records' bytes, lost, unmapped), the records, then
// zeros to `size`.
std::string mapped(const std::string& records, uint64_t lost, uint64_t unmapped, size_t size) {
  std::string f(4096, '\0');
  const std::string magic = "reprun.files/3 mapped\n";
  f.replace(0, magic.size(), magic);
  const uint64_t fields[] = {records.size(), lost, unmapped};
  std::memcpy(f.data() + 64, fields, sizeof fields);
  f += records;
  f.resize(std::max(size, f.size()), '\0');
  return f;
}

} // namespace

TEST_CASE("Files log: the mapped form's records are read up to the bytes reserved; a place a killed process left is skipped") {
  testing::TempDir t;
  const std::string log = t / "files.log";
  const std::string a = record(7, "/w/a.csv"), b = record(8, "/w/b.csv"), c = record(7, "/w/c.csv");
  // A killed process's place between a and b: some of its bytes copied, the newline's place zero.
  std::string killed = record(9, "/w/killed.csv");
  std::memset(killed.data() + 5, 0, 10);
  killed.back() = '\0';
  const std::string lost_place(40, '\0'); // a place reserved and never written (no room)

  SUBCASE("every record whole") {
    std::ofstream(log, std::ios::binary) << mapped(a + b + c, 0, 0, 1 << 20);
    const FilesLog r = read_files_log(log, "");
    REQUIRE(r.events.size() == 3);
    CHECK(r.events[0].path == "/w/a.csv");
    CHECK(r.events[2].path == "/w/c.csv");
    CHECK(r.skipped == 0);
    CHECK(r.lost == 0);
    CHECK_FALSE(r.unmapped);
    CHECK(files_log_bytes(log) == a.size() + b.size() + c.size());
  }
  SUBCASE("a killed process's place, and one left empty: the records after them whole") {
    std::ofstream(log, std::ios::binary) << mapped(a + killed + b + lost_place + c, 1, 0, 1 << 20);
    const FilesLog r = read_files_log(log, "");
    REQUIRE(r.events.size() == 3);
    CHECK(r.events[0].path == "/w/a.csv");
    CHECK(r.events[1].path == "/w/b.csv");
    CHECK(r.events[1].pid == 8);
    CHECK(r.events[2].path == "/w/c.csv");
    CHECK(r.skipped == 1); // the killed record; the empty place is a lost one, in the header
    CHECK(r.lost == 1);
  }
  SUBCASE("a record cut at the end, and the reserved bytes past the file's end") {
    std::string cut = record(7, "/w/d.csv");
    cut.back() = '\0';
    std::string f = mapped(a + b + cut, 0, 1, 0);
    const uint64_t more = 1 << 20; // reserved past what the file holds
    std::memcpy(f.data() + 64, &more, sizeof more);
    std::ofstream(log, std::ios::binary) << f;
    const FilesLog r = read_files_log(log, "");
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[1].path == "/w/b.csv");
    CHECK(r.skipped == 1);
    CHECK(r.unmapped);
    CHECK(files_log_bytes(log) == f.size() - 4096);
  }
  SUBCASE("an appended log (no header) is read as it is") {
    std::ofstream(log, std::ios::binary) << a + b;
    const FilesLog r = read_files_log(log, "");
    REQUIRE(r.events.size() == 2);
    CHECK(r.skipped == 0);
    CHECK(files_log_bytes(log) == a.size() + b.size());
  }
}

TEST_CASE("Files log: the events view the log as mapped, which the log keeps when the file is gone and the log copied") {
  testing::TempDir t;
  const std::string log = t / "files.log";
  std::ofstream(log, std::ios::binary) << mapped(record(7, "/w/a.csv") + record(8, "/w/b\\tc.csv"), 0, 0, 1 << 20);
  FilesLog copy;
  {
    const FilesLog r = read_files_log(log, "");
    REQUIRE(r.events.size() == 2);
    std::filesystem::remove(log);
    copy = r; // the mapping and the unescaped path shared, then the first holder gone
  }
  REQUIRE(copy.events.size() == 2);
  CHECK(copy.events[0].path == "/w/a.csv");
  CHECK(copy.events[1].path == "/w/b\tc.csv");
  CHECK(copy.events[1].pid == 8);
}
