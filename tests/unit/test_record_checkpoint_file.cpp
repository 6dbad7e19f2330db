// Checkpoint container (record/checkpoint_file.hpp): round trip, and every corruption caught
// with a message naming the file and the problem before a value is used.
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/checkpoint_file.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <vector>

using namespace reprun;

namespace {

struct Tensors {
  std::vector<float> w{1.5f, -2.25f, 3.0f, 0.0f, 1e-30f, -0.0f};
  std::vector<float> b{7.0f, 8.0f};
  std::vector<NamedTensor> list() { return {{"dense_1.weight", w.data(), w.size()}, {"dense_1.bias", b.data(), b.size()}}; }
};

using testing::error_of;

} // namespace

TEST_CASE("checkpoint: a round trip restores every float bit for bit, and the step") {
  testing::TempDir t;
  Tensors a;
  write_checkpoint(t / "c.ckpt", 42, "digest-1", a.list());
  CHECK(checkpoint_step(t / "c.ckpt") == 42);
  Tensors b;
  std::fill(b.w.begin(), b.w.end(), 9.0f);
  std::fill(b.b.begin(), b.b.end(), 9.0f);
  CHECK(read_checkpoint(t / "c.ckpt", "digest-1", b.list()) == 42);
  CHECK(std::memcmp(a.w.data(), b.w.data(), a.w.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(a.b.data(), b.b.data(), a.b.size() * sizeof(float)) == 0);
}

TEST_CASE("checkpoint: corruption is caught before a value is used") {
  testing::TempDir t;
  Tensors a;
  const std::string path = t / "c.ckpt";
  write_checkpoint(path, 7, "digest-1", a.list());
  const std::string good = read_file(path);
  Tensors into;

  SUBCASE("bad magic") {
    std::string bad = good;
    bad[0] = 'X';
    CHECK(error_of([&] { read_checkpoint_bytes(bad, path, "digest-1", into.list()); }).find("not a reprun checkpoint") !=
          std::string::npos);
  }
  SUBCASE("a flipped payload byte fails the SHA-256") {
    std::string bad = good;
    bad[bad.size() - 3] ^= 0x40;
    std::string e = error_of([&] { read_checkpoint_bytes(bad, path, "digest-1", into.list()); });
    CHECK(e.find(path) == 0);
    CHECK(e.find("SHA-256 does not match") != std::string::npos);
  }
  SUBCASE("a truncated payload") {
    std::string e = error_of([&] { read_checkpoint_bytes(good.substr(0, good.size() - 5), path, "digest-1", into.list()); });
    CHECK(e.find("payload is") != std::string::npos);
  }
  SUBCASE("another configuration") {
    std::string e = error_of([&] { read_checkpoint(path, "digest-2", into.list()); });
    CHECK(e.find("another configuration") != std::string::npos);
  }
  SUBCASE("a tensor of another size or name") {
    std::vector<float> w(5), b(2);
    std::vector<NamedTensor> other = {{"dense_1.weight", w.data(), w.size()}, {"dense_1.bias", b.data(), b.size()}};
    CHECK(error_of([&] { read_checkpoint(path, "digest-1", other); }) != "(no error)");
    std::vector<float> w6(6);
    std::vector<NamedTensor> renamed = {{"dense_9.weight", w6.data(), w6.size()}, {"dense_1.bias", b.data(), b.size()}};
    CHECK(error_of([&] { read_checkpoint(path, "digest-1", renamed); }).find("does not match the model's 'dense_9.weight'") !=
          std::string::npos);
  }
  SUBCASE("a format from the future") {
    std::string bad = good;
    auto at = bad.find("reprun.checkpoint/1");
    REQUIRE(at != std::string::npos);
    bad[at + 18] = '9';
    CHECK(error_of([&] { read_checkpoint_bytes(bad, path, "digest-1", into.list()); }).find("newer") != std::string::npos);
  }
  SUBCASE("garbage and empty input") {
    CHECK(error_of([&] { read_checkpoint_bytes("", path, "digest-1", into.list()); }) != "(no error)");
    CHECK(error_of([&] { read_checkpoint_bytes("REPRUNCK{not json\n", path, "digest-1", into.list()); }) != "(no error)");
  }
}
