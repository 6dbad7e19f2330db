// The listing cache of exec's input record: see include/reprun/meta/listing_cache.hpp.
#include "reprun/meta/listing_cache.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/meta/content_cache.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <string_view>
#include <sys/stat.h>

namespace reprun {

namespace {

constexpr std::string_view k_magic = "reprun.inputs-listing/1 ";

int64_t ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

std::string listing_name(const std::string& folder) { return "listing-" + hex64(xxh3_64(folder.data(), folder.size())); }

// "DEV INO MTIME_NS CTIME_NS": the state a listing is kept under.
std::string state_key(const struct stat& st) {
  return fmt::format("{} {} {} {}", static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), ns(st.st_mtim),
                     ns(st.st_ctim));
}

} // namespace

bool listing_cache_lookup(const std::string& dir, const std::string& folder, const struct stat& st, FolderNames& out) {
  if (dir.empty()) {
    return false;
  }
  std::string text;
  try {
    text = read_file(dir + "/inputs-v1/" + listing_name(folder));
  } catch (const std::exception&) { // none yet, unreadable: a miss
    return false;
  }
  const std::string_view v(text);
  const std::string head = std::string(k_magic) + state_key(st) + " ";
  const size_t eol = v.find('\n');
  if (eol == std::string_view::npos || eol < head.size() || v.compare(0, head.size(), head) != 0) {
    return false; // another state, or another format
  }
  size_t count = 0;
  const std::string_view digits = v.substr(head.size(), eol - head.size());
  if (std::from_chars(digits.data(), digits.data() + digits.size(), count).ptr != digits.data() + digits.size() ||
      count > v.size()) {
    return false;
  }
  size_t at = eol + 1;
  const size_t path_end = v.find('\0', at);
  if (path_end == std::string_view::npos || v.substr(at, path_end - at) != folder) {
    return false; // another folder's file under the same name
  }
  FolderNames n;
  n.names.reserve(count);
  n.maybe_folder.reserve(count);
  for (at = path_end + 1; at < v.size();) {
    const size_t end = v.find('\0', at);
    if (end == std::string_view::npos || end < at + 2 || (v[at] != 'd' && v[at] != '-')) {
      return false; // cut, or not an entry
    }
    n.maybe_folder.push_back(v[at] == 'd' ? 1 : 0);
    n.names.emplace_back(v.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  if (n.names.size() != count) {
    return false;
  }
  out = std::move(n);
  return true;
}

void listing_cache_store(const std::string& dir, const std::string& folder, const struct stat& st, const FolderNames& n,
                         std::time_t now) {
  const int64_t racy_ns = (static_cast<int64_t>(now) - 2) * 1'000'000'000;
  if (dir.empty() || ns(st.st_mtim) >= racy_ns || ns(st.st_ctim) >= racy_ns || n.names.size() != n.maybe_folder.size()) {
    return; // a folder changed in the last seconds is not kept
  }
  std::string text = fmt::format("{}{} {}\n", k_magic, state_key(st), n.names.size());
  text.append(folder).push_back('\0');
  for (size_t i = 0; i < n.names.size(); ++i) {
    text.push_back(n.maybe_folder[i] != 0 ? 'd' : '-');
    text.append(n.names[i]).push_back('\0');
  }
  write_inputs_cache_file(dir, listing_name(folder), text);
}

} // namespace reprun
