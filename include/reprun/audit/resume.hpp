// The resume audit of `reprun exec`: what a program's checkpoints say about its runs, read from the
// events reprun_capture recorded (record/events.hpp). Two questions:
// - did a run read another run's checkpoint (a shared checkpoint path)? That is an error of the
//   setup, never a divergence: a load is matched first to the saves of its own run, and called
//   another run's only when no earlier save of its own run wrote those bytes;
// - after a kill and a resume, which state did the resumed process restore? At the resume boundary
//   (the first training forward after the checkpoint's step) the state of the resumed process is
//   compared, state by state, with run-1's at the same boundary, at the save, and at its first
//   forward (what the program's own seeding gives), so that "never restored" can be told from
//   "restored to the save, but run-1 drew from it after the save".
// It runs nothing and reads only the events it is given.
#pragma once

#include "reprun/audit/optrace.hpp"
#include "reprun/record/events.hpp"

#include <optional>
#include <string>
#include <vector>

namespace reprun {

// The events of one run of an exec: its processes in order (1, or 1 killed and 2 resumed).
struct RunEvents {
  int run = 0; // 1-based, as in run-1
  std::vector<ProcessEvents> processes;
};

struct SharingFindings {
  std::string error;               // a load of bytes another run wrote ("" when none)
  std::vector<std::string> notes;  // a checkpoint no run wrote was loaded; a path two runs wrote
};

// Checks the last run of `runs` against itself and the runs before it.
SharingFindings check_sharing(const std::vector<RunEvents>& runs);

struct BoundaryRow {
  enum class Verdict {
    restored,         // equal to run-1's at the boundary
    unused,           // a generator run-1 had not drawn from by the boundary (its state at the first forward):
                      // nothing of the run depends on it yet (an unseeded numpy or Python generator)
    at_save,          // equal to run-1's at the save, but run-1 drew from it between the save and the boundary
    by_program,       // a global generator the resumed process set back (np.random.set_state, ...) to run-1's
                      // state at the save: restored; it differs at the boundary only because the number of
                      // draws from it since differs (another state that was not restored decides it)
    never_restored,   // equal to what the program's own seeding gives (run-1 at its first forward)
    not_restored,     // something else
    missing,          // run-1 had it, the resumed process has none
  } verdict = Verdict::restored;
  std::string name;        // "torch CPU generator", "optimizer 0 (Adam): state", "batch"
  std::string kind;        // parameters | buffers | module | optimizer | hyperparameters | scheduler | scaler |
                           // generator | data | batch
  std::string detail;      // "last_epoch 3 in run-1, 1 after the resume"
  std::string consequence; // what follows from it
  std::string fix;
  long rank = -1;          // a data-parallel job: the rank whose state this is (-1: one process)
  bool restored() const {
    return verdict == Verdict::restored || verdict == Verdict::unused || verdict == Verdict::by_program;
  }
  // Whether the table shows the detail after the verdict (every row that is not restored, and a
  // generator the program restored, whose difference at the boundary needs its explanation).
  bool shows_detail() const { return !detail.empty() && (!restored() || verdict == Verdict::by_program); }
  // A difference that changes the training itself, whether or not the numbers part before the end.
  bool is_state() const;
  // "restored", "NOT restored", ...: the table's verdict words.
  std::string verdict_words() const;
};

struct ResumeAudit {
  long killed_after = 0;          // N: the process was killed at its first training forward after step N
  long resumed_from = -1;         // K: the step of the checkpoint the resumed process loaded
  std::string checkpoint;         // its path as the program gave it
  std::string saved_at;           // the line that saved it
  std::string loaded_at;          // the line that loaded it
  bool saved_after_backward = false;
  bool captured = true;           // reprun's capture saw the program's checkpoints (else its own step log,
                                  // or --loss-regex, placed the resume)
  long killed_log_step = -1;      // without the capture: the last step the killed process logged
  bool has_table = false;         // false without the capture (a program's own step log, --loss-regex)
  std::string reference = "run-1"; // whose states the resumed process's are compared with (the killed
                                   // process's own when run-1 already differs before the kill)
  std::string no_table;           // why there is no table
  std::vector<BoundaryRow> rows;
  long nondeterminism_step = -1;  // the killed process's log parted from run-1's at this step (<= N)
  long numbers_part = -1;         // the first step after the resume whose numbers differ (-1: none)
  std::vector<std::string> notes;
  // A data-parallel job (world_size > 1): each rank's checkpoint, and `rows` holds every rank's rows
  // (BoundaryRow::rank), rank 0's first.
  struct Rank {
    long rank = 0;
    long resumed_from = -1;
    std::string checkpoint, saved_at, loaded_at;
  };
  long world_size = 0;
  std::vector<Rank> ranks;
  // The rows that are not restored, in table order.
  std::vector<const BoundaryRow*> not_restored() const;
  bool state_not_restored() const;
  // "torch CPU generator, scheduler 0 (StepLR)": the names of the first rows not restored.
  std::string not_restored_names(size_t most = 3) const;
  // The headline's words: "NOT restored: torch CPU generator, batch", with the states restored only to
  // the save named apart ("...; restored to the save: numpy global generator").
  std::string not_restored_summary(size_t most = 3) const;
};

// The step of the killed process's checkpoint the resumed process loaded before its first
// optimizer step, from its loads (-1 when it loaded none: it started over), and that load.
const CheckpointEvent* resuming_load(const ProcessEvents& resumed);
// The killed process's save whose bytes that load read (nullptr when none).
const CheckpointEvent* save_of(const ProcessEvents& killed, const CheckpointEvent& load);

// The first checkpoint save of run-1 (nullptr when none) and the last one after a step <= n.
const CheckpointEvent* first_checkpoint(const ProcessEvents& run1);
const CheckpointEvent* last_checkpoint_by(const ProcessEvents& run1, long n);

// The boundary table of a resume from step `k`: run-1's states (at its first forward, at the save
// after step k, at the boundary after it) against the resumed process's at its boundary.
void fill_boundary_table(ResumeAudit& audit, const ProcessEvents& run1, const ProcessEvents& resumed);

// "rank 1", "ranks 0 and 1", "ranks 0, 1 and 3".
std::string ranks_phrase(const std::vector<long>& ranks);

// The boundary table of a data-parallel job, rank by rank: each rank's run-1 events against its
// resumed process's (`per_rank[r]`); a rank whose state equals rank 0's where its own differs is said
// to hold rank 0's state.
void fill_rank_tables(ResumeAudit& audit, const std::vector<std::pair<ProcessEvents, ProcessEvents>>& per_rank);

// The cause of the first op where a resumed run parts from run-1, from the boundary table: a random
// draw after a generator that was not restored is that generator, not an unfixed seed; an op of the
// optimizer's step whose inputs differ is the optimizer's state (or its hyperparameters, the
// scheduler, the scaler); an op of the forward or backward, the batch, the parameters or a
// generator. Nothing when every state was restored (the op's own cause stands).
std::optional<OpCause> resume_op_cause(const OpDivergence& d, const ResumeAudit& a);

// The likely causes a resume's table adds, most direct first: each state not restored, and a save
// between backward() and step().
std::vector<std::pair<std::string, std::string>> resume_causes(const ResumeAudit& a);

} // namespace reprun
