// events.jsonl: what reprun_capture saw of a PyTorch program's checkpoints (docs/run-format.md),
// one JSON object per line, appended by the program's processes as it runs:
//   {"event":"save","step":40,"kind":"checkpoint","holds":["optimizer","parameters"],"path":"ckpt.pt",
//    "file":"/abs/ckpt.pt","sha256":"...","bytes":25849,"where":"train.py:88","pid":123}
//   {"event":"load","step":0,"path":"ckpt.pt","file":"/abs/ckpt.pt","sha256":"...","bytes":25849,
//    "holds":[...],"where":"train.py:54","resumes_step":40,"pid":124}
//   {"event":"state","at":"first"|"save"|"boundary"|"resumed","step":40,"states":{NAME: {"kind":...,
//    "digest":...,"detail":{...}}}, ...}
//   {"event":"restore","step":40,"generator":"numpy global generator","digest":"...",
//    "call":"np.random.set_state","where":"train.py:57","pid":124}   (the resumed process only)
//   {"event":"rank","step":3,"world_size":2,"pid":125,"rank":1}   (a rank of a data-parallel job to be
//    stopped, at its first training forward: its pid, so that reprun can end it whatever it does)
//   {"event":"stop","step":3,"world_size":2,"pid":125,"rank":1}   (that rank stopped after step N and
//    waits to be killed)
// In a data-parallel program every event of a rank carries "rank" (its process group's rank).
// A process killed with SIGKILL leaves at most a partial last line, which is not an event. The
// reader is the one place that knows the line format; what the events mean is audit/resume.hpp's.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace reprun {

// A torch.save or a torch.load.
struct CheckpointEvent {
  bool save = true;
  long step = 0;                   // optimizer steps done when it happened (numbered on after a resume)
  std::string kind;                // saves: "checkpoint" (holds an optimizer state or the parameters) | "other"
  std::vector<std::string> holds;  // optimizer, parameters, scheduler, scaler, generator
  std::string path;                // as the program gave it
  std::string file;                // absolute, "" for a file object
  std::string sha256;              // of the bytes written or read ("" when they could not be read)
  long bytes = 0;
  std::string where;               // "train.py:88": the program's line
  bool after_backward = false;     // saves: between backward() and the optimizer's step()
  long resumes_step = -1;          // loads: the step of the killed process's checkpoint it matched
  long pid = 0;
  long rank = -1;                  // the process's rank in a data-parallel program, -1 without one
  long line = 0;                   // the event's line in its file
};

// The state a resume must restore, fingerprinted at one moment.
struct StateEvent {
  std::string at;                  // first | save | boundary | resumed
  long step = 0;
  std::string where;
  nlohmann::ordered_json states;   // NAME -> {"kind", "digest", "detail"}
  nlohmann::ordered_json draws;    // at "boundary": the first random op after the save on the "default"
                                   // generator and on an "own" one ({"op", "where"} each), or {}
  long resumed_from = -1;          // at "resumed": the checkpoint's step, -1 when none was loaded
  long rank = -1;
};

// The resumed process set a global generator's state through a module-level call (torch.set_rng_state,
// torch.cuda.set_rng_state(_all), np.random.set_state, random.setstate) before its first training
// forward: the state it set, digested as the boundary table's row of that generator is.
struct RestoreEvent {
  long step = 0;
  std::string generator;           // the row's name: "torch CPU generator", "numpy global generator", ...
  std::string digest;
  std::string call;                // "np.random.set_state"
  std::string where;               // "train.py:57"
  long rank = -1;
};

// A rank of a data-parallel job to be stopped: seen (at its first training forward) or stopped (at
// its first training forward after step N, where it waits to be killed).
struct RankEvent {
  bool stopped = false;
  long rank = -1;
  long pid = 0;
  long step = 0;
  long world_size = 0;
};

struct ProcessEvents {
  std::string path;
  std::vector<CheckpointEvent> io; // saves and loads, in order
  std::vector<StateEvent> states;
  std::vector<RestoreEvent> restores; // in order
  std::vector<RankEvent> ranks;       // in order
  bool any() const { return !io.empty() || !states.empty() || !restores.empty(); }
  // The events of one rank (rank -1: those of processes without one).
  ProcessEvents of_rank(long rank) const;
};

// Reads an events file; a missing file has no events. Throws Error naming the file and line when a
// complete line is not an event.
ProcessEvents read_events(const std::string& path);

} // namespace reprun
