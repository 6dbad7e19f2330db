// index_lines: see line_index.hpp.
#include "line_index.hpp"

#include <cstring>
#include <string_view>

namespace reprun {

namespace {

// What the index holds of one line, [start, nl) (start null: the line began in an earlier block).
void add_line(LineIndex& index, const char* block, const char* start, const char* nl, bool losses) {
  LineIndex::Line& l = index.lines.emplace_back(LineIndex::Line{static_cast<uint32_t>(nl - block), false, -1, 0.0});
  if (!start) {
    return;
  }
  const std::string_view line(start, static_cast<size_t>(nl - start));
  if (losses && quick_step_loss(line, l.step, l.loss)) {
    l.has_loss = true;
    return;
  }
  if (!line.empty() && line.back() == '}') { // else a full parse says what is wrong with it
    l.step = quick_step(line);
  }
  l.has_loss = losses && quick_loss(line, l.loss);
}

} // namespace

void index_lines(LineIndex& index, const char* p, size_t n, bool at_line_start, bool losses) {
  index.lines.clear();
  const char* start = at_line_start ? p : nullptr;
  const char* const end = p + n;
  for (const char* q = p; q < end;) {
    const char* nl = static_cast<const char*>(std::memchr(q, '\n', static_cast<size_t>(end - q)));
    if (!nl) {
      break;
    }
    add_line(index, p, start, nl, losses);
    start = q = nl + 1;
  }
}

} // namespace reprun
