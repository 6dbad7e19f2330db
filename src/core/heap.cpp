// ready_heap: see include/reprun/core/heap.hpp.
#include "reprun/core/heap.hpp"

#include <malloc.h>

namespace reprun {

void ready_heap(size_t bytes) {
  constexpr size_t k_most = size_t{1} << 30; // a threshold, not memory
  if (bytes == 0) {
    return;
  }
  // Blocks up to a GiB from the heap (glibc's default moves its threshold between 128 KiB and
  // 32 MiB as blocks are freed), and the heap's free top kept.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(k_most));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(k_most));
}

} // namespace reprun
