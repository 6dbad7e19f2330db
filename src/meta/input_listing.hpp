// A folder the program listed, as the record of what it read keeps it (private to src/meta/, used by
// inputs.cpp): its names now, from the listing cache when the folder is unchanged, less what the
// run itself made there and reprun's own folders, plus what the run read there and removed; and the
// digest of those names. Apart from the record, which decides which folders are listed data.
#pragma once

#include "reprun/meta/inputs.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace reprun {

// A folder reprun wrote: a run directory, or the work folder of an exec (its run-1). A record kept
// beside the program (`reprun exec -o ref`) is found by the next record's listings of that folder.
bool reprun_output(const std::string& dir);

// A listed folder's names now (less those `made_by_run`, given the entry's path, when `check`, and
// the folders reprun wrote; plus those of `read_here`, the files the run read there as they were
// before it, that are gone: a queue the program consumed), sorted, and their digest: f's names,
// listing_sha256 and size (and note, when it cannot be listed now).
void list_folder(InputFile& f, const std::string& cache_dir, bool check,
                 const std::function<bool(const std::string& entry)>& made_by_run,
                 const std::vector<std::string_view>* read_here);

} // namespace reprun
