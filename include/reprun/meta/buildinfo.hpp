// Facts about this reprun binary: version, source commit, compiler, flags, library versions and
// the kernels chosen at run time. Recorded in every manifest and printed by `reprun env`.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace reprun {

std::string reprun_version();
// `kernels`: the compute kernels chosen at run time, as the trainer names them ({"gemm": ...});
// the XXH3 implementation is added here.
nlohmann::ordered_json build_info(const nlohmann::ordered_json& kernels);
std::string openssl_version(); // defined beside the only OpenSSL include (sha256.cpp)

} // namespace reprun
