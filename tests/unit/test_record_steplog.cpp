// Step logs: the line formats (record/step_record.hpp) and the reader (record/steplog.hpp), on
// complete, truncated, damaged and very long lines.
#include "reprun/core/error.hpp"
#include "reprun/record/step_record.hpp"
#include "reprun/record/steplog.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

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
  CHECK(json_number(-0.0) == "-0.0");
  ParsedStep neg = parse_step_line("{\"step\":1,\"loss\":" + json_number(-0.0) + "}", "x", 1);
  CHECK(std::signbit(neg.loss)); // the sign bit survives the round trip
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

TEST_CASE("step lines: numbers at the edges, and lines without tensors or traces") {
  CHECK(json_number(-0.0) == "-0.0"); // a float literal: "-0" would parse as the integer 0
  CHECK(json_number(1e21) == "1e+21");
  CHECK(json_number(5e-324) == "5e-324");
  CHECK(json_number(0.1 + 0.2) == "0.30000000000000004");
  CHECK(json_number(123456789.0) == "123456789");
  StepRecord r;
  r.step = 1;
  r.loss = std::nan("");
  CHECK(format_step_line(r) == "{\"step\":1,\"epoch\":0,\"loss\":\"NaN\",\"batch\":\"0000000000000000\"}\n");
  r.loss = -std::numeric_limits<double>::infinity();
  r.tensors = {{"w", 0xffffffffffffffffULL, std::numeric_limits<double>::infinity()}};
  CHECK(format_step_line(r) == "{\"step\":1,\"epoch\":0,\"loss\":\"-Infinity\",\"batch\":\"0000000000000000\","
                               "\"tensors\":{\"w\":{\"xxh3\":\"ffffffffffffffff\",\"norm\":\"Infinity\"}}}\n");
  CHECK(format_initial_line(StepRecord{}) == "{\"step\":0,\"epoch\":0,\"tensors\":{}}\n");
  CHECK(format_eval_line({5, std::nan(""), 1.0, 0}) ==
        "{\"step\":5,\"val_loss\":\"NaN\",\"val_accuracy\":1,\"val_samples\":0}\n");
  CHECK(format_loss_line(0, std::numeric_limits<double>::infinity()) == "{\"step\":0,\"loss\":\"Infinity\"}\n");
  // What these write reads back, non-finite values included.
  std::string line = format_step_line(r);
  line.pop_back();
  ParsedStep p = parse_step_line(line, "x", 1);
  CHECK(std::isinf(p.loss));
  CHECK(p.loss < 0);
  REQUIRE(p.tensors.size() == 1);
  CHECK(p.tensors[0].second.checksum == "xxh3:ffffffffffffffff");
  CHECK(std::isinf(p.tensors[0].second.norm));
  std::string initial = format_initial_line(r);
  initial.pop_back();
  ParsedStep q = parse_step_line(initial, "x", 1);
  CHECK(q.step == 0);
  CHECK_FALSE(q.has_loss);
  CHECK_FALSE(q.has_batch);
  CHECK(q.tensors.size() == 1);
  std::string loss_line = format_loss_line(9, std::nan(""));
  loss_line.pop_back();
  CHECK(std::isnan(parse_step_line(loss_line, "x", 1).loss));
  // Every value of a full record, traces in order.
  StepRecord full;
  full.step = 2;
  full.epoch = 1;
  full.loss = 0.5;
  full.batch = 1;
  full.tensors = {{"z", 1, 1.0}, {"a", 2, 2.0}};
  full.forward = {{"input", 3}, {"dense_1.z", 4}};
  full.backward = {{"dense_1.weight.grad", 5}};
  std::string fl = format_step_line(full);
  fl.pop_back();
  ParsedStep f = parse_step_line(fl, "x", 1);
  REQUIRE(f.forward.size() == 2);
  CHECK(f.forward[1] == std::pair<std::string, std::string>{"dense_1.z", "xxh3:0000000000000004"});
  CHECK(f.tensors[0].first == "z");
  CHECK(f.tensors[1].first == "a");
  CHECK(f.has_epoch);
  CHECK(f.has_batch);
  CHECK(f.metrics.empty());
}

TEST_CASE("step lines: what external programs write is read too") {
  // Plain checksum strings, sha256 and checksum keys, non-finite spellings, metrics, nulls as absent.
  ParsedStep p = parse_step_line(
      R"({"loss":"nan","step":4,"epoch":null,"batch":null,"tensors":{"w":"abc","v":{"sha256":"ff"},"u":{"norm":"inf"}},)"
      R"("forward":[{"name":"x","checksum":"1"},{"name":"y"}],"metrics":{"acc":0.5,"gap":"-inf"}})",
      "log", 1);
  CHECK(p.step == 4);
  CHECK(std::isnan(p.loss));
  CHECK_FALSE(p.has_epoch);
  CHECK_FALSE(p.has_batch);
  REQUIRE(p.tensors.size() == 3);
  CHECK(p.tensors[0].second.checksum == "abc");
  CHECK(p.tensors[1].second.checksum == "sha256:ff");
  CHECK(p.tensors[2].second.has_norm);
  CHECK(std::isinf(p.tensors[2].second.norm));
  REQUIRE(p.forward.size() == 2);
  CHECK(p.forward[0].second == "checksum:1");
  CHECK(p.forward[1].second.empty());
  REQUIRE(p.metrics.size() == 2);
  CHECK(p.metrics[0] == std::pair<std::string, double>{"acc", 0.5});
  CHECK(p.metrics[1].second == -std::numeric_limits<double>::infinity());
  CHECK(parse_step_line("{\"step\":0}", "log", 1).step == 0);
}

TEST_CASE("step lines: the remaining damaged records, word for word") {
  CHECK(parse_error("{\"step\":1,") == "log.jsonl:7: not valid JSON (at byte 11): {\"step\":1,");
  CHECK(parse_error("garbage") == "log.jsonl:7: not valid JSON (at byte 1): garbage");
  CHECK(parse_error("") == "log.jsonl:7: not valid JSON (at byte 1): ");
  const std::string long_garbage(100, 'x');
  CHECK(parse_error(long_garbage) == "log.jsonl:7: not valid JSON (at byte 1): " + std::string(60, 'x') + "...");
  CHECK(parse_error("{\"step\":1.5}") == "log.jsonl:7: missing or invalid \"step\" (a non-negative integer)");
  CHECK(parse_error("{\"step\":\"1\"}") == "log.jsonl:7: missing or invalid \"step\" (a non-negative integer)");
  CHECK(parse_error("{\"step\":null}") == "log.jsonl:7: missing or invalid \"step\" (a non-negative integer)");
  CHECK(parse_error("{\"step\":1,\"epoch\":1.5}") == "log.jsonl:7: \"epoch\" must be an integer");
  CHECK(parse_error("{\"step\":1,\"loss\":\"high\"}") == "log.jsonl:7: \"loss\" must be a number");
  CHECK(parse_error("{\"step\":1,\"loss\":true}") == "log.jsonl:7: \"loss\" must be a number");
  CHECK(parse_error("{\"step\":1,\"batch\":1.5}") == "log.jsonl:7: \"batch\" must be a string");
  CHECK(parse_error("{\"step\":1,\"forward\":{}}") ==
        "log.jsonl:7: \"forward\" must be a list of {\"name\", \"xxh3\"}");
  CHECK(parse_error("{\"step\":1,\"backward\":3}") ==
        "log.jsonl:7: \"backward\" must be a list of {\"name\", \"xxh3\"}");
  CHECK(parse_error("{\"step\":1,\"forward\":[\"x\"]}") == "log.jsonl:7: \"forward\" entries need a \"name\"");
  CHECK(parse_error("{\"step\":1,\"forward\":[{\"name\":3}]}") == "log.jsonl:7: \"forward\" entries need a \"name\"");
  CHECK(parse_error("{\"step\":1,\"tensors\":{\"w\":{\"xxh3\":3}}}") ==
        "log.jsonl:7: tensor \"w\" needs a checksum or a norm");
}

TEST_CASE("quick_step and quick_loss read reprun's own layout and decline the rest") {
  CHECK(quick_step("{\"step\":0}") == 0);
  CHECK(quick_step("{\"step\":123,\"loss\":1}") == 123);
  CHECK(quick_step("{\"step\":123") == -1);       // cut short
  CHECK(quick_step("{\"step\":12x,") == -1);      // not a number up to the comma
  CHECK(quick_step("{\"step\":\"1\",") == -1);    // a string
  CHECK(quick_step("{\"loss\":1,\"step\":1}") == -1); // another key first
  CHECK(quick_step("") == -1);
  CHECK(quick_step("{\"step\":123456789012345678,") == 123456789012345678L); // 18 digits
  CHECK(quick_step("{\"step\":1234567890123456789}") == 1234567890123456789L);
  CHECK(quick_step("{\"step\":12345678901234567890}") == -1); // more than a long holds
  CHECK(quick_step("{\"step\":-5,") < 0);                    // negative: parse it
  CHECK(quick_step("{\"step\":,") == -1);
  double loss = 0;
  CHECK(quick_loss("{\"step\":1,\"loss\":0.25,\"batch\":\"b\"}", loss));
  CHECK(loss == 0.25);
  CHECK(quick_loss("{\"step\":1,\"loss\":-1e-3}", loss));
  CHECK(loss == -1e-3);
  CHECK(quick_loss("{\"step\":1,\"loss\":\"NaN\"}", loss));
  CHECK(std::isnan(loss));
  CHECK(quick_loss("{\"step\":1,\"loss\":\"Infinity\"}", loss));
  CHECK(loss == std::numeric_limits<double>::infinity());
  CHECK(quick_loss("{\"step\":1,\"loss\":\"-Infinity\"}", loss));
  CHECK(loss == -std::numeric_limits<double>::infinity());
  loss = 7;
  CHECK_FALSE(quick_loss("{\"step\":1}", loss));
  CHECK_FALSE(quick_loss("{\"step\":1,\"loss\":\"high\"}", loss));
  CHECK_FALSE(quick_loss("{\"step\":1,\"loss\":null}", loss));
  CHECK_FALSE(quick_loss("{\"step\":1,\"loss\":", loss));
  CHECK(loss == 7);
}

TEST_CASE("quick_step_loss: what quick_step and quick_loss give, in one pass, for reprun's own layout only") {
  const std::vector<std::string> lines = {
      "{\"step\":7,\"epoch\":0,\"loss\":1.5333333333333334,\"batch\":\"ab\"}",
      "{\"step\":0,\"epoch\":12,\"loss\":-1e-300}",
      "{\"step\":123456789,\"epoch\":3,\"loss\":2}",
      "{\"step\":7,\"epoch\":0,\"loss\":\"NaN\"}",       // a string: quick_loss's
      "{\"step\":7,\"epoch\":0,\"loss\":1.5} ",          // not '}' last
      "{\"step\":-7,\"epoch\":0,\"loss\":1.5}",          // a negative step
      "{\"step\":7,\"loss\":1.5,\"epoch\":0}",           // another order
      "{\"step\":7,\"epoch\":-1,\"loss\":1.5}",          // not digits
      "{\"step\":7,\"epoch\":0,\"loss\":}",              // no number
      "{\"step\":7,\"epoch\":0,\"loss\":x}",
      "{\"step\":,\"epoch\":0,\"loss\":1}",
      "{\"step\":7,\"epoch\":0,\"los\":1}",
      "{\"step\":7}",
      "",
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(lines[i]);
    long step = -2;
    double loss = 0, want = 0;
    const bool ok = quick_step_loss(lines[i], step, loss);
    CHECK(ok == (i < 3));
    if (ok) {
      CHECK(step == quick_step(lines[i]));
      REQUIRE(quick_loss(lines[i], want));
      CHECK(loss == want);
    }
  }
}

TEST_CASE("StepLogReader: line numbers, counting, and files that are only a partial line") {
  testing::TempDir t;
  testing::write(t / "a.jsonl", "{\"step\":0}\n\n{\"step\":2}\n");
  StepLogReader r(t / "a.jsonl");
  CHECK(r.path() == t / "a.jsonl");
  std::string_view line;
  REQUIRE(r.next(line));
  REQUIRE(r.next(line));
  CHECK(line.empty()); // an empty line is a line (parse_step_line then says what is wrong)
  CHECK(r.lineno() == 2);
  CHECK(r.count_remaining() == 1);
  CHECK_FALSE(r.next(line));
  CHECK(r.lineno() == 3);
  CHECK(r.count_remaining() == 0);
  CHECK(r.partial_tail() == 0);
  testing::write(t / "partial.jsonl", "{\"step\":0");
  size_t tail = 0;
  CHECK(read_all(t / "partial.jsonl", &tail).empty());
  CHECK(tail == 9);
  StepLogReader p(t / "partial.jsonl");
  CHECK(p.count_remaining() == 0);
  CHECK(p.lineno() == 0);
  testing::write(t / "newline.jsonl", "\n");
  CHECK(read_all(t / "newline.jsonl", &tail) == std::vector<std::string>{""});
  CHECK(tail == 0);
  CHECK(testing::error_of([&] { StepLogReader d(t.path()); }) == t.path() + ": not a regular file");
  CHECK(testing::error_of([&] { StepLogReader d(t / "nope"); }) == t / "nope" + ": cannot open: No such file or directory");
}

TEST_CASE("StepLogReader: a log longer than the 16 MiB release window reads whole, line by line") {
  testing::TempDir t;
  // Seven 3 MB lines pass the point where the reader gives pages back (every 16 MiB).
  std::vector<std::string> want;
  std::string text;
  for (int i = 0; i < 7; ++i) {
    want.push_back("{\"step\":" + std::to_string(i) + ",\"batch\":\"" + std::string(3u << 20, static_cast<char>('a' + i)) + "\"}");
    text += want.back() + "\n";
  }
  text += "{\"step\":7}\n{\"st";
  testing::write(t / "long.jsonl", text);
  size_t tail = 0;
  auto lines = read_all(t / "long.jsonl", &tail);
  REQUIRE(lines.size() == 8);
  for (int i = 0; i < 7; ++i) {
    CAPTURE(i);
    CHECK(quick_step(lines[static_cast<size_t>(i)]) == i);
    CHECK(lines[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
  }
  CHECK(lines[7] == "{\"step\":7}");
  CHECK(tail == 4);
}

namespace {

// A line of exactly `size` bytes with its '\n': {"step":N,"batch":"xxx..."}.
std::string sized_line(long step, size_t size, char fill = 'x') {
  std::string head = "{\"step\":" + std::to_string(step) + ",\"batch\":\"";
  return head + std::string(size - head.size() - 3, fill) + "\"}\n";
}

} // namespace

TEST_CASE("StepLogReader: lines across the boundary of two read blocks, found by next and by next_if") {
  testing::TempDir t;
  const size_t block = StepLogReader::k_block;
  // Line 2 ends exactly at the end of the first block (its '\n' is the block's last byte); line 4
  // straddles the second boundary: its byte `at` is the first of the third block.
  std::string text = sized_line(1, 1000) + sized_line(2, block - 1000) + sized_line(3, 5000);
  const size_t at = 2 * block - text.size();
  text += sized_line(4, at + 10) + sized_line(5, 100);
  testing::write(t / "a.jsonl", text);
  const auto lines = read_all(t / "a.jsonl");
  REQUIRE(lines.size() == 5);
  CHECK(lines[1].size() + 1 == block - 1000);
  CHECK(lines[3] + "\n" == sized_line(4, at + 10));
  // next_if takes a line only when it is byte for byte the one expected, across a boundary too.
  StepLogReader r(t / "a.jsonl");
  std::string_view line;
  REQUIRE(r.next(line));
  CHECK_FALSE(r.next_if(lines[2])); // not the next line: nothing taken
  CHECK(r.next_if(lines[1]));
  CHECK(r.lineno() == 2);
  CHECK(r.next_if(lines[2]));
  for (size_t i : {at - 1, at}) { // the last byte of one block, the first of the next
    std::string almost = lines[3];
    almost[i] = 'y';
    CHECK_FALSE(r.next_if(almost));
  }
  CHECK_FALSE(r.next_if(lines[3].substr(0, lines[3].size() - 1))); // a prefix is not the line
  CHECK(r.next_if(lines[3]));
  CHECK_FALSE(r.next_if(lines[4] + "x")); // past the end of the file
  CHECK(r.next_if(lines[4]));
  CHECK(r.lineno() == 5);
  CHECK_FALSE(r.next(line));
  CHECK(r.partial_tail() == 0);
}

TEST_CASE("StepLogReader: the digest of the lines read is the log's integrity digest, up to a limit") {
  testing::TempDir t;
  std::string text;
  for (long i = 0; i < 600; ++i) {
    text += sized_line(i, 300 + static_cast<size_t>(i % 7) * 111); // some 380 KB: blocks and a piece
  }
  testing::write(t / "a.jsonl", text + "{\"step\":600,\"cut");
  auto digest_of = [&](long lines) {
    size_t end = 0;
    for (long i = 0; i < lines; ++i) {
      end = text.find('\n', end) + 1;
    }
    return xxh3_64(text.data(), end);
  };
  for (long limit : {-1L, 0L, 1L, 437L, 600L, 700L}) {
    CAPTURE(limit);
    StepLogReader r(t / "a.jsonl");
    r.digest_lines(limit);
    CHECK(r.count_remaining() == 600); // the lines past the limit are read all the same
    CHECK(r.digest_complete());
    const long covered = limit < 0 || limit > 600 ? 600 : limit;
    CHECK(r.digested() == covered);
    CHECK(r.digest_value() == digest_of(covered)); // the cut-short last line is never digested
    CHECK(r.partial_tail() == 16);
  }
  // Reading stops at the limit: the digest is complete there, before the end of the file.
  StepLogReader r(t / "a.jsonl");
  r.digest_lines(3);
  std::string_view line;
  for (int i = 0; i < 3; ++i) {
    CHECK_FALSE(r.digest_complete());
    REQUIRE(r.next(line));
  }
  CHECK(r.digest_complete());
  CHECK(r.digest_value() == digest_of(3));
}

TEST_CASE("StepLogReader with read-ahead: the same lines, line ends at every block edge, long lines and the digest") {
  testing::TempDir t;
  // Some 3 MiB: lines of many lengths (so their ends fall everywhere in the blocks), one longer
  // than a block's headroom (64 KiB) and one longer than a block (128 KiB), and a cut last line.
  std::string text;
  long n = 0;
  while (text.size() < (3u << 20)) {
    const size_t size = n == 500 ? (100u << 10) : n == 900 ? (300u << 10) : 40 + static_cast<size_t>(n * 37 % 5000);
    text += sized_line(n++, size);
  }
  testing::write(t / "a.jsonl", text + "{\"step\":99999,\"cu");
  REQUIRE(text.size() >= StepLogReader::k_read_ahead_min);
  const auto plain = read_all(t / "a.jsonl");
  REQUIRE(plain.size() == static_cast<size_t>(n));
  for (long limit : {-1L, 0L, 700L}) {
    CAPTURE(limit);
    StepLogReader r(t / "a.jsonl", true);
    r.digest_lines(limit);
    std::string_view line;
    for (size_t i = 0; i < plain.size(); ++i) {
      CAPTURE(i);
      if (i % 3 == 1) { // taken in place, as diff takes B's line when it is A's
        CHECK_FALSE(r.next_if(plain[i] + "x"));
        REQUIRE(r.next_if(plain[i]));
      } else {
        REQUIRE(r.next(line));
        REQUIRE(line == plain[i]);
      }
    }
    CHECK_FALSE(r.next(line));
    CHECK(r.partial_tail() == 17); // {"step":99999,"cu
    CHECK(r.offset() == text.size());
    CHECK(r.digest_complete());
    const long covered = limit < 0 ? n : limit;
    size_t end = 0;
    for (long i = 0; i < covered; ++i) {
      end = text.find('\n', end) + 1;
    }
    CHECK(r.digested() == covered);
    CHECK(r.digest_value() == xxh3_64(text.data(), end));
  }
  // Stopped halfway: the thread is stopped with it.
  StepLogReader r(t / "a.jsonl", true);
  std::string_view line;
  REQUIRE(r.next(line));
}

TEST_CASE("StepLogReader with read-ahead: the steps and losses its thread finds are what the line says") {
  testing::TempDir t;
  // Some 4 MiB of lines of many lengths, with a loss, some not in reprun's layout (no step
  // first, no '}' last), one longer than a block's headroom (its block read through the spill).
  std::string text;
  long n = 0;
  while (text.size() < (4u << 20)) {
    std::string line = "{\"step\":" + std::to_string(n) + ",\"epoch\":0,\"loss\":" + fmt::format("{}", 1.0 / (n + 3)) +
                       ",\"batch\":\"" + std::string(n == 700 ? (90u << 10) : 30 + static_cast<size_t>(n * 53 % 3000), 'x') + "\"}";
    if (n % 97 == 5) {
      line = "{\"loss\":0.5,\"step\":" + std::to_string(n) + "}";
    } else if (n % 89 == 7) {
      line += " ";
    }
    text += line + "\n";
    ++n;
  }
  testing::write(t / "a.jsonl", text);
  const auto plain = read_all(t / "a.jsonl");
  REQUIRE(plain.size() == static_cast<size_t>(n));
  StepLogReader r(t / "a.jsonl", true);
  std::string_view line;
  long known_steps = 0, known_losses = 0;
  bool asked = false;
  for (size_t i = 0; i < plain.size(); ++i) {
    CAPTURE(i);
    if (i >= plain.size() / 8 && !asked) {
      r.want_losses();
      asked = true;
    }
    const StepLogReader::Known k = r.known();
    if (i % 5 == 3 && k.count >= 2) { // two lines taken at once, where the thread found them
      const size_t bytes = static_cast<size_t>(k.base + k.lines[1].end - r.buffered().data()) + 1;
      REQUIRE(std::string_view(r.buffered().data(), bytes) == plain[i] + "\n" + plain[i + 1] + "\n");
      r.take_lines(bytes, 2);
      ++i;
      CHECK(r.lineno() == static_cast<long>(i + 1));
      continue;
    }
    REQUIRE(r.next(line));
    REQUIRE(line == plain[i]);
    const long quick = line.back() == '}' ? quick_step(line) : -1;
    if (r.taken_step() >= 0) {
      ++known_steps;
      CHECK(r.taken_step() == quick);
    }
    if (quick < 0) {
      CHECK(r.taken_step() == -1); // not reprun's layout: the reader's caller parses it
    }
    double loss = 0, want = 0;
    if (r.taken_loss(loss)) {
      ++known_losses;
      REQUIRE(quick_loss(line, want));
      CHECK(loss == want);
      CHECK(i >= plain.size() / 8);
    }
  }
  CHECK_FALSE(r.next(line));
  CHECK(r.lineno() == n);
  // The thread reads at most its ring (1 MiB) ahead: the last 2 MiB were read after the losses
  // were asked for, however the two threads ran.
  CHECK(known_steps > n / 2);
  CHECK(known_losses > n / 4);
}
