// Checkpoint container (record/checkpoint_file.hpp): round trip, and every corruption caught
// with a message naming the file and the problem before a value is used.
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/record/checkpoint_file.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <vector>

using namespace reprun;
using ojson = nlohmann::ordered_json;

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

namespace {

// `bytes` with its header JSON edited by `edit` (the payload and its SHA-256 unchanged).
std::string with_header(const std::string& bytes, const std::function<void(nlohmann::ordered_json&)>& edit) {
  const size_t nl = bytes.find('\n', 8);
  auto h = nlohmann::ordered_json::parse(bytes.substr(8, nl - 8));
  edit(h);
  return bytes.substr(0, 8) + h.dump() + bytes.substr(nl);
}

} // namespace

TEST_CASE("checkpoint: the file is the magic, a one-line JSON header, then the floats") {
  testing::TempDir t;
  Tensors a;
  const std::string path = t / "deep/er/c.ckpt"; // folders are created
  write_checkpoint(path, 3, "d", a.list());
  const std::string bytes = read_file(path);
  const size_t nl = bytes.find('\n');
  REQUIRE(nl != std::string::npos);
  CHECK(bytes.substr(0, nl) ==
        "REPRUNCK{\"format\":\"reprun.checkpoint/1\",\"step\":3,\"config_digest\":\"d\","
        "\"tensors\":[{\"name\":\"dense_1.weight\",\"count\":6},{\"name\":\"dense_1.bias\",\"count\":2}],"
        "\"payload_bytes\":32,\"payload_sha256\":\"" +
            sha256_hex(std::string_view(bytes).substr(nl + 1)) + "\"}");
  REQUIRE(bytes.size() == nl + 1 + 32);
  CHECK(std::memcmp(bytes.data() + nl + 1, a.w.data(), 24) == 0);
  CHECK(std::memcmp(bytes.data() + nl + 1 + 24, a.b.data(), 8) == 0);
  // No tensors at all, and a tensor of no values, round-trip too.
  write_checkpoint(t / "empty.ckpt", 0, "d", {});
  CHECK(read_checkpoint(t / "empty.ckpt", "d", {}) == 0);
  std::vector<float> none;
  write_checkpoint(t / "zero.ckpt", 1, "d", {{"z", none.data(), 0}});
  CHECK(read_checkpoint(t / "zero.ckpt", "d", {{"z", none.data(), 0}}) == 1);
  // Rewriting replaces the file whole.
  write_checkpoint(path, 4, "d", a.list());
  CHECK(checkpoint_step(path) == 4);
}

TEST_CASE("checkpoint: every message, word for word") {
  testing::TempDir t;
  Tensors a;
  const std::string path = t / "c.ckpt";
  write_checkpoint(path, 7, "digest-1", a.list());
  const std::string good = read_file(path);
  const size_t payload_at = good.find('\n') + 1;
  Tensors into;
  auto err = [&](const std::string& bytes) {
    return error_of([&] { read_checkpoint_bytes(bytes, path, "digest-1", into.list()); });
  };
  auto edited = [&](const std::function<void(nlohmann::ordered_json&)>& edit) { return err(with_header(good, edit)); };

  CHECK(err(good) == "(no error)");
  CHECK(err("REPRUNC") == path + ": not a reprun checkpoint (bad magic)");
  CHECK(err("") == path + ": not a reprun checkpoint (bad magic)");
  CHECK(err("XEPRUNCK" + good.substr(8)) == path + ": not a reprun checkpoint (bad magic)");
  CHECK(err(good.substr(0, payload_at - 1)) == path + ": truncated checkpoint header");
  CHECK(err("REPRUNCK{not json\n") == path + ": corrupt checkpoint header");
  CHECK(err("REPRUNCK[1]\n") == path + ": checkpoint header has no format");
  CHECK(edited([](auto& h) { h.erase("format"); }) == path + ": checkpoint header has no format");
  CHECK(edited([](auto& h) { h["format"] = "other/1"; }) == path + ": unknown checkpoint format 'other/1'");
  CHECK(edited([](auto& h) { h["format"] = "reprun.checkpoint/0"; }) ==
        path + ": unknown checkpoint format 'reprun.checkpoint/0'");
  CHECK(edited([](auto& h) { h["format"] = "reprun.checkpoint/2"; }) ==
        path + ": checkpoint format version 2 is newer than this reprun reads (1); upgrade reprun");
  CHECK(edited([](auto& h) { h.erase("step"); }) == path + ": checkpoint header: 'step' missing or not a count");
  CHECK(edited([](auto& h) { h["step"] = -1; }) == path + ": checkpoint header: 'step' missing or not a count");
  CHECK(edited([](auto& h) { h["payload_bytes"] = "32"; }) ==
        path + ": checkpoint header: 'payload_bytes' missing or not a count");
  CHECK(edited([](auto& h) { h.erase("payload_sha256"); }) == path + ": checkpoint header: 'payload_sha256' missing");
  CHECK(edited([](auto& h) { h["config_digest"] = 1; }) == path + ": checkpoint header: 'config_digest' missing");
  CHECK(edited([](auto& h) { h["tensors"] = ojson::object(); }) == path + ": checkpoint header: 'tensors' missing");
  CHECK(err(good.substr(0, good.size() - 5)) == path + ": payload is 27 bytes, header says 32 (truncated)");
  CHECK(err(good + "xy") == path + ": payload is 34 bytes, header says 32");
  std::string flipped = good;
  flipped[payload_at] ^= 0x01;
  CHECK(err(flipped) == path + ": payload SHA-256 does not match the header (corrupt checkpoint)");
  CHECK(error_of([&] { read_checkpoint_bytes(good, path, "digest-2", into.list()); }) ==
        path + ": checkpoint belongs to another configuration (config digest differs)");
  std::vector<float> w(6), b(2), c(1);
  CHECK(error_of([&] { read_checkpoint_bytes(good, path, "digest-1", {{"dense_1.weight", w.data(), 6}}); }) ==
        path + ": checkpoint has 2 tensors, the model needs 1");
  CHECK(error_of([&] {
          read_checkpoint_bytes(good, path, "digest-1", {{"dense_1.weight", w.data(), 6}, {"dense_1.bias", b.data(), 1}});
        }) == path + ": tensor 1 does not match the model's 'dense_1.bias'");
  CHECK(edited([](auto& h) { h["tensors"][0]["count"] = "6"; }) ==
        path + ": tensor 0 does not match the model's 'dense_1.weight'");
  CHECK(edited([](auto& h) { h["tensors"][1] = 2; }) == path + ": tensor 1 does not match the model's 'dense_1.bias'");
  // A name of another type (found by fuzz_checkpoint: nlohmann's type_error used to escape).
  CHECK(edited([](auto& h) { h["tensors"][0]["name"] = 6; }) ==
        path + ": tensor 0 does not match the model's 'dense_1.weight'");
  CHECK(edited([](auto& h) { h["tensors"][1].erase("name"); }) == path + ": tensor 1 does not match the model's 'dense_1.bias'");
  // A header whose tensors need more values than its payload holds (SHA-256 and size still right).
  CHECK(error_of([&] {
          auto bytes = with_header(good, [](auto& h) { h["tensors"][1]["count"] = 3; });
          read_checkpoint_bytes(bytes, path, "digest-1", {{"dense_1.weight", w.data(), 6}, {"dense_1.bias", b.data(), 3}});
        }) == path + ": truncated payload");
  // Nothing is written into the tensors when a check fails before the payload is copied.
  Tensors untouched;
  std::fill(untouched.w.begin(), untouched.w.end(), 5.0f);
  CHECK(error_of([&] { read_checkpoint_bytes(flipped, path, "digest-1", untouched.list()); }) != "(no error)");
  CHECK(untouched.w[0] == 5.0f);
}

TEST_CASE("checkpoint: the step is read from the header alone") {
  testing::TempDir t;
  Tensors a;
  write_checkpoint(t / "c.ckpt", 123456789, "d", a.list());
  std::string bytes = read_file(t / "c.ckpt");
  write_file_atomic(t / "cut.ckpt", bytes.substr(0, bytes.find('\n') + 1)); // payload gone
  CHECK(checkpoint_step(t / "cut.ckpt") == 123456789);
  write_file_atomic(t / "bad.ckpt", "garbage");
  CHECK(error_of([&] { checkpoint_step(t / "bad.ckpt"); }) == t / "bad.ckpt" + ": not a reprun checkpoint (bad magic)");
  CHECK(error_of([&] { read_checkpoint(t / "missing.ckpt", "d", a.list()); }).rfind(t / "missing.ckpt: cannot open", 0) == 0);
}
