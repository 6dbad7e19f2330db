// Step logs: the line formats (record/step_record.hpp) and the reader (record/steplog.hpp), on
// complete, truncated, damaged and very long lines.
#include "reprun/core/error.hpp"
#include "reprun/record/step_record.hpp"
#include "reprun/record/steplog.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

using namespace reprun;

namespace {

std::string parse_error(const std::string& line) {
  try {
    parse_step_line(line, "log.jsonl", 7);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> read_all(const std::string& path, size_t* tail = nullptr) {
  StepLogReader r(path);
  std::vector<std::string> out;
  std::string_view line;
  while (r.next(line)) {
    out.emplace_back(line);
  }
  if (tail) {
    *tail = r.partial_tail();
  }
  return out;
}

} // namespace

TEST_CASE("step lines: exact bytes, shortest round-trip floats, non-finite numbers as strings") {
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(1.0) == "1");
  CHECK(json_number(std::nan("")) == "\"NaN\"");
  CHECK(json_number(std::numeric_limits<double>::infinity()) == "\"Infinity\"");
  CHECK(json_number(-std::numeric_limits<double>::infinity()) == "\"-Infinity\"");
  StepRecord r;
  r.step = 3;
  r.epoch = 1;
  r.loss = 0.25;
  r.batch = 0xabcdef;
  r.tensors = {{"dense_1.weight", 0x1234, 2.5}};
  r.forward = {{"input", 0x1}};
  r.backward = {{"dense_1.weight.grad", 0x2}};
  CHECK(format_step_line(r) ==
        "{\"step\":3,\"epoch\":1,\"loss\":0.25,\"batch\":\"0000000000abcdef\","
        "\"tensors\":{\"dense_1.weight\":{\"xxh3\":\"0000000000001234\",\"norm\":2.5}},"
        "\"forward\":[{\"name\":\"input\",\"xxh3\":\"0000000000000001\"}],"
        "\"backward\":[{\"name\":\"dense_1.weight.grad\",\"xxh3\":\"0000000000000002\"}]}\n");
  CHECK(format_initial_line(r) ==
        "{\"step\":0,\"epoch\":0,\"tensors\":{\"dense_1.weight\":{\"xxh3\":\"0000000000001234\",\"norm\":2.5}}}\n");
  CHECK(format_eval_line({100, 0.5, 0.75, 800}) ==
        "{\"step\":100,\"val_loss\":0.5,\"val_accuracy\":0.75,\"val_samples\":800}\n");
  CHECK(format_loss_line(4, 1.5) == "{\"step\":4,\"loss\":1.5}\n");
}

TEST_CASE("step lines: what format_step_line writes, parse_step_line reads back") {
  StepRecord r;
  r.step = 12;
  r.epoch = 2;
  r.loss = 0.1234567890123;
  r.batch = 42;
  r.tensors = {{"a", 7, 1.0}, {"b", 8, 2.0}};
  r.backward = {{"b.grad", 9}};
  std::string line = format_step_line(r);
  line.pop_back();
  ParsedStep p = parse_step_line(line, "x", 1);
  CHECK(p.step == 12);
  CHECK(p.epoch == 2);
  CHECK(p.has_loss);
  CHECK(p.loss == r.loss);
  CHECK(p.batch == "000000000000002a");
  REQUIRE(p.tensors.size() == 2);
  CHECK(p.tensors[0].first == "a"); // model order kept
  CHECK(p.tensors[1].second.norm == 2.0);
  REQUIRE(p.backward.size() == 1);
  CHECK(p.backward[0].first == "b.grad");
  CHECK(quick_step(line) == 12);
  double loss = 0;
  CHECK(quick_loss(line, loss));
  CHECK(loss == r.loss);
  CHECK(quick_step("{ \"step\": 3}") == -1); // not reprun's own layout: parse it
}

TEST_CASE("step lines: every damaged record is an error naming the file, line and key") {
  CHECK(parse_error("{\"step\":1,").find("log.jsonl:7: not valid JSON") == 0);
  CHECK(parse_error("[1,2]") == "log.jsonl:7: a step record must be a JSON object");
  CHECK(parse_error("{\"loss\":1}") == "log.jsonl:7: missing or invalid \"step\" (a non-negative integer)");
  CHECK(parse_error("{\"step\":-1}") == "log.jsonl:7: missing or invalid \"step\" (a non-negative integer)");
  CHECK(parse_error("{\"step\":1,\"epoch\":\"x\"}") == "log.jsonl:7: \"epoch\" must be an integer");
  CHECK(parse_error("{\"step\":1,\"loss\":[1]}") == "log.jsonl:7: \"loss\" must be a number");
  CHECK(parse_error("{\"step\":1,\"batch\":[5]}") == "log.jsonl:7: \"batch\" must be a string");
  CHECK(parse_step_line("{\"step\":1,\"batch\":5}", "x", 1).batch == "5"); // a program's integer batch id
  CHECK(parse_error("{\"step\":1,\"tensors\":[]}") == "log.jsonl:7: \"tensors\" must be an object {name: checksum}");
  CHECK(parse_error("{\"step\":1,\"tensors\":{\"w\":{\"norm\":\"x\"}}}") ==
        "log.jsonl:7: tensor \"w\": \"norm\" must be a number");
  CHECK(parse_error("{\"step\":1,\"tensors\":{\"w\":{}}}") == "log.jsonl:7: tensor \"w\" needs a checksum or a norm");
  CHECK(parse_error("{\"step\":1,\"tensors\":{\"w\":3}}") ==
        "log.jsonl:7: tensor \"w\" must be a checksum string or an object");
  CHECK(parse_error("{\"step\":1,\"metrics\":[]}") == "log.jsonl:7: \"metrics\" must be an object {name: number}");
  CHECK(parse_error("{\"step\":1,\"metrics\":{\"acc\":\"x\"}}") == "log.jsonl:7: metric \"acc\" must be a number");
  CHECK(parse_error("{\"step\":1,\"forward\":{}}").find("\"forward\" must be a list") != std::string::npos);
  CHECK(parse_error("{\"step\":1,\"backward\":[{\"xxh3\":\"1\"}]}") ==
        "log.jsonl:7: \"backward\" entries need a \"name\"");
  CHECK(parse_error("{\"step\":1,\"loss\":\"NaN\"}") == "(no error)"); // non-finite as a string
}

TEST_CASE("StepLogReader: complete lines only; a cut-short last line is reported, not returned") {
  testing::TempDir t;
  testing::write(t / "a.jsonl", "{\"step\":0}\n{\"step\":1}\n{\"step\":2");
  size_t tail = 0;
  auto lines = read_all(t / "a.jsonl", &tail);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1] == "{\"step\":1}");
  CHECK(tail == 9); // {"step":2
  testing::write(t / "empty.jsonl", "");
  CHECK(read_all(t / "empty.jsonl", &tail).empty());
  CHECK(tail == 0);
  StepLogReader r(t / "a.jsonl");
  std::string_view line;
  REQUIRE(r.next(line));
  CHECK(r.lineno() == 1);
  CHECK(r.count_remaining() == 1);
}

TEST_CASE("StepLogReader: very long lines (5 MB) come back whole") {
  testing::TempDir t;
  std::string big = "{\"step\":1,\"batch\":\"" + std::string(5u << 20, 'x') + "\"}";
  testing::write(t / "big.jsonl", "{\"step\":0}\n" + big + "\n{\"step\":2}\n");
  auto lines = read_all(t / "big.jsonl");
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == big);
  CHECK(parse_step_line(lines[1], "big", 2).batch.size() == (5u << 20));
}

TEST_CASE("StepLogReader: a missing file or a folder is an error naming it") {
  testing::TempDir t;
  try {
    StepLogReader r(t / "nope.jsonl");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(t / "nope.jsonl") == 0);
  }
  CHECK_THROWS_AS(StepLogReader(t.path()), Error);
}
