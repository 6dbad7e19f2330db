# The HTML report in a real headless browser (Debian's chromium). A copy of the report gets a probe
# script that writes measurements into the DOM (the report itself has no script); the page is
# rendered at 360, 800 and 1400 pixels wide and --dump-dom returns them. Checked: no column header
# breaks inside a word; the page never scrolls sideways and nothing sticks out of it; the log-scale
# |loss A - loss B| axis has labelled ticks, powers of ten in order; the x axis runs to the last
# step of the longer run. Also that the plots and the divergence marker render, and a screenshot.
# The search leaderboard (report.html of a 4-trial search) too: it fits every width, its scatter
# plots and learning curves render, and two runs of the search give the same bytes.
# Skipped (exit 125) only when chromium is not installed (tools/install-deps.sh ci installs it).
source "$(dirname "$0")/lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROME ]] || skip "chromium not installed (apt-get install chromium, or tools/install-deps.sh ci)"
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$T/profile")

# Two bare logs of different lengths whose losses part at step 11 and drift apart over 12 decades;
# long labels, to be wrapped, not to widen the page.
mkdir -p "$T/a-run-with-a-rather-long-directory-name-that-has-to-wrap-somewhere" "$T/b"
A="$T/a-run-with-a-rather-long-directory-name-that-has-to-wrap-somewhere/steps.jsonl"
for i in $(seq 0 40); do
  printf '{"step":%d,"loss":%s,"batch":"b%d"}\n' "$i" "$(awk -v i="$i" 'BEGIN{printf "%.17g", 1/(i+1)}')" "$i"
done >"$A"
for i in $(seq 0 60); do
  printf '{"step":%d,"loss":%s,"batch":"b%d"}\n' "$i" \
    "$(awk -v i="$i" 'BEGIN{g = i > 10 ? 1e-13 * 2 ^ (i - 10) : 0; printf "%.17g", 1/(i+1) + g}')" "$i"
done >"$T/b/steps.jsonl"
expect_rc 1 "$REPRUN" diff "$A" "$T/b/steps.jsonl" --format html -o "$T/lengths.html"
expect_rc 1 "$REPRUN" diff "$TD/runs/base" "$TD/runs/computation" --format html -o "$T/report.html"
# Two runs whose metadata differ in long values (digests, paths, a seed, the data): the metadata
# table must show every column, "B" and "counted" included, without scrolling, at a desktop width
# (issue 41, item 9: at 1300 px it scrolled sideways and hid them).
small_config "$T/m1.json"
small_config "$T/m2.json" '"optimizer": {"lr": 0.02, "momentum": 0.5}'
json_edit "$T/m2.json" seed=6 data.samples=640
expect_rc 0 "$REPRUN" train "$T/m1.json" -o "$T/meta-a-run-in-a-folder-with-a-long-name" -q
expect_rc 0 "$REPRUN" train "$T/m2.json" -o "$T/meta-b-run-in-a-folder-with-a-long-name" -q --threads 1
expect_rc 1 "$REPRUN" diff "$T/meta-a-run-in-a-folder-with-a-long-name" "$T/meta-b-run-in-a-folder-with-a-long-name" \
  --format html -o "$T/meta.html"

# A small search on the wine data: 4 trials of 2 epochs, evaluated every 5 steps (curves of 4 points).
cp "$EX/wine-csv.json" "$T/wine-search.json"
json_edit "$T/wine-search.json" data.path=\"$TD/wine/wine.csv\" training.epochs=2 training.eval_every=5 \
  'search+={"method": "random", "trials": 4, "space": {"optimizer.lr": {"log_uniform": [0.0001, 0.3]},
  "model.hidden": {"choice": [[16], [32], [64, 32]]}, "model.dropout": {"uniform": [0, 0.3]}}}'
expect_rc 0 "$REPRUN" search "$T/wine-search.json" -o "$T/search-1" --jobs 1 -q
expect_rc 0 "$REPRUN" search "$T/wine-search.json" -o "$T/search-2" --jobs 2 -q
for f in report.html leaderboard.md; do
  cmp -s "$T/search-1/$f" "$T/search-2/$f" || fail "$f differs between two runs of one search (--jobs 1 and 2)"
done
cp "$T/search-1/report.html" "$T/leaderboard.html"

probe='<script>(function () {
  const out = [], W = document.documentElement.clientWidth;
  out.push("width " + W);
  out.push("page-overflow " + (document.documentElement.scrollWidth > W ? 1 : 0));
  let wide = [];
  for (const e of document.querySelectorAll("body *")) {
    if (e.closest(".scroll") && !e.classList.contains("scroll")) continue; // scrolls in its own box
    if (e.getBoundingClientRect().right > W + 0.5) wide.push(e.tagName + (e.id ? "#" + e.id : ""));
  }
  out.push("sticking-out " + wide.length + " " + wide.slice(0, 5).join(","));
  const broken = [];
  for (const th of document.querySelectorAll("th")) {
    const t = th.firstChild;
    if (!t || t.nodeType !== 3) continue;
    for (const m of t.data.matchAll(/\S+/g)) {
      const r = document.createRange();
      r.setStart(t, m.index);
      r.setEnd(t, m.index + m[0].length);
      if (new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1) broken.push(m[0]);
    }
  }
  out.push("broken-headers " + broken.length + " " + broken.join(","));
  const scrolling = [...document.querySelectorAll(".scroll")].filter(e => e.scrollWidth > e.clientWidth + 1);
  out.push("scrolling " + scrolling.length + " " + scrolling.map(e => e.previousElementSibling ?
                                                                  e.previousElementSibling.textContent : "?").join(","));
  const gap = document.getElementById("gap-plot");
  if (gap) {
    const ticks = [...gap.querySelectorAll("text.ytick")];
    const vals = ticks.map(t => Number(t.textContent)), ys = ticks.map(t => t.getBBox().y);
    let ordered = ticks.length >= 3 ? 1 : 0;
    for (let i = 1; i < ticks.length; ++i) {
      if (!(vals[i] < vals[i - 1] && ys[i] > ys[i - 1] + 8)) ordered = 0; // values fall, labels apart
    }
    const decades = vals.slice(0, -1).every(v => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9) ? 1 : 0;
    out.push("gap-ticks " + ticks.length + " ordered " + ordered + " decades " + decades + " labels " +
             ticks.map(t => t.textContent).join(","));
    const xt = [...gap.querySelectorAll("text.xtick")], rect = gap.querySelector("rect").getBBox();
    if (xt.length) {
      const last = xt[xt.length - 1], lb = last.getBBox();
      out.push("gap-x-last " + last.textContent + " at-right-edge " +
               (Math.abs(lb.x + lb.width - (rect.x + rect.width)) < 2 ? 1 : 0));
    } else {
      out.push("gap-x-last none");
    }
    out.push("run-end " + gap.querySelectorAll("line.run-end").length);
  }
  const scatter = [...document.querySelectorAll("svg.scatter")];
  if (scatter.length) {
    const shown = scatter.filter(s => s.getBoundingClientRect().width > 150).length;
    out.push("scatter " + scatter.length + " shown " + shown + " points " +
             document.querySelectorAll("svg.scatter circle").length);
    const curves = document.getElementById("curves-plot");
    out.push("curves " + (curves ? curves.querySelectorAll("path.curve").length : 0));
  }
  parent.postMessage(out.join("\n"), "*");
})();</script>'
# measure HTML WIDTH: the probe's lines for the page rendered WIDTH pixels wide. The page is shown
# in an iframe of that width (a headless window is at least 500 pixels wide); the probe posts its
# lines to the outer page, which --dump-dom returns once the virtual time budget has run.
measure() {
  local html=$1 width=$2 copy="$T/probe-$(basename "$1" .html)-$2.html" outer="$T/outer-$2.html"
  { sed 's#</body></html>##' "$html"; printf '%s\n</body></html>\n' "$probe"; } >"$copy"
  cat >"$outer" <<HTML
<!DOCTYPE html><html><body style="margin:0"><pre id="probe">none</pre>
<script>addEventListener("message", e => { document.getElementById("probe").textContent = e.data; });</script>
<iframe src="file://$copy" style="border:0;width:${width}px;height:4000px"></iframe></body></html>
HTML
  timeout 120 "$CHROME" "${flags[@]}" --window-size=1500,1200 --virtual-time-budget=10000 --dump-dom "file://$outer" \
    >"$T/dom-$width.html" 2>"$T/chrome.err" || fail "chromium could not load the report: $(tail -3 "$T/chrome.err")"
  sed -n '/<pre id="probe">/,/<\/pre>/p' "$T/dom-$width.html" | sed 's#.*<pre id="probe">##; s#</pre>.*##' >"$T/m"
  grep -q "^width $width\$" "$T/m" || fail "no measurements at width $width: $(cat "$T/m")"
}
for html in "$T/lengths.html" "$T/report.html"; do
  for w in 360 800 1400; do
    measure "$html" "$w"
    grep -q '^page-overflow 0$' "$T/m" || fail "$(basename "$html") scrolls sideways at $w px: $(cat "$T/m")"
    grep -q '^sticking-out 0 ' "$T/m" || fail "$(basename "$html"): elements stick out at $w px: $(grep sticking "$T/m")"
    grep -q '^broken-headers 0 ' "$T/m" ||
      fail "$(basename "$html"): a column header breaks inside a word at $w px: $(grep broken "$T/m")"
    grep -qE '^gap-ticks [0-9]+ ordered 1 decades 1 labels ' "$T/m" ||
      fail "$(basename "$html"): the |diff| axis lacks labelled decade ticks at $w px: $(grep gap-ticks "$T/m")"
  done
done
for w in 1000 1300 1400; do
  measure "$T/meta.html" "$w"
  grep -q '^page-overflow 0$' "$T/m" || fail "meta.html scrolls sideways at $w px: $(cat "$T/m")"
  grep -q '^scrolling 0 $' "$T/m" || fail "meta.html: a table scrolls inside its box at $w px: $(grep scrolling "$T/m")"
  grep -q '^broken-headers 0 ' "$T/m" || fail "meta.html: a column header breaks inside a word at $w px: $(grep broken "$T/m")"
done
for w in 360 800 1400; do
  measure "$T/leaderboard.html" "$w"
  grep -q '^page-overflow 0$' "$T/m" || fail "leaderboard.html scrolls sideways at $w px: $(cat "$T/m")"
  grep -q '^sticking-out 0 ' "$T/m" || fail "leaderboard.html: elements stick out at $w px: $(grep sticking "$T/m")"
  grep -q '^broken-headers 0 ' "$T/m" ||
    fail "leaderboard.html: a column header breaks inside a word at $w px: $(grep broken "$T/m")"
  grep -q '^scatter 3 shown 3 points 12$' "$T/m" ||
    fail "leaderboard.html: 3 scatter plots of 4 trials each expected at $w px: $(grep scatter "$T/m")"
  grep -q '^curves 4$' "$T/m" || fail "leaderboard.html: 4 learning curves expected at $w px: $(grep curves "$T/m")"
done
measure "$T/lengths.html" 800
grep -q '^gap-x-last 60 at-right-edge 1$' "$T/m" || fail "x axis does not run to step 60, B's last: $(grep gap-x "$T/m")"
grep -q '^run-end 1$' "$T/m" || fail "where A ends is not marked: $(cat "$T/m")"
grep -qE '^gap-ticks ([6-9]|1[0-9]) ' "$T/m" || fail "12 decades of gap but few ticks: $(grep gap-ticks "$T/m")"

# The unprobed page renders: plots, marker, verdict, curves; and a screenshot that is not blank.
timeout 120 "$CHROME" "${flags[@]}" --dump-dom "file://$T/report.html" >"$T/dom.html" 2>"$T/chrome.err" ||
  fail "chromium could not load the report: $(tail -3 "$T/chrome.err")"
grep -q '<svg id="loss-plot"' "$T/dom.html" || fail "rendered DOM has no loss plot"
grep -q '<svg id="gap-plot"' "$T/dom.html" || fail "rendered DOM has no gap plot"
grep -q 'id="divergence-marker"' "$T/dom.html" || fail "rendered DOM has no divergence marker"
grep -q 'runs part at step 4 (computation)' "$T/dom.html" || fail "rendered DOM has no verdict"
grep -q 'Likely cause and fix' "$T/dom.html" || fail "rendered DOM has no likely cause"
[[ $(grep -c '<path d="M' "$T/dom.html") -ge 3 ]] || fail "loss curves missing from the rendered DOM"
timeout 120 "$CHROME" "${flags[@]}" --window-size=1000,1400 --screenshot="$T/report.png" "file://$T/report.html" \
  >/dev/null 2>>"$T/chrome.err" || fail "chromium could not take a screenshot"
size=$(stat -c %s "$T/report.png" 2>/dev/null || echo 0)
[[ $size -gt 20000 ]] || fail "screenshot is suspiciously small ($size bytes): a blank page?"
head -c 8 "$T/report.png" | od -An -tx1 | grep -q '89 50 4e 47' || fail "screenshot is not a PNG"
pass
