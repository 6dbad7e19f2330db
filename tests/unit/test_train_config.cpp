// The config parser (train/config.hpp): every key of every section resolved, and every message
// it can give, each naming the file and the key.
#include "reprun/core/error.hpp"
#include "reprun/train/config.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <thread>

using namespace reprun;
using ojson = nlohmann::ordered_json;

namespace {

Config parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return parse_config(text, "c.json", "/base", sets);
}

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse(text, sets);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("config: an empty object resolves every default") {
  Config c = parse("{}");
  CHECK(c.seed_drawn);
  CHECK(c.data.kind == "synthetic");
  CHECK(c.data.samples == 2000);
  CHECK(c.data.features == 20);
  CHECK(c.data.classes == 4);
  CHECK(c.data.noise == 1.0);
  CHECK(c.data.validation_fraction == 0.1);
  CHECK(c.data.normalize == "standard");
  CHECK(c.model.hidden == std::vector<long>{64});
  CHECK(c.model.activation == "relu");
  CHECK(c.model.dropout == 0.0);
  CHECK(c.optimizer.name == "sgd");
  CHECK(c.optimizer.lr == 0.05);
  CHECK(c.optimizer.momentum == 0.9);
  CHECK(c.optimizer.weight_decay == 0.0);
  CHECK(c.training.batch_size == 32);
  CHECK(c.training.epochs == 20);
  CHECK(c.training.steps == 0);
  CHECK(c.training.accumulation == 1);
  CHECK(c.training.checkpoint_every == 100);
  CHECK(c.training.checkpoint_keep == 2);
  CHECK(c.training.eval_every == 100);
  CHECK(c.training.eval_batch_size == 256);
  CHECK(c.training.shuffle);
  CHECK(c.determinism.threads == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  CHECK(c.determinism.reduction == "ordered");
  CHECK(c.determinism.trace == "weights");
  CHECK(c.source == "c.json");
  CHECK(c.base_dir == "/base");
}

TEST_CASE("config: every key is read") {
  Config c = parse(R"({"format":"reprun.config/1","description":"d","seed":7,
    "data":{"kind":"synthetic","samples":100,"features":3,"classes":5,"noise":0.5,"validation_fraction":0.2,"normalize":"none"},
    "model":{"hidden":[8,4],"activation":"tanh","dropout":0.25},
    "optimizer":{"name":"adam","lr":0.01,"weight_decay":0.1,"beta1":0.8,"beta2":0.99,"eps":1e-6},
    "training":{"batch_size":10,"steps":30,"accumulation":2,"checkpoint_every":5,"checkpoint_keep":3,"eval_every":6,"eval_batch_size":7,"shuffle":false},
    "determinism":{"threads":3,"reduction":"atomic","trace":"full"}})");
  CHECK(c.seed == 7);
  CHECK_FALSE(c.seed_drawn);
  CHECK(c.data.samples == 100);
  CHECK(c.data.features == 3);
  CHECK(c.data.classes == 5);
  CHECK(c.data.noise == 0.5);
  CHECK(c.data.validation_fraction == 0.2);
  CHECK(c.data.normalize == "none");
  CHECK(c.model.hidden == std::vector<long>{8, 4});
  CHECK(c.model.activation == "tanh");
  CHECK(c.model.dropout == 0.25);
  CHECK(c.optimizer.name == "adam");
  CHECK(c.optimizer.lr == 0.01);
  CHECK(c.optimizer.weight_decay == 0.1);
  CHECK(c.optimizer.beta1 == 0.8);
  CHECK(c.optimizer.beta2 == 0.99);
  CHECK(c.optimizer.eps == 1e-6);
  CHECK(c.training.batch_size == 10);
  CHECK(c.training.steps == 30);
  CHECK(c.training.epochs == 0);
  CHECK(c.training.accumulation == 2);
  CHECK(c.training.checkpoint_every == 5);
  CHECK(c.training.checkpoint_keep == 3);
  CHECK(c.training.eval_every == 6);
  CHECK(c.training.eval_batch_size == 7);
  CHECK_FALSE(c.training.shuffle);
  CHECK(c.determinism.threads == 3);
  CHECK(c.determinism.reduction == "atomic");
  CHECK(c.determinism.trace == "full");
  // The adam default lr, and the csv and idx kinds.
  CHECK(parse(R"({"optimizer":{"name":"adam"}})").optimizer.lr == 0.001);
  Config csv = parse(R"({"data":{"kind":"csv","path":"d.csv","label_column":0,"header":true,"classes":3}})");
  CHECK(csv.data.path == "d.csv");
  CHECK(csv.data.label_column == 0);
  CHECK(csv.data.header == "true");
  CHECK(csv.data.classes == 3);
  CHECK(parse(R"({"data":{"kind":"csv","path":"d.csv","header":"auto"}})").data.header == "auto");
  Config idx = parse(R"({"data":{"kind":"idx","images":"i","labels":"l"}})");
  CHECK(idx.data.images == "i");
  CHECK(idx.data.labels == "l");
  CHECK(resolve_data_path(csv, "d.csv") == "/base/d.csv");
  CHECK(resolve_data_path(csv, "/abs/d.csv") == "/abs/d.csv");
}

TEST_CASE("config: every error names the file and the key") {
  CHECK(error_of("{\n  \"seed\": 1,\n  oops\n}").rfind("c.json:3:3: invalid JSON", 0) == 0);
  CHECK(error_of("[1]") == "c.json: expected a JSON object {...} at the top level");
  CHECK(error_of(R"({"sed":1})") == "c.json: sed: unknown key (did you mean 'seed'?)");
  CHECK(error_of(R"({"seed":-1})") == "c.json: seed: must be between 0 and 2147483647, got -1");
  CHECK(error_of(R"({"seed":"x"})") == "c.json: seed: expected an integer, got \"x\"");
  CHECK(error_of(R"({"data":1})") == "c.json: data: expected an object {...}, got 1");
  CHECK(error_of(R"({"data":{"kind":"parquet"}})") ==
        "c.json: data.kind: expected one of \"synthetic\", \"csv\", \"idx\", got \"parquet\"");
  CHECK(error_of(R"({"data":{"samples":1}})") == "c.json: data.samples: must be between 2 and 100000000, got 1");
  CHECK(error_of(R"({"data":{"noise":"a"}})") == "c.json: data.noise: expected a number, got \"a\"");
  CHECK(error_of(R"({"data":{"samples":100000000,"features":1000}})") ==
        "c.json: data.samples: samples x features exceeds 4e9 values");
  CHECK(error_of(R"({"data":{"kind":"csv"}})") == "c.json: data.path: missing (required)");
  CHECK(error_of(R"({"data":{"kind":"csv","path":""}})") == "c.json: data.path: expected a non-empty string, got \"\"");
  CHECK(error_of(R"({"data":{"kind":"csv","path":"d","header":"yes"}})") ==
        "c.json: data.header: expected true, false or \"auto\", got \"yes\"");
  CHECK(error_of(R"({"data":{"kind":"idx","images":"i"}})") == "c.json: data.labels: missing (required)");
  CHECK(error_of(R"({"data":{"validation_fraction":0.95}})").rfind("c.json: data.validation_fraction: must be >= 0", 0) == 0);
  CHECK(error_of(R"({"data":{"normalize":"minmax"}})").rfind("c.json: data.normalize: expected one of \"none\", \"standard\"", 0) == 0);
  CHECK(error_of(R"({"model":{"hidden":64}})") ==
        "c.json: model.hidden: expected a list of layer widths like [256, 256], got 64");
  CHECK(error_of(R"({"model":{"hidden":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}})") ==
        "c.json: model.hidden: at most 16 hidden layers");
  CHECK(error_of(R"({"model":{"hidden":[8,0]}})") == "c.json: model.hidden[1]: expected an integer width 1..65536, got 0");
  CHECK(error_of(R"({"model":{"activation":"gelu"}})").rfind("c.json: model.activation: expected one of \"relu\", \"tanh\"", 0) == 0);
  CHECK(error_of(R"({"model":{"dropout":1}})").rfind("c.json: model.dropout: must be", 0) == 0);
  CHECK(error_of(R"({"optimizer":{"lr":0}})") == "c.json: optimizer.lr: must be > 0 and <= 1000, got 0");
  CHECK(error_of(R"({"optimizer":{"name":"adam","momentum":0.9}})") ==
        "c.json: optimizer.momentum: momentum is an SGD option (optimizer.name is \"adam\"); Adam's momentum is "
        "optimizer.beta1 (default 0.9)");
  CHECK(error_of(R"({"optimizer":{"beta1":0.9}})") ==
        "c.json: optimizer.beta1: beta1 is an Adam option (optimizer.name is \"sgd\"); set optimizer.name to "
        "\"adam\", or use optimizer.momentum with SGD");
  CHECK(error_of(R"({"training":{"epochs":1,"steps":5}})") ==
        "c.json: training.steps: give either \"epochs\" or \"steps\", not both");
  CHECK(error_of(R"({"training":{"batch_size":4,"accumulation":8}})") ==
        "c.json: training.accumulation: must not exceed training.batch_size (4), got 8");
  CHECK(error_of(R"({"training":{"shuffle":1}})") == "c.json: training.shuffle: expected true or false, got 1");
  CHECK(error_of(R"({"training":{"checkpoint_keep":0}})") ==
        "c.json: training.checkpoint_keep: must be between 1 and 1000, got 0");
  CHECK(error_of(R"({"determinism":{"threads":2000}})") == "c.json: determinism.threads: must be between 0 and 1024, got 2000");
  CHECK(error_of(R"({"determinism":{"trace":"ful"}})") ==
        "c.json: determinism.trace: expected one of \"loss\", \"weights\", \"full\", got \"ful\" (did you mean 'full'?)");
}

TEST_CASE("config: --set overrides, their errors, and KEY=null") {
  CHECK(parse("{}", {"optimizer.lr=0.5"}).optimizer.lr == 0.5);
  CHECK(parse("{}", {"model.hidden=[3,2]"}).model.hidden == std::vector<long>{3, 2});
  CHECK(parse("{}", {"model.activation=tanh"}).model.activation == "tanh"); // not JSON: a string
  CHECK(parse(R"({"training":{"epochs":2}})", {"training.epochs=null", "training.steps=9"}).training.steps == 9);
  CHECK(error_of("{}", {"optimizer.lr"}) == "--set optimizer.lr: expected KEY=VALUE, e.g. --set optimizer.lr=0.1");
  CHECK(error_of("{}", {"=1"}).rfind("--set =1: expected KEY=VALUE", 0) == 0);
  CHECK(error_of("{}", {"optimizer..lr=1"}) == "--set optimizer..lr=1: empty key component");
  CHECK(error_of(R"({"seed":1})", {"seed.x=1"}) == "--set seed.x=1: 'seed' is not an object");
  CHECK(error_of("{}", {"optimizer.lrr=1"}).rfind("c.json: optimizer.lrr: unknown key", 0) == 0);
}

TEST_CASE("config: the resolved JSON reads back to the same config") {
  Config c = parse(R"({"seed":3,"model":{"hidden":[5]},"optimizer":{"name":"adam"},"training":{"steps":4}})");
  ojson j = config_to_json(c);
  CHECK(j["training"].contains("steps"));
  CHECK_FALSE(j["training"].contains("epochs"));
  CHECK_FALSE(j["optimizer"].contains("momentum"));
  Config back = config_from_json(j, "manifest");
  CHECK(config_to_json(back).dump() == j.dump());
}

TEST_CASE("config: epochs and steps resolve each other's defaults, threads 0 means every core") {
  CHECK(parse(R"({"training":{}})").training.epochs == 20);
  CHECK(parse(R"({"training":{}})").training.steps == 0);
  Config steps = parse(R"({"training":{"steps":12}})");
  CHECK(steps.training.steps == 12);
  CHECK(steps.training.epochs == 0);
  Config epochs = parse(R"({"training":{"epochs":3}})");
  CHECK(epochs.training.epochs == 3);
  CHECK(epochs.training.steps == 0);
  // null is the same as absent, so epochs:null with steps is not "both".
  CHECK(parse(R"({"training":{"epochs":null,"steps":5}})").training.steps == 5);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CHECK(parse(R"({"determinism":{"threads":0}})").determinism.threads == cores);
  CHECK(parse(R"({"determinism":{"threads":1024}})").determinism.threads == 1024);
  // Sections given as null take their defaults; a seed of null is drawn like a missing one.
  Config nulls = parse(R"({"seed":null,"data":null,"model":null,"optimizer":null,"training":null,"determinism":null})");
  CHECK(nulls.seed_drawn);
  CHECK(nulls.seed <= 0x7fffffffu);
  CHECK(nulls.model.hidden == std::vector<long>{64});
  // An integer written as a float is an integer; the header may be false; the edges of a range.
  CHECK(parse(R"({"seed":7.0})").seed == 7);
  CHECK(parse(R"({"seed":2147483647})").seed == 2147483647u);
  CHECK(parse(R"({"data":{"kind":"csv","path":"d","header":false}})").data.header == "false");
  CHECK(parse(R"({"data":{"kind":"csv","path":"d"}})").data.label_column == -1);
  CHECK(parse(R"({"data":{"validation_fraction":0}})").data.validation_fraction == 0.0);
  CHECK(parse(R"({"training":{"batch_size":4,"accumulation":4}})").training.accumulation == 4);
  CHECK(parse(R"({"optimizer":{"name":"sgd","momentum":0}})").optimizer.momentum == 0.0);
}

TEST_CASE("config: the rest of the messages, word for word") {
  // Types: a choice given a non-string, an integer given a fraction, a huge unsigned integer.
  CHECK(error_of(R"({"model":{"activation":1}})") ==
        "c.json: model.activation: expected one of \"relu\", \"tanh\", got 1");
  CHECK(error_of(R"({"seed":7.5})") == "c.json: seed: expected an integer, got 7.5");
  CHECK(error_of(R"({"seed":18446744073709551615})") ==
        "c.json: seed: must be between 0 and 2147483647, got 18446744073709551615");
  CHECK(error_of(R"({"seed":2147483648})") == "c.json: seed: must be between 0 and 2147483647, got 2147483648");
  CHECK(error_of(R"({"training":{"batch_size":true}})") == "c.json: training.batch_size: expected an integer, got true");
  // Ranges, open and closed, with the value as written.
  CHECK(error_of(R"({"data":{"validation_fraction":0.95}})") ==
        "c.json: data.validation_fraction: must be >= 0 and <= 0.9, got 0.95");
  CHECK(error_of(R"({"model":{"dropout":1}})") == "c.json: model.dropout: must be >= 0 and <= 0.95, got 1");
  CHECK(error_of(R"({"optimizer":{"name":"adam","eps":0}})") == "c.json: optimizer.eps: must be > 0 and <= 1, got 0");
  CHECK(error_of(R"({"optimizer":{"momentum":1}})") == "c.json: optimizer.momentum: must be >= 0 and <= 0.9999, got 1");
  CHECK(error_of(R"({"optimizer":{"lr":-1}})") == "c.json: optimizer.lr: must be > 0 and <= 1000, got -1");
  CHECK(error_of(R"({"training":{"steps":0}})") == "c.json: training.steps: must be between 1 and 1000000000, got 0");
  CHECK(error_of(R"({"training":{"epochs":0}})") == "c.json: training.epochs: must be between 1 and 1000000, got 0");
  CHECK(error_of(R"({"data":{"normalize":"minmax"}})") ==
        "c.json: data.normalize: expected one of \"none\", \"standard\", got \"minmax\"");
  // A long value is shortened in the message.
  CHECK(error_of(R"({"seed":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})") ==
        "c.json: seed: expected an integer, got \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...");
  // Unknown keys: at the top, in a section, with and without a suggestion; a key of another kind.
  CHECK(error_of(R"({"zzzzzzzzzzzz":1})") == "c.json: zzzzzzzzzzzz: unknown key");
  CHECK(error_of(R"({"training":{"batchsize":4}})") ==
        "c.json: training.batchsize: unknown key (did you mean 'batch_size'?)");
  CHECK(error_of(R"({"data":{"path":"d.csv"}})") ==
        "c.json: data.kind: missing: data.path is read for data.kind \"csv\" (the default is \"synthetic\"); add "
        "\"kind\": \"csv\" to data");
  CHECK(error_of(R"({"data":{"kind":"csv","path":"d","samples":3}})") ==
        "c.json: data.samples: read only for data.kind \"synthetic\" (data.kind is \"csv\")");
  CHECK(error_of(R"({"model":{"hidden":[8.0]}})") ==
        "c.json: model.hidden[0]: expected an integer width 1..65536, got 8.0");
  CHECK(error_of(R"({"model":{"hidden":[65537]}})") ==
        "c.json: model.hidden[0]: expected an integer width 1..65536, got 65537");
  CHECK(error_of(R"({"data":{"kind":"idx","labels":"l"}})") == "c.json: data.images: missing (required)");
  CHECK(error_of(R"({"data":{"kind":"csv","path":3}})") == "c.json: data.path: expected a non-empty string, got 3");
  CHECK(error_of(R"({"training":[]})") == "c.json: training: expected an object {...}, got []");
  // Invalid JSON: the position of the bad byte, the reason without nlohmann's own position.
  CHECK(error_of("") == "c.json:1:1: invalid JSON: unexpected end of input; expected '[', '{', or a literal");
  const std::string bad = error_of("{\n  \"seed\": 1,\n  oops\n}");
  CHECK(bad.rfind("c.json:3:3: invalid JSON: ", 0) == 0);
  CHECK(bad.find("while parsing") == std::string::npos);
  CHECK(error_of("{\"seed\": 1} x").rfind("c.json:1:13: invalid JSON: ", 0) == 0);
  CHECK(error_of("\"text\"") == "c.json: expected a JSON object {...} at the top level");
  CHECK(error_of("null") == "c.json: expected a JSON object {...} at the top level");
}

TEST_CASE("config: apply_override edits the document one dotted key at a time") {
  ojson doc = ojson::object();
  apply_override(doc, "determinism.threads=2"); // creates the section
  CHECK(doc.dump() == R"({"determinism":{"threads":2}})");
  apply_override(doc, "description=a=b"); // the first '=' splits
  CHECK(doc["description"] == "a=b");
  apply_override(doc, "model.hidden=[1, 2]");
  CHECK(doc["model"]["hidden"] == ojson::array({1, 2}));
  apply_override(doc, "training.shuffle=false");
  CHECK(doc["training"]["shuffle"] == false);
  apply_override(doc, "model.activation=\"tanh\"");
  CHECK(doc["model"]["activation"] == "tanh");
  apply_override(doc, "determinism.threads=null"); // removed: its default applies
  CHECK(doc["determinism"].dump() == "{}");
  apply_override(doc, "model=null");
  CHECK_FALSE(doc.contains("model"));
  apply_override(doc, "absent.key=null"); // removing what is not there is fine
  CHECK(doc["absent"].dump() == "{}");
  doc["nulled"] = nullptr;
  apply_override(doc, "nulled.x=1"); // a null parent becomes an object
  CHECK(doc["nulled"]["x"] == 1);
  CHECK(testing::error_of([&] { apply_override(doc, "optimizer.=1"); }) == "--set optimizer.=1: empty key component");
  CHECK(testing::error_of([&] { apply_override(doc, ".lr=1"); }) == "--set .lr=1: empty key component");
  CHECK(testing::error_of([&] { apply_override(doc, "description.x.y=1"); }) == "--set description.x.y=1: 'description' is not an object");
  CHECK(testing::error_of([&] { apply_override(doc, "nulled.x.y=1"); }) == "--set nulled.x.y=1: 'nulled.x' is not an object");
  CHECK(testing::error_of([&] { apply_override(doc, "no-equals-sign"); }) ==
        "--set no-equals-sign: expected KEY=VALUE, e.g. --set optimizer.lr=0.1");
  // Through parse_config: a value that is not JSON stays a string and is then checked as one.
  CHECK(error_of("{}", {"optimizer.lr=abc"}) == "c.json: optimizer.lr: expected a number, got \"abc\"");
  CHECK(parse(R"({"data":{"samples":10}})", {"data=null"}).data.samples == 2000);
  CHECK(parse(R"({"seed":1})", {"seed=null"}).seed_drawn);
  // Overrides apply in order: the last one wins.
  CHECK(parse("{}", {"optimizer.lr=0.5", "optimizer.lr=0.25"}).optimizer.lr == 0.25);
}

TEST_CASE("config: a file on disk resolves data paths against its folder") {
  testing::TempDir t;
  testing::write(t / "sub/c.json", R"({"seed":1,"data":{"kind":"csv","path":"d.csv"}})");
  Config c = load_config_file(t / "sub/c.json", {"training.steps=3"});
  CHECK(c.source == t / "sub/c.json");
  CHECK(c.base_dir == t / "sub");
  CHECK(c.training.steps == 3);
  CHECK(resolve_data_path(c, c.data.path) == t / "sub/d.csv");
  CHECK(resolve_data_path(c, "../x/../d.csv") == t / "d.csv");
  Config no_base = parse("{}");
  no_base.base_dir.clear();
  CHECK(resolve_data_path(no_base, "d.csv") == "d.csv");
  CHECK(testing::error_of([&] { load_config_file(t / "missing.json", {}); }).rfind(t / "missing.json: cannot open", 0) == 0);
  testing::write(t / "bad.json", "{\"seed\":1,}");
  CHECK(testing::error_of([&] { load_config_file(t / "bad.json", {}); }).rfind(t / "bad.json:1:11: invalid JSON", 0) == 0);
}

TEST_CASE("config: every kind of config survives config_to_json and config_from_json") {
  const char* docs[] = {
      "{}",
      R"({"seed":9,"optimizer":{"name":"sgd","momentum":0.5,"weight_decay":0.01},"training":{"epochs":2}})",
      R"({"seed":9,"data":{"kind":"csv","path":"d.csv","label_column":2,"header":"auto","classes":0}})",
      R"({"seed":9,"data":{"kind":"csv","path":"d.csv","header":true}})",
      R"({"seed":9,"data":{"kind":"csv","path":"d.csv","header":false}})",
      R"({"seed":9,"data":{"kind":"idx","images":"i","labels":"l","normalize":"none"},"model":{"hidden":[],"dropout":0.5}})",
      R"({"seed":9,"determinism":{"threads":3,"reduction":"atomic","trace":"full"},"training":{"steps":7,"shuffle":false}})",
  };
  for (const char* text : docs) {
    CAPTURE(text);
    ojson j = config_to_json(parse(text));
    CHECK(config_to_json(config_from_json(j, "manifest")).dump() == j.dump());
  }
  // The resolved JSON names every key, in a stable order.
  CHECK(config_to_json(parse(R"({"seed":1,"determinism":{"threads":2}})")).dump() ==
        R"({"seed":1,"data":{"kind":"synthetic","samples":2000,"features":20,"classes":4,"noise":1.0,)"
        R"("validation_fraction":0.1,"normalize":"standard"},"model":{"hidden":[64],"activation":"relu","dropout":0.0},)"
        R"("optimizer":{"name":"sgd","lr":0.05,"momentum":0.9,"weight_decay":0.0},)"
        R"("training":{"batch_size":32,"epochs":20,"accumulation":1,"checkpoint_every":100,"checkpoint_keep":2,)"
        R"("eval_every":100,"eval_batch_size":256,"shuffle":true},"determinism":{"threads":2,"ranks":1,"reduction":"ordered","trace":"weights"}})");
  CHECK(config_to_json(parse(R"({"data":{"kind":"csv","path":"d","header":true}})"))["data"]["header"] == true);
  // A damaged manifest config is an error naming the manifest.
  ojson bad = config_to_json(parse("{}"));
  bad["training"]["steps"] = 5; // and epochs: both
  CHECK(testing::error_of([&] { config_from_json(bad, "run/manifest.json"); }) ==
        "run/manifest.json: training.steps: give either \"epochs\" or \"steps\", not both");
}

TEST_CASE("config: an unknown key is matched against every key of every section") {
  // The key's own section first, by spelling, named as the section names it.
  CHECK(error_of(R"({"optimizer":{"lrr":0.1}})") == "c.json: optimizer.lrr: unknown key (did you mean 'lr'?)");
  // Names other tools use, anywhere.
  CHECK(error_of(R"({"learning_rate":0.1})") == "c.json: learning_rate: unknown key (did you mean 'optimizer.lr'?)");
  CHECK(error_of(R"({"training":{"learning_rate":0.1}})") ==
        "c.json: training.learning_rate: unknown key (did you mean 'optimizer.lr'?)");
  CHECK(error_of(R"({"optimizer":{"learning_rate":0.1}})") ==
        "c.json: optimizer.learning_rate: unknown key (did you mean 'optimizer.lr'?)");
  CHECK(error_of(R"({"Learning-Rate":0.1})") == "c.json: Learning-Rate: unknown key (did you mean 'optimizer.lr'?)");
  CHECK(error_of(R"({"num_classes":3})") == "c.json: num_classes: unknown key (did you mean 'data.classes'?)");
  CHECK(error_of(R"({"data":{"type":"csv"}})") == "c.json: data.type: unknown key (did you mean 'data.kind'?)");
  // A key of another section, by its name or a close spelling.
  CHECK(error_of(R"({"epochs":3})") == "c.json: epochs: unknown key (did you mean 'training.epochs'?)");
  CHECK(error_of(R"({"lr":0.1})") == "c.json: lr: unknown key (did you mean 'optimizer.lr'?)");
  CHECK(error_of(R"({"training":{"momentum":0.9}})") ==
        "c.json: training.momentum: unknown key (did you mean 'optimizer.momentum'?)");
  CHECK(error_of(R"({"model":{"batch_sise":8}})") ==
        "c.json: model.batch_sise: unknown key (did you mean 'training.batch_size'?)");
  CHECK(error_of(R"({"determinism":{"seed":1}})") == "c.json: determinism.seed: unknown key (did you mean 'seed'?)");
  // Nothing close: no suggestion.
  CHECK(error_of(R"({"training":{"zzzzzzzzzzzz":1}})") == "c.json: training.zzzzzzzzzzzz: unknown key");
}

TEST_CASE("config: a key of a data kind or an optimizer that is not the one chosen says whose it is") {
  CHECK(error_of(R"({"data":{"images":"i","labels":"l"}})") ==
        "c.json: data.kind: missing: data.images is read for data.kind \"idx\" (the default is \"synthetic\"); "
        "add \"kind\": \"idx\" to data");
  CHECK(error_of(R"({"data":{"label_column":0}})").rfind("c.json: data.kind: missing: data.label_column is read for "
                                                         "data.kind \"csv\"", 0) == 0);
  CHECK(error_of(R"({"data":{"kind":"synthetic","path":"d.csv"}})") ==
        "c.json: data.path: read only for data.kind \"csv\" (data.kind is \"synthetic\")");
  CHECK(error_of(R"({"data":{"kind":"idx","images":"i","labels":"l","header":true}})") ==
        "c.json: data.header: read only for data.kind \"csv\" (data.kind is \"idx\")");
  CHECK(error_of(R"({"optimizer":{"name":"sgd","eps":1e-6}})").rfind("c.json: optimizer.eps: eps is an Adam option", 0) == 0);
  CHECK(error_of(R"({"optimizer":{"name":"adam","momentum":0.5}})").rfind(
            "c.json: optimizer.momentum: momentum is an SGD option", 0) == 0);
  // A null of another kind's key is no different (--set KEY=null removes the key instead).
  CHECK(error_of(R"({"optimizer":{"name":"adam","momentum":null}})").rfind(
            "c.json: optimizer.momentum: momentum is an SGD option", 0) == 0);
  CHECK(parse(R"({"optimizer":{"name":"adam"}})", {"optimizer.momentum=null"}).optimizer.name == "adam");
  CHECK(error_of(R"({"data":{"path":null}})").rfind("c.json: data.kind: missing: data.path is read for", 0) == 0);
  // A key inside a section is never offered a top-level name ('data' for data.pth).
  CHECK(error_of(R"({"data":{"kind":"csv","path":"d","pth":1}})") == "c.json: data.pth: unknown key (did you mean 'path'?)");
  CHECK(error_of(R"({"model":{"dta":1}})") == "c.json: model.dta: unknown key");
}

TEST_CASE("config: training.eval_batch_size is read, checked and written back") {
  CHECK(parse(R"({"training":{"eval_batch_size":1}})").training.eval_batch_size == 1);
  CHECK(parse("{}", {"training.eval_batch_size=7"}).training.eval_batch_size == 7);
  CHECK(error_of(R"({"training":{"eval_batch_size":0}})") ==
        "c.json: training.eval_batch_size: must be between 1 and 1000000, got 0");
  ojson j = config_to_json(parse(R"({"training":{"eval_batch_size":9}})"));
  CHECK(j["training"]["eval_batch_size"] == 9);
  CHECK(config_from_json(j, "manifest").training.eval_batch_size == 9);
}
