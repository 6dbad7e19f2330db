// The listing cache of `reprun exec`'s input record: the names a folder held when its (device,
// inode, mtime, ctime) were these, so that a program that lists the same folder of 10,000 images at
// every run costs a stat and one small read at every record, not a listing of 10,000 entries and
// their sort (a folder's mtime and ctime change with any name added, removed or renamed in it).
// Like the content cache (content_cache.hpp) an optimisation only, found only under the exact key:
// an unreadable, cut, foreign or stale entry is a miss, never an error.
//
// One file per folder, in the folder `inputs-v1` beside the hash cache, named "listing-" and the
// XXH3-64 (hex) of the folder's absolute path, written whole and atomically (a temporary file
// renamed):
//   "reprun.inputs-listing/1 DEV INO MTIME_NS CTIME_NS COUNT" LF, the folder's path, NUL,
//   then COUNT entries in the byte order of the names: a type ('d': a folder, or of a type the
//   listing did not say; '-': anything else), the name, NUL.
// NUL ends a name because no name holds one (a name may hold a newline). Format version 1, the
// oldest readable; another first word is a miss.
#pragma once

#include <ctime>
#include <string>
#include <vector>

struct stat;

namespace reprun {

struct FolderNames {
  std::vector<std::string> names; // in byte order, without "." and ".."
  std::vector<char> maybe_folder; // per name: 1 when it is a folder or of a type the listing did not say
};

// The names of `folder` (absolute) in exactly the state `st` from the cache folder `dir`, or false.
bool listing_cache_lookup(const std::string& dir, const std::string& folder, const struct stat& st, FolderNames& out);

// Keeps the names of `folder` as listed when it was in the state `st`, unless its mtime or ctime is
// within 2 seconds of `now` (a change within the same timestamp tick would go unseen; both, so that
// a name added and the folder's mtime set back, as tar and rsync -t do, is never missed). Failures
// are ignored.
void listing_cache_store(const std::string& dir, const std::string& folder, const struct stat& st, const FolderNames& n,
                         std::time_t now = std::time(nullptr));

} // namespace reprun
