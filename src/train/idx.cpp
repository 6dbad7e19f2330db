// IDX reader (the MNIST file format): big-endian header, magic 0x0803 (unsigned byte images, 3
// dimensions) or 0x0801 (labels, 1 dimension). Truncated files and mismatched counts are errors.
#include "reprun/core/atomic_file.hpp"
#include "reprun/train/data.hpp"
#include "reprun/core/error.hpp"

#include <cstdint>
#include <fmt/format.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace reprun {

// Here rather than in data.cpp: the fuzzing targets link the IDX reader without the rest of data.cpp.
void size_features(Dataset& d, size_t n) {
  d.x.clear();
  d.x.reserve(n); // allocated, not yet touched: the pages come at the first write, below
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t k_huge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(d.x.data());
  const uintptr_t from = (begin + k_huge - 1) & ~(k_huge - 1);
  const uintptr_t to = (begin + n * sizeof(float)) & ~(k_huge - 1);
  if (to > from) {
    // Advice only: where the kernel has no huge pages to give, the pages are the usual ones.
    (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
  }
#endif
  d.x.resize(n);
}

namespace {
uint32_t be32(const std::string& s, size_t off) {
  return (static_cast<uint32_t>(static_cast<unsigned char>(s[off])) << 24) |
         (static_cast<uint32_t>(static_cast<unsigned char>(s[off + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<unsigned char>(s[off + 2])) << 8) |
         static_cast<uint32_t>(static_cast<unsigned char>(s[off + 3]));
}
} // namespace

Dataset read_idx(const std::string& images, const std::string& labels, long classes) {
  return parse_idx(read_file(images), images, read_file(labels), labels, classes);
}

Dataset parse_idx(const std::string& img, const std::string& images, const std::string& lab,
                  const std::string& labels, long classes) {
  if (img.size() < 16) {
    throw Error(images, fmt::format("truncated IDX header ({} bytes)", img.size()));
  }
  if (be32(img, 0) != 0x00000803u) {
    throw Error(images, fmt::format("not an IDX image file: magic 0x{:08x}, expected 0x00000803", be32(img, 0)));
  }
  if (lab.size() < 8) {
    throw Error(labels, fmt::format("truncated IDX header ({} bytes)", lab.size()));
  }
  if (be32(lab, 0) != 0x00000801u) {
    throw Error(labels, fmt::format("not an IDX label file: magic 0x{:08x}, expected 0x00000801", be32(lab, 0)));
  }
  uint64_t n = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  uint64_t nl = be32(lab, 4);
  if (n == 0 || rows == 0 || cols == 0) {
    throw Error(images, "empty IDX file (a dimension is 0)");
  }
  if (rows * cols > 1'000'000) {
    throw Error(images, fmt::format("image size {}x{} is too large", rows, cols));
  }
  uint64_t need = 16 + n * rows * cols;
  if (img.size() != need) {
    throw Error(images, fmt::format("size {} bytes does not match header ({} images of {}x{}: {} bytes){}",
                                    img.size(), n, rows, cols, need, img.size() < need ? ", truncated" : ""));
  }
  if (lab.size() != 8 + nl) {
    throw Error(labels, fmt::format("size {} bytes does not match header ({} labels: {} bytes){}", lab.size(),
                                    nl, 8 + nl, lab.size() < 8 + nl ? ", truncated" : ""));
  }
  if (nl != n) {
    throw Error(labels, fmt::format("{} labels for {} images in {}", nl, n, images));
  }
  Dataset d;
  d.n = static_cast<long>(n);
  d.features = static_cast<long>(rows * cols);
  size_features(d, n * rows * cols);
  for (size_t i = 0; i < d.x.size(); ++i) {
    d.x[i] = static_cast<float>(static_cast<unsigned char>(img[16 + i]));
  }
  d.y.resize(n);
  int32_t max_label = 0;
  for (size_t i = 0; i < n; ++i) {
    int32_t y = static_cast<unsigned char>(lab[8 + i]);
    if (classes > 0 && y >= classes) {
      throw Error(labels, fmt::format("label {} at index {} out of range: data.classes is {}", y, i, classes));
    }
    d.y[i] = y;
    max_label = std::max(max_label, y);
  }
  d.classes = classes > 0 ? classes : max_label + 1;
  if (d.classes < 2) {
    throw Error(labels, "labels contain a single class; need at least 2");
  }
  return d;
}

} // namespace reprun
