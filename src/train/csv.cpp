// CSV reader: numeric columns, one label column (a non-negative integer class). Strict: a ragged
// row, an empty or non-numeric field, a number beyond float32, or a bad label is an error naming
// file:line:column. A UTF-8 byte order mark (Excel's "CSV UTF-8") is skipped.
#include "reprun/core/atomic_file.hpp"
#include "reprun/train/data.hpp"
#include "reprun/core/error.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <string_view>

namespace reprun {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

bool parse_double(std::string_view s, double& out) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
  }
  if (s.empty()) {
    return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// A field as an error message quotes it: at most 40 bytes, control bytes as \xNN (a binary file's
// escape sequences would otherwise reach the terminal).
std::string shown(std::string_view f) {
  std::string out;
  for (char ch : f.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(ch);
    out += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, ch);
  }
  return out;
}

void split_fields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      return;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

} // namespace

Dataset read_csv(const std::vector<std::string>& files, long& label_column, std::string& header, long classes) {
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& f : files) {
    texts.emplace_back(f, read_file(f));
  }
  return parse_csv(texts, label_column, header, classes);
}

// One pass over every file's rows, in order (long: header detection, the label column, every
// per-cell error and the class count share the row loop's state; split, they would pass it around).
Dataset parse_csv(const std::vector<std::pair<std::string, std::string>>& texts, long& label_column,
                  std::string& header, long classes) {
  Dataset d;
  long ncols = -1;
  long label = -1;
  std::vector<std::string_view> fields;
  std::vector<float> row;
  int32_t max_label = -1;
  const bool header_auto = header == "auto";
  bool header_resolved = !header_auto;
  bool has_header = header == "true";
  std::string header_seen_in; // "auto": the file whose first line decided
  for (const auto& [file, text] : texts) {
    // A byte order mark is not data: left in, it makes a numeric first row look like a header.
    size_t pos = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    long lineno = 0;
    bool first = true;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      ++lineno;
      if (trim(line).empty()) {
        continue;
      }
      split_fields(line, fields);
      if (first) {
        first = false;
        if (header_auto) {
          double tmp;
          bool numeric = true;
          for (auto f : fields) {
            numeric = numeric && parse_double(trim(f), tmp);
          }
          if (!header_resolved) {
            has_header = !numeric;
            header_resolved = true;
            header_seen_in = file;
          } else if (numeric == has_header) {
            // Each file of a folder is read alike: a row taken for a header would be lost silently.
            throw Error(fmt::format("{}:{}", file, lineno),
                        fmt::format("{}, but {} {} (data.header \"auto\" decides from the first file); give every "
                                    "file a header, or none",
                                    numeric ? "the first line is a row of numbers, not a header" : "the first line is a header",
                                    header_seen_in, has_header ? "has one" : "has none"));
          }
        }
        if (ncols < 0) {
          ncols = static_cast<long>(fields.size());
          if (ncols < 2) {
            throw Error(fmt::format("{}:{}", file, lineno),
                        "need at least 2 columns (features and a label), found 1; is the separator a comma?");
          }
          label = label_column < 0 ? ncols + label_column : label_column;
          if (label < 0 || label >= ncols) {
            throw Error(fmt::format("{}:{}", file, lineno),
                        fmt::format("label_column {} is out of range for {} columns", label_column, ncols));
          }
        }
        if (has_header) {
          if (static_cast<long>(fields.size()) != ncols) {
            throw Error(fmt::format("{}:{}", file, lineno),
                        fmt::format("header has {} columns, expected {}", fields.size(), ncols));
          }
          if (d.label_name.empty()) {
            d.label_name = std::string(trim(fields[static_cast<size_t>(label)]));
            for (auto f : fields) {
              d.column_names.emplace_back(trim(f));
            }
          }
          continue;
        }
      }
      if (static_cast<long>(fields.size()) != ncols) {
        throw Error(fmt::format("{}:{}", file, lineno),
                    fmt::format("row has {} columns, expected {} (ragged row)", fields.size(), ncols));
      }
      row.clear();
      size_t col_offset = 0;
      for (long c = 0; c < ncols; ++c) {
        std::string_view f = trim(fields[static_cast<size_t>(c)]);
        double v = 0;
        if (!parse_double(f, v) || !std::isfinite(v)) {
          throw Error(fmt::format("{}:{}:{}", file, lineno, col_offset + 1),
                      fmt::format("column {}: not a finite number: '{}'", c + 1,
                                  shown(f)));
        }
        if (c == label) {
          if (v < 0 || v != std::floor(v) || v > 1e5) {
            throw Error(fmt::format("{}:{}:{}", file, lineno, col_offset + 1),
                        fmt::format("label (column {}, data.label_column) must be a non-negative integer class, "
                                    "got '{}'; is the label in another column? data.label_column picks it",
                                    c + 1, shown(f)));
          }
          int32_t y = static_cast<int32_t>(v);
          if (classes > 0 && y >= classes) {
            throw Error(fmt::format("{}:{}:{}", file, lineno, col_offset + 1),
                        fmt::format("label {} out of range: data.classes is {}", y, classes));
          }
          d.y.push_back(y);
          max_label = std::max(max_label, y);
        } else {
          if (!std::isfinite(static_cast<float>(v))) { // 1e39 is a double, but no float32
            throw Error(fmt::format("{}:{}:{}", file, lineno, col_offset + 1),
                        fmt::format("column {}: {} is beyond the float32 range the trainer computes in "
                                    "(about ±3.4e38)",
                                    c + 1, shown(f)));
          }
          row.push_back(static_cast<float>(v));
        }
        col_offset += fields[static_cast<size_t>(c)].size() + 1;
      }
      d.x.insert(d.x.end(), row.begin(), row.end());
    }
  }
  if (d.y.empty()) {
    throw Error(texts.empty() ? "(no files)" : texts.size() == 1 ? texts[0].first : texts[0].first + " (and others)",
                "no data rows");
  }
  label_column = label;
  d.label_column = label;
  header = has_header ? "true" : "false";
  d.n = static_cast<long>(d.y.size());
  d.features = ncols - 1;
  d.classes = classes > 0 ? classes : max_label + 1;
  if (d.classes < 2) {
    throw Error(texts[0].first, "labels contain a single class; need at least 2");
  }
  return d;
}

} // namespace reprun
