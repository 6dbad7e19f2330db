// inputs.jsonl's lines and the manifest's "inputs" section, written and read back: see
// include/reprun/meta/inputs.hpp. Apart from inputs.cpp (what a program read, classified and
// fingerprinted) as the record's JSON is apart from making it.
#include "reprun/meta/inputs.hpp"

#include "reprun/core/hash.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace reprun {

using namespace std::literals; // "..."sv: appended with their length known, no strlen

using ojson = nlohmann::ordered_json;

namespace {

bool ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// A file name as JSON can carry it: bytes that are not UTF-8 (Linux names are any bytes but '/' and
// NUL) written as \xHH, so that inputs.jsonl and the manifest stay valid JSON and two such names
// stay apart.
std::string json_name(const std::string& s) {
  if (ascii(s)) {
    return s; // ASCII: UTF-8 as it is
  }
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size() && !(n == 2 && c < 0xC2);
    for (size_t k = 1; ok && k < n; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += fmt::format("\\x{:02X}", c);
      ++i;
    }
  }
  return out;
}


// Whether `v` holds a byte that JSON escapes (a control byte, '"', '\\'), or, with `ascii`, one from
// 0x80: each byte looked at, without an early exit, so that the compiler reads 32 or 64 at a time
// (inputs.jsonl: 10,000 lines of 400 bytes, each looked at twice).
bool any_special(std::string_view v, bool ascii) {
  unsigned bad = 0;
  const unsigned top = ascii ? 0x80u : 0x100u;
  for (const char ch : v) {
    const unsigned c = static_cast<unsigned char>(ch);
    bad |= static_cast<unsigned>(c < 0x20u) | static_cast<unsigned>(c == '"') | static_cast<unsigned>(c == '\\') |
           static_cast<unsigned>(c >= top);
  }
  return bad != 0;
}

// inputs.jsonl's line written through a cursor into a buffer with room for all of it (an upper
// bound, kept from line to line: never cleared again), then appended to the output in one piece:
// its 30 pieces copied with no check of a string's capacity each (10,000 lines and more).
class LineOut {
public:
  LineOut(std::string& out, size_t room) : m_out(out) {
    thread_local std::string t_room;
    if (t_room.size() < room) {
      t_room.resize(room);
    }
    m_buf = &t_room;
    m_p = t_room.data();
  }
  LineOut(const LineOut&) = delete;
  LineOut& operator=(const LineOut&) = delete;
  ~LineOut() {
    m_out.append(m_buf->data(), static_cast<size_t>(m_p - m_buf->data()));
    if (m_buf->size() > k_kept_room) {
      std::string().swap(*m_buf); // a folder's names: not kept for the next lines
    }
  }

  void put(std::string_view s) {
    std::memcpy(m_p, s.data(), s.size());
    m_p += s.size();
  }
  void put(char c) { *m_p++ = c; }
  template <class T> void number(T v) { m_p = std::to_chars(m_p, m_p + 24, v).ptr; }
  void boolean(bool v) { put(v ? "true"sv : "false"sv); }

  // `v` as a JSON string, as nlohmann's dump() writes it (valid UTF-8 in: json_name's output).
  void string(std::string_view v) {
    put('"');
    if (!any_special(v, false)) {
      put(v); // nothing to escape
      put('"');
      return;
    }
    for (const char ch : v) {
      const auto c = static_cast<unsigned char>(ch);
      switch (c) {
      case '"': put("\\\""sv); break;
      case '\\': put("\\\\"sv); break;
      case '\b': put("\\b"sv); break;
      case '\f': put("\\f"sv); break;
      case '\n': put("\\n"sv); break;
      case '\r': put("\\r"sv); break;
      case '\t': put("\\t"sv); break;
      default:
        if (c < 0x20) {
          put("\\u00"sv);
          put(k_hex[c >> 4]);
          put(k_hex[c & 15]);
        } else {
          put(ch);
        }
      }
    }
    put('"');
  }

  // A file name as json_name writes it, as a JSON string.
  void name(const std::string& s) {
    if (!any_special(s, true)) {
      put('"'); // ASCII with nothing to escape (the usual name): as it is
      put(s);
      put('"');
    } else if (ascii(s)) {
      string(s); // ASCII: no copy
    } else {
      string(json_name(s));
    }
  }

  // `items` as a JSON array of strings (`names`: of file names).
  void array(const std::vector<std::string>& items, bool names) {
    put('[');
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) {
        put(',');
      }
      if (names) {
        name(items[i]);
      } else {
        string(items[i]);
      }
    }
    put(']');
  }

  // content_json's object.
  void content(const ContentSummary& c) {
    put("{\"size\":"sv);
    number(c.size);
    put(",\"sha256\":"sv);
    string(c.sha256);
    if (c.text) {
      put(",\"lines\":"sv);
      number(c.lines);
      put(",\"block_lines\":"sv);
      number(c.block_lines);
    } else {
      put(",\"block_bytes\":"sv);
      number(c.block_bytes);
    }
    put(",\"blocks\":"sv);
    array(c.blocks, false);
    if (c.text) {
      put(",\"tail_from\":"sv);
      number(c.tail_from);
      put(",\"tail\":\""sv);
      for (const uint32_t v : c.tail) {
        for (int shift = 28; shift >= 0; shift -= 4) {
          put(k_hex[(v >> shift) & 15]);
        }
      }
      put('"');
    }
    put('}');
  }

private:
  static constexpr size_t k_kept_room = 1 << 20;
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string& m_out;
  std::string* m_buf = nullptr;
  char* m_p = nullptr;
};

// Upper bounds of what LineOut writes: a string or name of n bytes takes at most 6 a byte (a control
// byte's \u00XX; json_name's \xHH of a byte that is not UTF-8, its backslash escaped: 5) and its
// quotes; a number at most 24. The keys, punctuation and numbers of a line (append_input_line) take
// under 440 bytes, those of a content object under 180.
constexpr size_t k_line_room = 512;
constexpr size_t k_content_room = 256;

size_t text_room(std::string_view s) { return 6 * s.size() + 3; }

size_t strings_room(const std::vector<std::string>& items) {
  size_t n = 2;
  for (const auto& s : items) {
    n += text_room(s);
  }
  return n;
}

size_t content_room(const ContentSummary& c) {
  return k_content_room + text_room(c.sha256) + strings_room(c.blocks) + 8 * c.tail.size();
}

void append_content(std::string& out, const ContentSummary& c) {
  LineOut o(out, content_room(c));
  o.content(c);
}

} // namespace

ojson content_json(const ContentSummary& c) {
  std::string text;
  append_content(text, c);
  return ojson::parse(text);
}

ContentSummary content_from_json(const ojson& c) {
  ContentSummary s;
  s.size = c.value("size", uint64_t{0});
  s.sha256 = c.value("sha256", "");
  s.text = c.contains("lines");
  s.lines = c.value("lines", 0L);
  s.block_lines = c.value("block_lines", 0L);
  s.block_bytes = c.value("block_bytes", uint64_t{0});
  if (c.contains("blocks") && c["blocks"].is_array()) {
    s.blocks = c["blocks"].get<std::vector<std::string>>();
  }
  s.tail_from = c.value("tail_from", 0L);
  const std::string tail = c.value("tail", "");
  for (size_t i = 0; i + 8 <= tail.size(); i += 8) {
    s.tail.push_back(static_cast<uint32_t>(std::stoul(tail.substr(i, 8), nullptr, 16)));
  }
  return s;
}

void append_input_line(std::string& out, const InputFile& f) {
  size_t room = k_line_room + text_room(f.path) + text_room(f.cls) + text_room(f.opened_by) + text_room(f.note) +
                text_room(f.listing_sha256) + strings_room(f.names);
  if (f.hashed) {
    room += content_room(f.content);
  }
  if (f.left) {
    room += content_room(f.left->content);
  }
  LineOut o(out, room);
  o.put("{\"path\":"sv);
  o.name(f.path);
  o.put(",\"class\":"sv);
  o.string(f.cls);
  if (f.folder) {
    o.put(",\"folder\":true"sv);
  }
  o.put(",\"read\":"sv);
  o.boolean(f.read);
  o.put(",\"written\":"sv);
  o.boolean(f.written);
  o.put(",\"existed\":"sv);
  o.boolean(f.existed);
  o.put(",\"opened_by\":"sv);
  o.name(f.opened_by);
  o.put(",\"size\":"sv);
  o.number(f.size);
  o.put(",\"mtime_ns\":"sv);
  o.number(f.mtime_ns);
  if (f.first_open >= 0) {
    o.put(",\"first_open\":"sv);
    o.number(f.first_open);
  }
  if (f.changed_while_running) {
    o.put(",\"changed_while_running\":true"sv);
  }
  if (f.made_during_run) {
    o.put(",\"made_during_run\":true"sv);
  }
  if (f.stat_only) {
    o.put(",\"stat_only\":true"sv);
  }
  if (f.hashed) {
    o.put(",\"content\":"sv);
    o.content(f.content);
  }
  if (f.folder && !f.listing_sha256.empty()) {
    o.put(",\"listing_sha256\":"sv);
    o.string(f.listing_sha256);
    o.put(",\"names\":"sv);
    o.array(f.names, true);
  }
  if (f.left) {
    o.put(",\"left\":{\"size\":"sv);
    o.number(f.left->size);
    o.put(",\"mtime_ns\":"sv);
    o.number(f.left->mtime_ns);
    if (f.left->hashed) {
      o.put(",\"content\":"sv);
      o.content(f.left->content);
    }
    o.put('}');
  }
  if (f.code_copy >= 0) {
    o.put(",\"code_copy\":"sv);
    o.number(f.code_copy);
  }
  if (!f.note.empty()) {
    o.put(",\"note\":"sv);
    o.name(f.note);
  }
  o.put("}\n"sv);
}

std::string input_line(const InputFile& f) {
  std::string out;
  out.reserve(f.hashed ? 320 : 200);
  append_input_line(out, f);
  return out;
}

InputFile input_from_json(const ojson& j) {
  InputFile f;
  f.path = j.value("path", "");
  f.cls = j.value("class", "");
  f.folder = j.value("folder", false);
  f.read = j.value("read", false);
  f.written = j.value("written", false);
  f.existed = j.value("existed", true);
  f.opened_by = j.value("opened_by", "");
  f.size = j.value("size", uint64_t{0});
  f.mtime_ns = j.value("mtime_ns", int64_t{0});
  f.changed_while_running = j.value("changed_while_running", false);
  f.made_during_run = j.value("made_during_run", false);
  f.stat_only = j.value("stat_only", false);
  f.note = j.value("note", "");
  f.code_copy = j.value("code_copy", -1L);
  f.first_open = j.value("first_open", -1L);
  f.listing_sha256 = j.value("listing_sha256", "");
  if (j.contains("names") && j["names"].is_array()) {
    f.names = j["names"].get<std::vector<std::string>>();
  }
  if (j.contains("content") && j["content"].is_object()) {
    f.hashed = true;
    f.content = content_from_json(j["content"]);
  }
  if (j.contains("left") && j["left"].is_object()) {
    const ojson& l = j["left"];
    auto left = std::make_shared<LeftFile>();
    left->size = l.value("size", uint64_t{0});
    left->mtime_ns = l.value("mtime_ns", int64_t{0});
    if (l.contains("content") && l["content"].is_object()) {
      left->hashed = true;
      left->content = content_from_json(l["content"]);
    }
    f.left = std::move(left);
  }
  return f;
}

namespace {

// The JSON type named for a message: "a number", "a string".
std::string type_phrase(const ojson& v) {
  const std::string t = v.type_name();
  return (t == "object" || t == "array" ? "an " : "a ") + t;
}

enum class Want { string, boolean, integer, unsigned_integer, object, array, strings };

bool is(const ojson& v, Want w) {
  switch (w) {
  case Want::string: return v.is_string();
  case Want::boolean: return v.is_boolean();
  case Want::integer: return v.is_number_integer();
  case Want::unsigned_integer: return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  case Want::object: return v.is_object();
  case Want::array: return v.is_array();
  case Want::strings: return v.is_array() && std::all_of(v.begin(), v.end(), [](const ojson& e) { return e.is_string(); });
  }
  return false;
}

const char* want_phrase(Want w) {
  switch (w) {
  case Want::string: return "a string";
  case Want::boolean: return "true or false";
  case Want::integer: return "an integer";
  case Want::unsigned_integer: return "a count (an integer, 0 or more)";
  case Want::object: return "an object";
  case Want::array: return "an array";
  case Want::strings: return "an array of strings";
  }
  return "";
}

// The first key of `j` (an object) among `keys` whose value is of another type, as "PREFIXKEY: must
// be ..., not ..."; "" when each is absent or of its type.
std::string typed_keys_error(const ojson& j, std::initializer_list<std::pair<const char*, Want>> keys, const std::string& prefix) {
  for (const auto& [key, want] : keys) {
    const auto it = j.find(key);
    if (it != j.end() && !is(*it, want)) {
      return fmt::format("{}{}: must be {}, not {}", prefix, key, want_phrase(want), type_phrase(*it));
    }
  }
  return "";
}

std::string content_error(const ojson& c, const std::string& prefix) {
  if (!c.is_object()) {
    return fmt::format("{}: must be an object, not {}", prefix, type_phrase(c));
  }
  return typed_keys_error(c,
                          {{"size", Want::unsigned_integer}, {"sha256", Want::string}, {"lines", Want::integer},
                           {"block_lines", Want::integer}, {"block_bytes", Want::unsigned_integer},
                           {"blocks", Want::strings}, {"tail_from", Want::integer}, {"tail", Want::string}},
                          prefix + ".");
}

} // namespace

std::string input_record_error(const ojson& j) {
  if (!j.is_object()) {
    return "not an object";
  }
  if (!j.contains("path") || !j["path"].is_string() || j["path"].get_ref<const std::string&>().empty()) {
    return j.contains("path") ? fmt::format("path: must be a file's path (a string), not {}", j["path"].is_string() ? "\"\"" : type_phrase(j["path"]))
                              : "path: missing";
  }
  if (!j.contains("class")) {
    return "class: missing";
  }
  const ojson& cls = j["class"];
  if (!cls.is_string() || (cls != "data" && cls != "code" && cls != "other" && cls != "written")) {
    return fmt::format("class: must be one of data, code, other, written, not {}", cls.is_string() ? cls.dump() : type_phrase(cls));
  }
  std::string e = typed_keys_error(
      j, {{"folder", Want::boolean}, {"read", Want::boolean}, {"written", Want::boolean}, {"existed", Want::boolean},
          {"changed_while_running", Want::boolean}, {"made_during_run", Want::boolean}, {"stat_only", Want::boolean},
          {"opened_by", Want::string}, {"note", Want::string}, {"listing_sha256", Want::string},
          {"size", Want::unsigned_integer}, {"mtime_ns", Want::integer}, {"code_copy", Want::integer},
          {"first_open", Want::integer}, {"names", Want::strings}, {"content", Want::object}, {"left", Want::object}},
      "");
  if (e.empty() && j.contains("content")) {
    e = content_error(j["content"], "content");
  }
  if (e.empty() && j.contains("left")) {
    const ojson& l = j["left"];
    e = typed_keys_error(l, {{"size", Want::unsigned_integer}, {"mtime_ns", Want::integer}, {"content", Want::object}}, "left.");
    if (e.empty() && l.contains("content")) {
      e = content_error(l["content"], "left.content");
    }
  }
  return e;
}

std::string inputs_section_error(const ojson& inputs) {
  if (!inputs.is_object()) {
    return fmt::format("must be an object, not {}", type_phrase(inputs));
  }
  if (const auto r = inputs.find("recorded"); r == inputs.end() || !(r->is_string() || r->is_boolean())) {
    return r == inputs.end() ? "recorded: missing"
                             : fmt::format("recorded: must be the record's format (a string) or false, not {}", type_phrase(*r));
  }
  return typed_keys_error(inputs,
                          {{"counts", Want::object}, {"processes", Want::integer}, {"files_sha256", Want::string},
                           {"folders", Want::array}, {"unrecorded", Want::array}, {"probes", Want::array},
                           {"preload", Want::string}, {"why", Want::string}},
                          "");
}

ojson inputs_manifest(const InputsRecord& r) {
  std::vector<const InputFile*> listed; // data and code files
  ojson folders = ojson::array();
  long counts[4] = {0, 0, 0, 0}; // data, code, other, written: files
  long data_folders = 0;          // listed folders of data, counted apart from the files
  for (const auto& f : r.files) {
    const int k = f.cls == "data" ? 0 : f.cls == "code" ? 1 : f.cls == "other" ? 2 : 3;
    if (k == 0 && f.folder) {
      ++data_folders;
    } else {
      ++counts[k];
    }
    if (k >= 2) {
      continue;
    }
    if (f.folder) {
      folders.push_back({{"path", json_name(f.path)}, {"entries", f.names.size()}, {"listing_sha256", f.listing_sha256}});
    } else {
      listed.push_back(&f);
    }
  }
  ojson unrecorded = ojson::array();
  for (const auto& u : r.unrecorded) {
    unrecorded.push_back({{"path", json_name(u.path)}, {"reason", u.reason}});
  }
  ojson probes = ojson::array();
  for (const auto& u : r.probes) {
    probes.push_back({{"path", json_name(u.path)}, {"reason", u.reason}});
  }
  ojson m = {{"recorded", "reprun.files/3"},
             {"counts",
              {{"data", counts[0]}, {"data_folders", data_folders}, {"code", counts[1]}, {"other", counts[2]},
               {"written", counts[3]}}},
             {"processes", r.processes}};
  constexpr size_t k_listed = 200; // more go to inputs.jsonl only; the manifest keeps a digest of them
  if (listed.size() <= k_listed) {
    ojson files = ojson::array();
    for (const InputFile* f : listed) {
      ojson e = {{"path", json_name(f->path)}, {"class", f->cls}};
      if (f->hashed) {
        e["size"] = f->content.size;
        e["sha256"] = f->content.sha256;
      } else {
        e["size"] = f->size;
        e["missing"] = !f->existed;
        if (!f->note.empty()) {
          e["note"] = json_name(f->note);
        }
      }
      files.push_back(std::move(e));
    }
    m["files"] = files;
  } else {
    Sha256 sha;
    for (const InputFile* f : listed) { // no copy of a path that is ASCII, nor of a digest
      if (ascii(f->path)) {
        sha.update_field("path", f->path);
      } else {
        sha.update_field("path", json_name(f->path));
      }
      sha.update_field("sha256", f->hashed ? std::string_view(f->content.sha256) : std::string_view());
    }
    m["files_sha256"] = sha.hex_digest();
  }
  m["folders"] = folders;
  m["unrecorded"] = unrecorded;
  if (!probes.empty()) {
    m["probes"] = probes;
  }
  return m;
}

} // namespace reprun
