// The files.log and py-files.log readers: see include/reprun/record/files_log.hpp.
#include "reprun/record/files_log.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/lines.hpp"
#include "reprun/core/mapped_file.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace reprun {

namespace {

// The first `fields` tab-separated fields of `line`, the last one holding the rest (the path, which
// holds no raw tab: escaped); fewer when the line has fewer.
size_t split_tabs(std::string_view line, std::string_view* out, size_t fields) {
  size_t n = 0, start = 0;
  while (n + 1 < fields) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      break;
    }
    out[n++] = line.substr(start, tab - start);
    start = tab + 1;
  }
  out[n++] = line.substr(start);
  return n;
}

template <class T> bool number(std::string_view s, T& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

// The folder before a ".." component as the kernel reaches it: when it is a symbolic link, its
// target (link/../y.txt is the y.txt beside the link's target, not beside the link); else the text
// goes up (a link earlier in the path leads to the same folder either way). Looked up once each.
class LinkResolver {
public:
  // `dir` (absolute, without "." or ".."): its target, all links resolved, when it is a link; else itself.
  const std::string& real(const std::string& dir) {
    auto [it, added] = m_real.try_emplace(dir);
    if (added) {
      struct stat st {};
      char buf[PATH_MAX];
      const bool link = ::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
      it->second = link && ::realpath(dir.c_str(), buf) != nullptr ? std::string(buf) : dir;
    }
    return it->second;
  }

private:
  std::unordered_map<std::string, std::string> m_real;
};

// Whether normal_path leaves `p` as it is: not absolute, or plain (the usual path: no "//", no "." or
// ".." component, no '/' at the end). One pass.
bool normal_already(std::string_view p) {
  if (p.empty() || p[0] != '/') {
    return true;
  }
  bool plain = p.size() == 1 || p.back() != '/';
  for (size_t at = p.find('/', 1); plain && at != std::string_view::npos; at = p.find('/', at + 1)) {
    const char next = at + 1 < p.size() ? p[at + 1] : '\0';
    plain = next != '/' && !(next == '.' && (at + 2 == p.size() || p[at + 2] == '/' ||
                                             (p[at + 2] == '.' && (at + 3 == p.size() || p[at + 3] == '/'))));
  }
  return plain && !(p.starts_with("//") || p == "/." || p.starts_with("/./") || p == "/.." || p.starts_with("/../"));
}

// An absolute path with its "." and ".." components and repeated separators resolved, as Python's
// os.path.normpath does by the text alone, except that a ".." after a symbolic link goes up from
// the link's target, as the kernel does: the preload library joins a relative path with the
// directory as given, and the audit hook does too, so that both logs name a file alike. `up`: a
// ".." went up a folder.
std::string normal_path(std::string p, LinkResolver& links, bool& up) {
  up = false;
  if (normal_already(p)) {
    return p;
  }
  std::vector<std::string_view> parts;
  std::string resolved; // the folders before the last "..", their links resolved: parts are views of it
  const std::string_view v(p);
  for (size_t at = 0; at < v.size();) {
    size_t end = v.find('/', at);
    if (end == std::string_view::npos) {
      end = v.size();
    }
    const std::string_view part = v.substr(at, end - at);
    if (part == "..") {
      if (!parts.empty()) {
        std::string dir;
        for (const auto& q : parts) {
          dir.append("/").append(q);
        }
        if (const std::string& real = links.real(dir); real != dir) {
          resolved = real;
          parts.clear();
          for (size_t r = 1; r < resolved.size();) {
            const size_t slash = std::min(resolved.find('/', r), resolved.size());
            parts.emplace_back(std::string_view(resolved).substr(r, slash - r));
            r = slash + 1;
          }
        }
        if (!parts.empty()) {
          parts.pop_back();
          up = true;
        }
      }
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = end + 1;
  }
  std::string out;
  for (const auto& part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

// A field of the log as its event holds it: a view of the log's text when nothing is escaped in it
// (the usual field), else unescaped and kept.
std::string_view unescaped(FilesLog& log, std::string_view field) {
  return field.find('\\') == std::string_view::npos ? field : log.keep(unescape_log_path(field));
}

// `line` views the log's text, which `log` keeps: the event's strings view it, or `log`'s.
bool parse_event(std::string_view line, FileEvent& e, LinkResolver& links, FilesLog& log) {
  std::string_view f[9];
  if (split_tabs(line, f, 9) != 9 || f[1].size() != 1 || !number(f[0], e.pid)) {
    return false;
  }
  e.event = f[1][0];
  if (e.event == 'X') {
    e.reason = f[2];
  } else if (!number(f[2], e.a)) {
    return false;
  }
  // dev:ino:ctime_ns (reprun.files/3), or dev:ino (/2: no ctime, 0)
  const size_t colon = f[6].find(':');
  const size_t colon2 = colon == std::string::npos ? colon : f[6].find(':', colon + 1);
  if (!number(f[3], e.b) || !number(f[4], e.size) || !number(f[5], e.mtime_ns) || colon == std::string::npos ||
      !number(f[6].substr(0, colon), e.dev) || !number(f[6].substr(colon + 1, colon2 - colon - 1), e.ino) ||
      (colon2 != std::string::npos && !number(f[6].substr(colon2 + 1), e.ctime_ns))) {
    return false;
  }
  if (f[7] != "-") {
    e.where = unescaped(log, f[7]);
  }
  e.path = unescaped(log, f[8]);
  if (!normal_already(e.path)) {
    e.path = log.keep(normal_path(std::string(e.path), links, e.up));
  }
  return e.event == 'S' || e.event == 'O' || e.event == 'D' || e.event == 'X' || e.event == 'A' ||
         (e.event == 'L' && !e.where.empty());
}

bool parse_py(std::string_view line, PyFileEvent& e, LinkResolver& links) {
  std::string_view f[5];
  if (split_tabs(line, f, 5) != 5 || !number(f[0], e.pid)) {
    return false;
  }
  e.event = std::string(f[1]);
  e.mode = std::string(f[2]);
  e.where = std::string(f[3]);
  e.path = normal_path(unescape_log_path(f[4]), links, e.up);
  return e.event == "open" || e.event == "listdir" || e.event == "module" || e.event == "prefix" || e.event == "start";
}

// The mapped form of files.log (preload/log_map.h): a header page, then the records.
constexpr std::string_view k_map_magic = "reprun.files/3 mapped\n";
constexpr size_t k_map_header = 4096;

struct MapHeader {
  uint64_t reserved = 0, lost = 0;
  bool unmapped = false;
};

// The mapped form's header from the file's first bytes; nullopt for an appended log.
std::optional<MapHeader> map_header(std::string_view head) {
  if (head.size() < 88 || !head.starts_with(k_map_magic)) {
    return std::nullopt;
  }
  uint64_t v[3]; // native order: written by the same machine's processes
  std::memcpy(v, head.data() + 64, sizeof v);
  return MapHeader{v[0], v[1], v[2] != 0};
}

struct LogText {
  std::shared_ptr<const void> held; // what `text` views: the file mapped (or read)
  std::string_view text;            // the records' bytes
  uint64_t lost = 0;                // the mapped form: records it had no room for
  bool unmapped = false;            // the mapped form: a process could not map it
};

// The log mapped (core/mapped_file.hpp: a DataLoader's 10,000 records are 2 MB that a copy would
// fault in, and clear first), or read where it cannot be. Read after the program ended: a process
// of it still running writes only into places it reserved, which were zeros when the header was
// read (cut lines, no event views them); one that truncated reprun's log would end reprun with
// SIGBUS, as it would itself (log_map.h).
LogText read_log_text(const std::string& path) {
  LogText t;
  if (path.empty()) {
    return t;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    return t;
  }
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw Error(path, "cannot read");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return t;
  }
  std::string_view all;
  std::shared_ptr<const MappedFile> map = MappedFile::map(fd, size);
  ::close(fd);
  if (map) {
    all = map->text();
    t.held = std::move(map);
  } else { // a file system that maps no files: read
    auto text = std::make_shared<const std::string>(read_file(path));
    all = *text;
    t.held = std::move(text);
  }
  if (const auto h = all.size() >= k_map_header ? map_header(all.substr(0, k_map_header)) : std::nullopt) {
    // Only the bytes reserved: the rest, to the end of the last segment, is zeros.
    t.lost = h->lost;
    t.unmapped = h->unmapped;
    t.text = all.substr(k_map_header, std::min<uint64_t>(all.size() - k_map_header, h->reserved));
  } else {
    t.text = all;
  }
  return t;
}

// Complete lines of `v` (a partial last line, cut by a kill, is not one), after `reserve` is told
// how many there are at most. In the mapped form, a place a killed process reserved and did not
// fill holds zeros up to its newline's place, which it never wrote: the line that holds zeros is
// what follows the last of them, and each such place counts as `cut`.
template <class R, class F> void each_line(std::string_view v, long& cut, R&& reserve, F&& f) {
  reserve(count_newlines(v));
  for (size_t at = 0; at < v.size();) {
    const size_t eol = v.find('\n', at);
    if (eol == std::string_view::npos) {
      cut += v.substr(at).find_first_not_of('\0') != std::string_view::npos; // no '\n' after it
      break;
    }
    std::string_view line = v.substr(at, eol - at);
    // memrchr: a line holds no zero but where a killed process left one (a scan of each line's
    // bytes one by one, 10,000s of lines, cost more than their parse).
    if (const void* z = line.empty() ? nullptr : ::memrchr(line.data(), '\0', line.size())) {
      const size_t zero = static_cast<size_t>(static_cast<const char*>(z) - line.data());
      cut += line.substr(0, zero).find_first_not_of('\0') != std::string_view::npos;
      line.remove_prefix(zero + 1);
    }
    if (!line.empty()) {
      f(line);
    }
    at = eol + 1;
  }
}

} // namespace

std::string unescape_log_path(std::string_view s) {
  if (s.find('\\') == std::string_view::npos) {
    return std::string(s); // nothing escaped (the usual path)
  }
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    if (c == 't') {
      out += '\t';
    } else if (c == 'n') {
      out += '\n';
    } else if (c == 'x' && i + 2 < s.size()) {
      unsigned v = 0;
      const std::string_view hex = s.substr(i + 1, 2);
      if (hex.size() == 2 && std::from_chars(hex.data(), hex.data() + 2, v, 16).ec == std::errc()) {
        out += static_cast<char>(v);
        i += 2;
      } else {
        out += "\\x";
      }
    } else {
      out += c; // "\\" and anything else: the character itself
    }
  }
  return out;
}

FilesLog read_files_log(const std::string& files_log, const std::string& py_files_log) {
  FilesLog log;
  LinkResolver links;
  LogText text = read_log_text(files_log);
  log.lost = text.lost;
  log.unmapped = text.unmapped;
  const std::string_view records = text.text; // the events view it
  if (text.held) {
    log.kept.push_back(std::move(text.held));
  }
  each_line(records, log.skipped, [&](size_t n) { log.events.reserve(n); }, [&](std::string_view line) {
    FileEvent e;
    if (parse_event(line, e, links, log)) {
      log.events.push_back(std::move(e));
    } else {
      ++log.skipped;
    }
  });
  const LogText py_text = read_log_text(py_files_log);
  each_line(py_text.text, log.skipped, [&](size_t n) { log.py.reserve(n); }, [&](std::string_view line) {
    PyFileEvent e;
    if (parse_py(line, e, links)) {
      log.py.push_back(std::move(e));
    } else {
      ++log.skipped;
    }
  });
  return log;
}

uint64_t files_log_bytes(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return 0;
  }
  if (size >= k_map_header) {
    char head[88];
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t n = std::fread(head, 1, sizeof head, f);
      std::fclose(f);
      if (const auto h = map_header(std::string_view(head, n))) {
        return std::min<uint64_t>(h->reserved, size - k_map_header);
      }
    }
  }
  return size;
}

} // namespace reprun
