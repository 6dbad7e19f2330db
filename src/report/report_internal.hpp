// Shared between the report renderers (not part of the public API).
#pragma once

#include "reprun/report/report.hpp"

#include <string>

namespace reprun {

std::string render_diff_text(const DiffResult& r, bool color);
std::string render_check_text(const CheckResult& r, bool color);
// "dataset differs: 1 file added (part-004.csv, 8,120 bytes), 0 removed, 0 changed"
std::string dataset_sentence(const DatasetDelta& d);

} // namespace reprun
