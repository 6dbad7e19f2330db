// Strings put in byte order fast (private to src/meta/): the record of what a program read sorts
// 10,000 and more paths, and a listed folder's names, at every run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string_view>
#include <utility>
#include <vector>

namespace reprun {

// The order of `n` texts (`text(i)`, a string_view) that std::string's operator< gives, found with
// each text's first 16 bytes held beside its index as two big-endian integers: most pairs differ
// there and are told apart in the array itself (10,000 paths: a quarter of the time of comparing
// the texts where they lie); the rest by their whole text.
template <class Text> std::vector<uint32_t> text_order(size_t n, Text&& text) {
  struct Key {
    uint64_t hi = 0, lo = 0;
    uint32_t i = 0;
  };
  auto big_endian = [](const unsigned char* b) {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) {
      v = (v << 8) | b[k];
    }
    return v;
  };
  // Already in order (a folder's files read in the order of their names, as a DataLoader that does
  // not shuffle reads them): one pass, no sort.
  bool in_order = true;
  for (size_t i = 1; i < n && in_order; ++i) {
    in_order = !(text(i) < text(i - 1));
  }
  if (in_order) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    return order;
  }
  std::vector<Key> keys(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view t = text(i);
    unsigned char head[16] = {}; // a text shorter than 16 bytes is padded with 0, which sorts first as its end does
    std::memcpy(head, t.data(), std::min<size_t>(t.size(), sizeof head));
    keys[i] = {big_endian(head), big_endian(head + 8), static_cast<uint32_t>(i)};
  }
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    if (a.hi != b.hi || a.lo != b.lo) {
      return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
    }
    return text(a.i) < text(b.i);
  });
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) {
    order[i] = keys[i].i;
  }
  return order;
}

// `v` put in `order` (order[k]: the index of the element that goes to k) where it lies, each element
// moved once: a cycle of the permutation at a time.
template <class T> void permute(std::vector<T>& v, const std::vector<uint32_t>& order) {
  std::vector<bool> placed(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (placed[i] || order[i] == i) {
      continue;
    }
    T held = std::move(v[i]);
    size_t at = i;
    while (order[at] != i) {
      v[at] = std::move(v[order[at]]);
      placed[at] = true;
      at = order[at];
    }
    v[at] = std::move(held);
    placed[at] = true;
  }
}

} // namespace reprun
