// Wall-clock time as run records show it: UTC, ISO 8601, whole seconds ("2026-01-31T12:00:00Z").
// Only the real World (meta/world.hpp) calls it: everything else asks World, so tests can fix it.
#pragma once

#include <string>

namespace reprun {

std::string utc_now_iso8601();

} // namespace reprun
