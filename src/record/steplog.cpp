// Step-log reader and line parser; see include/reprun/steplog.hpp and docs/run-format.md.
#include "reprun/record/steplog.hpp"

#include "reprun/core/error.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace reprun {

using json = nlohmann::ordered_json; // keeps the log's (model) order of tensors

StepLogReader::StepLogReader(const std::string& path) : m_path(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, "not a regular file");
  }
  m_size = static_cast<size_t>(st.st_size);
  if (m_size > 0) {
    void* p = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw Error(path, std::string("cannot map: ") + std::strerror(errno));
    }
    ::madvise(p, m_size, MADV_SEQUENTIAL);
    m_data = static_cast<const char*>(p);
    m_mapped = true;
  }
  ::close(fd);
}

StepLogReader::~StepLogReader() {
  if (m_mapped) {
    ::munmap(const_cast<char*>(m_data), m_size);
  }
}

bool StepLogReader::next(std::string_view& line) {
  if (m_pos >= m_size) {
    return false;
  }
  // Give back the pages already read (every 16 MiB), so memory stays flat however long the log:
  // the previous line is released, never the one about to be returned.
  constexpr size_t k_release = 16u << 20;
  if (m_mapped && m_pos - m_released >= k_release) {
    const size_t page = 4096;
    size_t upto = m_pos / page * page;
    ::madvise(const_cast<char*>(m_data) + m_released, upto - m_released, MADV_DONTNEED);
    m_released = upto;
  }
  const void* nl = std::memchr(m_data + m_pos, '\n', m_size - m_pos);
  if (!nl) {
    return false; // partial tail
  }
  size_t end = static_cast<size_t>(static_cast<const char*>(nl) - m_data);
  line = std::string_view(m_data + m_pos, end - m_pos);
  m_pos = end + 1;
  ++m_lineno;
  return true;
}

size_t StepLogReader::partial_tail() const {
  if (m_size == 0 || m_data[m_size - 1] == '\n') {
    return 0;
  }
  const char* last = static_cast<const char*>(memrchr(m_data, '\n', m_size));
  return last ? m_size - static_cast<size_t>(last - m_data) - 1 : m_size;
}

long StepLogReader::count_remaining() {
  long n = 0;
  std::string_view line;
  while (next(line)) {
    ++n;
  }
  return n;
}

long quick_step(std::string_view line) {
  constexpr std::string_view k_prefix = "{\"step\":";
  if (line.substr(0, k_prefix.size()) != k_prefix) {
    return -1;
  }
  long v = -1;
  const char* b = line.data() + k_prefix.size();
  auto [p, ec] = std::from_chars(b, line.data() + line.size(), v);
  if (ec != std::errc() || p == line.data() + line.size() || (*p != ',' && *p != '}')) {
    return -1;
  }
  return v;
}

bool quick_loss(std::string_view line, double& loss) {
  auto p = line.find("\"loss\":");
  if (p == std::string_view::npos) {
    return false;
  }
  const char* b = line.data() + p + 7;
  const char* e = line.data() + line.size();
  if (b < e && *b == '"') {
    std::string_view s(b, static_cast<size_t>(e - b));
    if (s.substr(0, 5) == "\"NaN\"") {
      loss = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    if (s.substr(0, 10) == "\"Infinity\"") {
      loss = std::numeric_limits<double>::infinity();
      return true;
    }
    if (s.substr(0, 11) == "\"-Infinity\"") {
      loss = -std::numeric_limits<double>::infinity();
      return true;
    }
    return false;
  }
  auto [q, ec] = std::from_chars(b, e, loss);
  return ec == std::errc();
}

namespace {

[[noreturn]] void bad(const std::string& path, long lineno, const std::string& what) {
  throw Error(fmt::format("{}:{}", path, lineno), what);
}

// A JSON number, or one of the strings reprun writes for non-finite values.
bool as_number(const json& v, double& out) {
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN" || s == "nan") {
      out = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    if (s == "Infinity" || s == "inf") {
      out = std::numeric_limits<double>::infinity();
      return true;
    }
    if (s == "-Infinity" || s == "-inf") {
      out = -std::numeric_limits<double>::infinity();
      return true;
    }
  }
  return false;
}

void parse_trace(const json& v, const char* key, std::vector<std::pair<std::string, std::string>>& out,
                 const std::string& path, long lineno) {
  if (!v.is_array()) {
    bad(path, lineno, fmt::format("\"{}\" must be a list of {{\"name\", \"xxh3\"}}", key));
  }
  for (const auto& e : v) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) {
      bad(path, lineno, fmt::format("\"{}\" entries need a \"name\"", key));
    }
    std::string sum;
    for (const char* k : {"xxh3", "sha256", "checksum"}) {
      if (e.contains(k) && e[k].is_string()) {
        sum = std::string(k) + ":" + e[k].get<std::string>();
        break;
      }
    }
    out.emplace_back(e["name"].get<std::string>(), sum);
  }
}

} // namespace

// Long because it is the one place every key of a step record is checked, each with its own
// message; the cases read best as one list.
ParsedStep parse_step_line(std::string_view line, const std::string& path, long lineno) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    bad(path, lineno, fmt::format("not valid JSON (at byte {}): {}", e.byte,
                                  std::string(line.substr(0, 60)) + (line.size() > 60 ? "..." : "")));
  }
  if (!j.is_object()) {
    bad(path, lineno, "a step record must be a JSON object");
  }
  ParsedStep s;
  auto it = j.find("step");
  if (it == j.end() || !it->is_number_integer() || it->get<long>() < 0) {
    bad(path, lineno, "missing or invalid \"step\" (a non-negative integer)");
  }
  s.step = it->get<long>();
  if ((it = j.find("epoch")) != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) {
      bad(path, lineno, "\"epoch\" must be an integer");
    }
    s.has_epoch = true;
    s.epoch = it->get<long>();
  }
  if ((it = j.find("loss")) != j.end() && !it->is_null()) {
    if (!as_number(*it, s.loss)) {
      bad(path, lineno, "\"loss\" must be a number");
    }
    s.has_loss = true;
  }
  if ((it = j.find("batch")) != j.end() && !it->is_null()) {
    if (it->is_string()) {
      s.batch = it->get<std::string>();
    } else if (it->is_number_integer()) {
      s.batch = it->dump();
    } else {
      bad(path, lineno, "\"batch\" must be a string");
    }
    s.has_batch = true;
  }
  if ((it = j.find("tensors")) != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      bad(path, lineno, "\"tensors\" must be an object {name: checksum}");
    }
    for (auto t = it->begin(); t != it->end(); ++t) {
      TensorValue v;
      if (t->is_string()) {
        v.checksum = t->get<std::string>();
      } else if (t->is_object()) {
        for (const char* k : {"xxh3", "sha256", "checksum"}) {
          if (t->contains(k) && (*t)[k].is_string()) {
            v.checksum = std::string(k) + ":" + (*t)[k].get<std::string>();
            break;
          }
        }
        if (t->contains("norm")) {
          if (!as_number((*t)["norm"], v.norm)) {
            bad(path, lineno, fmt::format("tensor \"{}\": \"norm\" must be a number", t.key()));
          }
          v.has_norm = true;
        }
        if (v.checksum.empty() && !v.has_norm) {
          bad(path, lineno, fmt::format("tensor \"{}\" needs a checksum or a norm", t.key()));
        }
      } else {
        bad(path, lineno, fmt::format("tensor \"{}\" must be a checksum string or an object", t.key()));
      }
      s.tensors.emplace_back(t.key(), v);
    }
  }
  if ((it = j.find("forward")) != j.end() && !it->is_null()) {
    parse_trace(*it, "forward", s.forward, path, lineno);
  }
  if ((it = j.find("backward")) != j.end() && !it->is_null()) {
    parse_trace(*it, "backward", s.backward, path, lineno);
  }
  if ((it = j.find("metrics")) != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      bad(path, lineno, "\"metrics\" must be an object {name: number}");
    }
    for (auto m = it->begin(); m != it->end(); ++m) {
      double v = 0;
      if (!as_number(*m, v)) {
        bad(path, lineno, fmt::format("metric \"{}\" must be a number", m.key()));
      }
      s.metrics.emplace_back(m.key(), v);
    }
  }
  return s;
}

} // namespace reprun
