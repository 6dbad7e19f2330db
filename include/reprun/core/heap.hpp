// The allocator readied for a burst of small allocations that live until the process ends: what
// exec builds from the record of the files a program read (10,000s of paths, events and lines,
// some 8 to 10 bytes for each byte of the logs) after the program has ended.
#pragma once

#include <cstddef>

namespace reprun {

// From now on large blocks come from the heap and freed memory stays in it: no mmap and munmap of
// each grown vector, no page given back to be faulted in again. `bytes` (0: no burst, nothing
// changes) is what the burst will take. No huge-page advice: it made exec's record of the bench's
// DataLoader run slower, 58-62 -> 40 ms of reprun's CPU (median of 14 and 16 interleaved runs, a
// virtual machine): just after the program's exit, freed 4 KiB pages are at hand and already backed
// by the host, while a 2 MiB page comes from memory long unused, which the host backs again as it
// is cleared. A hint only: under a sanitizer's allocator nothing changes.
void ready_heap(size_t bytes);

} // namespace reprun
