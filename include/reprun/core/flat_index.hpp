// A flat index of strings to their places in a list the caller keeps (the paths of the files a
// program read, the keys of a folder's content cache): one block of slots for all, probed in a row,
// no node allocated per string (10,000 files: 10,000 allocations fewer than an unordered_map's).
#pragma once

#include "reprun/core/hash.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace reprun {

class FlatIndex {
public:
  // Room for `most` strings (never more are added): at least twice as many slots.
  explicit FlatIndex(size_t most) {
    size_t n = 16;
    while (n < 2 * most + 1) {
      n <<= 1;
    }
    m_slots.assign(n, Slot{});
    m_mask = n - 1;
  }

  // The place of `key`, or `next` when it has none (then taken by it): {place, added}. key_at(place)
  // is the string at a place already taken.
  template <class KeyAt> std::pair<size_t, bool> find_or_add(std::string_view key, size_t next, const KeyAt& key_at) {
    const uint64_t h = xxh3_64(key.data(), key.size());
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & m_mask;; i = (i + 1) & m_mask) {
      Slot& s = m_slots[i];
      if (s.place == 0) {
        s = Slot{static_cast<uint32_t>(next + 1), tag};
        return {next, true};
      }
      if (s.tag == tag && key_at(s.place - 1) == key) {
        return {s.place - 1, false};
      }
    }
  }

  // The place of `key`, or -1.
  template <class KeyAt> long find(std::string_view key, const KeyAt& key_at) const {
    const uint64_t h = xxh3_64(key.data(), key.size());
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & m_mask;; i = (i + 1) & m_mask) {
      const Slot& s = m_slots[i];
      if (s.place == 0) {
        return -1;
      }
      if (s.tag == tag && key_at(s.place - 1) == key) {
        return static_cast<long>(s.place - 1);
      }
    }
  }

private:
  struct Slot {
    uint32_t place = 0; // its place + 1; 0: empty
    uint32_t tag = 0;   // the high half of its hash: most other strings told apart without a compare
  };
  std::vector<Slot> m_slots;
  size_t m_mask = 0;
};

} // namespace reprun
