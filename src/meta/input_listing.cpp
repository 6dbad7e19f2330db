// A folder the program listed: see input_listing.hpp.
#include "meta/input_listing.hpp"

#include "meta/text_order.hpp"

#include "reprun/core/hash.hpp"
#include "reprun/meta/listing_cache.hpp"
#include "reprun/record/run_dir.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>

namespace reprun {

bool reprun_output(const std::string& dir) { return RunDir::holds_run(dir) || RunDir::holds_run(dir + "/run-1"); }

namespace {

// Every name of the folder at `path` now, in byte order: from the listing cache when the folder is
// in the state it was in when listed last (listing_cache.hpp), else listed (and kept there). A
// folder that cannot be listed has a note, and the names read before the error.
void folder_names(const std::string& path, const std::string& cache_dir, FolderNames& out, std::string& note) {
  struct stat st {};
  const bool state = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode); // before the listing: a change
  if (state && listing_cache_lookup(cache_dir, path, st, out)) {               // after it is another state
    return;
  }
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    note = std::string("cannot list it now: ") + std::strerror(errno);
    return;
  }
  FolderNames all;
  errno = 0;
  while (const dirent* d = ::readdir(dir)) {
    const std::string_view name(d->d_name);
    if (name != "." && name != "..") {
      all.names.emplace_back(name);
      all.maybe_folder.push_back(d->d_type == DT_DIR || d->d_type == DT_UNKNOWN ? 1 : 0);
    }
    errno = 0;
  }
  if (errno != 0) {
    note = std::string("cannot list it now: ") + std::strerror(errno);
  }
  ::closedir(dir);
  const std::vector<uint32_t> order = text_order(all.names.size(), [&](size_t i) { return std::string_view(all.names[i]); });
  permute(all.names, order);
  permute(all.maybe_folder, order);
  if (state && note.empty()) {
    listing_cache_store(cache_dir, path, st, all);
  }
  out = std::move(all);
}

} // namespace

void list_folder(InputFile& f, const std::string& cache_dir, bool check,
                 const std::function<bool(const std::string& entry)>& made_by_run,
                 const std::vector<std::string_view>* read_here) {
  FolderNames all;
  folder_names(f.path, cache_dir, all, f.note);
  std::string entry = f.path;
  if (entry.empty() || entry.back() != '/') {
    entry += '/';
  }
  const size_t base = entry.size();
  f.names.reserve(all.names.size());
  for (size_t i = 0; i < all.names.size(); ++i) { // in order: what is left out leaves the rest in order
    const bool sub = all.maybe_folder[i] != 0;
    if (check || sub) {
      entry.resize(base);
      entry.append(all.names[i]);
    }
    if (!(check && made_by_run(entry)) && !(sub && reprun_output(entry))) {
      f.names.push_back(std::move(all.names[i]));
    }
  }
  if (read_here != nullptr) {
    // Both in order, walked side by side (10,000 names read from a folder of 10,000: not a binary
    // search of each).
    const std::vector<std::string_view>& read = *read_here;
    std::vector<std::string_view> gone; // read, then removed by the run
    size_t at = 0;
    for (const uint32_t k : text_order(read.size(), [&](size_t i) { return read[i]; })) {
      while (at < f.names.size() && f.names[at] < read[k]) {
        ++at;
      }
      if (at == f.names.size() || f.names[at] != read[k]) {
        gone.push_back(read[k]);
      }
    }
    if (!gone.empty()) {
      f.names.insert(f.names.end(), gone.begin(), gone.end());
      std::sort(f.names.begin(), f.names.end());
    }
  }
  Sha256 sha;
  for (const auto& name : f.names) {
    sha.update_field("name", name);
  }
  f.listing_sha256 = sha.hex_digest();
  f.size = f.names.size();
}

} // namespace reprun
