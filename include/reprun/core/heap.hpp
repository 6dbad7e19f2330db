// The allocator readied for a burst of small allocations that live until the process ends: what
// exec builds from the record of the files a program read (10,000s of paths, events and lines,
// some 8 to 10 bytes for each byte of the logs) after the program has ended.
#pragma once

#include <cstddef>

namespace reprun {

// From now on large blocks come from the heap and freed memory stays in it (no mmap and munmap of
// each grown vector, no page given back to be faulted in again), and the next `bytes` of the heap
// are advised for transparent huge pages (madvise; where the system leaves them to madvise, one
// fault and one clear of 2 MiB instead of 512 faults of 4 KiB, each a trip through the kernel and,
// in a virtual machine, through the host). Nothing is touched: memory not used costs nothing. A
// hint only: where an advice is refused, or under a sanitizer's allocator, nothing changes.
void ready_heap(size_t bytes);

} // namespace reprun
