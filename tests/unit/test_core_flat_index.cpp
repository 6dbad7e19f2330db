// FlatIndex (core/flat_index.hpp): strings to their places, as exec's input record keeps the files
// by path and FolderCache its entries by key.
#include "reprun/core/flat_index.hpp"

#include <doctest/doctest.h>

#include <string>
#include <unordered_map>
#include <vector>

using namespace reprun;

TEST_CASE("FlatIndex: a string added once keeps its first place; unknown strings are not found") {
  std::vector<std::string> keys;
  FlatIndex index(4);
  const auto key_at = [&](size_t place) { return std::string_view(keys[place]); };
  auto add = [&](const std::string& k) {
    const auto [place, added] = index.find_or_add(k, keys.size(), key_at);
    if (added) {
      keys.push_back(k);
    }
    return std::make_pair(place, added);
  };
  CHECK(index.find("a", key_at) == -1);
  CHECK(add("a") == std::make_pair(size_t{0}, true));
  CHECK(add("b") == std::make_pair(size_t{1}, true));
  CHECK(add("a") == std::make_pair(size_t{0}, false));
  CHECK(add("") == std::make_pair(size_t{2}, true)); // the empty string is a string like any other
  CHECK(index.find("", key_at) == 2);
  CHECK(index.find("b", key_at) == 1);
  CHECK(index.find("c", key_at) == -1);
  CHECK(index.find("ab", key_at) == -1);
}

TEST_CASE("FlatIndex: grows past its hint, every place found again, as an unordered_map would") {
  for (const size_t hint : {size_t{0}, size_t{1}, size_t{100}, size_t{50000}}) {
    std::vector<std::string> keys;
    std::unordered_map<std::string, size_t> want;
    FlatIndex index(hint);
    const auto key_at = [&](size_t place) { return std::string_view(keys[place]); };
    // Paths alike but for their last characters (one folder's files), each added twice.
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < 20000; ++i) {
        const std::string k = "/data/set/" + std::to_string(i * 7919 % 20000) + ".bin";
        const auto [place, added] = index.find_or_add(k, keys.size(), key_at);
        const auto [it, fresh] = want.try_emplace(k, keys.size());
        REQUIRE(added == fresh);
        REQUIRE(place == it->second);
        if (added) {
          keys.push_back(k);
        }
      }
    }
    CHECK(keys.size() == 20000);
    for (const auto& [k, place] : want) {
      REQUIRE(index.find(k, key_at) == static_cast<long>(place));
    }
    CHECK(index.find("/data/set/20000.bin", key_at) == -1);
  }
}
