// Facts about the machine a run happens on: OS, kernel, libc, CPU model and the ISA features that
// can change results, core count, memory, GPUs. Read through the World interface (world.hpp) so
// tests can give fixed answers.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace reprun {

class World;

nlohmann::ordered_json host_info(const World& world);
nlohmann::ordered_json gpu_info(const World& world);

} // namespace reprun
