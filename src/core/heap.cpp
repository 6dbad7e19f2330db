// ready_heap: see include/reprun/core/heap.hpp.
#include "reprun/core/heap.hpp"

#include <cstdint>
#include <cstdlib>
#include <malloc.h>
#include <sys/mman.h>

namespace reprun {

void ready_heap(size_t bytes) {
  constexpr size_t k_huge = size_t{2} << 20;
  constexpr size_t k_most = size_t{1} << 30; // address space, not memory: a bound on a hint
  if (bytes == 0) {
    return;
  }
  bytes = bytes < k_most ? bytes : k_most;
  // Blocks up to a GiB from the heap (glibc's default moves its threshold between 128 KiB and
  // 32 MiB as blocks are freed), and the heap's free top kept.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(k_most));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(k_most));
  // One block as large as the burst, so that the heap grows by it; advised whole, then freed: the
  // allocations that follow are carved from it. Never written here: untouched pages stay unmapped.
  void* block = std::malloc(bytes + k_huge);
  if (block == nullptr) {
    return;
  }
  const uintptr_t first = (reinterpret_cast<uintptr_t>(block) + k_huge - 1) & ~uintptr_t{k_huge - 1};
  const uintptr_t end = (reinterpret_cast<uintptr_t>(block) + bytes + k_huge) & ~uintptr_t{k_huge - 1};
#ifdef MADV_HUGEPAGE
  if (end > first) {
    ::madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
  }
#endif
  std::free(block);
}

} // namespace reprun
