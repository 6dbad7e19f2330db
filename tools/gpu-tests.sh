#!/usr/bin/env bash
# The GPU tests (tests/gpu/, what `make test-gpu` runs through CTest) against a reprun binary,
# without the CMake build tree that CTest needs: on a GPU machine that a build was copied to.
#
#   tools/gpu-tests.sh [-j N] [-R REGEX] [REPRUN]
#
# REPRUN is the binary (default build/reprun); exec finds the preload library and the python/
# folder beside it, as in a build folder. Up to N tests at a time (default 1; the exec tests spend
# most of their time on the CPU, and each torchrun test takes a free port of its own); with -R, only
# the tests whose name matches REGEX (bash's =~, as ctest -R). Each test's
# output goes to $GPU_TESTS_OUT/NAME.log (default: a temporary folder, printed). One line per test:
# its name, exit status (0 passed, 125 skipped, else failed) and seconds; the failed tests' logs'
# last lines at the end. Exit 0 when none failed, 1 otherwise, 2 on bad arguments.
set -u
jobs=1 only=
while getopts "j:R:" o; do
  case $o in
  j) jobs=$OPTARG ;;
  R) only=$OPTARG ;;
  *) echo "usage: tools/gpu-tests.sh [-j N] [-R REGEX] [REPRUN]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
src=$(cd "$(dirname "$0")/.." && pwd)
reprun=$(realpath -e "${1:-$src/build/reprun}" 2>/dev/null) || {
  echo "tools/gpu-tests.sh: ${1:-$src/build/reprun}: no such binary (build it, or name it)" >&2
  exit 2
}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "tools/gpu-tests.sh: -j $jobs: not a positive number" >&2; exit 2; }
tests=()
for t in "$src"/tests/gpu/test_*.sh; do
  [[ $(basename "$t" .sh) =~ $only ]] && tests+=("$t")
done
((${#tests[@]})) || { echo "tools/gpu-tests.sh: no test in tests/gpu matches -R $only" >&2; exit 2; }
out=${GPU_TESTS_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/reprun-gpu-tests.XXXXXX")}
mkdir -p "$out" || exit 2
echo "gpu-tests: $reprun; logs in $out"
export REPRUN=$reprun REPRUN_SRC=$src

one() { # one TEST: runs it, prints its line
  local name t0=$SECONDS rc=0
  name=$(basename "$1" .sh)
  bash "$1" >"$out/$name.log" 2>&1 || rc=$?
  printf '%-36s exit %3d  %4d s\n' "$name" "$rc" $((SECONDS - t0))
}
export -f one
export out
printf '%s\0' "${tests[@]}" | xargs -0 -n 1 -P "$jobs" bash -c 'one "$0"' | tee "$out/summary.txt"
failed=0
while read -r name _ rc _; do
  if [[ $rc != 0 && $rc != 125 ]]; then
    failed=1
    echo "== $name (the end of $out/$name.log)"
    tail -n 30 "$out/$name.log"
  fi
done <"$out/summary.txt"
exit $failed
