// The files.log and py-files.log readers: see include/reprun/record/files_log.hpp.
#include "reprun/record/files_log.hpp"

#include "reprun/core/error.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>

namespace reprun {

namespace {

std::vector<std::string> split_tabs(const std::string& line, size_t fields) {
  std::vector<std::string> out;
  size_t start = 0;
  while (out.size() + 1 < fields) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string::npos) {
      break;
    }
    out.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  out.push_back(line.substr(start)); // the path, which holds no raw tab (escaped)
  return out;
}

template <class T> bool number(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

bool parse_event(const std::string& line, FileEvent& e) {
  const auto f = split_tabs(line, 8);
  if (f.size() != 8 || f[1].size() != 1 || !number(f[0], e.pid)) {
    return false;
  }
  e.event = f[1][0];
  if (e.event == 'X') {
    e.reason = f[2];
  } else if (!number(f[2], e.a)) {
    return false;
  }
  const size_t colon = f[6].find(':');
  if (!number(f[3], e.b) || !number(f[4], e.size) || !number(f[5], e.mtime_ns) || colon == std::string::npos ||
      !number(f[6].substr(0, colon), e.dev) || !number(f[6].substr(colon + 1), e.ino)) {
    return false;
  }
  e.path = unescape_log_path(f[7]);
  return e.event == 'S' || e.event == 'O' || e.event == 'D' || e.event == 'X';
}

bool parse_py(const std::string& line, PyFileEvent& e) {
  const auto f = split_tabs(line, 5);
  if (f.size() != 5 || !number(f[0], e.pid)) {
    return false;
  }
  e.event = f[1];
  e.mode = f[2];
  e.where = f[3];
  e.path = unescape_log_path(f[4]);
  return e.event == "open" || e.event == "listdir" || e.event == "module" || e.event == "prefix";
}

// Complete lines of `path` (a partial last line, cut by a kill, is not one).
template <class F> void each_line(const std::string& path, F&& f) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(path, "cannot read");
  }
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) {
      break; // no '\n' after it
    }
    f(line);
  }
}

} // namespace

std::string unescape_log_path(const std::string& s) {
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
      const std::string hex = s.substr(i + 1, 2);
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
  each_line(files_log, [&](const std::string& line) {
    FileEvent e;
    if (parse_event(line, e)) {
      log.events.push_back(std::move(e));
    } else {
      ++log.skipped;
    }
  });
  each_line(py_files_log, [&](const std::string& line) {
    PyFileEvent e;
    if (parse_py(line, e)) {
      log.py.push_back(std::move(e));
    } else {
      ++log.skipped;
    }
  });
  return log;
}

} // namespace reprun
