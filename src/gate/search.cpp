// `reprun search`: see include/reprun/gate/search.hpp.
#include "reprun/gate/search.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/core/process.hpp"
#include "reprun/gate/gate.hpp"
#include "reprun/meta/buildinfo.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/search_dir.hpp"
#include "reprun/train/search_space.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// A stop by SIGINT/SIGTERM: the search ends "interrupted" and --resume continues it.
struct Interrupted {};

// One training of one trial: trial k to `budget` epochs (0: the base config's length).
struct Task {
  long k = 0;
  long budget = 0;
  TrialPoint point;
};

// Runs tasks 0..n-1, at most `jobs` at once, starting them in index order: task i starts once
// ready(i) holds (asked under the lock, after every completion). prepare(i) runs in this thread
// before task i starts, work(i) in a thread of its own. The first exception (or Interrupted)
// stops new starts; it is rethrown when the running tasks have ended.
void run_in_order(long n, int jobs, const std::function<bool(long)>& ready, const std::function<void(long)>& prepare,
                  const std::function<void(long)>& work, const std::atomic<bool>* stop) {
  std::mutex mu;
  std::condition_variable cv;
  long next = 0, running = 0;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    while (!failure && next < n && running < jobs && ready(next) && !(stop && stop->load())) {
      const long i = next++;
      lock.unlock();
      try {
        prepare(i);
      } catch (...) {
        lock.lock();
        failure = std::current_exception();
        break;
      }
      lock.lock();
      ++running;
      threads.emplace_back([&, i] {
        std::exception_ptr e;
        try {
          work(i);
        } catch (...) {
          e = std::current_exception();
        }
        std::lock_guard<std::mutex> g(mu);
        if (e && !failure) {
          failure = e;
        }
        --running;
        cv.notify_all();
      });
    }
    if (running == 0 && (failure || next >= n || (stop && stop->load()) || !ready(next))) {
      break;
    }
    cv.wait_for(lock, std::chrono::milliseconds(200));
  }
  lock.unlock();
  for (auto& t : threads) {
    t.join();
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  if (stop && stop->load()) {
    throw Interrupted{};
  }
  if (next < n) {
    throw Error("search: the trial schedule stalled (a trial was never ready); this is a bug");
  }
}

class Search {
public:
  Search(const SearchOptions& opt, SearchDir dir, SearchConfig sc, uint64_t seed, std::string config_path,
         std::vector<std::string> sets)
    : m_opt(opt), m_dir(std::move(dir)), m_sc(std::move(sc)), m_seed(seed), m_config(std::move(config_path)),
      m_sets(std::move(sets)) {
    m_exe = opt.self_exe.empty() ? fs::read_symlink("/proc/self/exe").string() : opt.self_exe;
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    m_threads = std::max(1, cores / std::max(1, opt.jobs));
    if (m_sc.base.determinism.threads > 0) {
      m_threads = std::min(m_threads, m_sc.base.determinism.threads);
    }
  }

  void run() {
    const SearchSpec& s = m_sc.spec;
    if (s.method == "asha") {
      run_asha();
      return;
    }
    std::vector<Task> tasks(static_cast<size_t>(s.trials));
    std::vector<char> done(tasks.size(), 0);
    std::vector<TrialOutcome> outcomes(tasks.size());
    long done_prefix = 0; // trials 0..done_prefix-1 have all finished
    m_total = s.trials;
    std::mutex mu;
    auto ready = [&](long k) { // called under run_in_order's lock; done_prefix is guarded by mu
      std::lock_guard<std::mutex> g(mu);
      return s.method != "tpe" || k - s.batch <= done_prefix;
    };
    auto prepare = [&](long k) {
      std::vector<TrialOutcome> history;
      if (s.method == "tpe") {
        std::lock_guard<std::mutex> g(mu);
        history.assign(outcomes.begin(), outcomes.begin() + std::max(0L, k - s.batch));
      }
      tasks[static_cast<size_t>(k)] = Task{k, 0, sample_trial(s, m_seed, k, history)};
    };
    auto work = [&](long k) {
      const Task& t = tasks[static_cast<size_t>(k)];
      std::optional<double> metric = train(t);
      std::lock_guard<std::mutex> g(mu);
      outcomes[static_cast<size_t>(k)] = TrialOutcome{t.point, metric};
      done[static_cast<size_t>(k)] = 1;
      while (done_prefix < s.trials && done[static_cast<size_t>(done_prefix)]) {
        ++done_prefix;
      }
    };
    run_in_order(s.trials, m_opt.jobs, ready, prepare, work, m_opt.stop);
  }

  const std::map<std::string, double>& timings() const { return m_timings; }

private:
  // Successive halving with rung barriers: every trial trains to the first budget; at each barrier
  // the best 1/reduction (at least one, finite metrics only; ties by trial index) continue, each
  // from its own last checkpoint, to the next budget.
  void run_asha() {
    const SearchSpec& s = m_sc.spec;
    const std::vector<long> rungs = asha_rungs(s);
    std::vector<long> active;
    for (long k = 0; k < s.trials; ++k) {
      active.push_back(k);
    }
    m_total = s.trials;
    for (size_t r = 0; r < rungs.size(); ++r) {
      std::vector<Task> tasks(active.size());
      std::vector<std::optional<double>> metric(active.size());
      auto prepare = [&](long i) {
        const long k = active[static_cast<size_t>(i)];
        tasks[static_cast<size_t>(i)] = Task{k, rungs[r], sample_trial(s, m_seed, k)};
      };
      auto work = [&](long i) { metric[static_cast<size_t>(i)] = train(tasks[static_cast<size_t>(i)]); };
      run_in_order(static_cast<long>(active.size()), m_opt.jobs, [](long) { return true; }, prepare, work, m_opt.stop);
      if (r + 1 == rungs.size()) {
        break;
      }
      std::vector<size_t> order;
      for (size_t i = 0; i < active.size(); ++i) {
        if (metric[i]) {
          order.push_back(i);
        }
      }
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return s.maximize ? *metric[a] > *metric[b] : *metric[a] < *metric[b];
      });
      const size_t keep = std::min(order.size(), std::max<size_t>(1, active.size() / static_cast<size_t>(s.reduction)));
      std::vector<long> next;
      for (size_t i = 0; i < keep; ++i) {
        next.push_back(active[order[i]]);
      }
      std::sort(next.begin(), next.end());
      note(fmt::format("rung {} ({} epoch{}) done: {} of {} trials continue to {} epochs", r, rungs[r],
                       rungs[r] == 1 ? "" : "s", next.size(), active.size(), rungs[r + 1]));
      active = next;
      m_total += static_cast<long>(active.size());
      if (active.empty()) {
        break;
      }
    }
  }

  void note(const std::string& line) const {
    if (m_opt.on_note) {
      m_opt.on_note(line);
    }
  }

  std::string trial_facts(const Task& t) const {
    ojson v = ojson::object();
    for (size_t i = 0; i < m_sc.spec.space.size(); ++i) {
      v[m_sc.spec.space[i].key] = ojson::parse(t.point.values[i]);
    }
    return ojson{{"trial", t.k},
                 {"seed", t.point.seed},
                 {"experiment_seed", m_seed},
                 {"method", m_sc.spec.method},
                 {"sampler", t.point.sampler},
                 {"values", v}}
        .dump();
  }

  // Checks that an existing trial directory is this trial (same seed and values).
  void check_trial(const RunDir& run, const Task& t) const {
    ojson m = run.read_manifest();
    ojson want = ojson::parse(trial_facts(t));
    const ojson got = m.value("search", ojson());
    if (!got.is_object() || got.value("seed", ojson()) != want["seed"] || got.value("values", ojson()) != want["values"] ||
        got.value("trial", ojson()) != want["trial"]) {
      throw Error(run.path(), fmt::format("holds other values than trial {} of this search ({} here, {} planned); the "
                                          "search directory does not belong to this config",
                                          t.k, got.is_object() ? got.value("values", ojson()).dump() : got.dump(),
                                          want["values"].dump()));
    }
  }

  // Trains, continues or finds done one task; returns the trial's metric at the task's end
  // (nullopt: the run failed with a non-finite loss, or its metric is not finite).
  std::optional<double> train(const Task& t) {
    const std::string dir = m_dir.trial_dir(t.k);
    const std::string& metric = m_sc.spec.metric;
    std::vector<std::string> argv;
    if (RunDir::holds_run(dir)) {
      RunDir run = RunDir::open(dir);
      check_trial(run, t);
      if (auto r = finished(run, t)) { // a resumed search: this task ended in an earlier process
        const std::string status = run.read_summary().value("status", "");
        report(t, *r, 0.0, status.rfind("failed", 0) == 0 ? status : "");
        return *r;
      }
      ojson m = run.read_manifest();
      argv = {m_exe, "train", "--resume", dir, "--quiet", "--threads", std::to_string(m_threads)};
      if (t.budget > 0) {
        const long epochs = m["config"]["training"].value("epochs", 0L);
        argv.insert(argv.end(), {"--set", "training.epochs=" + std::to_string(std::max(epochs, t.budget))});
      }
    } else {
      std::error_code ec;
      if (fs::exists(fs::symlink_status(dir, ec))) {
        // killed before its manifest was written: nothing in it was trained
        fs::remove_all(dir, ec);
        if (ec) {
          throw Error(dir, "cannot remove the unfinished trial directory: " + ec.message());
        }
      }
      argv = {m_exe, "train", m_config, "-o", dir, "--quiet", "--threads", std::to_string(m_threads),
              "--search-trial", trial_facts(t)};
      for (const auto& s : m_sets) {
        argv.insert(argv.end(), {"--set", s});
      }
      for (const auto& s : trial_overrides(m_sc.spec, m_seed, t.point)) {
        argv.insert(argv.end(), {"--set", s});
      }
      if (t.budget > 0) {
        argv.insert(argv.end(), {"--set", "training.steps=null", "--set", "training.epochs=" + std::to_string(t.budget)});
      }
    }
    ProcessSpec ps;
    ps.argv = argv;
    ps.stdout_path = m_dir.trial_log(t.k);
    ps.stderr_path = ps.stdout_path;
    ps.append = true;
    ps.die_with_parent = true;
    ps.stop = m_opt.stop; // SIGTERM to the search stops its trials too (they save a checkpoint)
    ProcessResult pr = run_process(ps);
    if (m_opt.stop && m_opt.stop->load()) {
      throw Interrupted{};
    }
    const std::string status =
        RunDir::holds_run(dir) ? RunDir::open(dir).read_summary().value("status", "") : std::string();
    const bool failed_run = pr.exit_code == 1 && status.rfind("failed", 0) == 0; // a non-finite loss: a result
    if (pr.exit_code != 0 && !failed_run) {
      const std::string last = last_line(ps.stdout_path);
      throw Error(fs::path(dir).filename().string(),
                  fmt::format("training failed ({}){}; its log: {}; fix the cause and continue with reprun search "
                              "--resume {}",
                              pr.describe(), last.empty() ? "" : ": " + last, ps.stdout_path, m_dir.path()));
    }
    RunDir run = RunDir::open(dir);
    std::optional<double> value;
    if (!failed_run) {
      value = t.budget > 0 ? eval_metric_at(run, t.budget * steps_per_epoch(run), metric) : run_metric(run);
    }
    report(t, value, pr.wall_seconds, failed_run ? status : "");
    return value;
  }

  static long steps_per_epoch(const RunDir& run) {
    return run.read_manifest()["plan"].value("steps_per_epoch", 1L);
  }

  std::optional<double> run_metric(const RunDir& run) const {
    const ojson sum = run.read_summary();
    const auto it = sum.find(m_sc.spec.metric);
    if (it == sum.end() || !it->is_number() || !std::isfinite(it->get<double>())) {
      return std::nullopt;
    }
    return it->get<double>();
  }

  // The task's result when its run already reached the task's end (a resumed search), else nullopt.
  std::optional<std::optional<double>> finished(const RunDir& run, const Task& t) const {
    const std::string status = run.read_summary().value("status", "");
    if (status.rfind("failed", 0) == 0) {
      return std::optional<double>();
    }
    if (t.budget > 0) {
      const long target = t.budget * steps_per_epoch(run);
      if (has_eval_at(run, target) && run.read_summary().value("steps", 0L) >= target) {
        return eval_metric_at(run, target, m_sc.spec.metric);
      }
      return std::nullopt;
    }
    if (status == "complete") {
      return run_metric(run);
    }
    return std::nullopt;
  }

  void report(const Task& t, const std::optional<double>& value, double seconds, const std::string& failure) {
    std::lock_guard<std::mutex> g(m_mu);
    ++m_done;
    const std::string name = fs::path(m_dir.trial_dir(t.k)).filename().string();
    if (seconds > 0.0) {
      m_timings[t.budget > 0 ? fmt::format("{} to {} epochs", name, t.budget) : name] += seconds;
    }
    if (value && (!m_best || (m_sc.spec.maximize ? *value > *m_best : *value < *m_best))) {
      m_best = value;
      m_best_trial = t.k;
    }
    if (m_opt.on_progress) {
      SearchProgress p;
      p.done = m_done;
      p.total = m_total;
      p.trial = t.k;
      std::string what = failure.empty() ? fmt::format("{} {}", m_sc.spec.metric, value ? ojson(*value).dump() : "none")
                                         : failure;
      p.line = fmt::format("trial {}{}: {}{}", t.k, t.budget > 0 ? fmt::format(" ({} epochs)", t.budget) : "", what,
                           m_best ? fmt::format(" (best so far {}, trial {})", ojson(*m_best).dump(), m_best_trial) : "");
      m_opt.on_progress(p);
    }
  }

  const SearchOptions& m_opt;
  SearchDir m_dir;
  SearchConfig m_sc;
  uint64_t m_seed;
  std::string m_config;
  std::vector<std::string> m_sets;
  std::string m_exe;
  int m_threads = 1;
  std::mutex m_mu;
  long m_done = 0, m_total = 0;
  std::optional<double> m_best;
  long m_best_trial = -1;
  std::map<std::string, double> m_timings;
};

std::string absolute_path(const std::string& p) { return fs::absolute(p).lexically_normal().string(); }

// The keys --resume reads from a search's manifest, of the types reprun wrote them with: one edited
// since is refused naming the key, not met with the JSON library's message that names no file.
void check_search_manifest_keys(const ojson& m, const std::string& mpath) {
  auto need = [&](const std::string& key, bool ok, const char* what) {
    if (!ok) {
      throw Error(mpath, fmt::format("{}: is not {}, as reprun wrote it (the manifest was edited); restore it, or "
                                     "start a new search",
                                     key, what));
    }
  };
  if (m.contains("config_file")) {
    const ojson& cf = m["config_file"];
    need("config_file", cf.is_object(), "an object");
    for (const char* k : {"absolute", "sha256"}) {
      need(fmt::format("config_file.{}", k), !cf.contains(k) || cf[k].is_string(), "a string");
    }
    need("config_file.overrides",
         !cf.contains("overrides") || (cf["overrides"].is_array() &&
                                       std::all_of(cf["overrides"].begin(), cf["overrides"].end(),
                                                   [](const ojson& o) { return o.is_string(); })),
         "a list of strings");
  }
  need("experiment_seed", !m.contains("experiment_seed") || m["experiment_seed"].is_number_unsigned(),
       "a non-negative integer");
}

} // namespace

SearchOutcome run_search(const SearchOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.jobs < 1 || opt.jobs > 256) {
    throw Error("--jobs", fmt::format("expected 1..256, got {}", opt.jobs));
  }
  std::optional<SearchDir> dir;
  std::string config_path;
  std::vector<std::string> sets = opt.sets;
  uint64_t seed = 0;
  SearchConfig sc;
  if (!opt.resume_dir.empty()) {
    if (!opt.out_dir.empty() && absolute_path(opt.out_dir) != absolute_path(opt.resume_dir)) {
      throw Error("-o", "with --resume the search continues in its own directory; leave out -o");
    }
    dir = SearchDir::open(opt.resume_dir);
    ojson m = dir->read_manifest();
    const std::string mpath = dir->file(SearchFile::manifest);
    check_search_manifest_keys(m, mpath);
    const ojson cf = m.value("config_file", ojson::object());
    config_path = opt.config.empty() ? cf.value("absolute", "") : opt.config;
    const std::vector<std::string> recorded = cf.value("overrides", std::vector<std::string>());
    if (!opt.sets.empty() && opt.sets != recorded) {
      throw Error("--set", fmt::format("differs from the search being resumed ({}); resume without --set", mpath));
    }
    sets = recorded;
    std::error_code ec;
    if (config_path.empty() || !fs::exists(config_path, ec)) {
      throw Error(mpath, fmt::format("the search's config file {} is gone; give it: reprun search CONFIG --resume {}",
                                     config_path.empty() ? "(not recorded)" : config_path, opt.resume_dir));
    }
    if (sha256_file(config_path) != cf.value("sha256", "")) {
      throw Error(config_path, fmt::format("changed since the search started ({}); a search continues only under "
                                           "the config it started with",
                                           mpath));
    }
    sc = load_search_config(config_path, sets);
    seed = m.value("experiment_seed", 0ull);
    if (search_spec_to_json(sc.spec) != m["search"]) {
      throw Error(mpath, "the search section resolves differently than when the search started; this reprun "
                         "version cannot continue it");
    }
  } else {
    if (opt.config.empty()) {
      throw Error("search: give a CONFIG.json with a \"search\" section, or --resume SEARCH_DIR");
    }
    if (opt.out_dir.empty()) {
      throw Error("search: give -o SEARCH_DIR (where the trials and the leaderboard go)");
    }
    sc = load_search_config(opt.config, opt.sets);
    seed = sc.base.seed;
    config_path = absolute_path(opt.config);
    dir = SearchDir::create(opt.out_dir);
  }
  RunLock lock = dir->lock();
  if (opt.resume_dir.empty()) {
    ojson m;
    m["format"] = k_search_format;
    m["created"] = real_world().now_iso8601();
    m["command_line"] = opt.command_line;
    m["reprun"] = reprun_version();
    m["config_file"] = {{"path", opt.config},
                        {"absolute", config_path},
                        {"sha256", sha256_file(config_path)},
                        {"overrides", opt.sets}};
    m["experiment_seed"] = seed;
    m["seed_drawn_from_os"] = sc.base.seed_drawn;
    m["search"] = search_spec_to_json(sc.spec);
    m["base_config"] = ojson::parse(sc.base_json);
    dir->write_manifest(m);
  }
  Search search(opt, *dir, sc, seed, config_path, sets);
  SearchOutcome out;
  try {
    search.run();
  } catch (const Interrupted&) {
    out.interrupted = true;
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A resumed search adds its processes' times to those recorded before.
  ojson trials = search.timings();
  double before = 0.0;
  std::error_code ec;
  if (!opt.resume_dir.empty() && fs::exists(dir->file(SearchFile::timings), ec)) {
    const ojson old = ojson::parse(read_file(dir->file(SearchFile::timings)), nullptr, false);
    if (old.is_object() && old.value("trials", ojson()).is_object()) {
      for (auto it = old["trials"].begin(); it != old["trials"].end(); ++it) {
        if (it->is_number()) {
          trials[it.key()] = trials.value(it.key(), 0.0) + it->get<double>();
        }
      }
      before = old.value("search_seconds", 0.0);
    }
  }
  ojson timings = {{"note", "wall seconds; they differ from run to run and are kept out of the leaderboard"},
                   {"search_seconds", before + out.wall_seconds},
                   {"jobs", opt.jobs},
                   {"trials", trials}};
  dir->write(SearchFile::timings, timings.dump(2) + "\n");
  out.record = read_search(dir->path());
  return out;
}

} // namespace reprun
