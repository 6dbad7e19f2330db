#include "reprun/core/hash.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <string>

using namespace reprun;

TEST_CASE("Sha256 of the empty string matches the known answer") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("Sha256 of 'abc' and of the two-block NIST message match the known answers") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("Sha256 of one million 'a' fed in uneven pieces matches the known answer") {
  Sha256 h;
  std::string chunk(1000, 'a');
  size_t left = 1000000;
  size_t piece = 1;
  while (left > 0) {
    size_t n = std::min({piece, left, chunk.size()});
    h.update(chunk.data(), n);
    left -= n;
    piece = piece * 3 + 1;
  }
  CHECK(h.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("Tagged fields cannot run into each other") {
  Sha256 a, b;
  a.update_field("x", "-I -O2");
  b.update_field("x", "-I");
  b.update_field("x", "-O2");
  CHECK(a.hex_digest() != b.hex_digest());
}

TEST_CASE("XXH3 of the empty input and streaming equal the one-shot digest") {
  CHECK(xxh3_64("", 0) == 0x2D06800538D394C2ull);
  std::string data(10000, '\0');
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<char>(i * 131 + 7);
  }
  Xxh3Stream s;
  s.update(data.data(), 17);
  s.update(data.data() + 17, 5000);
  s.update(data.data() + 5017, data.size() - 5017);
  CHECK(s.digest() == xxh3_64(data.data(), data.size()));
  CHECK(hex64(0x2D06800538D394C2ull) == "2d06800538d394c2");
}
