// The raw logs of what a program run by `reprun exec` opened, written as it runs (format
// "reprun.files/3", /2 read too; docs/run-format.md, "files.log"):
//   files.log     by libreprun_preload.so in every process of the program, one line per event, each
//                 copied into a file all of them map, after its header page (its mapped form,
//                 preload/log_map.h), or written with one write() to a file opened O_APPEND (a log
//                 that held lines before), tab-separated:
//                   PID EVENT A B SIZE MTIME_NS DEV:INO:CTIME_NS WHERE PATH
//                 EVENT S (a process started: A its parent's pid, PATH its executable), O (an open of
//                 the open family or fopen: A the open flags, with 0x40000000 when O_CREAT made the
//                 file; B the fd or -errno), D (a directory listed: B 0 or -errno), X (an exec or
//                 posix_spawn: A ok | cleared | static, whether the child is recorded), A (an
//                 argument of a program image naming a file: A its index), L (a symbolic link the
//                 program read: WHERE its target as stored); SIZE, MTIME_NS
//                 and DEV:INO:CTIME_NS from fstat at the open (/2: DEV:INO); WHERE "-", or on an O record of a Python
//                 process the program's file:line that opened it, or "import" (the import system);
//                 PATH absolute, WHERE and PATH with \\ \t \n \xHH escapes.
//   py-files.log  by the capture's audit hook in each Python process, the same way:
//                   PID EVENT MODE WHERE PATH
//                 EVENT open (MODE as open() got it, WHERE the program's file:line; only where the
//                 preload library's hook in C did not take the opens), listdir, module (a module the
//                 process imported, its source file: .pyc mapped to .py), prefix (a folder of the
//                 interpreter's own: its standard library, site-packages), start (a forked process).
// Why two logs: the preload library sees every process (shell tools, compiled trainers, workers)
// but Python's lines only through its hook in C; the audit hook sees only Python processes, and
// records their listings with the line, and their opens where the preload library is not loaded. Lines that do not
// parse (a process killed while writing) are skipped and counted. The reader is the one place
// that knows these formats; what the files are is meta/inputs.hpp's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace reprun {

// Its strings are views: of the log's text, or of a string the log keeps (an escaped or normalized
// path), which live as long as the FilesLog (10,000s of events: no string of their own each). An
// event made by hand views strings its maker keeps.
struct FileEvent {
  long pid = 0;
  char event = 0;          // S O D X A L
  long long a = 0;         // O: open flags (0x40000000: created by this open); S: parent pid; A: argument index
  long long b = 0;         // O, D: the fd (>= 0) or -errno
  std::string_view reason; // X: ok | cleared | static
  uint64_t size = 0, dev = 0, ino = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;    // 0: not recorded (a reprun.files/2 log)
  std::string_view where;  // O of a Python process: "train.py:12", "import" (the import system); L: the
                           // link's target as stored; else ""
  std::string_view path;   // unescaped bytes
  bool up = false;         // the path as given went up a folder ("/w/src/../data/t.csv": ../data/t.csv from /w/src)
};

inline constexpr long long k_open_created = 0x40000000;

struct PyFileEvent {
  long pid = 0;
  std::string event;       // open | listdir | module | prefix | start
  std::string mode;        // open: "r", "rb", "w", ...
  std::string where;       // open, listdir: "train.py:12"
  std::string path;
  bool up = false;         // as FileEvent's
};

struct FilesLog {
  std::vector<FileEvent> events;
  std::vector<PyFileEvent> py;
  long skipped = 0;        // lines that did not parse, or were cut by a kill
  uint64_t lost = 0;       // files.log's mapped form: records it had no room for (a full disk)
  bool unmapped = false;   // files.log's mapped form: a process could not map it, and recorded nothing
  // What the events' views are of: files.log's text as mapped, and the paths unescaped or
  // normalized. Each in a block of its own, shared by a copy of the log: a view stays valid when the
  // log is moved, copied, or what it keeps appended to another's.
  std::vector<std::shared_ptr<const void>> kept;
  // `s` kept, and a view of it for an event.
  std::string_view keep(std::string s) {
    auto held = std::make_shared<const std::string>(std::move(s));
    const std::string_view v = *held;
    kept.push_back(std::move(held));
    return v;
  }
};

// Reads both logs (a missing one has no events). Throws Error naming a file that cannot be read.
FilesLog read_files_log(const std::string& files_log, const std::string& py_files_log);

// The bytes of records in a log: its size, or in the mapped form those reserved after its header.
uint64_t files_log_bytes(const std::string& path);

// The escapes of both logs undone: \\ \t \n \xHH.
std::string unescape_log_path(std::string_view s);

} // namespace reprun
