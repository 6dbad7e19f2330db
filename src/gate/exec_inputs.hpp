// What a program run by `reprun exec` read (private to src/gate/): the recording that every process
// of a run gets (the preload library first in LD_PRELOAD, Python's audit hook through reprun's
// sitecustomize), and after the run its record: inputs.jsonl, the kept text of its code, the
// manifest's "inputs" section (meta/inputs.hpp says what they hold). exec_run.cpp calls these two.
#pragma once

#include "gate/exec_run.hpp"
#include "reprun/record/run_dir.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

// libreprun_preload.so beside the binary or in ../lib/reprun; "" when it is not there.
std::string find_preload_library();

// Adds the recording to a process's environment, its logs in `files` (the run's folder, or a process
// folder of a killed and resumed run). LD_PRELOAD keeps what the program had after the library.
void add_recording_env(const ExecPlan& plan, const RunDir& files, std::map<std::string, std::string>& env);

// After every process of the run ended: reads their logs, writes inputs.jsonl and code/, removes
// the raw logs, adds the paths the run wrote to the exec's (so that a later run reading them reads
// outputs, not inputs), and returns the manifest's "inputs" section (null when nothing was
// recorded). `facts` receives inputs.jsonl's integrity facts for summary.json.
nlohmann::ordered_json record_run_inputs(const ExecPlan& plan, const RunDir& run, int64_t started_ns,
                                         std::optional<LogFacts>& facts,
                                         std::vector<std::string>& notes);

} // namespace reprun
