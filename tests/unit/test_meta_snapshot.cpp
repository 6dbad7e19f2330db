// machine_snapshot through a fake World: byte-stable, and secrets never recorded.
#include "reprun/meta/snapshot.hpp"
#include "reprun/meta/world.hpp"

#include <doctest/doctest.h>

using namespace reprun;

namespace {
class FakeWorld : public World {
public:
  std::map<std::string, std::string> env = {{"PYTHONHASHSEED", "0"},
                                            {"OMP_NUM_THREADS", "4"},
                                            {"OMP_AUTH_TOKEN", "planted-omp-secret"},
                                            {"AWS_SECRET_ACCESS_KEY", "planted-aws-secret"},
                                            {"MY_FLAG", "x"},
                                            {"MY_API_KEY", "planted-api-key"},
                                            {"HOME", "/home/someone"}};
  std::map<std::string, std::string> environment() const override { return env; }
  std::optional<std::string> read_system_file(const std::string& path) const override {
    if (path == "/etc/os-release") {
      return "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
    }
    if (path == "/proc/cpuinfo") {
      return "model name\t: Test CPU 3000\nflags\t\t: fpu sse2 avx avx2 fma avx512f\n";
    }
    if (path == "/proc/meminfo") {
      return "MemTotal:       16384 kB\n";
    }
    if (path == "/proc/driver/nvidia/version") {
      return "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:50 UTC 2024\n";
    }
    return std::nullopt;
  }
  std::map<std::string, std::string> uname() const override {
    return {{"sysname", "Linux"}, {"release", "6.1.0"}, {"machine", "x86_64"}, {"nodename", "testhost"}};
  }
  std::string libc_version() const override { return "glibc 2.36"; }
  unsigned logical_cores() const override { return 8; }
  std::string now_iso8601() const override { return "2026-01-01T00:00:00Z"; }
  std::optional<std::string> run_command(const std::vector<std::string>& argv, const std::string&) const override {
    if (argv.size() >= 2 && argv[1] == "rev-parse" && argv.back() == "--show-toplevel") {
      return "/src\n";
    }
    if (argv.size() >= 3 && argv[1] == "rev-parse" && argv[2] == "HEAD") {
      return "0123456789abcdef0123456789abcdef01234567\n";
    }
    if (argv.size() >= 3 && argv[2] == "--abbrev-ref") {
      return "main\n";
    }
    if (argv.size() >= 2 && argv[1] == "status") {
      return " M train.py\n";
    }
    if (argv.size() >= 2 && argv[1] == "diff") {
      return "diff --git a/train.py b/train.py\n";
    }
    return std::nullopt;
  }
  std::string current_directory() const override { return "/src"; }
  CudaFacts cuda() const override {
    CudaFacts f;
    f.built_with_cuda = true;
    f.runtime_version = 12040;
    f.driver_version = 12040;
    f.devices.push_back({"NVIDIA H100 80GB HBM3", 9, 0, 132, 85899345920ull});
    return f;
  }
};
} // namespace

TEST_CASE("The snapshot through a fake world is byte-stable") {
  FakeWorld w;
  SnapshotOptions o;
  o.env_allow = {"MY_*"};
  std::string a = machine_snapshot(w, o).dump();
  std::string b = machine_snapshot(w, o).dump();
  CHECK(a == b);
}

TEST_CASE("Allowlisted variables are recorded, unset ones as null, secret-looking names never") {
  FakeWorld w;
  SnapshotOptions o;
  o.env_allow = {"MY_*", "AWS_SECRET_ACCESS_KEY"};
  auto s = machine_snapshot(w, o);
  const auto& env = s["env"];
  CHECK(env["PYTHONHASHSEED"] == "0");
  CHECK(env["OMP_NUM_THREADS"] == "4");
  CHECK(env["MY_FLAG"] == "x");
  CHECK(env.contains("CUBLAS_WORKSPACE_CONFIG"));
  CHECK(env["CUBLAS_WORKSPACE_CONFIG"].is_null());
  CHECK_FALSE(env.contains("HOME"));
  CHECK_FALSE(env.contains("OMP_AUTH_TOKEN"));
  CHECK_FALSE(env.contains("MY_API_KEY"));
  CHECK_FALSE(env.contains("AWS_SECRET_ACCESS_KEY"));
  std::string all = s.dump();
  CHECK(all.find("planted") == std::string::npos);
}

TEST_CASE("Host, GPU and git facts come from the world") {
  FakeWorld w;
  auto s = machine_snapshot(w, {});
  CHECK(s["host"]["os"] == "Debian GNU/Linux 12 (bookworm)");
  CHECK(s["host"]["cpu_model"] == "Test CPU 3000");
  CHECK(s["host"]["isa"].dump() == R"(["sse2","avx","avx2","fma","avx512f"])");
  CHECK(s["host"]["logical_cores"] == 8);
  CHECK(s["gpu"]["driver"] == "550.54.15");
  CHECK(s["gpu"]["cuda_driver_api"] == "12.4");
  CHECK(s["gpu"]["count"] == 1);
  CHECK(s["gpu"]["devices"][0]["compute_capability"] == "9.0");
  CHECK(s["gpu"]["devices"][0]["sm_count"] == 132);
  CHECK_FALSE(s["gpu"]["devices"][0].contains("uuid"));
  CHECK(s["code"]["git"]["commit"] == "0123456789abcdef0123456789abcdef01234567");
  CHECK(s["code"]["git"]["dirty"] == true);
  CHECK(s["code"]["git"]["diff_sha256"].get<std::string>().size() == 64);
}

TEST_CASE("No GPU is a normal answer") {
  class NoGpu : public FakeWorld {
    std::optional<std::string> read_system_file(const std::string& p) const override {
      return p == "/proc/driver/nvidia/version" ? std::nullopt : FakeWorld::read_system_file(p);
    }
    CudaFacts cuda() const override {
      CudaFacts f;
      f.error = "no CUDA-capable device is detected";
      return f;
    }
  } w;
  auto g = machine_snapshot(w, {})["gpu"];
  CHECK(g["count"] == 0);
  CHECK(g["driver"].is_null());
  CHECK(g["note"] == "no GPU (no NVIDIA driver)");
}

TEST_CASE("No GPU says so, whatever the CUDA runtime's error; a driver too old names both versions") {
  struct Gpu : FakeWorld {
    bool proc_driver = false;
    CudaFacts facts;
    std::optional<std::string> read_system_file(const std::string& p) const override {
      return p == "/proc/driver/nvidia/version" && !proc_driver ? std::nullopt : FakeWorld::read_system_file(p);
    }
    CudaFacts cuda() const override { return facts; }
  };
  const auto note = [](bool proc_driver, CudaFacts::Status st, int runtime, int driver, const char* error) {
    Gpu w;
    w.proc_driver = proc_driver;
    w.facts.built_with_cuda = st != CudaFacts::Status::not_built;
    w.facts.status = st;
    w.facts.runtime_version = runtime;
    w.facts.driver_version = driver;
    w.facts.error = error;
    auto g = machine_snapshot(w, {})["gpu"];
    CHECK(g["count"] == 0);
    CHECK(g["devices"].empty());
    return g["note"].get<std::string>();
  };
  using S = CudaFacts::Status;
  // A machine without the NVIDIA driver, as the static CUDA runtime reports it.
  CHECK(note(false, S::no_driver, 13000, 0, "CUDA driver version is insufficient for CUDA runtime version") ==
        "no GPU (no NVIDIA driver)");
  CHECK(note(false, S::not_built, 0, 0, "reprun was built without the CUDA Toolkit") == "no GPU (no NVIDIA driver)");
  CHECK(note(false, S::no_device, 13000, 0, "no CUDA-capable device is detected") == "no GPU");
  CHECK(note(true, S::no_device, 12040, 12040, "no CUDA-capable device is detected") ==
        "no GPU (NVIDIA driver 550.54.15 is loaded but finds no device)");
  CHECK(note(true, S::driver_too_old, 13000, 12040, "CUDA driver version is insufficient for CUDA runtime version") ==
        "NVIDIA driver 550.54.15 (CUDA 12.4) is older than reprun's CUDA runtime 13.0: devices not listed; update the "
        "driver");
  CHECK(note(true, S::not_built, 0, 0, "reprun was built without the CUDA Toolkit") ==
        "devices not listed: reprun was built without the CUDA Toolkit (NVIDIA driver 550.54.15 is loaded)");
  CHECK(note(true, S::other, 13000, 12040, "all CUDA-capable devices are busy or unavailable") ==
        "devices not listed: CUDA error: all CUDA-capable devices are busy or unavailable");
}

TEST_CASE("Secret-looking names are recognised case-insensitively") {
  for (const char* n : {"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "db_password", "HTTP_COOKIE", "MY_PASSWD",
                        "GOOGLE_APPLICATION_CREDENTIALS", "WANDB_API_KEY", "SESSION_ID", "OAUTH_CLIENT"}) {
    CHECK_MESSAGE(looks_secret(n), n);
  }
  for (const char* n : {"PYTHONHASHSEED", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "LD_PRELOAD"}) {
    CHECK_FALSE_MESSAGE(looks_secret(n), n);
  }
}
