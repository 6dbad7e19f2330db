// Run-record writers and the manifest/summary readers. Format: include/reprun/record.hpp and
// docs/run-format.md.
#include "reprun/record.hpp"

#include "reprun/atomic_file.hpp"
#include "reprun/error.hpp"
#include "reprun/hash.hpp"
#include "reprun/steplog.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string json_number(double v) {
  if (std::isnan(v)) {
    return "\"NaN\"";
  }
  if (std::isinf(v)) {
    return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  }
  return fmt::format("{}", v);
}

namespace {
void append_tensors(std::string& s, const std::vector<TensorSum>& tensors) {
  s += ",\"tensors\":{";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    s += fmt::format("{}\"{}\":{{\"xxh3\":\"{}\",\"norm\":{}}}", i ? "," : "", t.name, hex64(t.xxh3),
                     json_number(t.norm));
  }
  s += "}";
}
} // namespace

std::string format_initial_line(const StepRecord& r) {
  std::string s = "{\"step\":0,\"epoch\":0";
  append_tensors(s, r.tensors);
  s += "}\n";
  return s;
}

std::string format_step_line(const StepRecord& r) {
  std::string s;
  s.reserve(128 + r.tensors.size() * 80 + (r.forward.size() + r.backward.size()) * 60);
  s += fmt::format("{{\"step\":{},\"epoch\":{},\"loss\":{},\"batch\":\"{}\"", r.step, r.epoch,
                   json_number(r.loss), hex64(r.batch));
  if (!r.tensors.empty()) {
    append_tensors(s, r.tensors);
  }
  auto list = [&](const char* key, const std::vector<TraceEntry>& v) {
    if (v.empty()) {
      return;
    }
    s += fmt::format(",\"{}\":[", key);
    for (size_t i = 0; i < v.size(); ++i) {
      s += fmt::format("{}{{\"name\":\"{}\",\"xxh3\":\"{}\"}}", i ? "," : "", v[i].name, hex64(v[i].xxh3));
    }
    s += "]";
  };
  list("forward", r.forward);
  list("backward", r.backward);
  s += "}\n";
  return s;
}

AppendLog::AppendLog(const std::string& path) : m_path(path) {
  // O_NOFOLLOW: a symlink planted in a run directory never redirects a write outside it.
  m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (m_fd < 0) {
    throw Error(path, std::string("cannot open for writing: ") + std::strerror(errno));
  }
}

AppendLog::~AppendLog() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

void AppendLog::append(const std::string& line) { write_all(m_fd, line, m_path); }

void refuse_link(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    throw Error(path, "is a symbolic link; reprun does not follow links inside a run directory");
  }
}

void truncate_log_to_step(const std::string& path, long max_step) {
  refuse_link(path);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return;
  }
  std::string text = read_file(path);
  size_t keep = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      break; // partial last line: dropped
    }
    long st = quick_step(std::string_view(text).substr(pos, nl - pos)); // reprun's own {"step":N,... lines
    if (st < 0 || st > max_step) {
      break;
    }
    pos = nl + 1;
    keep = pos;
  }
  if (keep != text.size()) {
    write_file_atomic(path, std::string_view(text).substr(0, keep));
  }
}

RunLock::RunLock(const std::string& run_dir) {
  std::string path = (fs::path(run_dir) / ".lock").string();
  m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (m_fd < 0) {
    throw Error(path, std::string("cannot create lock file: ") + std::strerror(errno));
  }
  if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(m_fd);
    m_fd = -1;
    throw Error(run_dir, "another reprun process is writing this run directory (locked)");
  }
}

RunLock::~RunLock() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

ojson read_manifest(const std::string& run_dir) {
  std::string path = (fs::path(run_dir) / "manifest.json").string();
  std::error_code ec;
  refuse_link(path);
  if (!fs::exists(path, ec)) {
    throw Error(run_dir, "not a run directory (no manifest.json)");
  }
  ojson m;
  try {
    m = ojson::parse(read_file(path));
  } catch (const ojson::parse_error& e) {
    throw Error(path, fmt::format("corrupt manifest (invalid JSON at byte {})", e.byte));
  }
  if (!m.is_object() || !m.contains("format") || !m["format"].is_string()) {
    throw Error(path, "manifest has no \"format\" field");
  }
  std::string f = m["format"].get<std::string>();
  if (f.rfind("reprun.run/", 0) != 0) {
    throw Error(path, "unknown format '" + f + "' (expected reprun.run/1)");
  }
  int v = std::atoi(f.c_str() + 11);
  if (v > k_run_format_version) {
    throw Error(path, fmt::format("format {} is newer than this reprun reads (reprun.run/{}); upgrade reprun", f,
                                  k_run_format_version));
  }
  if (v < 1) {
    throw Error(path, "unknown format '" + f + "'");
  }
  return m;
}

ojson read_summary(const std::string& run_dir) {
  std::string path = (fs::path(run_dir) / "summary.json").string();
  std::error_code ec;
  refuse_link(path);
  if (!fs::exists(path, ec)) {
    return ojson{{"status", "unknown (no summary.json)"}};
  }
  try {
    ojson s = ojson::parse(read_file(path));
    if (!s.is_object()) {
      throw Error(path, "summary is not a JSON object");
    }
    return s;
  } catch (const ojson::parse_error& e) {
    throw Error(path, fmt::format("corrupt summary (invalid JSON at byte {})", e.byte));
  }
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

} // namespace reprun
