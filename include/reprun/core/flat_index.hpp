// A flat index of strings to their places in a list the caller keeps (the paths of the files a
// program read, the keys of a folder's content cache): one block of 8-byte slots for all, probed in
// a row, no node allocated per string (10,000 files: 10,000 allocations fewer than an
// unordered_map's). The strings are not copied: key_at(place) gives the one at a place taken.
#pragma once

#include "reprun/core/hash.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace reprun {

class FlatIndex {
public:
  // Slots for `expected` strings (a hint, up to 2^18: the table grows as strings are added, so that
  // a log of a million opens of one file does not make a table for a million).
  explicit FlatIndex(size_t expected) { m_slots.resize(slots_for(std::min<size_t>(expected, size_t{1} << 18))); }

  // The place of `key`, or `next` when it has none (then taken by it): {place, added}. Places are
  // under 2^32 - 1.
  template <class KeyAt> std::pair<size_t, bool> find_or_add(std::string_view key, size_t next, const KeyAt& key_at) {
    if (2 * (m_count + 1) > m_slots.size()) {
      grow(key_at);
    }
    const uint64_t h = xxh3_64(key.data(), key.size());
    Slot& s = m_slots[probe(key, h, key_at)];
    if (s.place != 0) {
      return {s.place - 1, false};
    }
    s = Slot{static_cast<uint32_t>(next + 1), static_cast<uint32_t>(h >> 32)};
    ++m_count;
    return {next, true};
  }

  // The place of `key`, or -1.
  template <class KeyAt> long find(std::string_view key, const KeyAt& key_at) const {
    const Slot& s = m_slots[probe(key, xxh3_64(key.data(), key.size()), key_at)];
    return s.place == 0 ? -1 : static_cast<long>(s.place - 1);
  }

private:
  struct Slot {
    uint32_t place = 0; // its place + 1; 0: empty
    uint32_t tag = 0;   // the high half of its hash: most other strings told apart without a compare
  };

  static size_t slots_for(size_t strings) {
    size_t n = 16;
    while (n < 2 * strings + 1) {
      n <<= 1;
    }
    return n;
  }

  // The slot that holds `key` (hash h), else the empty one where it would go.
  template <class KeyAt> size_t probe(std::string_view key, uint64_t h, const KeyAt& key_at) const {
    const size_t mask = m_slots.size() - 1;
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = m_slots[i];
      if (s.place == 0 || (s.tag == tag && key_at(s.place - 1) == key)) {
        return i;
      }
    }
  }

  template <class KeyAt> void grow(const KeyAt& key_at) {
    std::vector<Slot> old(m_slots.size() * 2);
    old.swap(m_slots);
    const size_t mask = m_slots.size() - 1;
    for (const Slot& s : old) {
      if (s.place != 0) {
        const std::string_view key = key_at(s.place - 1);
        size_t i = xxh3_64(key.data(), key.size()) & mask;
        while (m_slots[i].place != 0) {
          i = (i + 1) & mask;
        }
        m_slots[i] = s;
      }
    }
  }

  std::vector<Slot> m_slots;
  size_t m_count = 0;
};

} // namespace reprun
