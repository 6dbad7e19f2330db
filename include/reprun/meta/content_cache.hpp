// The content cache of `reprun exec`'s input record: the block summary (inputs.hpp, ContentSummary)
// a large file had when its (device, inode, size, mtime, ctime) were these, so that a program that
// reads the same 1 GB file at every run costs a stat at every record, not a read of 1 GB. Like the
// hash cache (hash_cache.hpp) it is an optimisation only, found only under the exact key: an
// unreadable, cut, foreign or stale entry is a miss, never an error.
//
// One file per inode, in the folder `inputs-v1` beside the hash cache, named "DEV-INO" (decimal),
// written whole and atomically (a temporary file renamed); two lines:
//   line 1  "reprun.inputs-cache/1 DEV INO SIZE MTIME_NS CTIME_NS"
//   line 2  the summary as inputs.jsonl's "content" object (JSON)
// Format version 1, the oldest readable; another first word is a miss.
// Why this shape: a summary holds up to 4,096 block digests and 1,024 line digests, more than the
// hash cache's fixed-size entries carry; one file per inode, replaced when the file changes, keeps
// the folder as large as the set of large files read, and a run opens only the entries of the files
// it read. Only files of at least k_content_cache_min bytes are kept there: below it a read and
// digest cost little more than opening the entry would.
//
// Smaller files (a data set of 10,000 images of a few KB, read at every run) go to FolderCache: one
// file per folder of theirs, in `inputs-v1` too, named "folder-" and the XXH3-64 (hex) of the
// folder's absolute path, read whole when a run read a file of that folder and rewritten whole
// (atomically) when it summarized new ones:
//   line 1    "reprun.inputs-folder/1 " and the folder's path (a name collision is a miss)
//   then      "DEV INO SIZE MTIME_NS CTIME_NS " and the summary in one line:
//             "b SHA256 BLOCK_BYTES BLOCKS" or "t SHA256 LINES BLOCK_LINES TAIL_FROM BLOCKS TAIL",
//             BLOCKS the blocks' 16 hex digits each, TAIL the tail's 8 each, "-" for none
// Why: a stat and a lookup in memory per file, where reading and digesting a 3 KB file cost 10 µs
// of CPU and a file of its own per entry would cost an open. Entries of inodes a run did not see are
// kept while the folder's entries stay under twice those it found or added, plus 1,024; a stale one
// is only a miss.
#pragma once

#include "reprun/core/flat_index.hpp"
#include "reprun/core/mapped_file.hpp"
#include "reprun/meta/inputs.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct stat;

namespace reprun {

constexpr uint64_t k_content_cache_min = 1 << 20;

// Writes `text` whole and atomically as `name` in the folder inputs-v1 of the cache folder `dir`
// (made when missing): the content cache's, the folder cache's and the listing cache's files. A
// cache that cannot be written is no cache: failures are ignored.
void write_inputs_cache_file(const std::string& dir, const std::string& name, std::string_view text);

// The summary of a file in exactly the state `st` from the cache folder `dir`, or false.
bool content_cache_lookup(const std::string& dir, const struct stat& st, ContentSummary& out);

// Keeps `c`, the summary of a file in the state `st`, unless the file changed in the last seconds
// (a change within the same timestamp tick would go unseen). Failures are ignored.
void content_cache_store(const std::string& dir, const struct stat& st, const ContentSummary& c);

// The summaries of files under k_content_cache_min bytes, by folder (above). lookup() and store()
// may be called from several threads once load() has read the folders.
class FolderCache {
public:
  explicit FolderCache(std::string dir) : m_dir(std::move(dir)) {}
  // Reads the entries of these folders (absolute paths); call once, before lookups.
  void load(const std::vector<std::string>& folders);
  // The summary of a file of `folder` in exactly the state `st`, or false.
  bool lookup(std::string_view folder, const struct stat& st, ContentSummary& out);
  // Keeps it for flush(), unless the file changed in the last seconds.
  void store(const std::string& folder, const struct stat& st, const ContentSummary& c);
  // Rewrites the files of the folders that got new entries. Failures are ignored.
  void flush();

  // The one-line form of a summary, and back (false: not one).
  static std::string encode(const ContentSummary& c);
  static bool decode(std::string_view line, uint64_t size, ContentSummary& out);

private:
  struct Entry {
    std::string_view key;              // "DEV INO SIZE MTIME CTIME", in Folder::text
    std::string_view line;             // the summary, in Folder::text
  };
  struct Folder {
    // The folder's file mapped read-only (no copy of a MB of entries): a cache file is replaced by
    // a rename, never written in place.
    std::unique_ptr<const MappedFile> text;
    std::vector<Entry> entries;                               // in the file's order, each key once
    std::unique_ptr<FlatIndex> index;                         // key -> its place in entries
    std::unique_ptr<std::atomic<bool>[]> hit;                 // each entry's: found by this run
    std::vector<std::pair<std::string, std::string>> added;   // key, summary
  };
  std::string m_dir;
  std::map<std::string, Folder, std::less<>> m_folders;
  mutable std::mutex m_mutex;
};

} // namespace reprun
