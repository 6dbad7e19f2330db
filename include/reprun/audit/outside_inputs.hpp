// Files a program read outside the places of data (a data set at /data/x or /mnt/shared/train.csv
// that the program names by an absolute path, with no --data-dir): recorded by size and time only
// (class "other" in inputs.jsonl), never fingerprinted nor counted. When both runs read one at the
// same path and its size or time differs between them, diff says so, not counted, and the likely
// causes name it, instead of blaming nondeterminism on "same inputs": its bytes may have changed.
//
// Which "other" files: absolute paths in no folder of the system's (/usr, /lib*, /bin, /sbin, /etc,
// /proc, /sys, /dev, /run, /var, /boot, /snap, /nix), of an interpreter's or its packages'
// (lib/pythonN.N, site-packages, dist-packages, __pycache__), of programs (bin, sbin), nor hidden (a
// component starting with ".": ~/.cache, ~/.local), and no code (*.so, *.so.N, *.py, *.pyc, *.pth:
// reprun's own capture is read from such a folder). A file either run wrote is not one (written
// files are compared apart).
#pragma once

#include "reprun/audit/diff.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace reprun {

struct InputFile;

// The start of such a delta's `why`.
constexpr std::string_view k_outside_why = "read outside the places of data";

// Whether an absolute path lies outside the system's, interpreters' and hidden folders (above).
bool outside_place(std::string_view path);

// A file both runs read outside the places of data whose size or time differs: A's record and B's.
struct OutsidePair {
  const InputFile* a = nullptr;
  const InputFile* b = nullptr;
};

// Those files (`oa`, `ob`: the "other" files each run read, by path), those whose size differs first,
// then by path: two pointers each, however many (a data set of a million files touched again).
std::vector<OutsidePair> outside_pairs(const std::map<std::string, InputFile>& oa,
                                      const std::map<std::string, InputFile>& ob);

// The informational delta (category "dataset") that says one: its sizes, and in `detail` what differs
// and where the file was opened ("692 -> 696 bytes, opened at t3.py:2").
MetaDelta outside_delta(const OutsidePair& p);

// Whether a delta is one of outside_delta's (and not ignored).
bool is_outside_change(const MetaDelta& m);

// For a sentence: "/data/train.csv (692 -> 696 bytes, opened at t3.py:2)", at most `most` of them
// and how many more; "" when none.
std::string outside_changed(const DiffResult& r, size_t most = 3);

// The folder that holds every one of them ("" when none but "/"): what --data-dir would take.
std::string outside_folder(const DiffResult& r);

} // namespace reprun
