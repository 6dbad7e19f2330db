# Planted secrets (names that look like credentials, some matching allowlist patterns, one even
# given as an exec pin, and credentials in configuration files a program reads, whose text exec
# keeps) appear in no file reprun writes, after train, check, diff, exec and env;
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
# Configuration files a program reads (their text is kept for a diff to show the changed lines):
# credentials' values redacted in the copies and in diff's report; the copy of a file readable by
# its owner alone is too.
mkdir "$T/proj"
printf '[default]\naws_secret_access_key = planted-ini-3a9f\nregion = eu-west-1\n' >"$T/proj/creds.ini"
chmod 600 "$T/proj/creds.ini"
printf 'lr: 0.1\nwandb_api_key: planted-yaml-77c1\n' >"$T/proj/config.yaml"
printf '{"lr": 0.1, "db_password": "planted-json-5d2e"}\n' >"$T/proj/settings.json"
(cd "$T/proj" && expect_rc 0 "$REPRUN" exec -o "$T/cfgA" --runs 1 -q -- sh -c 'cat creds.ini config.yaml settings.json >/dev/null')
sed -i 's/planted-yaml-77c1/planted-yaml-88d2/; s/lr: 0.1/lr: 0.2/' "$T/proj/config.yaml"
(cd "$T/proj" && expect_rc 0 "$REPRUN" exec -o "$T/cfgB" --runs 1 -q -- sh -c 'cat creds.ini config.yaml settings.json >/dev/null')
expect_rc 1 "$REPRUN" diff "$T/cfgA/run-1" "$T/cfgB/run-1" -o "$T/cfg-diff.txt"
expect_rc 1 "$REPRUN" diff "$T/cfgA/run-1" "$T/cfgB/run-1" --format html -o "$T/cfg-diff.html"
grep -qF 'config.yaml: lines 1 and 2 changed' "$T/cfg-diff.txt" && grep -q '1 - lr: 0.1' "$T/cfg-diff.txt" ||
  fail "the configuration file's changed lines: $(cat "$T/cfg-diff.txt")"
copy=$(grep -l 'aws_secret_access_key = (redacted)' "$T"/cfgA/run-1/code/*.txt) || fail "no redacted copy of creds.ini"
[[ $(stat -c %a "$copy") == 600 ]] || fail "the copy of a 0600 creds.ini is $(stat -c %a "$copy")"
grep -rl --exclude-dir=proj 'planted-' "$T" && fail "a planted secret was written to a file"
grep -q '"PYTHONHASHSEED": "123"' "$T/run/manifest.json" || fail "allowlisted variable missing from the manifest"
grep -q '"PYTHONHASHSEED": "123"' "$T/env.json" || fail "allowlisted variable missing from reprun env"
# Run directories are never world-writable.
find "$T/run" "$T/check" -perm -o+w | grep -q . && fail "world-writable file in a run directory"
pass
