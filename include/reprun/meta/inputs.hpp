// What a program run by `reprun exec` read: every file any of its processes opened (record/
// files_log.hpp), classified and fingerprinted, so that a run kept as a reference can later be
// compared with another, down to the file and the lines that changed, without keeping the files.
//
//   data     files under the working directory, files (and folders) the arguments name, and those
//            under a folder given with --data-dir; fingerprinted with enough block digests to say
//            later what changed (text: blocks of lines and the last lines one by one; other files:
//            fixed-size blocks); a listed folder: the digest of its listing and its names
//   code     the program's own source: a script the arguments name, the modules Python imported
//            from outside the interpreter's folders (.pyc mapped back to .py); its text is kept in
//            the run directory up to a cap, so that a diff can show the changed lines
//   other    the standard library, packages, caches, /etc, /proc, /sys, /dev, temporary files,
//            reprun's own: recorded with what the open saw (size, time), never counted
//   written  files the program wrote before reading them (checkpoints, downloads, outputs), or
//            that an earlier run of the same exec wrote: not inputs; one in a place of data is
//            looked at again after the run (LeftFile), so that a later run which reads what this
//            one made (a cache, a download) is matched with it
// It is not a sandbox and not a tracer of system calls: a process that the preload library cannot
// see (statically linked, or started with LD_PRELOAD cleared) is named as unrecorded.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace reprun {

struct FilesLog;

// What a file held when the run read it, as its blocks.
struct ContentSummary {
  uint64_t size = 0;
  std::string sha256;
  bool text = false;
  long lines = 0;                    // text: lines (a last line without '\n' counts)
  long block_lines = 0;              // text: lines per block
  uint64_t block_bytes = 0;          // other files: bytes per block
  std::vector<std::string> blocks;   // XXH3-64 hex of each block
  long tail_from = 0;                // text: the first line (from 0) of `tail`
  std::vector<uint32_t> tail;        // text: a 32-bit digest of each of the last lines
};

// A file the run wrote in a place of data, as the run left it: looked at after the run, its content
// fingerprinted up to k_left_hash_cap bytes (a larger one: its size and time only).
struct LeftFile {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool hashed = false;
  ContentSummary content;            // when hashed
};

// The largest written file whose content is fingerprinted after the run (LeftFile).
constexpr uint64_t k_left_hash_cap = 256ull << 20;
// ... and the most bytes and files of them fingerprinted after one run, in all (the first files by
// path): a run that writes a million small files pays a stat of each, not a read.
constexpr uint64_t k_left_hash_total = 1ull << 30;
constexpr size_t k_left_hash_files = 10000;

struct InputFile {
  std::string path;                  // relative to the working directory when under it
  std::string cls;                   // data | code | other | written
  bool folder = false;               // a directory the program listed
  bool read = false, written = false;
  bool existed = true;               // false: every open failed, or the program created it
  bool changed_while_running = false;
  std::string opened_by;             // the first opener: "python3 (train.py:12)", "/usr/bin/sort"
  std::string note;                  // why it holds no digest: unreadable, gone, not a regular file
  uint64_t size = 0;                 // at the first open (files) or now (folders: entries)
  int64_t mtime_ns = 0;              // at the first open: informational, never compared
  bool hashed = false;
  bool stat_only = false;            // under a --stat-only folder: size and time only
  ContentSummary content;            // when hashed
  std::string listing_sha256;        // folders: of the sorted names
  std::vector<std::string> names;    // folders: the sorted names
  long code_copy = -1;               // code: its text's copy in the run directory (code/<n>.txt)
  long first_open = -1;              // the index of its first open among the run's (-1: not recorded)
  bool made_during_run = false;      // read, and changed since the program started: the run made it
  std::shared_ptr<const LeftFile> left; // written and there after the run (content: in a place of data)
};

struct Unrecorded {
  std::string path;                  // the executable
  std::string reason;                // cleared | static
};

struct InputsRecord {
  std::vector<InputFile> files;      // sorted by path
  std::vector<Unrecorded> unrecorded;
  // Unrecorded system probes: programs that read only the system's own state (ldconfig, which
  // ctypes.util.find_library and torch 2.x run with a cleared environment), listed apart.
  std::vector<Unrecorded> probes;
  long processes = 0;                // processes that loaded the preload library
  long skipped_lines = 0;
  std::vector<std::string> notes;
  bool interrupted = false;          // InputsOptions::stop was set: the record is not whole
};

struct InputsOptions {
  std::string cwd;                           // the program's working directory
  std::string program;                       // exec's program, absolute, when it names a file ("" else)
  std::vector<std::string> argv_paths;       // existing files and folders the arguments name
  std::vector<std::string> data_dirs;        // --data-dir
  std::vector<std::string> stat_only_dirs;   // --stat-only: size and time only, no digest
  std::vector<std::string> own_dirs;         // reprun's: the run and work directories, the capture
  std::set<std::string> written_earlier;     // absolute paths an earlier run of this exec wrote
  std::string cache_dir;                     // the hash cache's folder ("" none)
  int64_t started_ns = 0;                    // a file system time taken before the program started (0: unknown)
  size_t code_cap = 1 << 20;                 // the longest code file whose text is kept
  int threads = 0;
  // Called about every second while files are hashed: files and bytes done and to do (a progress
  // line); bytes count as they are read, inside a large file too.
  std::function<void(uint64_t files_done, uint64_t files, uint64_t done, uint64_t total)> progress;
  // Set (by a Ctrl-C): the fingerprinting stops within a read and the record says it was interrupted.
  const std::atomic<bool>* stop = nullptr;
};

// What a reader of a file's bytes is told (summarize_content): bytes read, added as they are read;
// a stop, checked at each read (an Error "interrupted" then).
struct ReadWatch {
  std::atomic<uint64_t>* done = nullptr;
  const std::atomic<bool>* stop = nullptr;
};

// Classifies and fingerprints what `log` says the program opened. `keep_code(index, text,
// owner_only)` keeps a code or configuration file's text, credentials' values redacted
// (meta/redact.hpp), as the run directory's code/<index>.txt; owner_only: the file is not readable
// by others, nor must its copy be. Errors reading a file become its
// note, never an exception: the record says what could not be read.
InputsRecord record_inputs(const FilesLog& log, const InputsOptions& opt,
                           const std::function<void(long index, const std::string& text, bool owner_only)>& keep_code);

// Fingerprints one file's content (blocks sized for it); throws Error naming an unreadable file.
ContentSummary summarize_content(const std::string& path, const ReadWatch& watch = {});

// The manifest's "inputs" section (counted files, folders, counts, unrecorded processes) and one
// inputs.jsonl line per file; and back.
nlohmann::ordered_json inputs_manifest(const InputsRecord& r);
std::string input_line(const InputFile& f);
void append_input_line(std::string& out, const InputFile& f); // input_line(f), appended to out
InputFile input_from_json(const nlohmann::ordered_json& j);
// What is wrong with an inputs.jsonl record, as "KEY: must be ..." (a key of another type than reprun
// writes, a class it does not know, no path), or "" for a record input_from_json reads as written.
std::string input_record_error(const nlohmann::ordered_json& j);
// The same for the manifest's "inputs" section.
std::string inputs_section_error(const nlohmann::ordered_json& inputs);
// A summary as inputs.jsonl's "content" object, and back.
nlohmann::ordered_json content_json(const ContentSummary& c);
ContentSummary content_from_json(const nlohmann::ordered_json& c);

// Where `path` (absolute) is under `dir` (absolute): true also when equal.
bool path_under(std::string_view path, std::string_view dir);

} // namespace reprun
