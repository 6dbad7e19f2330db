// What a path a program opened is, by its text (meta/input_paths.hpp): a module's .pyc taken back
// to its source, the logs' absolute paths by their text alone and any other path through
// std::filesystem, to the same answer.
#include "meta/input_paths.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace reprun;

TEST_CASE("Input paths: a .pyc names its source beside its __pycache__ folder, by text as std::filesystem would") {
  CHECK(source_of_pyc("/w/pkg/__pycache__/mod.cpython-311.pyc") == "/w/pkg/mod.py");
  CHECK(source_of_pyc("/w/pkg/mod.pyc") == "/w/pkg/mod.py");       // Python 2's place, beside it
  CHECK(source_of_pyc("/__pycache__/mod.cpython-311.pyc") == "/mod.py");
  CHECK(source_of_pyc("/mod.cpython-311.pyc") == "/mod.py");
  CHECK(source_of_pyc("/w/a.b/__pycache__/x.y.pyc") == "/w/a.b/x.py"); // the stem ends at the name's first dot
  CHECK(source_of_pyc("/w/pkg/__pycache__/mod.py") == "");
  CHECK(source_of_pyc("/w/pkg/mod.pyc.txt") == "");
  // The same answer as std::filesystem's parse, which the text path stands in for, and which still
  // takes the other paths (relative, repeated separators).
  auto by_fs = [](const std::string& p) {
    namespace fs = std::filesystem;
    const fs::path path(p);
    const fs::path dir = path.parent_path();
    std::string stem = path.filename().string();
    stem = stem.substr(0, stem.find('.'));
    return ((dir.filename() == "__pycache__" ? dir.parent_path() : dir) / (stem + ".py")).string();
  };
  for (const std::string p : {"/w/pkg/__pycache__/mod.cpython-311.pyc", "/w/pkg/mod.pyc", "/__pycache__/m.pyc", "/m.pyc",
                              "/w/./__pycache__/m.pyc", "/w/../__pycache__/m.pyc", "/w/.pyc", "pkg/__pycache__/m.pyc",
                              "m.pyc", "/w//pkg/__pycache__/m.pyc"}) {
    CAPTURE(p);
    CHECK(source_of_pyc(p) == by_fs(p));
  }
}
