// Config parsing: every key checked against a table of known keys per section, with types, ranges
// and defaults; unknown keys get "did you mean". See docs/config.md.
#include "reprun/train/config.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <set>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

std::string show(const ojson& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// Every key of the config, dotted, in docs/config.md order: an unknown key anywhere is matched
// against all of them, so a key written in the wrong section still finds its place.
const std::vector<std::string>& all_keys() {
  static const std::vector<std::string> k_keys = {
      "seed", "description", "format", "data", "model", "optimizer", "training", "determinism",
      "data.kind", "data.samples", "data.features", "data.classes", "data.noise", "data.path",
      "data.label_column", "data.header", "data.images", "data.labels", "data.validation_fraction",
      "data.normalize", "data.seed", "model.hidden", "model.activation", "model.dropout", "optimizer.name", "optimizer.lr",
      "optimizer.momentum", "optimizer.beta1", "optimizer.beta2", "optimizer.eps", "optimizer.weight_decay",
      "training.batch_size", "training.epochs", "training.steps", "training.accumulation",
      "training.checkpoint_every", "training.checkpoint_keep", "training.eval_every", "training.eval_batch_size",
      "training.shuffle", "determinism.threads", "determinism.ranks", "determinism.reduction", "determinism.trace",
      "determinism.device"};
  return k_keys;
}

// Names other tools give our keys (PyTorch, Keras, scikit-learn habits), lower case.
const std::vector<std::pair<std::string, std::string>>& key_aliases() {
  static const std::vector<std::pair<std::string, std::string>> k_aliases = {
      {"learning_rate", "optimizer.lr"},     {"learningrate", "optimizer.lr"},
      {"optim", "optimizer"},                {"optimizer.type", "optimizer.name"},
      {"data.type", "data.kind"},            {"data.format", "data.kind"},
      {"num_epochs", "training.epochs"},     {"n_epochs", "training.epochs"},
      {"max_epochs", "training.epochs"},     {"max_steps", "training.steps"},
      {"num_steps", "training.steps"},       {"iterations", "training.steps"},
      {"hidden_layers", "model.hidden"},     {"hidden_sizes", "model.hidden"},
      {"layers", "model.hidden"},            {"num_classes", "data.classes"},
      {"n_classes", "data.classes"},         {"label", "data.label_column"},
      {"target", "data.label_column"},       {"target_column", "data.label_column"},
      {"file", "data.path"},                 {"csv", "data.path"},
      {"val_split", "data.validation_fraction"}, {"validation_split", "data.validation_fraction"},
      {"num_threads", "determinism.threads"}, {"workers", "determinism.threads"},
      {"gradient_accumulation_steps", "training.accumulation"}, {"l2", "optimizer.weight_decay"},
  };
  return k_aliases;
}

std::string leaf_of(const std::string& dotted) {
  auto dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

// The key an unknown `key` (in section `prefix`, "" or "training.") most likely means, dotted, or
// "": a close spelling in its own section (named as the section does: 'lr'), else an alias, the
// same name in another section, or a close spelling of any key anywhere (named in full:
// 'optimizer.lr').
std::string suggest_key(const std::string& prefix, const std::string& key, const std::vector<std::string>& known) {
  std::string s = did_you_mean(key, known);
  if (!s.empty()) {
    return s;
  }
  std::string lower;
  for (char ch : key) {
    lower += ch == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  auto suggest = [](const std::string& dotted) { return " (did you mean '" + dotted + "'?)"; };
  for (const auto& [alias, dotted] : key_aliases()) {
    if ((lower == alias || prefix + lower == alias) && prefix + key != dotted) {
      return suggest(dotted);
    }
  }
  std::vector<std::string> leaves;
  std::vector<std::string> dotted_of;
  for (const auto& k : all_keys()) {
    if (k.rfind(prefix, 0) == 0 && k.find('.', prefix.size()) == std::string::npos) {
      continue; // its own section: asked above
    }
    if (!prefix.empty() && (k == "data" || k == "model" || k == "optimizer" || k == "training" || k == "determinism")) {
      continue; // a key inside a section is not a section
    }
    if (leaf_of(k) == lower) {
      return suggest(k);
    }
    leaves.push_back(leaf_of(k));
    dotted_of.push_back(k);
  }
  s = did_you_mean(lower, leaves);
  for (size_t i = 0; i < leaves.size() && !s.empty(); ++i) {
    if (s == " (did you mean '" + leaves[i] + "'?)") {
      return suggest(dotted_of[i]);
    }
  }
  return "";
}

// One JSON object of the config: typed getters that remember which keys were read, then finish()
// rejects the keys nobody read.
class Section {
public:
  Section(const ojson& obj, std::string prefix, const std::string& source)
    : m_obj(obj), m_prefix(std::move(prefix)), m_source(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(m_source, fmt::format("{}{}: {}", m_prefix, key, what));
  }

  const ojson* find(const std::string& key) {
    m_known.push_back(key);
    auto it = m_obj.find(key);
    if (it == m_obj.end() || it->is_null()) {
      return nullptr;
    }
    return &*it;
  }

  double number(const std::string& key, double def, double lo, double hi, bool lo_open = false) {
    const ojson* v = find(key);
    if (!v) {
      return def;
    }
    if (!v->is_number()) {
      fail(key, fmt::format("expected a number, got {}", show(*v)));
    }
    double d = v->get<double>();
    if (!(lo_open ? d > lo : d >= lo) || !(d <= hi)) {
      fail(key, fmt::format("must be {} {} and <= {}, got {}", lo_open ? ">" : ">=", lo, hi, show(*v)));
    }
    return d;
  }

  long integer(const std::string& key, long def, long lo, long hi) {
    const ojson* v = find(key);
    if (!v) {
      return def;
    }
    long x = 0;
    if (v->is_number_unsigned()) {
      uint64_t u = v->get<uint64_t>();
      x = u > static_cast<uint64_t>(hi) ? hi + 1 : static_cast<long>(u);
    } else if (v->is_number_integer()) {
      x = v->get<long>();
    } else if (v->is_number_float() && std::abs(v->get<double>()) < 9e15 &&
               v->get<double>() == static_cast<double>(static_cast<long>(v->get<double>()))) {
      x = static_cast<long>(v->get<double>());
    } else {
      fail(key, fmt::format("expected an integer, got {}", show(*v)));
    }
    if (x < lo || x > hi) {
      fail(key, fmt::format("must be between {} and {}, got {}", lo, hi, show(*v)));
    }
    return x;
  }

  bool boolean(const std::string& key, bool def) {
    const ojson* v = find(key);
    if (!v) {
      return def;
    }
    if (!v->is_boolean()) {
      fail(key, fmt::format("expected true or false, got {}", show(*v)));
    }
    return v->get<bool>();
  }

  std::string choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& options) {
    const ojson* v = find(key);
    if (!v) {
      return def;
    }
    if (!v->is_string()) {
      fail(key, fmt::format("expected one of {}, got {}", join(options), show(*v)));
    }
    std::string s = v->get<std::string>();
    for (const auto& o : options) {
      if (s == o) {
        return s;
      }
    }
    fail(key, fmt::format("expected one of {}, got \"{}\"{}", join(options), s, did_you_mean(s, options)));
  }

  std::string string(const std::string& key, const std::string& def, bool required = false) {
    const ojson* v = find(key);
    if (!v) {
      if (required) {
        fail(key, "missing (required)");
      }
      return def;
    }
    if (!v->is_string() || v->get<std::string>().empty()) {
      fail(key, fmt::format("expected a non-empty string, got {}", show(*v)));
    }
    return v->get<std::string>();
  }

  const ojson* object(const std::string& key) {
    const ojson* v = find(key);
    if (v && !v->is_object()) {
      fail(key, fmt::format("expected an object {{...}}, got {}", show(*v)));
    }
    return v;
  }

  void finish() const {
    for (auto it = m_obj.begin(); it != m_obj.end(); ++it) {
      bool known = false;
      for (const auto& k : m_known) {
        known = known || k == it.key();
      }
      if (!known) {
        fail(it.key(), "unknown key" + suggest_key(m_prefix, it.key(), m_known));
      }
    }
  }

  const std::string& prefix() const { return m_prefix; }

private:
  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
      s += (i ? ", " : "") + std::string("\"") + v[i] + "\"";
    }
    return s;
  }

  const ojson& m_obj;
  std::string m_prefix;
  const std::string& m_source;
  std::vector<std::string> m_known;
};

const ojson& empty_object() {
  static const ojson k_empty = ojson::object();
  return k_empty;
}

void parse_data(const ojson& o, const std::string& src, DataConfig& d) {
  Section s(o, "data.", src);
  auto given = [&](const char* key) { return o.contains(key); }; // null too: unknown for this kind
  if (!given("kind")) {
    // A key of a file format without the kind: the default (synthetic) would call it unknown.
    for (const auto& [key, kind] : {std::pair{"path", "csv"}, {"label_column", "csv"}, {"header", "csv"},
                                    {"images", "idx"}, {"labels", "idx"}}) {
      if (given(key)) {
        s.fail("kind", fmt::format("missing: data.{} is read for data.kind \"{}\" (the default is \"synthetic\"); "
                                   "add \"kind\": \"{}\" to data", key, kind, kind));
      }
    }
  }
  d.kind = s.choice("kind", "synthetic", {"synthetic", "csv", "idx"});
  if (d.kind == "synthetic") {
    d.samples = s.integer("samples", d.samples, 2, 100'000'000);
    d.features = s.integer("features", d.features, 1, 1'000'000);
    d.classes = s.integer("classes", d.classes, 2, 100'000);
    d.noise = s.number("noise", d.noise, 0.0, 1e6);
    if (static_cast<double>(d.samples) * static_cast<double>(d.features) > 4e9) {
      s.fail("samples", "samples x features exceeds 4e9 values");
    }
  } else if (d.kind == "csv") {
    d.path = s.string("path", "", true);
    d.label_column = s.integer("label_column", -1, -100'000, 100'000);
    d.label_column_given = given("label_column");
    const ojson* h = s.find("header");
    if (h) {
      if (h->is_boolean()) {
        d.header = h->get<bool>() ? "true" : "false";
      } else if (h->is_string() && h->get<std::string>() == "auto") {
        d.header = "auto";
      } else {
        s.fail("header", fmt::format("expected true, false or \"auto\", got {}", show(*h)));
      }
    }
    d.classes = s.integer("classes", 0, 0, 100'000);
  } else {
    d.images = s.string("images", "", true);
    d.labels = s.string("labels", "", true);
    d.classes = s.integer("classes", 0, 0, 100'000);
  }
  d.validation_fraction = s.number("validation_fraction", d.validation_fraction, 0.0, 0.9);
  d.normalize = s.choice("normalize", d.normalize, {"none", "standard"});
  if (s.find("seed")) {
    d.seed = static_cast<uint64_t>(s.integer("seed", 0, 0, std::numeric_limits<int32_t>::max()));
  }
  for (const auto& [key, kind] : {std::pair{"samples", "synthetic"}, {"features", "synthetic"}, {"noise", "synthetic"},
                                  {"path", "csv"}, {"label_column", "csv"}, {"header", "csv"},
                                  {"images", "idx"}, {"labels", "idx"}}) {
    if (d.kind != kind && given(key)) {
      s.fail(key, fmt::format("read only for data.kind \"{}\" (data.kind is \"{}\")", kind, d.kind));
    }
  }
  s.finish();
}

void parse_model(const ojson& o, const std::string& src, ModelConfig& m) {
  Section s(o, "model.", src);
  if (const ojson* h = s.find("hidden")) {
    if (!h->is_array()) {
      s.fail("hidden", fmt::format("expected a list of layer widths like [256, 256], got {}", show(*h)));
    }
    if (h->size() > 16) {
      s.fail("hidden", "at most 16 hidden layers");
    }
    m.hidden.clear();
    for (size_t i = 0; i < h->size(); ++i) {
      const ojson& w = (*h)[i];
      if (!w.is_number_integer() || w.get<long>() < 1 || w.get<long>() > 65536) {
        s.fail(fmt::format("hidden[{}]", i), fmt::format("expected an integer width 1..65536, got {}", show(w)));
      }
      m.hidden.push_back(w.get<long>());
    }
  }
  m.activation = s.choice("activation", m.activation, {"relu", "tanh"});
  m.dropout = s.number("dropout", m.dropout, 0.0, 0.95);
  s.finish();
}

void parse_optimizer(const ojson& o, const std::string& src, OptimizerConfig& p) {
  Section s(o, "optimizer.", src);
  p.name = s.choice("name", p.name, {"sgd", "adam"});
  auto given = [&](const char* key) { return o.contains(key); }; // null too: unknown for this kind
  if (p.name == "adam" && given("momentum")) {
    s.fail("momentum", "momentum is an SGD option (optimizer.name is \"adam\"); Adam's momentum is "
                       "optimizer.beta1 (default 0.9)");
  }
  for (const char* key : {"beta1", "beta2", "eps"}) {
    if (p.name == "sgd" && given(key)) {
      s.fail(key, fmt::format("{} is an Adam option (optimizer.name is \"sgd\"); set optimizer.name to \"adam\", "
                              "or use optimizer.momentum with SGD", key));
    }
  }
  p.lr = s.number("lr", p.name == "adam" ? 0.001 : 0.05, 0.0, 1e3, true);
  p.weight_decay = s.number("weight_decay", 0.0, 0.0, 10.0);
  if (p.name == "sgd") {
    p.momentum = s.number("momentum", 0.9, 0.0, 0.9999);
  } else {
    p.beta1 = s.number("beta1", 0.9, 0.0, 0.9999);
    p.beta2 = s.number("beta2", 0.999, 0.0, 0.999999);
    p.eps = s.number("eps", 1e-8, 0.0, 1.0, true);
  }
  s.finish();
}

void parse_training(const ojson& o, const std::string& src, TrainingConfig& t) {
  Section s(o, "training.", src);
  t.batch_size = s.integer("batch_size", t.batch_size, 1, 1'000'000);
  bool has_epochs = s.find("epochs") != nullptr;
  bool has_steps = s.find("steps") != nullptr;
  if (has_epochs && has_steps) {
    s.fail("steps", "give either \"epochs\" or \"steps\", not both");
  }
  t.epochs = has_steps ? 0 : s.integer("epochs", k_default_epochs, 1, 1'000'000);
  t.steps = has_steps ? s.integer("steps", 0, 1, 1'000'000'000) : 0;
  t.accumulation = s.integer("accumulation", 1, 1, 4096);
  if (t.accumulation > t.batch_size) {
    s.fail("accumulation", fmt::format("must not exceed training.batch_size ({}), got {}",
                                       t.batch_size, t.accumulation));
  }
  t.checkpoint_every = s.integer("checkpoint_every", 100, 1, 1'000'000'000);
  t.checkpoint_keep = s.integer("checkpoint_keep", 2, 1, 1000);
  t.eval_every = s.integer("eval_every", 100, 1, 1'000'000'000);
  t.eval_batch_size = s.integer("eval_batch_size", 256, 1, 1'000'000);
  t.shuffle = s.boolean("shuffle", true);
  s.finish();
}

void parse_determinism(const ojson& o, const std::string& src, DeterminismConfig& d) {
  Section s(o, "determinism.", src);
  d.threads = static_cast<int>(s.integer("threads", 0, 0, 1024));
  if (d.threads == 0) {
    d.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  d.ranks = static_cast<int>(s.integer("ranks", 1, 1, k_max_ranks));
  d.reduction = s.choice("reduction", d.reduction, {"ordered", "atomic"});
  d.trace = s.choice("trace", d.trace, {"loss", "weights", "full"});
  d.device = s.choice("device", d.device, {"cpu", "cuda"});
  s.finish();
}

std::pair<int, int> line_col(const std::string& text, size_t byte) {
  int line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

} // namespace

void apply_override(ojson& doc, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error("--set " + assignment, "expected KEY=VALUE, e.g. --set optimizer.lr=0.1");
  }
  std::string key = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  ojson parsed;
  try {
    parsed = ojson::parse(value);
  } catch (const ojson::exception&) { // not JSON, or a number beyond a double (1e400): a string
    parsed = value;
  }
  ojson* node = &doc;
  size_t start = 0;
  for (;;) {
    size_t dot = key.find('.', start);
    std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) {
      throw Error("--set " + assignment, "empty key component");
    }
    if (!node->is_object()) {
      throw Error("--set " + assignment, "'" + key.substr(0, start - 1) + "' is not an object");
    }
    if (dot == std::string::npos) {
      if (parsed.is_null()) {
        node->erase(part); // KEY=null removes the key: its default applies
      } else {
        (*node)[part] = parsed;
      }
      return;
    }
    if (!node->contains(part) || (*node)[part].is_null()) {
      (*node)[part] = ojson::object();
    }
    node = &(*node)[part];
    start = dot + 1;
  }
}

void refuse_duplicate_keys(const std::string& text, const std::string& source) {
  struct Frame {
    bool object = false;
    std::set<std::string> keys;
    std::string key; // the current key of an object
  };
  std::vector<Frame> stack;
  auto path = [&](const std::string& last) {
    std::string p;
    for (const auto& f : stack) {
      if (f.object && &f != &stack.back()) {
        p += f.key + ".";
      }
    }
    return p + last;
  };
  ojson::parser_callback_t check = [&](int, ojson::parse_event_t event, ojson& parsed) {
    switch (event) {
    case ojson::parse_event_t::object_start:
    case ojson::parse_event_t::array_start:
      stack.push_back(Frame{event == ojson::parse_event_t::object_start, {}, {}});
      break;
    case ojson::parse_event_t::object_end:
    case ojson::parse_event_t::array_end:
      if (!stack.empty()) {
        stack.pop_back();
      }
      break;
    case ojson::parse_event_t::key:
      if (!stack.empty() && parsed.is_string()) {
        Frame& f = stack.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) {
          throw Error(source, path(f.key) + ": given twice in one object (a JSON reader keeps one of the values "
                                            "silently); keep one");
        }
      }
      break;
    case ojson::parse_event_t::value:
      break;
    }
    return true;
  };
  (void)ojson::parse(text, check, false);
}

Config parse_config(const std::string& text, const std::string& source, const std::string& base_dir,
                    const std::vector<std::string>& overrides) {
  ojson doc;
  try {
    doc = ojson::parse(text);
  } catch (const ojson::parse_error& e) {
    auto [line, col] = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
    // A comment, as many config formats allow and JSON does not: said so, not as the parser's
    // "invalid literal; last read: '/'".
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    if (at + 1 < text.size() && text[at] == '/' && (text[at + 1] == '/' || text[at + 1] == '*')) {
      throw Error(fmt::format("{}:{}:{}", source, line, col),
                  fmt::format("invalid JSON: a comment ({}); JSON has none: remove it (a config may say what it "
                              "is in \"description\")",
                              text[at + 1] == '/' ? "//" : "/* */"));
    }
    std::string what = e.what();
    auto p = what.find("syntax error");
    std::string detail = p != std::string::npos ? what.substr(p) : what;
    // nlohmann prefixes its own position ("while parsing value - "); keep only the reason.
    auto dash = detail.find(" - ");
    if (dash != std::string::npos) {
      detail = detail.substr(dash + 3);
    }
    throw Error(fmt::format("{}:{}:{}", source, line, col), "invalid JSON: " + detail);
  } catch (const ojson::out_of_range& e) {
    // A number beyond a double (1e400): nlohmann names the number ("number overflow parsing
    // '1e400'") but not where it is; its first occurrence in the text gives the line.
    std::string what = e.what();
    auto q = what.find('\'');
    auto q2 = q == std::string::npos ? q : what.find('\'', q + 1);
    std::string number = q2 == std::string::npos ? "" : what.substr(q + 1, q2 - q - 1);
    auto at = number.empty() ? std::string::npos : text.find(number);
    auto [line, col] = line_col(text, at == std::string::npos ? 0 : at);
    throw Error(at == std::string::npos ? source : fmt::format("{}:{}:{}", source, line, col),
                fmt::format("invalid JSON: the number {} is beyond the range of a double (about ±1.8e308)", number));
  }
  if (!doc.is_object()) {
    throw Error(source, "expected a JSON object {...} at the top level");
  }
  refuse_duplicate_keys(text, source);
  for (const auto& o : overrides) {
    apply_override(doc, o);
  }
  Config c;
  c.source = source;
  c.base_dir = base_dir;
  Section top(doc, "", source);
  const ojson* seed = top.find("seed");
  if (seed) {
    c.seed = static_cast<uint64_t>(top.integer("seed", 0, 0, std::numeric_limits<int32_t>::max()));
  } else {
    std::random_device rd;
    c.seed = rd() & 0x7fffffffu;
    c.seed_drawn = true;
  }
  if (const ojson* d = top.object("data")) {
    parse_data(*d, source, c.data);
  } else {
    parse_data(empty_object(), source, c.data);
  }
  const ojson* m = top.object("model");
  parse_model(m ? *m : empty_object(), source, c.model);
  const ojson* o = top.object("optimizer");
  parse_optimizer(o ? *o : empty_object(), source, c.optimizer);
  const ojson* t = top.object("training");
  parse_training(t ? *t : empty_object(), source, c.training);
  const ojson* det = top.object("determinism");
  parse_determinism(det ? *det : empty_object(), source, c.determinism);
  if (doc.contains("search") && !doc["search"].is_null()) {
    throw Error(source, "search: this config describes a hyperparameter search: run it with reprun search "
                        "(to train its base config alone, add --set search=null)");
  }
  top.find("format"); // allowed: "reprun.config/1"
  top.find("description");
  top.finish();
  return c;
}

Config load_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  std::string text = read_file(path);
  std::filesystem::path p = std::filesystem::absolute(path);
  return parse_config(text, path, p.parent_path().string(), overrides);
}

ojson config_to_json(const Config& c) {
  ojson j;
  j["seed"] = c.seed;
  ojson d;
  d["kind"] = c.data.kind;
  if (c.data.kind == "synthetic") {
    d["samples"] = c.data.samples;
    d["features"] = c.data.features;
    d["classes"] = c.data.classes;
    d["noise"] = c.data.noise;
  } else if (c.data.kind == "csv") {
    d["path"] = c.data.path;
    d["label_column"] = c.data.label_column;
    if (c.data.header == "auto") {
      d["header"] = "auto";
    } else {
      d["header"] = c.data.header == "true";
    }
    d["classes"] = c.data.classes;
  } else {
    d["images"] = c.data.images;
    d["labels"] = c.data.labels;
    d["classes"] = c.data.classes;
  }
  d["validation_fraction"] = c.data.validation_fraction;
  d["normalize"] = c.data.normalize;
  if (c.data.seed) {
    d["seed"] = *c.data.seed; // absent: the experiment seed (so configs without it resolve as before)
  }
  j["data"] = d;
  j["model"] = {{"hidden", c.model.hidden}, {"activation", c.model.activation}, {"dropout", c.model.dropout}};
  ojson o;
  o["name"] = c.optimizer.name;
  o["lr"] = c.optimizer.lr;
  if (c.optimizer.name == "sgd") {
    o["momentum"] = c.optimizer.momentum;
  } else {
    o["beta1"] = c.optimizer.beta1;
    o["beta2"] = c.optimizer.beta2;
    o["eps"] = c.optimizer.eps;
  }
  o["weight_decay"] = c.optimizer.weight_decay;
  j["optimizer"] = o;
  ojson t;
  t["batch_size"] = c.training.batch_size;
  if (c.training.steps > 0) {
    t["steps"] = c.training.steps;
  } else {
    t["epochs"] = c.training.epochs;
  }
  t["accumulation"] = c.training.accumulation;
  t["checkpoint_every"] = c.training.checkpoint_every;
  t["checkpoint_keep"] = c.training.checkpoint_keep;
  t["eval_every"] = c.training.eval_every;
  t["eval_batch_size"] = c.training.eval_batch_size;
  t["shuffle"] = c.training.shuffle;
  j["training"] = t;
  j["determinism"] = {{"threads", c.determinism.threads},
                      {"ranks", c.determinism.ranks},
                      {"reduction", c.determinism.reduction},
                      {"trace", c.determinism.trace}};
  if (!c.determinism.device.empty()) {
    j["determinism"]["device"] = c.determinism.device; // absent: cpu (configs without it resolve as before)
  }
  return j;
}

Config config_from_json(const ojson& j, const std::string& source) {
  return parse_config(j.dump(), source, "", {});
}

void take_data_decisions(DataConfig& c, const DataConfig& resolved) {
  if (c.kind == "synthetic" || c.kind != resolved.kind) {
    return;
  }
  if (c.classes == 0) {
    c.classes = resolved.classes;
  }
  if (c.kind == "csv") {
    if (c.header == "auto") {
      c.header = resolved.header;
    }
    if (c.label_column < 0) {
      c.label_column = resolved.label_column;
    }
  }
}

const std::vector<std::string>& config_keys() { return all_keys(); }

std::string suggest_config_key(const std::string& dotted) {
  // the whole dotted key against every key first ("optimizer.learning_rate" -> 'optimizer.lr' by
  // alias; "optimiser.lr" by spelling), then as a key of its section
  const auto dot = dotted.rfind('.');
  const std::string prefix = dot == std::string::npos ? "" : dotted.substr(0, dot + 1);
  const std::string leaf = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
  std::vector<std::string> known;
  for (const auto& k : all_keys()) {
    if (!prefix.empty() && k.rfind(prefix, 0) == 0 && k.find('.', prefix.size()) == std::string::npos) {
      known.push_back(k.substr(prefix.size()));
    }
  }
  std::string s = suggest_key(prefix, leaf, known);
  if (!s.empty() && !prefix.empty() && s.find('.') == std::string::npos) {
    s = " (did you mean '" + prefix + s.substr(std::string(" (did you mean '").size()); // name it in full
  }
  return s.empty() ? did_you_mean(dotted, all_keys()) : s;
}

uint64_t data_seed(const Config& c) { return c.data.seed.value_or(c.seed); }

std::string resolve_data_path(const Config& c, const std::string& p) {
  std::filesystem::path path(p);
  if (path.is_absolute() || c.base_dir.empty()) {
    return path.string();
  }
  return (std::filesystem::path(c.base_dir) / path).lexically_normal().string();
}

} // namespace reprun
