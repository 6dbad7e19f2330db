// What two runs read, compared: see include/reprun/audit/inputs_diff.hpp.
#include "reprun/audit/inputs_diff.hpp"

#include "reprun/audit/outside_inputs.hpp"
#include "reprun/core/error.hpp"
#include "reprun/meta/inputs.hpp"
#include "reprun/meta/redact.hpp"
#include "reprun/record/run_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace reprun {

using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::string grouped(long long n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string s = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      s += ',';
    }
    s += digits[i];
  }
  return s;
}

std::string name_list(const std::vector<std::string>& v, size_t most) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < most; ++i) {
    s += (i ? ", " : "") + v[i];
  }
  return v.size() > most ? s + fmt::format(" and {} more", v.size() - most) : s;
}

namespace {

// A key prefix: "inputs" covers "inputs.files.x", and a folder covers its files ("inputs.files.samples"
// covers "inputs.files.samples/001.npy").
bool has_prefix(const std::string& key, const std::string& p) {
  return key == p || (key.size() > p.size() && key.compare(0, p.size(), p) == 0 &&
                      (key[p.size()] == '.' || (key[p.size()] == '/' && p.rfind("inputs.files.", 0) == 0)));
}

// `d`, ignored when --ignore-meta names its key or a prefix of it.
MetaDelta named_ignored(MetaDelta d, const DiffOptions& opt) {
  if (std::any_of(opt.ignore_meta.begin(), opt.ignore_meta.end(), [&](const std::string& p) { return has_prefix(d.key, p); })) {
    d.kind = MetaDelta::Kind::ignored;
  }
  return d;
}


// The lines whose digests differ but whose copies are the same: a credential's value, redacted in
// both copies, changed there ("    4 ~ api_key = (redacted): its value changed"). Only where every
// line has its digest (tail_from 0) and the line counts agree.
std::string redacted_changes(const ContentSummary& a, const ContentSummary& b, const std::string& ca,
                             const std::string& cb) {
  if (a.tail_from != 0 || b.tail_from != 0 || a.lines != b.lines || a.tail.size() != b.tail.size()) {
    return "";
  }
  auto lines_of = [](const std::string& text) {
    std::vector<std::string_view> v;
    std::string_view t = text;
    while (!t.empty()) {
      const size_t nl = t.find('\n');
      v.push_back(t.substr(0, nl));
      t = nl == std::string_view::npos ? std::string_view() : t.substr(nl + 1);
    }
    return v;
  };
  const auto la = lines_of(ca), lb = lines_of(cb);
  std::string out;
  for (size_t i = 0; i < a.tail.size() && i < la.size() && i < lb.size(); ++i) {
    if (a.tail[i] != b.tail[i] && la[i] == lb[i]) {
      out += fmt::format("{:>5} ~ {}: its value changed\n", i + 1, la[i]);
    }
  }
  return out;
}

} // namespace

std::string describe_content_change(const ContentSummary& a, const ContentSummary& b) {
  if (a.text && b.text && a.block_lines == b.block_lines && a.block_lines > 0) {
    const size_t bl = static_cast<size_t>(a.block_lines);
    size_t k = 0; // leading whole blocks that are equal (a last, partial block is never whole)
    while (k < a.blocks.size() && k < b.blocks.size() && a.blocks[k] == b.blocks[k] &&
           (k + 1) * bl <= static_cast<size_t>(std::min(a.lines, b.lines))) {
      ++k;
    }
    // From there line by line, where both keep the line's digest (their last lines).
    long line = static_cast<long>(k * bl);
    auto known = [](const ContentSummary& s, long l) { return l >= s.tail_from && l < s.tail_from + static_cast<long>(s.tail.size()); };
    bool exact = false;
    while (line < a.lines && line < b.lines && known(a, line) && known(b, line) &&
           a.tail[static_cast<size_t>(line - a.tail_from)] == b.tail[static_cast<size_t>(line - b.tail_from)]) {
      ++line;
      exact = true;
    }
    const std::string counts = fmt::format("{} -> {} lines", grouped(a.lines), grouped(b.lines));
    auto all_known = [](const ContentSummary& s) { return s.tail_from == 0 && static_cast<long>(s.tail.size()) == s.lines; };
    if (a.lines == b.lines && all_known(a) && all_known(b)) {
      // Every line's digest is kept (a file of up to 8,192 lines): the lines that changed in place.
      std::vector<long> changed;
      for (long l = 0; l < a.lines; ++l) {
        if (a.tail[static_cast<size_t>(l)] != b.tail[static_cast<size_t>(l)]) {
          changed.push_back(l + 1);
        }
      }
      if (!changed.empty()) {
        std::string which;
        for (size_t i = 0; i < changed.size() && i < 3; ++i) {
          which += (i == 0 ? "" : i + 1 == changed.size() ? " and " : ", ") + grouped(changed[i]);
        }
        const std::string in_both = fmt::format("{} line{} in both", grouped(a.lines), a.lines == 1 ? "" : "s");
        if (changed.size() == 1) {
          return fmt::format("line {} changed ({})", which, in_both);
        }
        if (changed.size() <= 3) {
          return fmt::format("lines {} changed ({})", which, in_both);
        }
        return fmt::format("{} lines changed, the first at line {} ({})", grouped(static_cast<long long>(changed.size())),
                           grouped(changed.front()), in_both);
      }
    }
    // "; the first 1,500 are identical", "; the first line is identical", nothing for an empty file.
    auto first_identical = [](long n) {
      return n == 0 ? std::string() : n == 1 ? "; the first line is identical" : fmt::format("; the first {} are identical", grouped(n));
    };
    if (line == a.lines && a.lines < b.lines) {
      return fmt::format("{}{} ({} appended)", counts, first_identical(a.lines), grouped(b.lines - a.lines));
    }
    if (line == b.lines && b.lines < a.lines) {
      return fmt::format("{}{} ({} removed at the end)", counts, first_identical(b.lines), grouped(a.lines - b.lines));
    }
    if (exact || (known(a, line) && known(b, line))) {
      return fmt::format("{}; the first difference is at line {}", counts, grouped(line + 1));
    }
    if (k == 0) { // in the first block: no line before it is known identical
      return fmt::format("{}; the first difference is in lines 1-{}", counts, grouped(static_cast<long long>(bl)));
    }
    return fmt::format("{}; the first {} are identical, and the first difference is in lines {}-{}", counts,
                       grouped(static_cast<long long>(k * bl)), grouped(static_cast<long long>(k * bl + 1)),
                       grouped(static_cast<long long>((k + 1) * bl)));
  }
  const std::string sizes = fmt::format("{} -> {} bytes", grouped(static_cast<long long>(a.size)),
                                        grouped(static_cast<long long>(b.size)));
  if (a.block_bytes > 0 && a.block_bytes == b.block_bytes) {
    size_t k = 0;
    while (k < a.blocks.size() && k < b.blocks.size() && a.blocks[k] == b.blocks[k]) {
      ++k;
    }
    const uint64_t from = k * a.block_bytes;
    return fmt::format("{}; the first differing block is bytes {}-{}", sizes, grouped(static_cast<long long>(from)),
                       grouped(static_cast<long long>(std::min(std::max(a.size, b.size), from + a.block_bytes))));
  }
  return sizes + "; its content differs";
}

namespace {

bool is_input_delta(const MetaDelta& m) {
  return m.kind == MetaDelta::Kind::material && m.key.rfind("inputs.files.", 0) == 0;
}

bool is_digest(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

std::string differing_inputs(const DiffResult& r, size_t most) {
  std::vector<std::string> named;
  for (const auto& m : r.meta) {
    if (is_input_delta(m)) {
      named.push_back(fmt::format("{} ({})", m.key.substr(13), m.detail));
    }
  }
  return name_list(named, most);
}

std::string input_changed_between(const DiffResult& r) {
  for (const auto& m : r.meta) {
    if (is_input_delta(m) && is_digest(m.a) && is_digest(m.b)) {
      return fmt::format("{}: {}", m.key.substr(13), m.detail);
    }
  }
  return "";
}

namespace {

// A path as an argument gave it (./train, ../scripts/train.py, data/t.csv), as inputs.jsonl keys a
// file: absolute, relative to the working directory when under it.
std::string inputs_key(const std::string& given, const std::string& cwd) {
  fs::path p(given);
  if (!p.is_absolute() && cwd.empty()) {
    return given;
  }
  p = (p.is_absolute() ? p : fs::path(cwd) / p).lexically_normal();
  const fs::path rel = p.lexically_relative(cwd);
  return !rel.empty() && rel.begin()->string() != ".." ? rel.generic_string() : p.generic_string();
}

std::string working_directory(const ojson& m) {
  return m.is_object() && m.contains("working_directory") && m["working_directory"].is_string()
             ? m["working_directory"].get<std::string>()
             : std::string();
}

// The program exec ran (its argument 0) as inputs.jsonl keys a file; "" when the manifest names none.
std::string program_file(const ojson& m) {
  const ojson* files = m.is_object() && m.contains("program") && m["program"].is_object() && m["program"].contains("argv_files")
                           ? &m["program"]["argv_files"]
                           : nullptr;
  if (files && files->is_array()) {
    for (const auto& f : *files) {
      if (f.is_object() && f.contains("index") && f["index"].is_number_integer() && f["index"] == 0 && f.contains("path") &&
          f["path"].is_string()) {
        return inputs_key(f["path"].get<std::string>(), working_directory(m));
      }
    }
  }
  return "";
}

// Two checkouts side by side (/ci/a/proj and /ci/b/proj, each with ../scripts/train.py): a file
// outside each run's working directory that one read and the other did not by its absolute path,
// but did at the same place relative to its own (../scripts/train.py in both), is the same file
// for the comparison, keyed by that relative path. Only below a folder other than "/" that holds
// both the file and the working directory.
void pair_outside_files(const ojson& ma, const ojson& mb, std::map<std::string, InputFile>& fa,
                        std::map<std::string, InputFile>& fb) {
  const std::string ca = working_directory(ma), cb = working_directory(mb);
  if (ca.empty() || cb.empty() || ca == cb) {
    return;
  }
  auto relative = [](const std::string& path, const std::string& cwd) -> std::string {
    const fs::path p(path), c(cwd);
    auto pi = p.begin(), ci = c.begin(); // "/" first, then the top folder: both must share it
    if (!p.is_absolute() || pi == p.end() || ci == c.end() || ++pi == p.end() || ++ci == c.end() || *pi != *ci) {
      return "";
    }
    return p.lexically_relative(c).generic_string();
  };
  std::map<std::string, std::string> rel_a; // relative -> A's absolute path, read by A only
  for (const auto& [p, f] : fa) {
    if (!fb.count(p)) {
      if (std::string rel = relative(p, ca); !rel.empty()) {
        rel_a.emplace(std::move(rel), p);
      }
    }
  }
  std::vector<std::pair<std::string, std::string>> pairs; // A's path, B's path
  for (const auto& [p, f] : fb) {
    if (!fa.count(p)) {
      const auto it = rel_a.find(relative(p, cb));
      if (it != rel_a.end() && !fa.count(it->first) && !fb.count(it->first)) {
        pairs.emplace_back(it->second, p);
      }
    }
  }
  for (const auto& [pa, pb] : pairs) {
    const std::string rel = relative(pa, ca);
    auto na = fa.extract(pa), nb = fb.extract(pb);
    na.key() = rel;
    nb.key() = rel;
    na.mapped().path = rel;
    nb.mapped().path = rel;
    fa.insert(std::move(na));
    fb.insert(std::move(nb));
  }
}

// What one run read outside its working directory at one absolute path and the other at another,
// with the same name and the same bytes (a file, or a folder's listing): the same input, reached
// elsewhere (`data` linked to each CI job's scratch copy). Keyed by A's path; the pairs found by
// their bytes, for a note.
std::vector<std::string> pair_same_bytes(std::map<std::string, InputFile>& fa, std::map<std::string, InputFile>& fb) {
  auto identity = [](const std::string& path, const InputFile& f) -> std::string {
    if (path.empty() || path[0] != '/') {
      return "";
    }
    const std::string digest = f.folder ? f.listing_sha256 : f.hashed ? f.content.sha256 : "";
    return digest.empty() ? "" : fs::path(path).filename().string() + "\n" + digest;
  };
  std::multimap<std::string, std::string> only_b; // identity -> B's path
  for (const auto& [p, f] : fb) {
    if (!fa.count(p)) {
      if (std::string id = identity(p, f); !id.empty()) {
        only_b.emplace(std::move(id), p);
      }
    }
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& [p, f] : fa) {
    if (fb.count(p)) {
      continue;
    }
    const auto it = only_b.find(identity(p, f));
    if (it != only_b.end() && !identity(p, f).empty()) {
      pairs.emplace_back(p, it->second);
      only_b.erase(it);
    }
  }
  // Then the files of two folders so paired that have the same name, whatever their bytes: the
  // same input in both places, compared (a file changed in one job's copy is named as changed).
  std::map<std::string, std::string> folder_of_b; // B's folder -> A's
  std::set<std::string> paired_a, paired_b;
  for (const auto& [pa, pb] : pairs) {
    paired_a.insert(pa);
    paired_b.insert(pb);
    if (fa.at(pa).folder) {
      folder_of_b.emplace(pb, pa);
    }
  }
  std::vector<std::pair<std::string, std::string>> inside;
  for (const auto& [p, f] : fb) {
    const fs::path path(p);
    const auto dir = folder_of_b.find(path.parent_path().string());
    if (dir != folder_of_b.end() && !fa.count(p) && paired_b.count(p) == 0) {
      const std::string pa = (fs::path(dir->second) / path.filename()).string();
      if (fa.count(pa) && !fb.count(pa) && paired_a.count(pa) == 0) { // not paired by its bytes already
        inside.emplace_back(pa, p);
      }
    }
  }
  std::vector<std::string> said;
  for (const auto& [pa, pb] : pairs) {
    said.push_back(pa + " = " + pb);
  }
  pairs.insert(pairs.end(), inside.begin(), inside.end());
  for (const auto& [pa, pb] : pairs) {
    auto nb = fb.extract(pb);
    nb.key() = pa;
    nb.mapped().path = pa;
    fb.insert(std::move(nb));
  }
  return said;
}

} // namespace

void compare_inputs(DiffResult& r, const std::string& a, const std::string& b, const DiffOptions& opt) {
  auto recorded = [](const ojson& m) {
    return m.is_object() && m.contains("inputs") && m["inputs"].is_object() && m["inputs"].contains("recorded") &&
           m["inputs"]["recorded"].is_string();
  };
  const RunDir da = RunDir::open(a), db = RunDir::open(b);
  // A section of another shape than reprun writes, or lost while inputs.jsonl is there: refused, never
  // read as "nothing recorded" (which would compare nothing) nor as a value that differs.
  for (const auto& [m, dir] : {std::pair{&r.a.manifest, &da}, std::pair{&r.b.manifest, &db}}) {
    if (!m->is_object()) {
      continue;
    }
    if (m->contains("inputs")) {
      if (const std::string e = inputs_section_error((*m)["inputs"]); !e.empty()) {
        throw Error(dir->file(RunFile::manifest), "inputs: " + e);
      }
    } else if (std::error_code ec; fs::symlink_status(dir->file(RunFile::inputs), ec).type() != fs::file_type::not_found) {
      throw Error(dir->file(RunFile::manifest), fmt::format("inputs: missing, though the run directory holds {} (the "
                                                            "manifest was edited after the run wrote it)",
                                                            RunDir::name(RunFile::inputs)));
    }
  }
  const bool ra = recorded(r.a.manifest), rb = recorded(r.b.manifest);
  if (!ra || !rb) {
    if (ra != rb) {
      r.notes.push_back(fmt::format("{} recorded no files read (an older reprun, --no-inputs, or the built-in "
                                    "trainer): what the programs read is not compared",
                                    ra ? "B" : "A"));
    }
    return;
  }
  // fa, fb: the inputs (data and code); wa, wb: the files each run wrote, or read after an earlier run
  // of its exec wrote them (a cache, a download), which are not inputs; oa, ob: the other files each
  // read (a library's cache elsewhere, which the other run may have made).
  std::map<std::string, InputFile> fa, fb, wa, wb, oa, ob;
  for (const auto& [dir, f_in, w_in, o_in] : {std::tuple{&da, &fa, &wa, &oa}, std::tuple{&db, &fb, &wb, &ob}}) {
    const std::vector<ojson> records = dir->read_inputs();
    for (size_t i = 0; i < records.size(); ++i) {
      const ojson& j = records[i];
      if (const std::string e = input_record_error(j); !e.empty()) { // each record is one line
        throw Error(fmt::format("{}:{}", dir->file(RunFile::inputs), i + 1), e);
      }
      InputFile f = input_from_json(j);
      if (f.cls == "data" || f.cls == "code") {
        f_in->emplace(f.path, std::move(f));
      } else if (f.cls == "written" && !f.folder) {
        w_in->emplace(f.path, std::move(f));
      } else if (f.cls == "other" && !f.folder && f.read && !f.written && f.existed) {
        o_in->emplace(f.path, std::move(f));
      }
    }
  }
  pair_outside_files(r.a.manifest, r.b.manifest, fa, fb);
  if (const std::vector<std::string> same = pair_same_bytes(fa, fb); !same.empty()) {
    r.notes.push_back(fmt::format("{} read outside the working directory at another path with the same name and bytes "
                                  "(A's = B's), compared as the same: {}",
                                  same.size() == 1 ? "1 file" : fmt::format("{} files and folders", same.size()),
                                  name_list(same, 3)));
  }
  // What one run read of the files the other made: `made_by_a` the names of those B read as A left
  // them (so that what A read to make them and B did not is no difference), and the same for B.
  std::vector<std::string> made_by_a, made_by_b;
  for (const auto& [w, r, o, made, maker_data, maker_other, reader_data] :
       {std::tuple{&wa, &wb, &ob, &made_by_a, &fa, &oa, &fb}, std::tuple{&wb, &wa, &oa, &made_by_b, &fb, &ob, &fa}}) {
    for (const auto* reads : {r, o}) {
      for (const auto& [path, f] : *reads) {
        const auto m = w->find(path);
        if (f.read && !f.written && f.existed && m != w->end() && m->second.left &&
            m->second.left->size == f.size && m->second.left->mtime_ns == f.mtime_ns) {
          made->push_back(path); // read in the state the other run left it (an earlier run of one exec, a cache)
        }
      }
    }
    // A file the maker read after it made it under another name (written, then renamed: a cache of
    // Hugging Face's datasets), which the reader read in the same state (size and time).
    for (const auto* reads : {reader_data, o}) {
      for (const auto& [path, f] : *reads) {
        for (const auto* mine : {maker_data, maker_other}) {
          const auto m = mine->find(path);
          if (f.existed && m != mine->end() && m->second.made_during_run && m->second.size == f.size &&
              m->second.mtime_ns == f.mtime_ns && !f.made_during_run) {
            made->push_back(path);
          }
        }
      }
    }
  }
  std::vector<size_t> only_a, only_b; // the deltas of files read by one run only
  std::map<std::string, std::string> listed_added, listed_removed; // a file -> its folder, whose listing names it
  std::vector<std::string> paths;
  for (const auto& [p, f] : fa) {
    paths.push_back(p);
  }
  for (const auto& [p, f] : fb) {
    if (!fa.count(p)) {
      paths.push_back(p);
    }
  }
  std::sort(paths.begin(), paths.end());
  // Files both read outside the places of data, whose size or time differ (outside_inputs.hpp): said,
  // not counted.
  const std::vector<OutsidePair> outside = outside_pairs(oa, ob);
  // --ignore-meta inputs.files.PATH names a file or folder of inputs.jsonl (the manifest holds only
  // their digest): one that matches none of either run's would ignore nothing, in silence.
  for (const auto& p : opt.ignore_meta) {
    if (p.rfind("inputs.files.", 0) == 0 &&
        std::none_of(paths.begin(), paths.end(), [&](const std::string& path) { return has_prefix("inputs.files." + path, p); }) &&
        std::none_of(outside.begin(), outside.end(),
                     [&](const OutsidePair& o) { return has_prefix("inputs.files." + o.a->path, p); })) {
      std::vector<std::string> keys;
      for (const auto& path : paths) {
        keys.push_back("inputs.files." + path);
      }
      throw Error("--ignore-meta " + p,
                  "matches no file either run read, so it would ignore nothing" + did_you_mean(p, keys));
    }
  }
  std::vector<std::string> unread_same_size; // gone before a record read them, the same size in both
  std::vector<std::string> stat_only_touched; // --stat-only: the same size, another time
  for (const auto& path : paths) {
    const auto ia = fa.find(path), ib = fb.find(path);
    const InputFile* x = ia == fa.end() ? nullptr : &ia->second;
    const InputFile* y = ib == fb.end() ? nullptr : &ib->second;
    MetaDelta d;
    d.key = "inputs.files." + path;
    const InputFile& any = x ? *x : *y;
    d.category = any.cls == "code" ? "code" : "dataset";
    d.rank = any.cls == "code" ? 2 : 1;
    d.kind = MetaDelta::Kind::material;
    const auto& other_wrote = x ? wb : wa;
    const auto made = other_wrote.find(path);
    if ((!x || !y) && !any.folder && made != other_wrote.end() && made->second.left) {
      // A file the other run made (and left), which this one read: the same file, or what changed.
      const LeftFile& left = *made->second.left;
      const char* maker = x ? "B" : "A";
      const char* reader = x ? "A" : "B";
      d.a = x ? "read" : "written";
      d.b = x ? "written" : "read";
      bool same = false;
      std::string how;
      // A reader that rewrote the file (a history it appends to) was fingerprinted as it left it:
      // what it read is known by the size and time at its first open, which are what the maker left.
      const bool rewritten = any.written || any.changed_while_running;
      // What changed is said from A to B, as for every other file, whichever run wrote it.
      const bool a_wrote = !x;
      if (left.hashed && any.hashed && !rewritten) {
        same = left.content.sha256 == any.content.sha256;
        how = same ? "the same bytes"
                   : describe_content_change(a_wrote ? left.content : any.content, a_wrote ? any.content : left.content);
      } else {
        same = any.existed && left.size == any.size && left.mtime_ns == any.mtime_ns;
        how = same ? (rewritten ? fmt::format("the same size and time at {}'s first open ({} rewrote it)", reader, reader)
                                : "the same size and time (its content was not read after the run)")
                   : fmt::format("{} -> {} bytes", grouped(static_cast<long long>(a_wrote ? left.size : any.size)),
                                 grouped(static_cast<long long>(a_wrote ? any.size : left.size)));
      }
      if (same) {
        d.kind = MetaDelta::Kind::informational;
        d.why = fmt::format("{} read the file {} wrote: {}", reader, maker, how);
        (x ? made_by_b : made_by_a).push_back(path);
      } else {
        d.detail = fmt::format("{} wrote it and {} read other bytes: {}", maker, reader, how);
        if (left.hashed && any.hashed) { // the two digests, as for a file both read (input_changed_between)
          d.a = x ? any.content.sha256 : left.content.sha256;
          d.b = x ? left.content.sha256 : any.content.sha256;
        }
      }
    } else if (!x || !y) {
      d.a = x ? (x->folder ? "a folder" : "read") : "(not read)";
      d.b = y ? (y->folder ? "a folder" : "read") : "(not read)";
      d.detail = fmt::format("read by {} only{}", x ? "A" : "B", any.opened_by.empty() ? "" : " (" + any.opened_by + ")");
      (x ? only_a : only_b).push_back(r.meta.size());
    } else if (x->folder || y->folder) {
      if (x->listing_sha256 == y->listing_sha256) {
        continue;
      }
      std::vector<std::string> added, removed;
      std::set_difference(y->names.begin(), y->names.end(), x->names.begin(), x->names.end(), std::back_inserter(added));
      std::set_difference(x->names.begin(), x->names.end(), y->names.begin(), y->names.end(), std::back_inserter(removed));
      // A run's listing leaves out what the run made in the folder (it is listed after the run): the
      // names one run made (and left), which the other found there, are no difference.
      auto made_in = [&](const std::map<std::string, InputFile>& w, std::vector<std::string>& names) {
        std::vector<std::string> made;
        std::erase_if(names, [&](const std::string& name) {
          const auto it = w.find(path == "." ? name : path + "/" + name);
          const bool is_made = it != w.end() && it->second.left != nullptr;
          if (is_made) {
            made.push_back(name);
          }
          return is_made;
        });
        return made;
      };
      const std::vector<std::string> made_a = made_in(wa, added), made_b = made_in(wb, removed);
      d.a = fmt::format("{} entries", x->names.size());
      d.b = fmt::format("{} entries", y->names.size());
      if (added.empty() && removed.empty()) {
        const bool by_a = !made_a.empty();
        const auto& made_names = by_a ? made_a : made_b;
        d.kind = MetaDelta::Kind::informational;
        d.why = fmt::format("{} found the {} file{} {} made there ({})", by_a ? "B" : "A", made_names.size(),
                            made_names.size() == 1 ? "" : "s", by_a ? "A" : "B", name_list(made_names, 3));
        r.meta.push_back(std::move(d));
        continue;
      }
      d.detail = fmt::format("a folder of {} -> {} entries", grouped(static_cast<long long>(x->names.size())),
                             grouped(static_cast<long long>(y->names.size())));
      std::string sep = ": ";
      for (const auto& [names, listed] : {std::pair{&added, &listed_added}, std::pair{&removed, &listed_removed}}) {
        for (const auto& name : *names) {
          listed->emplace(path == "." ? name : path + "/" + name, path);
        }
      }
      if (!added.empty()) {
        d.detail += fmt::format("{}{} added ({})", sep, grouped(static_cast<long long>(added.size())), name_list(added, 3));
        sep = ", ";
      }
      if (!removed.empty()) {
        d.detail += fmt::format("{}{} removed ({})", sep, grouped(static_cast<long long>(removed.size())),
                                name_list(removed, 3));
      }
    } else if (x->hashed && y->hashed) {
      const bool rewritten = x->changed_while_running || y->changed_while_running;
      const bool same_left = x->content.sha256 == y->content.sha256;
      // Both read it and rewrote it (a history each run appends to): one read it as the other left it.
      auto read_left = [](const InputFile& reader, const InputFile& writer) {
        return writer.left && reader.existed && reader.size == writer.left->size && reader.mtime_ns == writer.left->mtime_ns;
      };
      if (!same_left && (read_left(*y, *x) || read_left(*x, *y))) {
        const bool b_reader = read_left(*y, *x);
        d.kind = MetaDelta::Kind::informational;
        d.a = fmt::format("{} bytes", grouped(static_cast<long long>(x->size))); // at the first open
        d.b = fmt::format("{} bytes", grouped(static_cast<long long>(y->size)));
        d.why = fmt::format("{} read the file as {} left it: the same size and time at {}'s first open (each run "
                            "rewrote it)",
                            b_reader ? "B" : "A", b_reader ? "A" : "B", b_reader ? "B" : "A");
        r.meta.push_back(std::move(d));
        continue;
      }
      if (same_left && !(rewritten && x->size != y->size)) {
        continue; // the same bytes, whatever its time (rewritten with the same bytes is no change)
      }
      d.a = same_left ? std::to_string(x->size) : x->content.sha256;
      d.b = same_left ? std::to_string(y->size) : y->content.sha256;
      if (same_left) {
        // Left the same, read at other sizes: a program that empties or rewrites its own input
        // (the next run reads what the last one left).
        d.detail = fmt::format("{} -> {} bytes at the first open; each run left the same bytes (the program rewrote it "
                               "after reading it)",
                               grouped(static_cast<long long>(x->size)), grouped(static_cast<long long>(y->size)));
      } else if (x->code_copy >= 0 && y->code_copy >= 0) { // code, or a configuration file among the data
        std::string where;
        const std::string ca = da.read_code_copy(x->code_copy), cb = db.read_code_copy(y->code_copy);
        d.lines = changed_lines(ca, cb, 6, where);
        // A copy with a credential's value redacted (meta/redact.hpp) hides a change to that value:
        // then the digests of the lines say which changed, as they do for a configuration file
        // among the data (its lines shown beside: "line 1 changed (1 line in both)").
        const bool redacted = ca.find(k_redacted_value) != std::string::npos || cb.find(k_redacted_value) != std::string::npos;
        d.detail = redacted || any.cls != "code" ? describe_content_change(x->content, y->content) : where;
        if (redacted) {
          d.lines += redacted_changes(x->content, y->content, ca, cb);
        }
        // A configuration file the program read (configs/train.yaml) and did not write (results.json,
        // a history it appends to, is data).
        if (any.cls != "code" && !x->written && !y->written) {
          d.category = "configuration";
          d.rank = 2;
        }
      } else {
        d.detail = describe_content_change(x->content, y->content);
      }
      // Opened for writing too (r+, a database, a memmap) says nothing by itself: only a state after
      // the run other than at the first open says the digest is of what the program left.
      if (rewritten && !same_left) {
        d.detail += " (as each run left it: the program rewrote it after reading it)";
      }
    } else if (x->existed != y->existed) {
      d.a = x->existed ? "existed" : "missing";
      d.b = y->existed ? "existed" : "missing";
      d.detail = fmt::format("it {} when A ran and {} when B ran", x->existed ? "existed" : "did not exist",
                             y->existed ? "existed" : "did not exist");
    } else if (x->stat_only || y->stat_only) {
      if (x->size == y->size) {
        if (x->mtime_ns != y->mtime_ns) {
          stat_only_touched.push_back(path); // said in a note: its bytes may differ
        }
        continue; // sizes and times only: equal sizes are all that can be said
      }
      d.a = std::to_string(x->size);
      d.b = std::to_string(y->size);
      d.detail = fmt::format("{} -> {} bytes (recorded by size only: --stat-only)", grouped(static_cast<long long>(x->size)),
                             grouped(static_cast<long long>(y->size)));
    } else if (x->existed && y->existed && (!x->hashed || !y->hashed) && x->size != y->size) {
      // One run's record (or both) could not read it after the run (the program removed it: a
      // queue, a consumed file), but the sizes at the first open differ.
      d.a = std::to_string(x->size);
      d.b = std::to_string(y->size);
      d.detail = fmt::format("{} -> {} bytes at the first open (its content was not read: {})",
                             grouped(static_cast<long long>(x->size)), grouped(static_cast<long long>(y->size)),
                             x->note.empty() ? y->note : x->note);
    } else {
      const std::string& gone = x->note.rfind("gone", 0) == 0 ? x->note : y->note;
      if (x->existed && y->existed && (!x->hashed || !y->hashed) && gone.rfind("gone", 0) == 0) {
        unread_same_size.push_back(path);
      }
      continue; // neither could be read: their notes say why
    }
    r.meta.push_back(named_ignored(std::move(d), opt));
  }
  // A file read by one run only that its folder's listing names as added or removed (a data set
  // read through glob, one file removed): counted once, with the folder.
  for (const auto& [only, listed, how] : {std::tuple{&only_a, &listed_removed, "removed from"},
                                          std::tuple{&only_b, &listed_added, "added to"}}) {
    for (const size_t i : *only) {
      MetaDelta& m = r.meta[i];
      const auto l = listed->find(m.key.substr(std::string_view("inputs.files.").size()));
      if (m.kind == MetaDelta::Kind::material && l != listed->end()) {
        m.kind = MetaDelta::Kind::informational;
        m.why = fmt::format("{}; {} the folder between the runs: counted with {}", m.detail, how, l->second);
      }
    }
  }
  // Listed: 20 whose size differs, 3 whose time alone does (a data set touched again, which is no
  // difference when the runs agree); the rest counted in a note.
  constexpr size_t k_outside_sized = 20, k_outside_timed = 3;
  size_t sized = 0, timed = 0, unlisted = 0;
  for (const OutsidePair& o : outside) {
    const bool size_differs = o.a->size != o.b->size;
    size_t& listed = size_differs ? sized : timed;
    if (listed++ >= (size_differs ? k_outside_sized : k_outside_timed)) {
      ++unlisted;
      continue;
    }
    r.meta.push_back(named_ignored(outside_delta(o), opt));
  }
  if (unlisted > 0) {
    r.notes.push_back(fmt::format("{} more files read outside the places of data differ in size or time between the "
                                  "runs (not listed; their bytes were not compared)",
                                  unlisted));
  }
  if (!stat_only_touched.empty()) {
    r.notes.push_back(fmt::format("{} {} recorded by size and time only (--stat-only): the same size in both runs, "
                                  "modified at other times; {} bytes were not compared",
                                  name_list(stat_only_touched, 3), stat_only_touched.size() == 1 ? "was" : "were",
                                  stat_only_touched.size() == 1 ? "its" : "their"));
  }
  if (!unread_same_size.empty()) {
    r.notes.push_back(fmt::format("{} not compared: gone before reprun read {} after the run (the program removed {}), "
                                  "the same size at the first open in both runs",
                                  name_list(unread_same_size, 3), unread_same_size.size() == 1 ? "it" : "them",
                                  unread_same_size.size() == 1 ? "it" : "them"));
  }
  // A run that read what the other made (its cache, its download, as the other left it) did not need
  // what the other read to make it: a file the maker alone read before it made one of those is no
  // difference, and is said. One it read only after (a library's font cache made at its import, then
  // the data) still counts. Records without the order of the opens (an older reprun) are not ordered.
  for (const auto& [only, made, maker, reader, read_by, wrote, other] :
       {std::tuple{&only_a, &made_by_a, "A", "B", &fa, &wa, &oa}, std::tuple{&only_b, &made_by_b, "B", "A", &fb, &wb, &ob}}) {
    for (const size_t i : *only) {
      MetaDelta& m = r.meta[i];
      const auto x = read_by->find(m.key.substr(std::string_view("inputs.files.").size()));
      const long first = x != read_by->end() ? x->second.first_open : -1;
      std::vector<std::string> after; // what the maker made after its first open of this file
      for (const auto& path : *made) {
        long made_at = -1; // the maker's first open of it
        for (const auto* mine : {wrote, read_by, other}) {
          if (const auto w = mine->find(path); made_at < 0 && w != mine->end()) {
            made_at = w->second.first_open;
          }
        }
        if (first < 0 || made_at < 0 || first < made_at) {
          after.push_back(path);
        }
      }
      if (m.kind == MetaDelta::Kind::material && !after.empty()) {
        m.kind = MetaDelta::Kind::informational;
        m.why = fmt::format("read by {} only: {} read instead what {} made ({})", maker, reader, maker, name_list(after, 3));
      }
    }
  }
  // A file the arguments name (the script, a data file) is compared here, with what changed in it:
  // its argument entry is not counted a second time. So is the program itself when it is a script
  // the program read (./train, run by its "#!" line), keyed as inputs.jsonl keys it.
  const std::string script = program_file(r.a.manifest);
  for (auto& m : r.meta) {
    if (m.kind == MetaDelta::Kind::material && m.key == "program.executable_file" && !script.empty() &&
        (fa.count(script) || fb.count(script)) && script == program_file(r.b.manifest)) {
      m.kind = MetaDelta::Kind::informational;
      m.why = "compared with what the program read (inputs.files." + script + ")";
    }
  }
  for (auto& m : r.meta) {
    if (m.kind == MetaDelta::Kind::material && m.key.rfind("program.argv_files.", 0) == 0) {
      std::string path = m.key.substr(19);
      if (!fa.count(path) && !fb.count(path)) {
        path = inputs_key(path, working_directory(r.a.manifest)); // ../scripts/train.py: by its absolute path
      }
      if (fa.count(path) || fb.count(path)) {
        m.kind = MetaDelta::Kind::informational;
        m.why = "compared with what the program read (inputs.files." + path + ")";
        // A configuration file the arguments name (--config cfg.json) stays one, what changed in it said.
        for (auto& in : r.meta) {
          if (in.key == "inputs.files." + path && m.category == "arguments") {
            in.category = m.category;
            in.rank = m.rank;
          }
        }
      }
    }
  }
  sort_deltas(r.meta); // in the order diff_manifests gives
}

} // namespace reprun
