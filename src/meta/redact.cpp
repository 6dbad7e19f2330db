// Secret values in kept text: see include/reprun/meta/redact.hpp.
#include "reprun/meta/redact.hpp"

#include <array>
#include <cctype>

namespace reprun {

namespace {

bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

// The end of a value that starts at `at` after a quoted key: its closing quote (escapes skipped),
// or the next ',' or '}' or the line's end.
size_t value_end(std::string_view line, size_t at) {
  if (at < line.size() && (line[at] == '"' || line[at] == '\'')) {
    const char q = line[at];
    for (size_t i = at + 1; i < line.size(); ++i) {
      if (line[i] == '\\') {
        ++i;
      } else if (line[i] == q) {
        return i + 1;
      }
    }
    return line.size();
  }
  const size_t end = line.find_first_of(",}", at);
  return end == std::string_view::npos ? line.size() : end;
}

// One line, redacted into `out`.
void redact_line(std::string_view line, std::string& out) {
  // A key at the line's start: [export ][- ]KEY (spaces) ':' or '='.
  size_t i = line.find_first_not_of(" \t");
  if (i != std::string_view::npos && line.substr(i, 7) == "export ") {
    i = line.find_first_not_of(' ', i + 7);
  }
  if (i != std::string_view::npos && line.substr(i, 2) == "- ") {
    i = line.find_first_not_of(' ', i + 2);
  }
  if (i != std::string_view::npos) {
    size_t k = i;
    while (k < line.size() && key_char(line[k])) {
      ++k;
    }
    size_t sep = line.find_first_not_of(" \t", k);
    if (k > i && sep != std::string_view::npos && (line[sep] == ':' || line[sep] == '=') &&
        names_credential(line.substr(i, k - i))) {
      out.append(line.substr(0, sep + 1)).append(" ").append(k_redacted_value);
      return;
    }
  }
  // Quoted keys anywhere: "KEY" (spaces) ':' VALUE.
  size_t done = 0;
  for (size_t q = line.find('"'); q != std::string_view::npos && q < line.size();) {
    const size_t close = line.find('"', q + 1);
    if (close == std::string_view::npos) {
      break;
    }
    const size_t colon = line.find_first_not_of(" \t", close + 1);
    if (colon != std::string_view::npos && line[colon] == ':' && names_credential(line.substr(q + 1, close - q - 1))) {
      const size_t v = line.find_first_not_of(" \t", colon + 1);
      const size_t from = v == std::string_view::npos ? line.size() : v;
      const size_t to = value_end(line, from);
      out.append(line.substr(done, colon + 1 - done)).append(" ").append(k_redacted_value);
      done = to;
      q = line.find('"', to);
      continue;
    }
    q = line.find('"', close + 1);
  }
  out.append(line.substr(done));
}

} // namespace

bool names_credential(std::string_view key) {
  std::string up;
  up.reserve(key.size());
  for (const char c : key) {
    up.push_back(c == '-' || c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  static constexpr std::array<std::string_view, 10> k_marks = {"TOKEN",   "SECRET",     "PASSWORD",   "PASSWD",      "CREDENTIAL",
                                                               "API_KEY", "APIKEY",     "ACCESS_KEY", "PRIVATE_KEY", "AUTH_KEY"};
  for (const std::string_view m : k_marks) {
    if (up.find(m) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string redact_secret_values(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    size_t eol = text.find('\n', at);
    const bool last = eol == std::string_view::npos;
    eol = last ? text.size() : eol;
    redact_line(text.substr(at, eol - at), out);
    if (!last) {
      out.push_back('\n');
    }
    at = eol + 1;
  }
  return out;
}

} // namespace reprun
