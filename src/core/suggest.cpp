// "Did you mean ...?" suggestions for mistyped keys and subcommands (Levenshtein distance).
#include "reprun/core/error.hpp"

#include <algorithm>
#include <vector>

namespace reprun {

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    prev[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
} // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& options) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& o : options) {
    size_t d = edit_distance(word, o);
    if (d < best_d) {
      best_d = d;
      best = o;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string did_you_mean(const std::string& word, const std::initializer_list<const char*>& options) {
  return did_you_mean(word, std::vector<std::string>(options.begin(), options.end()));
}

} // namespace reprun
