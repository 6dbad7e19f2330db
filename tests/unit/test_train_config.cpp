// The config parser (train/config.hpp): every key of every section resolved, and every message
// it can give, each naming the file and the key.
#include "reprun/core/error.hpp"
#include "reprun/train/config.hpp"

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
  CHECK(c.training.epochs == 1);
  CHECK(c.training.steps == 0);
  CHECK(c.training.accumulation == 1);
  CHECK(c.training.checkpoint_every == 100);
  CHECK(c.training.checkpoint_keep == 2);
  CHECK(c.training.eval_every == 100);
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
    "training":{"batch_size":10,"steps":30,"accumulation":2,"checkpoint_every":5,"checkpoint_keep":3,"eval_every":6,"shuffle":false},
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
  CHECK(error_of(R"({"optimizer":{"name":"adam","momentum":0.9}})").rfind("c.json: optimizer.momentum: unknown key", 0) == 0);
  CHECK(error_of(R"({"optimizer":{"beta1":0.9}})").rfind("c.json: optimizer.beta1: unknown key", 0) == 0);
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
