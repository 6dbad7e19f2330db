// Files read outside the places of data, compared by size and time: see
// include/reprun/audit/outside_inputs.hpp.
#include "reprun/audit/outside_inputs.hpp"

#include "reprun/audit/inputs_diff.hpp"
#include "reprun/meta/inputs.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

namespace reprun {

namespace {

// Folders of the system's own: what a program reads there (its libraries, /etc's settings, /proc)
// is not data, whatever the program's line that led to it.
constexpr std::array<std::string_view, 16> k_system = {"/usr",  "/lib", "/lib32", "/lib64", "/libx32", "/bin",
                                                       "/sbin", "/etc", "/proc",  "/sys",   "/dev",    "/run",
                                                       "/var",  "/boot", "/snap", "/nix"};

// "opened at t3.py:2" for a Python process's record ("python3.11 (t3.py:2)"), else "opened by sort".
std::string opened_phrase(const std::string& opened_by) {
  const size_t open = opened_by.rfind(" (");
  if (open != std::string::npos && opened_by.back() == ')') {
    return "opened at " + opened_by.substr(open + 2, opened_by.size() - open - 3);
  }
  return opened_by.empty() ? std::string() : "opened by " + opened_by;
}

bool ends_with(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

std::string parent_of_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

} // namespace

bool outside_place(std::string_view path) {
  if (path.empty() || path[0] != '/') {
    return false;
  }
  for (const std::string_view s : k_system) {
    if (path.size() > s.size() && path.compare(0, s.size(), s) == 0 && path[s.size()] == '/') {
      return false;
    }
  }
  std::string_view last_dir;
  size_t start = 1;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    const bool last = end == std::string_view::npos;
    if (last) {
      end = path.size();
    }
    const std::string_view part = path.substr(start, end - start);
    if (part.empty()) {
      start = end + 1;
      continue;
    }
    if (part[0] == '.' || (!last && (part == "site-packages" || part == "dist-packages" || part == "__pycache__" ||
                                     part == "bin" || part == "sbin" ||
                                     (last_dir == "lib" && part.size() > 6 && part.rfind("python", 0) == 0 &&
                                      part[6] >= '0' && part[6] <= '9')))) {
      return false;
    }
    if (last) {
      // Code, not data: a shared library (libop.so, libfoo.so.1.2) and a Python module (reprun's own
      // capture among them, wherever it is installed).
      const size_t so = part.rfind(".so");
      if ((so != std::string_view::npos && (so + 3 == part.size() || part[so + 3] == '.')) || ends_with(part, ".py") ||
          ends_with(part, ".pyc") || ends_with(part, ".pth")) {
        return false;
      }
    }
    last_dir = part;
    start = end + 1;
  }
  return true;
}

std::vector<OutsidePair> outside_pairs(const std::map<std::string, InputFile>& oa,
                                      const std::map<std::string, InputFile>& ob) {
  std::vector<OutsidePair> sized, timed; // the size differs; the same size, another time
  for (const auto& [path, x] : oa) {
    const auto it = ob.find(path);
    if (it == ob.end() || !outside_place(path)) {
      continue;
    }
    const InputFile& y = it->second;
    if (x.folder || y.folder || !x.read || !y.read || x.written || y.written || !x.existed || !y.existed ||
        (x.size == y.size && x.mtime_ns == y.mtime_ns)) {
      continue;
    }
    (x.size == y.size ? timed : sized).push_back({&x, &y});
  }
  sized.insert(sized.end(), timed.begin(), timed.end());
  return sized;
}

MetaDelta outside_delta(const OutsidePair& p) {
  const InputFile& x = *p.a;
  const InputFile& y = *p.b;
  MetaDelta d;
  d.key = "inputs.files." + x.path;
  d.category = "dataset";
  d.rank = 1;
  d.kind = MetaDelta::Kind::informational;
  const std::string size_a = grouped(static_cast<long long>(x.size)), size_b = grouped(static_cast<long long>(y.size));
  d.a = size_a + " bytes";
  d.b = size_b + " bytes";
  const std::string opened = opened_phrase(y.opened_by.empty() ? x.opened_by : y.opened_by);
  const std::string at = opened.empty() ? "" : ", " + opened;
  if (x.size == y.size) {
    d.b += ", modified at another time";
    d.detail = fmt::format("the same size ({} bytes), modified at another time{}", size_a, at);
  } else {
    d.detail = fmt::format("{} -> {} bytes{}", size_a, size_b, at);
  }
  d.why = fmt::format("{}{}: its bytes not compared (--data-dir {} compares them)", k_outside_why,
                      opened.empty() ? "" : " (" + opened + ")", parent_of_path(x.path));
  return d;
}

bool is_outside_change(const MetaDelta& m) {
  return m.kind == MetaDelta::Kind::informational && m.category == "dataset" &&
         m.key.rfind("inputs.files./", 0) == 0 && std::string_view(m.why).substr(0, k_outside_why.size()) == k_outside_why;
}

std::string outside_changed(const DiffResult& r, size_t most) {
  std::vector<std::string> named;
  for (const auto& m : r.meta) {
    if (is_outside_change(m)) {
      named.push_back(fmt::format("{} ({})", m.key.substr(13), m.detail));
    }
  }
  return name_list(named, most);
}

std::string outside_folder(const DiffResult& r) {
  std::string folder;
  for (const auto& m : r.meta) {
    if (!is_outside_change(m)) {
      continue;
    }
    const std::string parent = parent_of_path(m.key.substr(13));
    if (folder.empty()) {
      folder = parent;
      continue;
    }
    // The longest folder that holds both: the common part up to a '/' of both.
    size_t n = 0, slash = 0;
    while (n < folder.size() && n < parent.size() && folder[n] == parent[n]) {
      slash = folder[n] == '/' ? n : slash;
      ++n;
    }
    const bool whole = (n == folder.size() || folder[n] == '/') && (n == parent.size() || parent[n] == '/');
    folder = whole ? folder.substr(0, n) : slash == 0 ? "/" : folder.substr(0, slash);
  }
  return folder == "/" ? "" : folder;
}

} // namespace reprun
