// Child processes in a group of their own (core/process.hpp): nothing of the group outlives
// run_process, whether the child passes its time limit, is stopped, or exits and leaves processes
// behind; and the /proc readers that say what a group still runs.
#include "reprun/core/process.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

using namespace reprun;

namespace {

ProcessSpec group_spec(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.own_process_group = true;
  return spec;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

} // namespace

TEST_CASE("A child in a group of its own that passes its time limit is ended with every process it started") {
  ProcessSpec spec = group_spec("sleep 60 & sleep 60");
  spec.time_limit_seconds = 0.5;
  int pid = 0;
  std::vector<int> running_at_limit;
  spec.on_start = [&](int p) { pid = p; };
  spec.on_time_limit = [&] { running_at_limit = process_group_members(pid); };
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult r = run_process(spec);
  CHECK(seconds_since(t0) < 20);
  CHECK(r.timed_out);
  CHECK(r.signal == SIGTERM);
  CHECK(running_at_limit.size() == 3); // sh and its two sleeps
  CHECK(std::find(running_at_limit.begin(), running_at_limit.end(), pid) != running_at_limit.end());
  CHECK(process_group_members(pid).empty());
}

TEST_CASE("What a child leaves running in its group is ended once the child has exited") {
  ProcessSpec spec = group_spec("sleep 60 >/dev/null 2>&1 & exit 0");
  spec.linger_seconds = 0.2;
  int pid = 0;
  spec.on_start = [&](int p) { pid = p; };
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult r = run_process(spec);
  CHECK(seconds_since(t0) < 20);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  CHECK(r.left_over == 1);
  CHECK(process_group_members(pid).empty());
}

TEST_CASE("A stop reaches the whole group, and a child that ignores it is killed after the grace") {
  ProcessSpec spec = group_spec("trap '' TERM; sleep 60 & wait");
  std::atomic<bool> stop{false};
  spec.stop = &stop;
  spec.grace_seconds = 0.3;
  int pid = 0;
  spec.on_start = [&](int p) { pid = p; };
  std::thread later([&] { // once the shell has set its trap
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop = true;
  });
  const ProcessResult r = run_process(spec);
  later.join();
  CHECK(r.stopped);
  CHECK(r.signal == SIGKILL); // the shell ignored SIGTERM
  CHECK(process_group_members(pid).empty());
}

TEST_CASE("A child without a group of its own and without timers runs as before") {
  ProcessSpec spec;
  std::string out;
  spec.argv = {"/bin/sh", "-c", "echo hello; exit 3"};
  spec.capture_stdout = &out;
  const ProcessResult r = run_process(spec);
  CHECK(r.exit_code == 3);
  CHECK(out == "hello\n");
  CHECK_FALSE(r.timed_out);
  CHECK_FALSE(r.stopped);
}

TEST_CASE("open_files names a file a process holds open") {
  testing::TempDir dir;
  const std::string path = dir / "held.txt";
  testing::write(path, "x");
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  const auto files = open_files(static_cast<int>(::getpid()));
  ::close(fd);
  CHECK(std::find(files.begin(), files.end(), std::filesystem::canonical(path).string()) != files.end());
}
