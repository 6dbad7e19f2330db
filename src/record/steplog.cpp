// Step-log reader and line parser; see include/reprun/steplog.hpp and docs/run-format.md.
#include "reprun/record/steplog.hpp"

#include "line_index.hpp"
#include "read_ahead.hpp"
#include "reprun/core/error.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace reprun {

using json = nlohmann::ordered_json; // keeps the log's (model) order of tensors

namespace {

constexpr std::align_val_t k_align{4096};

} // namespace

void StepLogReader::FreeAligned::operator()(char* p) const { ::operator delete[](p, k_align); }

StepLogReader::Buffer StepLogReader::allocate(size_t size) {
  return Buffer(static_cast<char*>(::operator new[](size, k_align)));
}

StepLogReader::StepLogReader(const std::string& path, bool read_ahead) : m_path(path) {
  m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (m_fd < 0) {
    throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(m_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(m_fd);
    throw Error(path, "not a regular file");
  }
  m_size = static_cast<uint64_t>(st.st_size);
  ::posix_fadvise(m_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  m_want_ahead = read_ahead && m_size >= k_read_ahead_min;
  m_cap = k_block;
  m_buf = allocate(m_cap);
  m_data = m_buf.get();
}

StepLogReader::~StepLogReader() {
  m_ahead.reset(); // the thread stops before its descriptor closes
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

bool StepLogReader::fill() {
  if (m_eof) {
    return false;
  }
  if (m_want_ahead && !m_ahead) {
    // Started at the first read, once digest_lines() has said what to digest: a finished run's
    // facts cover every line, and the thread digests them as it reads; a limit stays here.
    try {
      m_thread_digests = m_digesting && m_limit < 0;
      m_ahead = std::make_unique<ReadAhead>(m_fd, m_path, m_thread_digests);
    } catch (const std::system_error&) {
      m_want_ahead = false; // no thread to be had: the reader reads for itself
    }
  }
  if (m_digesting && !m_thread_digests) {
    digest_upto(m_pos);
  }
  if (m_ahead) {
    return fill_ahead();
  }
  // Keep the start of the line not yet complete; a line as long as the buffer grows it.
  const size_t keep = m_end - m_pos;
  if (keep == m_cap) {
    auto bigger = allocate(m_cap * 2);
    std::memcpy(bigger.get(), m_buf.get() + m_pos, keep);
    m_buf = std::move(bigger);
    m_data = m_buf.get();
    m_cap *= 2;
  } else if (m_pos > 0) {
    std::memmove(m_buf.get(), m_buf.get() + m_pos, keep);
  }
  m_base += m_pos;
  m_scanned -= m_pos;
  m_pos = 0;
  m_digested = 0;
  m_end = keep;
  m_index = nullptr; // its lines moved
  for (;;) {
    const ssize_t n = ::read(m_fd, m_buf.get() + m_end, m_cap - m_end);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw Error(m_path, std::string("cannot read: ") + std::strerror(errno));
    }
    if (n == 0) {
      m_eof = true;
      return false;
    }
    m_end += static_cast<size_t>(n);
    if (m_index_here && m_end <= std::numeric_limits<uint32_t>::max()) {
      // The buffer starts a line (the kept bytes hold no '\n'): its lines, found as a read-ahead
      // thread finds them, in one loop rather than a search a next().
      index_lines(m_own_index, m_buf.get(), m_end, true, true);
      m_index = &m_own_index;
      m_index_base = 0;
      m_cursor = 0;
    }
    return true;
  }
}

bool StepLogReader::fill_ahead() {
  const ReadAhead::Block b = m_ahead->take();
  if (b.size == 0) {
    m_eof = true; // what is left in m_data is a partial line
    return false;
  }
  // The start of the line not yet complete goes right before the block's bytes, in its headroom;
  // a line longer than that, with the block, to the spill buffer.
  const size_t keep = m_end - m_pos, scanned = m_scanned - m_pos;
  const uint64_t first = m_base + m_pos; // file offset of the first byte not taken
  if (keep <= ReadAhead::k_headroom) {
    if (keep > 0) {
      std::memcpy(b.data + ReadAhead::k_headroom - keep, m_data + m_pos, keep);
    }
    if (m_slot >= 0) {
      m_ahead->release(m_slot);
    }
    m_data = b.data;
    m_slot = b.slot;
    m_pos = ReadAhead::k_headroom - keep;
    m_end = ReadAhead::k_headroom + b.size;
    // The kept bytes hold no '\n': every one from m_pos on is the block's, in its index.
    m_index = b.lines;
    m_index_base = ReadAhead::k_headroom;
    m_cursor = 0;
  } else {
    Buffer spill = allocate(keep + b.size);
    std::memcpy(spill.get(), m_data + m_pos, keep);
    std::memcpy(spill.get() + keep, b.data + ReadAhead::k_headroom, b.size);
    m_ahead->release(b.slot);
    if (m_slot >= 0) {
      m_ahead->release(m_slot);
    }
    m_index = nullptr; // the slot, and its index, went back to the thread
    m_spill = std::move(spill);
    m_data = m_spill.get();
    m_slot = -1;
    m_pos = 0;
    m_end = keep + b.size;
  }
  m_base = first - m_pos;
  m_scanned = m_pos + scanned;
  m_digested = m_pos;
  return true;
}

void StepLogReader::digest_upto(size_t end) {
  if (end == m_digested) {
    return; // nothing new (and m_data may be no buffer yet)
  }
  m_digest.update(m_data + m_digested, end - m_digested);
  m_digested = end;
}

void StepLogReader::take(size_t end) {
  if (m_index) {
    const LineIndex::Line& l = m_index->lines[m_cursor++]; // its '\n' is at `end`: the first from m_pos on
    m_taken_step = l.step;
    m_taken_has_loss = l.has_loss;
    m_taken_loss = l.loss;
  } else {
    m_taken_step = -1;
    m_taken_has_loss = false;
  }
  m_pos = end + 1;
  m_scanned = m_pos;
  if (++m_lineno == m_limit && m_digesting) {
    digest_upto(m_pos); // the last line the facts cover: the rest is read, not digested
    m_digesting = false;
  }
}

void StepLogReader::take_lines(size_t bytes, long lines) {
  if (lines <= 0) {
    return;
  }
  m_lineno += lines - 1;
  if (m_index) {
    m_cursor += static_cast<size_t>(lines - 1);
  }
  take(m_pos + bytes - 1); // the last one: its '\n' ends the bytes, and the digest limit is met there
}

bool StepLogReader::next(std::string_view& line) {
  for (;;) {
    if (m_index) {
      // Read ahead: the thread found the '\n's, no search here.
      if (m_cursor < m_index->lines.size()) {
        const size_t end = m_index_base + m_index->lines[m_cursor].end;
        line = std::string_view(m_data + m_pos, end - m_pos);
        take(end);
        return true;
      }
    } else if (const void* nl = std::memchr(m_data + m_scanned, '\n', m_end - m_scanned)) {
      const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - m_data);
      line = std::string_view(m_data + m_pos, end - m_pos);
      take(end);
      return true;
    }
    m_scanned = m_end;
    if (!fill()) {
      m_at_end = true; // the rest, if any, is a partial tail
      return false;
    }
  }
}

bool StepLogReader::next_if(std::string_view expected) {
  const size_t n = expected.size();
  while (m_end - m_pos <= n) {
    if (!fill()) {
      return false;
    }
  }
  const char* p = m_data + m_pos;
  if (p[n] != '\n' || std::memcmp(p, expected.data(), n) != 0) {
    return false;
  }
  take(m_pos + n);
  return true;
}

StepLogReader::Known StepLogReader::known() const {
  if (!m_index) {
    return {};
  }
  return {m_data + m_index_base, m_index->lines.data() + m_cursor, m_index->lines.size() - m_cursor};
}

void StepLogReader::take_known(long lines) {
  if (lines > 0) {
    take_lines(m_index_base + m_index->lines[m_cursor + static_cast<size_t>(lines) - 1].end + 1 - m_pos, lines);
  }
}

void StepLogReader::want_losses() {
  if (m_ahead) {
    m_ahead->want_losses();
  } else {
    m_index_here = true; // from the next block read
  }
}

long StepLogReader::count_remaining() {
  const long before = m_lineno;
  std::string_view line;
  while (next(line)) {
  }
  return m_lineno - before;
}

void StepLogReader::digest_lines(long limit) {
  m_limit = limit;
  m_digesting = limit != 0;
  m_digested = m_pos;
}

uint64_t StepLogReader::digest_value() {
  if (m_thread_digests) {
    return m_ahead->digest(); // complete: digest_complete() means the end of the file here
  }
  if (m_digesting) {
    digest_upto(m_pos);
  }
  return m_digest.digest();
}

namespace {

// A step number at [b, e): its digits by a plain loop (std::from_chars for a long took a seventh of
// a diff's read-ahead thread), more than 18 of them by from_chars, which says when they overflow.
// Where the digits end, or nullptr when there are none or too many.
const char* step_digits(const char* b, const char* e, long& v) {
  long x = 0;
  const char* p = b;
  for (; p < e && p - b < 18 && *p >= '0' && *p <= '9'; ++p) {
    x = x * 10 + (*p - '0');
  }
  if (p < e && p - b == 18 && *p >= '0' && *p <= '9') {
    auto [q, ec] = std::from_chars(b, e, x);
    if (ec != std::errc()) {
      return nullptr;
    }
    p = q;
  }
  if (p == b) {
    return nullptr;
  }
  v = x;
  return p;
}

} // namespace

long quick_step(std::string_view line) {
  constexpr std::string_view k_prefix = "{\"step\":";
  if (line.size() <= k_prefix.size() || std::memcmp(line.data(), k_prefix.data(), k_prefix.size()) != 0) {
    return -1;
  }
  long v = -1;
  const char* const e = line.data() + line.size();
  const char* p = step_digits(line.data() + k_prefix.size(), e, v);
  if (!p || p == e || (*p != ',' && *p != '}')) {
    return -1;
  }
  return v;
}

namespace {

// Where reprun's own layout puts the loss, {"step":N,"epoch":M,"loss":, or npos: checked, not
// searched (after a divergence a diff reads two losses a line).
size_t own_loss_key(std::string_view line) {
  constexpr std::string_view k_step = "{\"step\":", k_epoch = ",\"epoch\":", k_loss = ",\"loss\":";
  size_t p = k_step.size();
  if (line.substr(0, p) != k_step) {
    return std::string_view::npos;
  }
  for (std::string_view key : {k_epoch, k_loss}) {
    while (p < line.size() && line[p] >= '0' && line[p] <= '9') {
      ++p;
    }
    if (line.substr(p, key.size()) != key) {
      return std::string_view::npos;
    }
    p += key.size();
  }
  return p - 7; // at "loss":
}

// The first "loss": of a line, by a plain loop: string_view::find called memchr once per quote
// before it (a sixth of a diff's time on logs that part).
size_t find_loss_key(std::string_view line) {
  constexpr std::string_view k_key = "\"loss\":";
  for (size_t p = 0; p + k_key.size() <= line.size(); ++p) {
    if (line[p] == '"' && std::memcmp(line.data() + p, k_key.data(), k_key.size()) == 0) {
      return p;
    }
  }
  return std::string_view::npos;
}

} // namespace

bool quick_step_loss(std::string_view line, long& step, double& loss) {
  constexpr std::string_view k_step = "{\"step\":", k_epoch = ",\"epoch\":", k_loss = ",\"loss\":";
  const char* const e = line.data() + line.size();
  if (line.size() < k_step.size() + k_epoch.size() + k_loss.size() + 3 || line.back() != '}' ||
      std::memcmp(line.data(), k_step.data(), k_step.size()) != 0) {
    return false;
  }
  const char* p = step_digits(line.data() + k_step.size(), e, step);
  if (!p || e - p < static_cast<std::ptrdiff_t>(k_epoch.size()) || std::memcmp(p, k_epoch.data(), k_epoch.size()) != 0) {
    return false;
  }
  p += k_epoch.size();
  while (p < e && *p >= '0' && *p <= '9') {
    ++p;
  }
  if (e - p < static_cast<std::ptrdiff_t>(k_loss.size()) || std::memcmp(p, k_loss.data(), k_loss.size()) != 0) {
    return false;
  }
  p += k_loss.size();
  return p < e && *p != '"' && std::from_chars(p, e, loss).ec == std::errc();
}

bool quick_loss(std::string_view line, double& loss) {
  size_t p = own_loss_key(line);
  if (p == std::string_view::npos && (p = find_loss_key(line)) == std::string_view::npos) {
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
