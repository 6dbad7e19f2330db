# tools/check-layers: passes on the tree, and fails on a planted upward include, a flat public
# header, mpi.h outside the exchange and a path built from a run-directory file name (each in a
# copy of the sources).
. "$(dirname "$0")/lib.sh"
CHECK="$REPRUN_SRC/tools/check-layers"
expect_rc 0 python3 "$CHECK" "$REPRUN_SRC"
grep -q "every one at its own layer or below" "$T/out" || fail "no summary line: $(cat "$T/out")"

copy_tree() {
  rm -rf "$T/tree"
  mkdir -p "$T/tree"
  cp -r "$REPRUN_SRC/src" "$REPRUN_SRC/include" "$T/tree/"
}

# An upward include: the diff engine (audit) reaching into the reports.
copy_tree
printf '#include "reprun/report/report.hpp"\n' >>"$T/tree/src/audit/diff.cpp"
expect_rc 1 python3 "$CHECK" "$T/tree"
grep -q "src/audit/diff.cpp:[0-9]*: audit includes reprun/report/report.hpp (report): an upward include" "$T/out" ||
  fail "planted upward include not reported: $(cat "$T/out")"

# record reaching up into train.
copy_tree
printf '#include "reprun/train/model.hpp"\n' >>"$T/tree/include/reprun/record/run_dir.hpp"
expect_rc 1 python3 "$CHECK" "$T/tree"
grep -q "record includes reprun/train/model.hpp (train)" "$T/out" || fail "record -> train not reported"

# A header outside a layer folder.
copy_tree
printf '#pragma once\n' >"$T/tree/include/reprun/flat.hpp"
printf '#include "reprun/flat.hpp"\n' >>"$T/tree/src/train/model.cpp"
expect_rc 1 python3 "$CHECK" "$T/tree"
grep -q "reprun/flat.hpp is not in a layer folder" "$T/out" || fail "flat header not reported"

# MPI outside the exchange: the model including mpi.h.
copy_tree
printf '#include <mpi.h>\n' >>"$T/tree/src/train/model.cpp"
expect_rc 1 python3 "$CHECK" "$T/tree"
grep -q "src/train/model.cpp:[0-9]*: mpi.h: MPI headers belong to src/train/exchange_mpi.cpp only" "$T/out" ||
  fail "mpi.h outside the exchange not reported: $(cat "$T/out")"

# A run-directory path built outside src/record/.
copy_tree
printf 'static const auto k_p = std::string("run") + "/summary.json";\n' >>"$T/tree/src/gate/check.cpp"
expect_rc 1 python3 "$CHECK" "$T/tree"
grep -q 'src/gate/check.cpp:[0-9]*: "/summary.json" is a run-directory file name' "$T/out" ||
  fail "run-directory path not reported: $(cat "$T/out")"
pass
