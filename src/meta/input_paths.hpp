// What a path a program opened is, by its text (private to src/meta/, used by inputs.cpp): code or
// configuration by its name, a module's source for its .pyc, a hidden folder in it, the system's
// or the kernel's own folders, and the path relative to the working directory. Apart from the
// record (inputs.cpp), which decides a file's class from these and from what the run did with it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace reprun {

// A configuration file among the data (the learning rate in configs/train.yaml): its text is kept
// as a code file's is, up to k_config_copy_cap, so that a diff shows the changed lines.
constexpr uint64_t k_config_copy_cap = 64 << 10;

bool is_code_name(std::string_view p);   // .py .sh .bash .pl .rb .js .lua .R .jl
bool is_config_name(std::string_view p); // .json .yaml .yml .toml .ini .cfg .conf

// ".../pkg/__pycache__/mod.cpython-311.pyc" -> ".../pkg/mod.py"; "" for another name.
std::string source_of_pyc(const std::string& p);

// A component of `p` that starts with '.' (not "." or "..").
bool hidden_component(std::string_view p);
// A hidden folder in the part of `path` below the folder it shares with `cwd` (../.cache/x from
// proj/src: .cache; a project that itself lies in a hidden folder is not one).
bool hidden_beside(std::string_view path, std::string_view cwd);

// Under the system's folders (/proc, /sys, /dev, /etc, /run, /usr, /lib*, /bin, /sbin, /var, /tmp,
// /snap, /boot, /opt/conda).
bool system_path(std::string_view p);
// The system's own folders, which a program's argument never names as data (a temporary or a /var
// folder may hold a data set).
bool system_own_path(std::string_view p);
// The kernel's and the devices' files (/proc, /sys, /dev): their times and sizes say nothing of data.
// Not /dev/shm, a file system of plain files where a data set may be put to be read fast.
bool kernel_path(std::string_view p);
// A program that reads only the system's own state: ldconfig -p lists the library cache.
bool system_probe(const std::string& exe);

// `p` made relative to `cwd` when under it, in place; the working directory itself is "." (a
// program that lists it: the same key in every checkout).
void make_relative(std::string& p, const std::string& cwd);

// A script: its first bytes are "#!" (a program run by its interpreter, whatever its name).
bool is_script(const std::string& path);

// The folder `path` is in ("/" for "/x").
inline std::string_view parent_of(std::string_view path) { return path.substr(0, std::max<size_t>(1, path.rfind('/'))); }

} // namespace reprun
