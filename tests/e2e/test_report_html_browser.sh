# The HTML report renders in a real headless browser (Debian's chromium): the page loads, the loss
# plot and the divergence marker are in the rendered DOM, and a screenshot is taken. Skipped
# visibly when chromium is absent (.ci/run installs it).
source "$(dirname "$0")/lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROME ]] || skip "chromium not installed (apt-get install chromium)"
expect_rc 1 "$REPRUN" diff "$TD/runs/base" "$TD/runs/computation" --format html -o "$T/report.html"
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --user-data-dir="$T/profile")
timeout 120 "$CHROME" "${flags[@]}" --dump-dom "file://$T/report.html" >"$T/dom.html" 2>"$T/chrome.err" ||
  fail "chromium could not load the report: $(tail -3 "$T/chrome.err")"
grep -q '<svg id="loss-plot"' "$T/dom.html" || fail "rendered DOM has no loss plot"
grep -q 'id="divergence-marker"' "$T/dom.html" || fail "rendered DOM has no divergence marker"
grep -q 'runs part at step 4 (computation)' "$T/dom.html" || fail "rendered DOM has no verdict"
[[ $(grep -c '<path d="M' "$T/dom.html") -ge 3 ]] || fail "loss curves missing from the rendered DOM"
timeout 120 "$CHROME" "${flags[@]}" --window-size=1000,1400 --screenshot="$T/report.png" "file://$T/report.html" \
  >/dev/null 2>>"$T/chrome.err" || fail "chromium could not take a screenshot"
size=$(stat -c %s "$T/report.png" 2>/dev/null || echo 0)
[[ $size -gt 20000 ]] || fail "screenshot is suspiciously small ($size bytes): a blank page?"
head -c 8 "$T/report.png" | od -An -tx1 | grep -q '89 50 4e 47' || fail "screenshot is not a PNG"
pass
