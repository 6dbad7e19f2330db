// Files read outside the places of data (audit/outside_inputs.hpp): which places count, the deltas
// for files whose size or time differ between two runs (size first), and the folder a --data-dir
// would take.
#include "reprun/audit/outside_inputs.hpp"
#include "reprun/meta/inputs.hpp"

#include <doctest/doctest.h>

using namespace reprun;

namespace {

InputFile other(const std::string& path, uint64_t size, int64_t mtime) {
  InputFile f;
  f.path = path;
  f.cls = "other";
  f.read = true;
  f.size = size;
  f.mtime_ns = mtime;
  f.opened_by = "python3.11 (train.py:4)";
  return f;
}

} // namespace

TEST_CASE("Outside inputs: a data set elsewhere is outside the places of data; the system's, packages', hidden folders and code are not") {
  CHECK(outside_place("/data/train.csv"));
  CHECK(outside_place("/mnt/shared/imagenet/n01440764/x.JPEG"));
  CHECK(outside_place("/home/u/datasets/t.npy"));
  CHECK(outside_place("/opt/data/bin.dat"));           // "bin" only as a folder's name counts
  CHECK(outside_place("/scratch/lib/python-data/x.csv")); // lib/python* only as a folder holds an interpreter
  CHECK_FALSE(outside_place("data/train.csv"));        // under the working directory: data or code already
  CHECK_FALSE(outside_place(""));
  for (const char* p : {"/usr/share/zoneinfo/UTC", "/etc/hosts", "/proc/cpuinfo", "/sys/devices/x", "/dev/urandom",
                        "/lib/x86_64-linux-gnu/libc.so.6", "/var/lib/x", "/run/user/0/x", "/nix/store/x/y"}) {
    CHECK_MESSAGE(!outside_place(p), p);
  }
  for (const char* p : {"/home/u/.cache/torch/hub/x.pt", "/home/u/venv/lib/python3.11/site-packages/a/b.json",
                        "/opt/conda/lib/python3.11/os.py", "/srv/app/__pycache__/m.cpython-311.pyc",
                        "/opt/tool/bin/run", "/srv/build/libop.so", "/srv/build/libop.so.1.2",
                        "/srv/reprun/share/reprun/python/sitecustomize.py", "/srv/x.pth", "/data/.hidden/t.csv"}) {
    CHECK_MESSAGE(!outside_place(p), p);
  }
  CHECK(outside_place("/data/t.sort")); // ".so" inside a longer extension is no library
}

TEST_CASE("Outside inputs: files both runs read elsewhere whose size or time differ, sized first") {
  std::map<std::string, InputFile> oa, ob;
  for (const auto& [path, sa, sb, ta, tb] : std::vector<std::tuple<std::string, uint64_t, uint64_t, int64_t, int64_t>>{
           {"/data/a.csv", 10, 10, 1, 2},     // the same size, another time
           {"/data/b.csv", 10, 12, 1, 2},     // grown
           {"/data/c.csv", 10, 10, 1, 1},     // unchanged
           {"/etc/passwd", 10, 11, 1, 2},     // the system's
           {"/data/sub/d.bin", 5, 4, 1, 2}}) { // shrunk
    oa.emplace(path, other(path, sa, ta));
    ob.emplace(path, other(path, sb, tb));
  }
  oa.emplace("/data/only-a.csv", other("/data/only-a.csv", 1, 1)); // read by one run only: not compared here
  InputFile written = other("/data/w.csv", 1, 1);
  written.written = true;
  oa.emplace(written.path, written);
  written.size = 2;
  ob.emplace(written.path, written);

  const std::vector<OutsidePair> pairs = outside_pairs(oa, ob);
  REQUIRE(pairs.size() == 3);
  std::vector<MetaDelta> d;
  for (const auto& p : pairs) {
    d.push_back(outside_delta(p));
  }
  CHECK(d[0].key == "inputs.files./data/b.csv");
  CHECK(d[0].detail == "10 -> 12 bytes, opened at train.py:4");
  CHECK(d[0].kind == MetaDelta::Kind::informational);
  CHECK(d[0].category == "dataset");
  CHECK(d[0].why == "read outside the places of data (opened at train.py:4): its bytes not compared (--data-dir /data "
                    "compares them)");
  CHECK(d[1].key == "inputs.files./data/sub/d.bin");
  CHECK(d[2].key == "inputs.files./data/a.csv");
  CHECK(d[2].detail == "the same size (10 bytes), modified at another time, opened at train.py:4");
  for (const auto& m : d) {
    CHECK(is_outside_change(m));
  }

  DiffResult r;
  r.meta = d;
  CHECK(outside_changed(r, 2) == "/data/b.csv (10 -> 12 bytes, opened at train.py:4), /data/sub/d.bin (5 -> 4 bytes, "
                                 "opened at train.py:4) and 1 more");
  CHECK(outside_folder(r) == "/data");
  r.meta[0].kind = MetaDelta::Kind::ignored; // --ignore-meta: no longer a cause
  CHECK(outside_changed(r).find("/data/b.csv") == std::string::npos);
}

TEST_CASE("Outside inputs: the folder a --data-dir takes holds every changed file, never '/' alone") {
  auto folder_of = [](std::vector<std::string> paths) {
    DiffResult r;
    for (const auto& p : paths) {
      MetaDelta m;
      m.key = "inputs.files." + p;
      m.category = "dataset";
      m.kind = MetaDelta::Kind::informational;
      m.why = std::string(k_outside_why) + ": recorded by size and time only";
      r.meta.push_back(m);
    }
    return outside_folder(r);
  };
  CHECK(folder_of({"/data/x/t.csv"}) == "/data/x");
  CHECK(folder_of({"/data/x/t.csv", "/data/x/u.csv"}) == "/data/x");
  CHECK(folder_of({"/data/x/t.csv", "/data/xy/u.csv"}) == "/data");
  CHECK(folder_of({"/data/x/t.csv", "/data/x/deep/u.csv"}) == "/data/x");
  CHECK(folder_of({"/data/x/deep/u.csv", "/data/x/t.csv"}) == "/data/x");
  CHECK(folder_of({"/a/t.csv", "/b/u.csv"}).empty());
  CHECK(folder_of({"/t.csv"}).empty());
  CHECK(folder_of({}).empty());
}
