// Content fingerprints of files and directory trees (`reprun hash`, and every dataset in a
// manifest): SHA-256 of each file, and a root over (type, relative path, size, digest) in sorted
// path order with tagged fields, so that no two different trees can produce the same transcript.
//
// Root transcript, format reprun.tree/1: field("format","reprun.tree/1"), then per entry in byte
// order of path: field("type", file|symlink), field("path", p), then for a file field("size", n)
// and field("sha256", hex), for a symlink field("target", t). A field is tag NUL len ':' value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reprun {

struct HashOptions {
  bool use_cache = true;
  bool follow_symlinks = false;       // hash the file a symlink points to instead of the link
  std::vector<std::string> excludes;  // globs matched against the relative path and the file name
  int threads = 0;                    // 0: all cores
  std::string cache_dir;              // "" = $XDG_CACHE_HOME/reprun or ~/.cache/reprun
};

struct HashEntry {
  std::string path;   // relative (see hash_paths)
  std::string type;   // "file" | "symlink"
  uint64_t size = 0;
  std::string sha256; // files
  std::string target; // symlinks
  bool from_cache = false;
};

struct HashResult {
  std::string root; // "sha256:<hex>"
  std::vector<HashEntry> entries; // sorted by path
  std::vector<std::string> notes; // skipped FIFOs, sockets, devices
  uint64_t total_bytes = 0;
  long cache_hits = 0;
  long cache_misses = 0;
  int threads = 0; // threads that hashed files: 0 when every file came from the cache
};

// Hashes PATHs. One directory: entry paths are relative to it. Otherwise each argument contributes
// its base name (a file) or base name/relative path (a directory). Throws Error naming the file
// that cannot be read, or that keeps changing while it is hashed.
HashResult hash_paths(const std::vector<std::string>& paths, const HashOptions& opt);

// Hashes the given files under the given names (the dataset of a training run).
HashResult hash_files(const std::vector<std::string>& files, const std::vector<std::string>& names,
                      const HashOptions& opt);

// The root over sorted entries; `transcript` (optional) receives one readable line per field group.
std::string tree_root(const std::vector<HashEntry>& entries, std::string* transcript = nullptr);

// Where the cache lives for these options ("" when neither XDG_CACHE_HOME nor HOME is set).
std::string hash_cache_file(const HashOptions& opt);

} // namespace reprun
