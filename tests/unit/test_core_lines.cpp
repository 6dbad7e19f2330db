// count_newlines (core/lines.hpp): the lines a log holds, as AtomicLog and the files log count them.
#include "reprun/core/lines.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace reprun;

TEST_CASE("count_newlines: every '\\n', none in an empty text, a cut last line not one") {
  CHECK(count_newlines("") == 0);
  CHECK(count_newlines("no newline") == 0);
  CHECK(count_newlines("\n") == 1);
  CHECK(count_newlines("a\nb\n") == 2);
  CHECK(count_newlines("a\nb\ncut") == 2);
  CHECK(count_newlines("\n\n\n") == 3);
  const std::string nul("a\0\n\0b\n", 6); // NUL bytes are text like any other
  CHECK(count_newlines(nul) == 2);
  // Long texts, newlines at every place a vector loop could miss (its first and last lanes).
  std::string big;
  for (size_t i = 0; i < 5000; ++i) {
    big.append(i % 97, 'x').push_back('\n');
  }
  CHECK(count_newlines(big) == static_cast<size_t>(std::count(big.begin(), big.end(), '\n')));
  CHECK(count_newlines(std::string_view(big).substr(1, big.size() - 2)) ==
        static_cast<size_t>(std::count(big.begin() + 1, big.end() - 1, '\n')));
}
