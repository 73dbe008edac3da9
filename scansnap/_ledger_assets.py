"""The stylesheet and script of the claims ledger page (:mod:`scansnap.ledger_page`), inlined into that page (the
stylesheet also into the intro, which shows the ledger's picture). Every rule is scoped to ``.lp-root``.

Hand-written rather than a table library: the page needs four filters, a sort, anchors that reveal their row and a
layout that turns rows into cards on a narrow screen. DataTables (through itables) would add about 100 KB of script
per page, re-render the rows it sorts (the statements' typeset math with them), and has no card layout for narrow
screens without its Responsive extension. This script sorts and hides the server-rendered rows in place (about 3 KB).
No text here may hold two opening braces in a row: MyST's substitution extension reads them as a template.
"""

from __future__ import annotations


def verdict_slug(level: str) -> str:
    """A verdict as a CSS class and filter value: ``"partly verified"`` -> ``"partly-verified"``."""
    return level.replace(" ", "-")


LEVEL_COLOURS = {
    "verified": "background: #1b7837; color: #fff;",
    "partly-verified": "background: #a6dba0; color: #111;",
    "inconclusive": "background: #e0e0e0; color: #111;",
    "not-reproduced": "background: #9e1f63; color: #fff;",
    "not-yet-checked": "background: #fff; color: #111; border-style: dashed;",
}
"""The colour of each verdict (:func:`verdict_slug` of a headline or level -> CSS declarations):
one palette for the ledger's chips and the chapters' verdict tables (:mod:`scansnap.verdict_table`)."""


SHORT = {"derivation": "derivation", "simulation": "simulation", "training-population": "training (T = ∞)",
          "training-sampled": "training (sampled)", "real-data": "real data"}
"""How the ledger, the chapters' verdict tables and "What this book found" name each kind of evidence."""


def level_rules(scope: str) -> str:
    """The CSS rules ``<scope> .v-<slug> { ... }`` of :data:`LEVEL_COLOURS`, one a line."""
    return "".join(f"{scope} .v-{slug} {{ {rule} }}\n" for slug, rule in LEVEL_COLOURS.items())


STYLE = """<style>
.lp-root { container-type: inline-size; }
.lp-root .lp-total { font-size: .9em; margin: .2em 0; }
.lp-root .lp-legend, .lp-root .lp-controls { display: flex; flex-wrap: wrap; gap: .3em .9em; align-items: center;
  margin: .4em 0; font-size: .85em; }
.lp-root .lp-sw { display: inline-block; width: 1em; height: 1em; border-radius: 3px; vertical-align: -.15em;
  margin-right: .25em; border: 1px solid #555; }
.lp-root .lp-chapters { display: grid; grid-template-columns: minmax(7em, 11em) 1fr; gap: .2em .6em;
  align-items: start; margin: .4em 0 .8em; }
.lp-root .lp-chapter-name { font-size: .85em; padding-top: .2em; }
.lp-root .lp-chips { display: flex; flex-wrap: wrap; gap: .25em; }
.lp-root a.lp-chip { display: inline-flex; flex-direction: row; align-items: center; gap: .25em; min-width: 3em;
  padding: 0 .3em; border-radius: 4px; border: 1px solid #555; font-size: .8em; line-height: 1.25;
  text-decoration: none; }
.lp-root a.lp-chip:hover, .lp-root a.lp-chip:focus { outline: 2px solid #0969da; }
.lp-root .lp-marks { display: flex; gap: 2px; min-height: 9px; }
.lp-root svg.lp-mk { width: 9px; height: 9px; fill: currentColor; stroke: currentColor; stroke-width: 1.4; }
.lp-root svg.lp-mk.lp-beside { fill: none; }
.lp-root table.lp-tally { border-collapse: collapse; font-size: .85em; margin: .4em 0; width: 100%;
  table-layout: fixed; }
.lp-root .lp-tally th, .lp-root .lp-tally td { border-bottom: 1px solid #ccc; padding: .25em .4em; text-align: left;
  vertical-align: top; }
.lp-root .lp-tally thead th { font-weight: 600; }
.lp-root .lp-tally tbody th, .lp-root .lp-tally thead th:first-child { font-weight: 600; width: 24%; }
.lp-root .lp-tally th, .lp-root .lp-tally td { overflow-wrap: anywhere; }
.lp-root .lp-count-chip, .lp-root .lp-of { display: inline-block; margin-right: .7em; }  /* a chip moves to the
  next line with its label and count */
.lp-root details.lp-bychapter > summary { cursor: pointer; font-size: .9em; font-weight: 600; margin: .3em 0; }
.lp-root .lp-of { font-size: .85em; color: #555; }
""" + level_rules(".lp-root") + """.lp-root .lp-controls label { display: inline-flex; gap: .3em; align-items: center; }
.lp-root .lp-controls select, .lp-root .lp-controls input, .lp-root .lp-controls button { font: inherit;
  max-width: 14em; }
.lp-root .lp-count { font-weight: 600; }
.lp-root .lp-scroll { overflow-x: auto; max-width: 100%; }
.lp-root table.lp-table { width: 100%; border-collapse: collapse; font-size: .85em; margin: 0; }
.lp-root .lp-table th, .lp-root .lp-table td { border-bottom: 1px solid #ccc; padding: .35em .4em;
  vertical-align: top; text-align: left; overflow-wrap: anywhere; }
.lp-root .lp-table td.lp-statement { min-width: 13em; overflow-wrap: normal; }
.lp-root .lp-decides { font-size: .9em; margin-top: .25em; }
.lp-root .lp-where { font-size: .85em; color: #555; overflow-wrap: normal; min-width: 5em; }
.lp-root .lp-table td[data-label="chapter"] { min-width: 5.5em; }
.lp-root .lp-table td[data-label="chapter"], .lp-root .lp-table td[data-label="chapter"] a { overflow-wrap: normal;
  word-break: normal; hyphens: manual; }
.lp-root .lp-table td p { margin: 0 0 .3em; }
.lp-root .lp-table th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0;
  color: inherit; cursor: pointer; text-align: left; }
.lp-root .lp-table th[aria-sort="ascending"] button::after { content: " \\25B2"; }
.lp-root .lp-table th[aria-sort="descending"] button::after { content: " \\25BC"; }
.lp-root .lp-table tr[hidden], .lp-root .lp-table tbody[hidden] { display: none !important; }
.lp-root .lp-table tr.lp-row > td { border-bottom: 0; padding-bottom: .1em; }
.lp-root .lp-table tr.lp-detail > td { padding-top: 0; padding-bottom: .2em; }
.lp-root .lp-table tr.lp-detail summary { font-size: .92em; line-height: 1.3; }
.lp-root .lp-table tbody:has(> tr:target), .lp-root .lp-table tbody.lp-target { outline: 2px solid #0969da;
  outline-offset: -2px; }
.lp-root .lp-table tr { scroll-margin-top: 5em; }
.lp-root .lp-ev { display: inline-block; margin: 0 .2em .2em 0; padding: 0 .3em; border-radius: 3px;
  border: 1px solid #555; white-space: normal; overflow-wrap: normal; }
.lp-root .lp-tag { font-size: .8em; border: 1px solid #888; border-radius: 3px; padding: 0 .25em;
  white-space: nowrap; }
.lp-root details.lp-more { font-size: .92em; }
.lp-root details.lp-more ul, .lp-root details.lp-more ol { margin: .2em 0 .4em; padding-left: 1.2em; }
@container (max-width: 43.5em) {
  .lp-root .lp-chapters { grid-template-columns: 1fr; }
  .lp-root .lp-chapter-name { padding-top: .4em; }
  .lp-root .lp-table thead { position: absolute; width: 1px; height: 1px; overflow: hidden;
    clip: rect(0 0 0 0); }
  .lp-root .lp-table, .lp-root .lp-table tbody, .lp-root .lp-table tr, .lp-root .lp-table td { display: block;
    width: 100%; box-sizing: border-box; }
  .lp-root .lp-table tbody { border: 1px solid #bbb; border-radius: 6px; margin-bottom: .6em; }
  .lp-root .lp-table td { border: 0; padding: .2em .6em; min-width: 0; }
  .lp-root .lp-table td::before { content: attr(data-label); display: block; font-size: .78em; font-weight: 600;
    color: #555; }
  .lp-root .lp-table td.lp-id::before, .lp-root .lp-table tr.lp-detail > td::before { content: none; }
}
</style>"""

SCRIPT = """<script>
(function () {
  "use strict";
  var root = document.getElementById("ledger");
  if (!root) return;
  var table = root.querySelector("table.lp-table");
  var groups = Array.prototype.slice.call(table.tBodies);  // one per claim: its row and its detail row
  var rows = groups.map(function (g) { return g.rows[0]; });
  var filters = Array.prototype.slice.call(root.querySelectorAll("[data-filter]"));
  var heads = Array.prototype.slice.call(root.querySelectorAll("th[data-sort]"));
  var picker = root.querySelector("select[data-sort-select]");
  var count = root.querySelector(".lp-count");
  var state = { key: "claim", ascending: true };

  function matches(row) {
    return filters.every(function (f) {
      var want = f.value.trim().toLowerCase();
      if (!want) return true;
      var key = f.getAttribute("data-filter");
      if (key === "text") {  // the claim's id, where the paper makes it, its statement (not the unfolded rules)
        var statement = row.cells[1].querySelector("p") || row.cells[1];
        return (row.cells[0].textContent + " " + statement.textContent).toLowerCase().indexOf(want) >= 0;
      }
      return (row.getAttribute("data-" + key) || "").split(" ").indexOf(want) >= 0;
    });
  }

  function apply() {
    var shown = 0;
    rows.forEach(function (row) {
      row.hidden = row.parentNode.hidden = !matches(row);
      if (!row.hidden) shown += 1;
    });
    count.textContent = shown + " of " + rows.length + " claims shown";
  }

  function sortBy(key, ascending) {
    state.key = key;
    state.ascending = ascending;
    var value = function (row, k) { return Number(row.getAttribute("data-sort-" + k)); };
    rows.slice().sort(function (a, b) {
      var d = value(a, key) - value(b, key);
      return (ascending ? d : -d) || value(a, "claim") - value(b, "claim");
    }).forEach(function (row) { table.appendChild(row.parentNode); });
    heads.forEach(function (th) {
      var on = th.getAttribute("data-sort") === key;
      th.setAttribute("aria-sort", on ? (ascending ? "ascending" : "descending") : "none");
    });
    if (picker) picker.value = key + (ascending ? ":asc" : ":desc");
  }

  function reset() {
    filters.forEach(function (f) { f.value = ""; });
    apply();
  }

  function reveal() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    var group = el && el.closest ? el.closest("tbody") : null;
    var row = group ? group.rows[0] : null;
    groups.forEach(function (g) { g.classList.remove("lp-target"); });
    if (!row || rows.indexOf(row) < 0) return;
    if (row.hidden) reset();
    group.classList.add("lp-target");
    row.scrollIntoView();
  }

  filters.forEach(function (f) { f.addEventListener(f.tagName === "INPUT" ? "input" : "change", apply); });
  heads.forEach(function (th) {
    th.querySelector("button").addEventListener("click", function () {
      var key = th.getAttribute("data-sort");
      sortBy(key, state.key === key ? !state.ascending : true);
    });
  });
  if (picker) picker.addEventListener("change", function () {
    var parts = picker.value.split(":");
    sortBy(parts[0], parts[1] !== "desc");
  });
  root.querySelector("button[data-reset]").addEventListener("click", function () {
    reset();
    sortBy("claim", true);
  });
  window.addEventListener("hashchange", reveal);
  apply();
  if (window.location.hash) reveal();
})();
</script>"""
