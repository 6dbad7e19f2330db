// What this machine would record: the reprun build, the host, the GPUs, the environment variables
// that change results (allowlist; secret-looking names never), and the git state of the working
// directory. One function, read through World, used by `reprun env` and by every manifest.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace reprun {

class World;

// True for names that look like they hold a secret (KEY, TOKEN, SECRET, PASSWORD, PASSWD,
// CREDENTIAL, AUTH, COOKIE, SESSION, case-insensitive): never recorded, whatever the patterns say.
bool looks_secret(const std::string& name);

// The built-in allowlist: exact names (recorded as null when unset) and NAME_* prefix patterns.
const std::vector<std::string>& default_env_allowlist();

// Allowlisted environment: {name: value or null (unset)}, sorted by name. `extra` are the user's
// patterns (shell globs such as "MY_*" or exact names).
nlohmann::ordered_json capture_environment(const World& world, const std::vector<std::string>& extra);

// Git state of the repository holding `dir`: {commit, branch, dirty, diff_sha256} or null.
nlohmann::ordered_json git_state(const World& world, const std::string& dir);

struct SnapshotOptions {
  std::vector<std::string> env_allow; // --env-allow patterns
  std::string code_dir;               // where to look for a git repository; "" = current directory
  nlohmann::ordered_json kernels;     // the trainer's kernels (train/backend.hpp kernel_facts())
};

// {"reprun": ..., "host": ..., "gpu": ..., "env": ..., "code": ...}
nlohmann::ordered_json machine_snapshot(const World& world, const SnapshotOptions& opt);

} // namespace reprun
