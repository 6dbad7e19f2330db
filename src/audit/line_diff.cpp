// The changed lines of two texts (a code file's two copies): see changed_lines in
// include/reprun/audit/inputs_diff.hpp. Lines matched by Myers' O(ND) difference algorithm, so
// that two changes far apart are two places, each shown, never one span of unchanged lines.
#include "reprun/audit/inputs_diff.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <string_view>
#include <vector>

namespace reprun {

namespace {

constexpr long k_max_edits = 2000; // past this many line edits: one span, from the first to the last

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return out;
}

// A's lines [a0, a1) became B's lines [b0, b1).
struct Hunk {
  size_t a0, a1, b0, b1;
};

// Which lines of `a` are removed and of `b` added in a shortest edit script; false past max_d edits.
bool shortest_edit(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b, long max_d,
                   std::vector<bool>& removed, std::vector<bool>& added) {
  const long n = static_cast<long>(a.size()), m = static_cast<long>(b.size());
  const long most = std::min(n + m, max_d);
  const long off = most + 1;
  std::vector<long> v(static_cast<size_t>(2 * most + 3), 0);
  std::vector<std::vector<long>> trace; // v before each round d
  for (long d = 0; d <= most; ++d) {
    trace.push_back(v);
    for (long k = -d; k <= d; k += 2) {
      long x = k == -d || (k != d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && a[static_cast<size_t>(x)] == b[static_cast<size_t>(y)]) {
        ++x;
        ++y;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        removed.assign(a.size(), false);
        added.assign(b.size(), false);
        for (long e = d; e > 0; --e) { // back from (n, m), one edit a round
          const std::vector<long>& w = trace[static_cast<size_t>(e)];
          const long kk = x - y;
          const bool down = kk == -e || (kk != e && w[off + kk - 1] < w[off + kk + 1]);
          const long pk = down ? kk + 1 : kk - 1;
          const long px = w[off + pk], py = px - pk;
          if (down) {
            added[static_cast<size_t>(py)] = true;
          } else {
            removed[static_cast<size_t>(px)] = true;
          }
          x = px;
          y = py;
        }
        return true;
      }
    }
  }
  return false;
}

std::string line_range(size_t from, size_t to) { // [from, to), numbered from 1
  return to - from == 1 ? fmt::format("{}", from + 1) : fmt::format("{}-{}", from + 1, to);
}

// "line 7 changed", "lines 1 and 31 changed", "line 1 added, line 9 changed", "lines 1, 5, 9, 12 and 3
// more places changed".
std::string hunks_phrase(const std::vector<Hunk>& hunks) {
  constexpr size_t k_named = 4;
  auto verb = [](const Hunk& h) { return h.a0 == h.a1 ? "added" : h.b0 == h.b1 ? "removed" : "changed"; };
  auto where = [](const Hunk& h) { return h.a0 == h.a1 ? line_range(h.b0, h.b1) : line_range(h.a0, h.a1); };
  const bool one_verb = std::all_of(hunks.begin(), hunks.end(), [&](const Hunk& h) { return verb(h) == verb(hunks[0]); });
  const size_t named = std::min(hunks.size(), k_named);
  const size_t more = hunks.size() - named;
  std::string s;
  if (one_verb) {
    const bool one_line = hunks.size() == 1 && where(hunks[0]).find('-') == std::string::npos;
    s = one_line ? "line " : "lines ";
    for (size_t i = 0; i < named; ++i) {
      s += (i == 0 ? "" : i + 1 == named && more == 0 ? " and " : ", ") + where(hunks[i]);
    }
    return more == 0 ? s + " " + verb(hunks[0]) : fmt::format("{} and {} more places {}", s, more, verb(hunks[0]));
  }
  for (size_t i = 0; i < named; ++i) {
    const bool one = where(hunks[i]).find('-') == std::string::npos;
    s += fmt::format("{}{} {} {}", i == 0 ? "" : ", ", one ? "line" : "lines", where(hunks[i]), verb(hunks[i]));
  }
  return more == 0 ? s : fmt::format("{}, and {} more places changed", s, more);
}

} // namespace

std::string changed_lines(const std::string& a, const std::string& b, size_t most, std::string& summary) {
  const auto la = split_lines(a), lb = split_lines(b);
  size_t pre = 0;
  while (pre < la.size() && pre < lb.size() && la[pre] == lb[pre]) {
    ++pre;
  }
  size_t suf = 0;
  while (suf < la.size() - pre && suf < lb.size() - pre && la[la.size() - 1 - suf] == lb[lb.size() - 1 - suf]) {
    ++suf;
  }
  const std::vector<std::string_view> ma(la.begin() + static_cast<long>(pre), la.end() - static_cast<long>(suf));
  const std::vector<std::string_view> mb(lb.begin() + static_cast<long>(pre), lb.end() - static_cast<long>(suf));
  std::vector<Hunk> hunks;
  std::vector<bool> removed, added;
  if (ma.empty() && mb.empty()) {
    hunks.push_back({pre, pre + 1, pre, pre + 1}); // equal texts: not asked for, said as the first line
  } else if (shortest_edit(ma, mb, k_max_edits, removed, added)) {
    size_t i = 0, j = 0;
    while (i < ma.size() || j < mb.size()) {
      if (i < ma.size() && j < mb.size() && !removed[i] && !added[j]) {
        ++i;
        ++j;
        continue;
      }
      Hunk h{pre + i, 0, pre + j, 0};
      while ((i < ma.size() && removed[i]) || (j < mb.size() && added[j])) {
        if (i < ma.size() && removed[i]) {
          ++i;
        } else {
          ++j;
        }
      }
      h.a1 = pre + i;
      h.b1 = pre + j;
      hunks.push_back(h);
    }
  } else {
    hunks.push_back({pre, pre + ma.size(), pre, pre + mb.size()}); // too many edits to place: one span
  }
  summary = hunks_phrase(hunks);
  constexpr size_t k_shown_places = 3;
  std::string out;
  for (size_t h = 0; h < hunks.size() && h < k_shown_places; ++h) {
    const Hunk& k = hunks[h];
    for (size_t i = k.a0; i < k.a1 && i < k.a0 + most; ++i) {
      out += fmt::format("{:>5} - {}\n", i + 1, la[i]);
    }
    for (size_t i = k.b0; i < k.b1 && i < k.b0 + most; ++i) {
      out += fmt::format("{:>5} + {}\n", i + 1, lb[i]);
    }
    if (k.a1 - k.a0 > most || k.b1 - k.b0 > most) {
      out += "      ...\n";
    }
  }
  if (hunks.size() > k_shown_places) {
    out += fmt::format("      ... ({} more places)\n", hunks.size() - k_shown_places);
  }
  return out;
}

} // namespace reprun
