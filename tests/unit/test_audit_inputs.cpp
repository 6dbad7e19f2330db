// What a program read (meta/inputs.hpp) and its comparison (audit/inputs_diff.hpp): what changed in a
// text file said from the digests its record keeps (appended lines, lines changed in place, a block
// of a long file), the files two runs read differently named for a sentence, a file changed between
// the runs found (a replay could not reproduce both), and the record's classes (a Python process's
// import-system listings are not the program's, a device is never written data).
#include "reprun/audit/inputs_diff.hpp"
#include "reprun/meta/content_cache.hpp"
#include "reprun/meta/listing_cache.hpp"
#include "reprun/meta/inputs.hpp"
#include "reprun/record/files_log.hpp"
#include "testing.hpp"

#include <deque>
#include <map>
#include <memory>
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

using namespace reprun;
namespace fs = std::filesystem;

namespace {

// A string kept for the whole test run: what a hand-made FileEvent's views are of (files_log.hpp).
std::string_view kept(std::string s) {
  static std::deque<std::string> strings;
  return strings.emplace_back(std::move(s));
}

ContentSummary summary_of(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return summarize_content(path);
}

std::string lines(int from, int to, int changed = -1) {
  std::string s;
  for (int i = from; i <= to; ++i) {
    s += i == changed ? "changed\n" : "row " + std::to_string(i) + "\n";
  }
  return s;
}

MetaDelta input_delta(const std::string& path, const std::string& a, const std::string& b, const std::string& detail) {
  MetaDelta d;
  d.key = "inputs.files." + path;
  d.category = "dataset";
  d.a = a;
  d.b = b;
  d.detail = detail;
  return d;
}

} // namespace

TEST_CASE("Inputs: what changed in a text file is said from its digests") {
  testing::TempDir t;
  const ContentSummary base = summary_of(t.path(), "a.csv", lines(1, 1500));
  CHECK(describe_content_change(base, summary_of(t.path(), "b.csv", lines(1, 1520))) ==
        "1,500 -> 1,520 lines; the first 1,500 are identical (20 appended)");
  CHECK(describe_content_change(base, summary_of(t.path(), "c.csv", lines(1, 1500, 7))) ==
        "line 7 changed (1,500 lines in both)");
  CHECK(describe_content_change(base, summary_of(t.path(), "d.csv", lines(1, 1490))) ==
        "1,500 -> 1,490 lines; the first 1,490 are identical (10 removed at the end)");
  // A file longer than the lines whose digests are kept: the block of the first difference.
  const ContentSummary big = summary_of(t.path(), "e.csv", lines(1, 20000));
  const std::string said = describe_content_change(big, summary_of(t.path(), "f.csv", lines(1, 20000, 70)));
  CHECK(said == "20,000 -> 20,000 lines; the first 64 are identical, and the first difference is in lines 65-128");
  // In the first block: no "the first 0 are identical".
  CHECK(describe_content_change(big, summary_of(t.path(), "g.csv", lines(1, 20000, 1))) ==
        "20,000 -> 20,000 lines; the first difference is in lines 1-64");
  // One line kept, or none: said as such.
  const ContentSummary one = summary_of(t.path(), "h.csv", lines(1, 1));
  CHECK(describe_content_change(one, summary_of(t.path(), "i.csv", lines(1, 3))) ==
        "1 -> 3 lines; the first line is identical (2 appended)");
  CHECK(describe_content_change(summary_of(t.path(), "j.csv", lines(1, 3)), one) ==
        "3 -> 1 lines; the first line is identical (2 removed at the end)");
  CHECK(describe_content_change(summary_of(t.path(), "k.csv", ""), one) == "0 -> 1 lines (1 appended)");
}

TEST_CASE("Inputs: a code file's changed lines, each place apart") {
  std::string a;
  for (int i = 0; i < 40; ++i) {
    a += "V" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  }
  std::string where;
  // Lines 1 and 31 changed: two places, the unchanged lines between never shown (was "lines 1-31").
  std::string b = a;
  b.replace(b.find("V0 = 0"), 6, "V0 = 7");
  b.replace(b.find("V30 = 30"), 8, "V30 = 37");
  CHECK(changed_lines(a, b, 6, where) == "    1 - V0 = 0\n    1 + V0 = 7\n   31 - V30 = 30\n   31 + V30 = 37\n");
  CHECK(where == "lines 1 and 31 changed");
  // One line inserted at the top: added, numbered in B; one removed: numbered in A.
  CHECK(changed_lines(a, "import os\n" + a, 6, where) == "    1 + import os\n");
  CHECK(where == "line 1 added");
  std::string c = a;
  c.erase(c.find("V5 = 5\n"), 7);
  CHECK(changed_lines(a, c, 6, where) == "    6 - V5 = 5\n");
  CHECK(where == "line 6 removed");
  // Of several kinds, each said; a span of lines as a range.
  std::string d = "# top\n" + a;
  d.replace(d.find("V10 = 10\nV11 = 11\n"), 18, "V10 = 1\nV11 = 1\n");
  CHECK(changed_lines(a, d, 6, where) == "    1 + # top\n   11 - V10 = 10\n   12 - V11 = 11\n   12 + V10 = 1\n   13 + V11 = 1\n");
  CHECK(where == "line 1 added, lines 11-12 changed");
  // Many places: four named, three shown.
  std::string e = a;
  for (const char* v : {"V2 = 2", "V8 = 8", "V14 = 14", "V20 = 20", "V26 = 26", "V32 = 32"}) {
    e.replace(e.find(v), std::string(v).size(), std::string(v) + "0");
  }
  const std::string shown = changed_lines(a, e, 6, where);
  CHECK(where == "lines 3, 9, 15, 21 and 2 more places changed");
  CHECK(shown.find("   15 + V14 = 140\n") != std::string::npos);
  CHECK(shown.find("V20") == std::string::npos);
  CHECK(shown.find("      ... (3 more places)\n") != std::string::npos);
  // One line changed, as before.
  std::string f = a;
  f.replace(f.find("V7 = 7"), 6, "V7 = 0");
  changed_lines(a, f, 6, where);
  CHECK(where == "line 8 changed");
}

TEST_CASE("Inputs: the files two runs read differently, and a file that changed between them") {
  DiffResult r;
  r.meta.push_back(input_delta("sa/x.pt", "read", "(not read)", "read by A only (python3 (load.py:5))"));
  r.meta.push_back(input_delta("sb/x.pt", "(not read)", "read", "read by B only (python3 (load.py:5))"));
  CHECK(differing_inputs(r) == "sa/x.pt (read by A only (python3 (load.py:5))), sb/x.pt (read by B only (python3 "
                               "(load.py:5)))");
  CHECK(input_changed_between(r).empty()); // each run's file is still there: a replay reads it again
  const std::string da(64, 'a'), db(64, 'b');
  r.meta.push_back(input_delta("data/train.csv", da, db, "1,500 -> 1,520 lines; the first 1,500 are identical (20 appended)"));
  CHECK(input_changed_between(r) == "data/train.csv: 1,500 -> 1,520 lines; the first 1,500 are identical (20 appended)");
  r.meta.back().kind = MetaDelta::Kind::ignored; // --ignore-meta inputs
  CHECK(input_changed_between(r).empty());
}

TEST_CASE("Inputs: a Python process's import-system listings, a device and ldconfig's run are not the program's data") {
  testing::TempDir t;
  std::ofstream(t.path() + "/table.csv") << "1,2\n";
  FilesLog log;
  auto ev = [](char e, long long a, const std::string& p) {
    FileEvent f;
    f.pid = 7;
    f.event = e;
    f.a = a;
    f.b = 3;
    f.path = kept(p);
    return f;
  };
  log.events.push_back(ev('S', 1, "/usr/bin/python3"));
  log.events.push_back(ev('D', 0, t.path()));                         // the import system lists sys.path[0]
  log.events.push_back(ev('O', O_WRONLY, "/dev/null"));             // output thrown away
  log.events.push_back(ev('O', O_RDONLY, t.path() + "/table.csv"));   // the program's read
  FileEvent probe = ev('X', 0, "/sbin/ldconfig");                    // torch 2.x's search of the library cache
  probe.reason = "cleared";
  log.events.push_back(probe);
  FileEvent cat = ev('X', 0, "/usr/bin/cat");                        // a tool that may read the program's data
  cat.reason = "cleared";
  log.events.push_back(cat);
  PyFileEvent prefix;
  prefix.pid = 7;
  prefix.event = "prefix";
  prefix.path = "/usr/lib/python3.11";
  log.py.push_back(prefix);
  InputsOptions opt;
  opt.cwd = t.path();
  const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
  bool table = false;
  for (const auto& f : r.files) {
    if (f.path == "table.csv") {
      table = f.cls == "data" && f.hashed;
    }
    CHECK_MESSAGE(!(f.folder && f.cls == "data"), f.path);       // no listing of the program's
    CHECK_MESSAGE(!(f.path == "/dev/null" && f.cls != "other"), f.cls);
  }
  CHECK(table);
  REQUIRE(r.probes.size() == 1);
  CHECK(r.probes[0].path == "/sbin/ldconfig");
  REQUIRE(r.unrecorded.size() == 1);
  CHECK(r.unrecorded[0].path == "/usr/bin/cat");
}

TEST_CASE("Inputs: what a child's arguments name is data, unless it is the system's, holds the working directory or the run made it") {
  testing::TempDir t;
  const std::string cwd = t.path() + "/work", out = t.path() + "/sets";
  fs::create_directories(cwd);
  fs::create_directories(out + "/imgs");
  std::ofstream(out + "/table.csv") << "1,2\n";
  std::ofstream(out + "/imgs/0.png") << "x";
  std::ofstream(out + "/other.csv") << "3\n";
  FilesLog log;
  auto ev = [](long pid, char e, long long a, const std::string& p) {
    FileEvent f;
    f.pid = pid;
    f.event = e;
    f.a = a;
    f.b = e == 'O' ? 3 : 0;
    f.path = kept(p);
    return f;
  };
  log.events.push_back(ev(7, 'S', 1, "/usr/bin/sh"));
  log.events.push_back(ev(8, 'S', 7, "/usr/bin/python3"));
  log.events.push_back(ev(8, 'A', 1, out + "/table.csv"));  // python3 fit.py --table=.../table.csv
  log.events.push_back(ev(8, 'A', 2, out + "/imgs/"));      // a folder, with its slash
  log.events.push_back(ev(8, 'A', 3, "/"));                 // holds the working directory: too broad
  log.events.push_back(ev(8, 'A', 4, t.path()));            // the same
  log.events.push_back(ev(9, 'S', 7, "/usr/bin/cat"));
  log.events.push_back(ev(9, 'A', 1, "/etc/hostname"));     // the system's own
  log.events.push_back(ev(8, 'O', O_RDONLY, out + "/table.csv"));
  log.events.push_back(ev(8, 'O', O_RDONLY, out + "/imgs/0.png"));
  log.events.push_back(ev(8, 'O', O_RDONLY, out + "/other.csv")); // named by nobody
  log.events.push_back(ev(9, 'O', O_RDONLY, "/etc/hostname"));
  // A temporary folder the run made and handed to a compiler (torch.compile's): its time is after
  // the program started.
  fs::create_directories(out + "/tmpab12");
  std::ofstream(out + "/tmpab12/kernel.cpp") << "int x;\n";
  FileEvent tmp = ev(10, 'A', 3, out + "/tmpab12");
  tmp.mtime_ns = 2'000'000'000'000'000'000;
  log.events.push_back(tmp);
  log.events.push_back(ev(10, 'O', O_RDONLY, out + "/tmpab12/kernel.cpp"));
  InputsOptions opt;
  opt.cwd = cwd;
  opt.started_ns = 1'900'000'000'000'000'000;
  const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
  std::map<std::string, std::string> cls;
  for (const auto& f : r.files) {
    cls[f.path] = f.cls;
  }
  CHECK(cls[out + "/table.csv"] == "data");
  CHECK(cls[out + "/imgs/0.png"] == "data");
  CHECK(cls[out + "/other.csv"] == "other");
  CHECK(cls["/etc/hostname"] == "other");
  CHECK(cls[out + "/tmpab12/kernel.cpp"] == "other");
}

TEST_CASE("Inputs: a record line is the JSON nlohmann's dump() writes, whatever the names hold") {
  InputFile f;
  f.path = std::string("dir/we\"ird\\ta\tb\x01\x7f\xff") + "\xc3\xa9.csv"; // quote, backslash, tab, controls, a byte not UTF-8, é
  f.cls = "data";
  f.read = true;
  f.existed = true;
  f.opened_by = "python3.11 (train.py:5)";
  f.size = 12;
  f.mtime_ns = -1;
  f.changed_while_running = true;
  f.hashed = true;
  f.content.size = 12;
  f.content.sha256 = std::string(64, 'c');
  f.content.text = true;
  f.content.lines = 2;
  f.content.block_lines = 64;
  f.content.blocks = {"0011223344556677"};
  f.content.tail = {1, 0xffffffffu};
  f.code_copy = 3;
  f.note = "a note\n";
  InputFile folder;
  folder.path = "shards";
  folder.cls = "data";
  folder.folder = true;
  folder.listing_sha256 = std::string(64, 'd');
  folder.names = {"a.npy", "b\nc.npy"};
  InputFile binary = f;
  binary.content.text = false;
  binary.content.block_bytes = 1 << 20;
  binary.stat_only = true;
  // A file the run wrote, as it left it: with its content, and one too large to read again.
  InputFile made = binary;
  made.cls = "written";
  made.hashed = false;
  made.written = true;
  auto left = std::make_shared<LeftFile>();
  left->size = 12;
  left->mtime_ns = 1795733779143018287;
  left->hashed = true;
  left->content = binary.content;
  made.left = left;
  InputFile large = made;
  auto unread = std::make_shared<LeftFile>();
  unread->size = k_left_hash_cap + 1;
  unread->mtime_ns = 7;
  large.left = unread;
  for (const InputFile& in : {f, folder, binary, made, large}) {
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(input_line(in)); // valid JSON
    CHECK(input_line(input_from_json(j)) == input_line(in));                        // read back the same
    CHECK(j.dump() + "\n" == input_line(in));                                       // as dump() writes it
  }
  const auto back = input_from_json(nlohmann::ordered_json::parse(input_line(made)));
  REQUIRE(back.left);
  CHECK((back.left->hashed && back.left->content.sha256 == binary.content.sha256 && back.left->mtime_ns == left->mtime_ns));
  const auto large_back = input_from_json(nlohmann::ordered_json::parse(input_line(large)));
  REQUIRE(large_back.left);
  CHECK((!large_back.left->hashed && large_back.left->size == k_left_hash_cap + 1));
  CHECK(nlohmann::ordered_json::parse(input_line(f))["path"] == std::string("dir/we\"ird\\ta\tb\x01\x7f\\xFF\xc3\xa9.csv"));
}

TEST_CASE("Inputs: both file logs name a file alike, '.', '..' and doubled '/' resolved by the path's text") {
  testing::TempDir t;
  std::ofstream(t / "files.log") << "7\tO\t0\t3\t1\t0\t1:2\t-\t/w/./data/../data//x.csv\n"
                                    "7\tO\t0\t3\t1\t0\t1:2\tt.py:3\t/w/data/x.csv/.\n"
                                    "7\tO\t0\t3\t1\t0\t1:2\timport\t/..\n"
                                    "7\tO\t0\t3\t1\t0\t1:2\ta\\tb.py:4\trelative/./y\n";
  std::ofstream(t / "py-files.log") << "7\topen\tr\tt.py:1\t/w/data/./x.csv\n";
  const FilesLog log = read_files_log(t / "files.log", t / "py-files.log");
  REQUIRE(log.events.size() == 4);
  CHECK(log.events[0].path == "/w/data/x.csv");
  CHECK(log.events[1].path == "/w/data/x.csv");
  CHECK(log.events[2].path == "/");
  CHECK(log.events[3].path == "relative/./y"); // its directory was unknown: as given
  // The program's line that the hook in C handed to the record, unescaped; "-" is none.
  CHECK(log.events[0].where.empty());
  CHECK(log.events[1].where == "t.py:3");
  CHECK(log.events[2].where == "import");
  CHECK(log.events[3].where == "a\tb.py:4");
  REQUIRE(log.py.size() == 1);
  CHECK(log.py[0].path == "/w/data/x.csv");
}

TEST_CASE("Inputs: the program's line on a preload record names the opener; an import makes a module code") {
  testing::TempDir t;
  std::ofstream(t.path() + "/table.csv") << "1,2\n";
  std::ofstream(t.path() + "/helper.py") << "X = 1\n";
  std::ofstream(t.path() + "/notes.py") << "# read as text\n";
  FilesLog log;
  auto ev = [](char e, const std::string& p, const std::string& where) {
    FileEvent f;
    f.pid = 7;
    f.event = e;
    f.b = 3;
    f.path = kept(p);
    f.where = kept(where);
    return f;
  };
  log.events.push_back(ev('S', "/usr/bin/python3.11", ""));
  log.events.push_back(ev('O', t.path() + "/table.csv", ""));         // first opened by a C library
  log.events.push_back(ev('O', t.path() + "/table.csv", "train.py:4")); // then by the program's line
  log.events.push_back(ev('O', t.path() + "/helper.py", "import"));
  log.events.push_back(ev('O', t.path() + "/notes.py", "train.py:9"));
  InputsOptions opt;
  opt.cwd = t.path();
  const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
  std::map<std::string, const InputFile*> by_path;
  for (const auto& f : r.files) {
    by_path[f.path] = &f;
  }
  REQUIRE(by_path.count("table.csv"));
  CHECK(by_path["table.csv"]->cls == "data");
  CHECK(by_path["table.csv"]->opened_by == "python3.11 (train.py:4)");
  REQUIRE(by_path.count("helper.py"));
  CHECK(by_path["helper.py"]->cls == "code");
  CHECK(by_path["helper.py"]->opened_by == "python3.11"); // the import system: no program line
  REQUIRE(by_path.count("notes.py"));
  CHECK(by_path["notes.py"]->opened_by == "python3.11 (train.py:9)");
}

TEST_CASE("Inputs: a folder of many files read is looked at from its descriptor, as each file by its path would be") {
  testing::TempDir t;
  fs::create_directories(t.path() + "/data");
  fs::create_directories(t.path() + "/few");
  FilesLog log;
  auto open_of = [](const std::string& p) {
    FileEvent f;
    f.pid = 7;
    f.event = 'O';
    f.b = 3;
    f.path = kept(p);
    return f;
  };
  FileEvent start;
  start.pid = 7;
  start.event = 'S';
  start.path = "/usr/bin/python3.11";
  log.events.push_back(start);
  for (int i = 0; i < 40; ++i) { // above the folder's threshold: stat'd by name from the folder
    const std::string p = t.path() + "/data/" + std::to_string(i) + ".bin";
    std::ofstream(p) << "sample " << i << "\n";
    log.events.push_back(open_of(p));
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    log.events.back().size = static_cast<uint64_t>(st.st_size);
    log.events.back().mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  std::ofstream(t.path() + "/few/one.txt") << "one\n"; // below it: by path
  log.events.push_back(open_of(t.path() + "/few/one.txt"));
  fs::remove(t.path() + "/data/3.bin");                  // gone before reprun looked
  std::ofstream(t.path() + "/data/5.bin", std::ios::app) << "more\n"; // changed after the first open
  InputsOptions opt;
  opt.cwd = t.path();
  const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
  std::map<std::string, const InputFile*> by_path;
  for (const auto& f : r.files) {
    by_path[f.path] = &f;
  }
  for (int i = 0; i < 40; ++i) {
    const std::string name = "data/" + std::to_string(i) + ".bin";
    REQUIRE(by_path.count(name));
    const InputFile& f = *by_path[name];
    CHECK(f.cls == "data");
    if (i == 3) {
      CHECK_FALSE(f.hashed);
      CHECK(f.note == "gone before reprun read it (removed after the run)");
      continue;
    }
    REQUIRE(f.hashed);
    CHECK(f.content.sha256 == summarize_content(t.path() + "/" + name).sha256);
    CHECK(f.changed_while_running == (i == 5));
  }
  REQUIRE(by_path.count("few/one.txt"));
  CHECK(by_path["few/one.txt"]->hashed);
  CHECK(by_path["few/one.txt"]->content.lines == 1);
}

TEST_CASE("Inputs: an extension module built in the project is code; a data set on /dev/shm named by the user is data") {
  testing::TempDir t;
  const std::string ext = t.path() + "/fastops.cpython-311-x86_64-linux-gnu.so";
  std::ofstream(ext) << "ELF";
  FilesLog log;
  PyFileEvent m;
  m.pid = 7;
  m.event = "module";
  m.mode = "-";
  m.path = ext;
  log.py.push_back(m);
  InputsOptions opt;
  opt.cwd = t.path();
  std::string shm;
  if (fs::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0) { // a tmpfs of plain files, where there is one
    shm = "/dev/shm/reprun-test-" + std::to_string(::getpid());
    fs::create_directories(shm);
    std::ofstream(shm + "/t.csv") << "1,2\n";
    FileEvent o;
    o.pid = 7;
    o.event = 'O';
    o.b = 3;
    o.path = kept(shm + "/t.csv");
    log.events.push_back(o);
    opt.data_dirs.push_back(shm);
  }
  const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
  if (!shm.empty()) {
    fs::remove_all(shm);
  }
  std::map<std::string, const InputFile*> by_path;
  for (const auto& f : r.files) {
    by_path[f.path] = &f;
  }
  REQUIRE(by_path.count("fastops.cpython-311-x86_64-linux-gnu.so"));
  CHECK(by_path["fastops.cpython-311-x86_64-linux-gnu.so"]->cls == "code");
  if (!shm.empty()) {
    REQUIRE(by_path.count(shm + "/t.csv"));
    CHECK(by_path[shm + "/t.csv"]->cls == "data");
    CHECK(by_path[shm + "/t.csv"]->hashed);
  }
}

TEST_CASE("Inputs: a file whose first open failed and that the run then created is written, not read") {
  // A linker tries its output read-write (ENOENT), then creates it; later the program loads it.
  testing::TempDir t;
  const std::string so = t.path() + "/kernel.main.so";
  std::ofstream(so) << "ELF";
  FilesLog log;
  FileEvent tried;
  tried.pid = 8;
  tried.event = 'O';
  tried.a = O_RDWR;
  tried.b = -2; // ENOENT
  tried.path = kept(so);
  FileEvent made = tried;
  made.a = O_RDWR | k_open_created;
  made.b = 4;
  FileEvent loaded = tried;
  loaded.pid = 7;
  loaded.a = O_RDONLY;
  loaded.b = 5;
  log.events = {tried, made, loaded};
  InputsOptions opt;
  opt.cwd = t.path();
  const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
  REQUIRE(r.files.size() == 1);
  CHECK(r.files[0].path == "kernel.main.so");
  CHECK(r.files[0].cls == "written");
  CHECK(!r.files[0].existed);
  // The same failed open before a read of a file that was there: read, an input.
  FilesLog log2;
  FileEvent read = tried;
  read.a = O_RDONLY;
  read.b = 3;
  log2.events = {tried, read};
  const InputsRecord r2 = record_inputs(log2, opt, [](long, const std::string&, bool) {});
  REQUIRE(r2.files.size() == 1);
  CHECK(r2.files[0].cls == "data");
  CHECK(r2.files[0].existed);
  // A module the run built and then imported (torch.compile's kernels): written, not code read
  // empty; a .pyc the run wrote beside a source it imported leaves the source code.
  FilesLog log3;
  FileEvent built = made;
  built.a = O_RDWR | O_CREAT | k_open_created;
  log3.events = {built};
  PyFileEvent imported;
  imported.pid = 7;
  imported.event = "module";
  imported.mode = "-";
  imported.path = so;
  log3.py.push_back(imported);
  const std::string src = t.path() + "/helper.py";
  std::ofstream(src) << "x = 1\n";
  fs::create_directories(t.path() + "/__pycache__");
  FileEvent pyc = built;
  pyc.path = kept(t.path() + "/__pycache__/helper.cpython-311.pyc");
  log3.events.push_back(pyc);
  imported.path = src;
  log3.py.push_back(imported);
  const InputsRecord r3 = record_inputs(log3, opt, [](long, const std::string&, bool) {});
  std::map<std::string, std::string> cls;
  for (const auto& f : r3.files) {
    cls[f.path] = f.cls;
  }
  CHECK(cls["kernel.main.so"] == "written");
  CHECK(cls["helper.py"] == "code");
}

TEST_CASE("Inputs: a '..' after a symbolic link goes up from the link's target, as the kernel does") {
  testing::TempDir t;
  const std::string w = t.path();
  fs::create_directories(w + "/elsewhere/dir");
  fs::create_directories(w + "/plain");
  fs::create_symlink(w + "/elsewhere/dir", w + "/link");
  std::ofstream(w + "/log") << "7\tO\t0\t3\t1\t0\t1:2\t-\t" << w << "/link/../y.txt\n"   // the y.txt beside dir
                            << "7\tO\t0\t3\t1\t0\t1:2\t-\t" << w << "/plain/../y.txt\n"  // the y.txt beside plain
                            << "7\tO\t0\t3\t1\t0\t1:2\t-\t" << w << "/gone/../z.txt\n";  // not there: by the text
  std::ofstream(w + "/py") << "7\topen\tr\tt.py:1\t" << w << "/link/../y.txt\n";
  const FilesLog log = read_files_log(w + "/log", w + "/py");
  REQUIRE(log.events.size() == 3);
  const std::string real = fs::canonical(w + "/elsewhere").string();
  CHECK(log.events[0].path == real + "/y.txt");
  CHECK(log.events[1].path == w + "/y.txt");
  CHECK(log.events[2].path == w + "/z.txt");
  REQUIRE(log.py.size() == 1);
  CHECK(log.py[0].path == real + "/y.txt");
  // Each went up a folder (../data/t.csv from proj/src names the project's data): said so.
  CHECK(log.events[0].up);
  CHECK(log.events[1].up);
  CHECK(log.py[0].up);
  const FilesLog plain = read_files_log(w + "/log2", "");
  CHECK(plain.events.empty());
  std::ofstream(w + "/log2") << "7\tO\t0\t3\t1\t0\t1:2\t-\t" << w << "/./data//t.csv\n";
  const FilesLog flat = read_files_log(w + "/log2", "");
  REQUIRE(flat.events.size() == 1);
  CHECK(flat.events[0].path == w + "/data/t.csv");
  CHECK_FALSE(flat.events[0].up);
}

TEST_CASE("Inputs: a file the content cache knows in the state its opens saw is fingerprinted as opened, with no look after the run") {
  testing::TempDir t;
  const std::string data = t.path() + "/data/a.txt", other = t.path() + "/data/b.bin";
  testing::write(data, "alpha\n");
  testing::write(other, std::string(k_content_cache_min + 10, 'x')); // a large file: the cache by inode
  testing::backdate(data);
  testing::backdate(other);
  const std::string alpha = summarize_content(data).sha256, xs = summarize_content(other).sha256;
  auto open_of = [](const std::string& p, int flags = O_RDONLY) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    FileEvent f;
    f.pid = 7;
    f.event = 'O';
    f.a = flags;
    f.b = 3;
    f.size = static_cast<uint64_t>(st.st_size);
    f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    f.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
    f.dev = st.st_dev;
    f.ino = st.st_ino;
    f.path = kept(p);
    return f;
  };
  FilesLog log;
  log.events.push_back(open_of(data));
  log.events.push_back(open_of(other));
  InputsOptions opt;
  opt.cwd = t.path();
  opt.cache_dir = t.path() + "/cache";
  auto record = [&](const FilesLog& l) {
    std::map<std::string, InputFile> by_path;
    for (auto& f : record_inputs(l, opt, [](long, const std::string&, bool) {}).files) {
      by_path[f.path] = f;
    }
    REQUIRE(by_path.count("data/a.txt"));
    REQUIRE(by_path.count("data/b.bin"));
    return std::make_pair(by_path["data/a.txt"], by_path["data/b.bin"]);
  };
  auto [first, first_big] = record(log); // read, and kept in the cache
  CHECK(first.content.sha256 == alpha);
  CHECK(first_big.content.sha256 == xs);
  // Changed after the program's last open of it: what the program read is in the cache under the
  // state its opens saw, and that is what is recorded.
  testing::write(data, "beta, longer\n");
  testing::write(other, std::string(k_content_cache_min + 20, 'y'));
  auto [known, known_big] = record(log);
  CHECK(known.hashed);
  CHECK(known.content.sha256 == alpha);
  CHECK_FALSE(known.changed_while_running);
  CHECK(known_big.content.sha256 == xs);
  CHECK_FALSE(known_big.changed_while_running);
  const std::string beta = summarize_content(data).sha256;
  // Otherwise the file is looked at after the run: its content now, flagged as changed.
  SUBCASE("a log without the time of the last change (reprun.files/2)") {
    FilesLog old = log;
    old.events[0].ctime_ns = 0;
    const auto [now, big] = record(old);
    CHECK(now.content.sha256 == beta);
    CHECK(now.changed_while_running);
    CHECK(big.content.sha256 == xs); // this one's state still known
  }
  SUBCASE("two opens that saw it in different states") {
    FilesLog two = log;
    two.events.push_back(open_of(data));
    const auto [now, big] = record(two);
    CHECK(now.content.sha256 == beta);
    CHECK(now.changed_while_running);
  }
  SUBCASE("a file the run wrote too") {
    FilesLog wrote = log;
    wrote.events[0].a = O_RDWR;
    const auto [now, big] = record(wrote);
    CHECK(now.content.sha256 == beta);
    CHECK(now.changed_while_running);
  }
}

TEST_CASE("Inputs: a preload record's state has the time of the last change (reprun.files/3); a /2 record reads with none") {
  testing::TempDir t;
  std::ofstream(t / "files.log") << "7\tO\t0\t3\t5\t11\t1:2:13\t-\t/w/new.csv\n"
                                    "7\tO\t0\t3\t5\t11\t1:2\t-\t/w/old.csv\n"
                                    "7\tO\t0\t3\t5\t11\t1:2:x\t-\t/w/bad.csv\n";
  const FilesLog log = read_files_log(t / "files.log", "");
  REQUIRE(log.events.size() == 2);
  CHECK(log.skipped == 1);
  CHECK(log.events[0].dev == 1);
  CHECK(log.events[0].ino == 2);
  CHECK(log.events[0].ctime_ns == 13);
  CHECK(log.events[1].ino == 2);
  CHECK(log.events[1].ctime_ns == 0);
}

TEST_CASE("Inputs: the record's files and a folder's names are in the byte order of their paths, whatever their first 16 bytes") {
  testing::TempDir t;
  // Names that tie on their first 16 bytes, that end inside them, and bytes from 0x80 (after ASCII).
  const std::vector<std::string> names = {"b", "a", "ab", std::string("a\x80", 2), "aaaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaaa0",
                                          "aaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa", "aaaaaaaaaaaa.bin", "aaaaaaaaaaaa", "z" + std::string(40, 'q')};
  FilesLog log;
  FileEvent listing;
  listing.pid = 7;
  listing.event = 'D';
  listing.path = kept(t.path() + "/data");
  log.events.push_back(listing);
  for (const auto& n : names) {
    testing::write(t.path() + "/data/" + n, "x\n");
    FileEvent e;
    e.pid = 7;
    e.event = 'O';
    e.b = 3;
    e.path = kept(t.path() + "/data/" + n);
    log.events.push_back(e);
  }
  InputsOptions opt;
  opt.cwd = t.path();
  const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
  std::vector<std::string> paths;
  const InputFile* folder = nullptr;
  for (const auto& f : r.files) {
    paths.push_back(f.path);
    folder = f.folder ? &f : folder;
  }
  std::vector<std::string> sorted = paths;
  std::sort(sorted.begin(), sorted.end());
  CHECK(paths == sorted);
  CHECK(paths.size() == names.size() + 1);
  REQUIRE(folder != nullptr);
  std::vector<std::string> want = names;
  std::sort(want.begin(), want.end());
  CHECK(folder->names == want);
}

TEST_CASE("Inputs: a listed folder's names come from the listing cache while it is in the state it was listed in") {
  testing::TempDir t;
  const std::string data = t.path() + "/data";
  testing::write(data + "/a.csv", "1\n");
  testing::write(data + "/b.csv", "2\n");
  FilesLog log;
  FileEvent listing;
  listing.pid = 7;
  listing.event = 'D';
  listing.path = kept(data);
  log.events.push_back(listing);
  FileEvent read = listing;
  read.event = 'O';
  read.b = 3;
  read.path = kept(data + "/a.csv");
  log.events.push_back(read);
  InputsOptions opt;
  opt.cwd = t.path();
  opt.cache_dir = t.path() + "/cache";
  auto names = [&]() {
    const InputsRecord r = record_inputs(log, opt, [](long, const std::string&, bool) {});
    for (const auto& f : r.files) {
      if (f.folder) {
        return f.names;
      }
    }
    FAIL("no listing");
    return std::vector<std::string>();
  };
  CHECK(names() == std::vector<std::string>{"a.csv", "b.csv"}); // listed: the folder is new, nothing kept
  // An entry under the folder's state now, with a name the folder does not hold: found, so used
  // (how a hit shows, where the folder's names are the same as the entry's).
  struct stat st {};
  REQUIRE(::stat(data.c_str(), &st) == 0);
  FolderNames kept;
  kept.names = {"a.csv", "b.csv", "kept.csv"};
  kept.maybe_folder = {0, 0, 0};
  listing_cache_store(opt.cache_dir, data, st, kept, std::time(nullptr) + 10);
  CHECK(names() == kept.names);
  // A name added: the folder's state changed, so it is listed again.
  testing::write(data + "/c.csv", "3\n");
  CHECK(names() == std::vector<std::string>{"a.csv", "b.csv", "c.csv"});
}
