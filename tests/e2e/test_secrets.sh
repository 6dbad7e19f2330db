# Planted secrets (names that look like credentials, some matching allowlist patterns, one even
# given as an exec pin) appear in no file reprun writes, after train, check, diff, exec and env;
# an allowlisted harmless variable does appear.
source "$(dirname "$0")/lib.sh"
export AWS_SECRET_ACCESS_KEY="planted-aws-8d1f3c"
export GITHUB_TOKEN="planted-gh-7a2b9e"
export OMP_AUTH_TOKEN="planted-omp-5c4d3e"
export NCCL_PASSWORD="planted-nccl-1f2e3d"
export MY_SESSION="planted-mine-9e8d7c"
export PYTHONHASHSEED=123
small_config "$T/c.json"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/run" -q --env-allow 'MY_*' --env-allow GITHUB_TOKEN
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/check" -q --junit "$T/check.xml" --html "$T/check.html" --markdown "$T/check.md"
expect_rc 0 "$REPRUN" diff "$T/run" "$T/check/run-1" --format json -o "$T/diff.json" --ignore-meta config_file
expect_rc 0 "$REPRUN" exec -o "$T/exec" -q --env-allow 'MY_*' --pin MY_API_KEY=planted-pin-4b3a2c -- sh -c 'echo trained'
expect_rc 0 "$REPRUN" env --json --env-allow 'MY_*'
cp "$T/out" "$T/env.json"
grep -rl 'planted-' "$T" && fail "a planted secret was written to a file"
grep -q '"PYTHONHASHSEED": "123"' "$T/run/manifest.json" || fail "allowlisted variable missing from the manifest"
grep -q '"PYTHONHASHSEED": "123"' "$T/env.json" || fail "allowlisted variable missing from reprun env"
# Run directories are never world-writable.
find "$T/run" "$T/check" -perm -o+w | grep -q . && fail "world-writable file in a run directory"
pass
