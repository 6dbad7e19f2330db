// Rank slices: contiguous, in rank order, covering every row once, sizes within one of each other.
#include "reprun/train/ranks.hpp"

#include <doctest/doctest.h>

using namespace reprun;

TEST_CASE("rank_slice cuts a batch into contiguous slices in rank order that cover every row once") {
  for (long rows : {1L, 2L, 7L, 28L, 32L, 128L}) {
    for (int ranks = 1; ranks <= rows && ranks <= 9; ++ranks) {
      long next = 0, smallest = rows, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const Slice s = rank_slice(rows, r, ranks);
        CHECK(s.begin == next);
        CHECK(s.end > s.begin);
        smallest = std::min(smallest, s.end - s.begin);
        largest = std::max(largest, s.end - s.begin);
        next = s.end;
      }
      CHECK(next == rows);
      CHECK(largest - smallest <= 1);
      CHECK(largest <= rank_slice_rows(rows, ranks));
    }
  }
}

TEST_CASE("rank_slice of one rank is the whole batch") {
  const Slice s = rank_slice(128, 0, 1);
  CHECK(s.begin == 0);
  CHECK(s.end == 128);
  CHECK(rank_slice_rows(128, 1) == 128);
  CHECK(rank_slice_rows(129, 4) == 33);
}
