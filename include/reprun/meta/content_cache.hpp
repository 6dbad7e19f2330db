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
// it read. Only files of at least k_content_cache_min bytes are kept: below it a read and digest
// cost little more than opening the entry would.
#pragma once

#include "reprun/meta/inputs.hpp"

#include <cstdint>
#include <string>

struct stat;

namespace reprun {

constexpr uint64_t k_content_cache_min = 1 << 20;

// The summary of a file in exactly the state `st` from the cache folder `dir`, or false.
bool content_cache_lookup(const std::string& dir, const struct stat& st, ContentSummary& out);

// Keeps `c`, the summary of a file in the state `st`, unless the file changed in the last seconds
// (a change within the same timestamp tick would go unseen). Failures are ignored.
void content_cache_store(const std::string& dir, const struct stat& st, const ContentSummary& c);

} // namespace reprun
