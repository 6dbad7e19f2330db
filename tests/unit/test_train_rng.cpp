#include "reprun/train/rng.hpp"

#include <doctest/doctest.h>

using namespace reprun;

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors") {
  // Random123 tests/kat_vectors: counter (4 words), key (2 words) -> output (4 words).
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == Philox4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        Philox4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        Philox4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("Draws are pure functions of seed, stream and coordinates") {
  CHECK(draw(7, Stream::init, 1, 2, 3) == draw(7, Stream::init, 1, 2, 3));
  CHECK(draw(7, Stream::init, 1, 2, 3) != draw(8, Stream::init, 1, 2, 3));
  CHECK(draw(7, Stream::init, 1, 2, 3) != draw(7, Stream::shuffle, 1, 2, 3));
  CHECK(draw(7, Stream::init, 1, 2, 3) != draw(7, Stream::init, 1, 2, 4));
  // Seeds differing only in the high word still differ.
  CHECK(draw(1ull << 32, Stream::init, 0) != draw(0, Stream::init, 0));
}

TEST_CASE("Unit conversions stay in range and hit both ends") {
  CHECK(to_unit_float(0) == 0.0f);
  CHECK(to_unit_float(0xffffffffu) < 1.0f);
  CHECK(to_unit_double(0xffffffffu, 0xffffffffu) < 1.0);
  CHECK(to_below(0xffffffffu, 0xffffffffu, 10) == 9);
  CHECK(to_below(0, 0, 10) == 0);
}
