// utc_now_iso8601: see include/reprun/core/time.hpp.
#include "reprun/core/time.hpp"

#include <ctime>

namespace reprun {

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

} // namespace reprun
