// Facts about this reprun binary: version, source commit, compiler, flags, library versions and
// the kernels chosen at run time. Recorded in every manifest and printed by `reprun env`.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace reprun {

std::string reprun_version();
nlohmann::ordered_json build_info();
std::string openssl_version(); // defined beside the only OpenSSL include (sha256.cpp)

} // namespace reprun
