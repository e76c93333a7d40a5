// The project's page: progress, throughput, latency, validation, credit,
// stuck units (with describe) and results (with downloads), from the
// ledger through /api/.
const f = up.fmt;
const pageSize = 25;
let offset = 0;

function counts(m, keys) {
  m = m || {};
  return keys.map(k => (m[k] || 0) + " " + k).join(", ");
}

function when(span) {
  return v => {
    const d = new Date(v * 1000);
    return span > 86400 ? d.toLocaleDateString() + " " + d.toLocaleTimeString() : d.toLocaleTimeString();
  };
}

up.poll("/api/summary", 3000, s => {
  up.set("p-name", s.project);
  up.set("p-units", counts(s.units, ["valid", "open", "inconclusive"]));
  up.set("p-jobs", counts(s.jobs, ["prepared", "submitted", "harvested", "collected", "lost"]));
  up.set("p-results", s.results);
  up.set("p-lasthour", s.last_hour);
  up.set("p-oldest", s.oldest_waiting_s > 0 ? f.ago(s.oldest_waiting_s) : "none waiting");
});

up.poll("/api/series?buckets=60", 5000, tl => {
  const opts = {xfmt: when(tl.to - tl.from)};
  up.chart("p-units-chart", tl.units, opts);
  up.chart("p-throughput-chart", tl.throughput, opts);
});

up.poll("/api/latency", 5000, l => {
  up.set("p-lat-pct", l.results ? [l.p50_s, l.p90_s, l.p99_s].map(f.dur).join(" / ") : "no results yet");
  up.set("p-lat-max", l.results ? f.dur(l.mean_s) + " / " + f.dur(l.max_s) : "–");
  up.set("p-lat-n", l.results + " results");
});

up.poll("/api/validation", 5000, v => {
  const u = v.units || {}, r = v.results || {};
  up.set("p-val-units", [u.valid, u.open, u.inconclusive].map(n => n || 0).join(" / "));
  up.set("p-val-results", [r.valid, r.invalid, r.duplicate, r.ungraded].map(n => n || 0).join(" / "));
  up.set("p-val-failed", v.failed);
});

up.poll("/api/credit?limit=20", 5000, c => {
  up.set("p-credit-n", c.clients ? "(top " + c.top.length + " of " + c.clients + " clients)" : "");
  up.table("p-credit", [
    {key: "client", label: "client"},
    {key: "valid", label: "credit (valid)", cls: "num"},
    {key: "invalid", label: "invalid", cls: "num"},
    {key: "duplicate", label: "duplicate", cls: "num"},
    {key: "cpu_s", label: "CPU", cls: "num", fmt: f.dur},
  ], c.top, "no results yet");
});

// describe shows why a job (or each job of a unit) is not running: the
// verdict with what would make it run, then what its replicas and index
// nodes said, each attributed to its node.
async function describe(id) {
  const out = document.getElementById("p-describe");
  out.replaceChildren(up.el("p", {class: "muted"}, "describing " + id + "… (asking the job's nodes)"));
  let d;
  try {
    d = await up.get("/api/describe?id=" + encodeURIComponent(id));
  } catch (err) {
    out.replaceChildren(up.el("p", {class: "bad"}, String(err.message || err)));
    return;
  }
  out.replaceChildren();
  for (const j of d.jobs || []) {
    out.append(up.el("h3", {}, "job " + f.short(j.job, 24) + " (unit " + j.unit + ", copy " + j.copy + "): " + j.ledger_state + ", application " + j.app));
    out.append(up.el("ul", {class: "verdict"}, ...(j.verdict || []).map(r =>
      up.el("li", {"data-code": r.code}, up.el("strong", {}, r.why), r.fix ? up.el("span", {class: "muted"}, " → " + r.fix) : null))));
    const replicas = up.el("div", {});
    up.table(replicas, [
      {key: "node", label: "replica", fmt: v => f.short(v)}, {key: "state", label: "state", fmt: (v, a) => a.error || v || (a.held ? "" : "not held")},
      {key: "results", label: "results", cls: "num"}, {key: "releases", label: "releases", cls: "num"},
      {key: "notes", label: "latest reasons", fmt: notes => (notes || []).map(n => n.reason).join("; ")},
    ], j.replicas, "no replica answered");
    const index = up.el("div", {});
    up.table(index, [
      {key: "keyword", label: "keyword"}, {key: "node", label: "index node", fmt: v => f.short(v)},
      {key: "listed", label: "listed", fmt: (v, a) => a.error || (v ? "yes" : "no")},
      {key: "queries", label: "queries", cls: "num"},
      {key: "last_query_s", label: "last query", cls: "num", fmt: v => v < 0 ? "never" : f.ago(v)},
      {key: "declines", label: "declines", cls: "num"},
      {key: "notes", label: "latest reasons", fmt: notes => (notes || []).map(n => n.reason).join("; ")},
    ], j.index, "no index node answered");
    out.append(replicas, index);
  }
}

document.getElementById("p-describe-form").addEventListener("submit", ev => {
  ev.preventDefault();
  const id = document.getElementById("p-describe-id").value.trim();
  if (id) describe(id);
});

function describeButton(id) {
  const b = up.el("button", {type: "button"}, "describe");
  b.addEventListener("click", () => describe(id));
  return b;
}

up.poll("/api/stuck?limit=20", 5000, s => {
  up.set("p-stuck-n", s.total ? "(" + s.units.length + " oldest of " + s.total + ", no canonical result after " + f.dur(s.after_s) + ")" : "");
  up.table("p-stuck", [
    {key: "batch", label: "batch", fmt: (v, u) => v + " #" + u.index},
    {key: "app", label: "app"},
    {key: "status", label: "status"},
    {key: "age_s", label: "age", cls: "num", fmt: f.dur},
    {key: "results", label: "results", cls: "num", fmt: (v, u) => v + "/" + u.copies},
    {key: "reason", label: "reason"},
    {key: "job", label: "", fmt: describeButton},
  ], s.units, "none: every unit has a canonical result or is younger than " + f.dur(s.after_s));
});

function downloads(job, row) {
  const span = up.el("span", {});
  span.append(up.el("a", {href: "/api/results/" + encodeURIComponent(job), download: ""}, "stdout"));
  for (const name of row.files || []) {
    span.append(" ", up.el("a", {href: "/api/results/" + encodeURIComponent(job) + "?file=" + encodeURIComponent(name), download: name}, name));
  }
  return span;
}

function showResults(p) {
  const last = Math.min(p.offset + p.results.length, p.total);
  up.set("p-results-n", p.total ? "(" + (p.offset + 1) + "–" + last + " of " + p.total + ", latest first)" : "");
  document.getElementById("p-newer").disabled = p.offset === 0;
  document.getElementById("p-older").disabled = last >= p.total;
  up.table("p-results-table", [
    {key: "harvested", label: "harvested", fmt: v => new Date(v * 1000).toLocaleString()},
    {key: "batch", label: "unit", fmt: (v, r) => v + " #" + r.index},
    {key: "job", label: "job", fmt: v => f.short(v, 16)},
    {key: "client", label: "client"},
    {key: "grade", label: "grade", fmt: (v, r) => (v || "undecided") + (r.canonical ? " (canonical)" : "")},
    {key: "exit_code", label: "exit", cls: "num", fmt: (v, r) => r.error ? v + ": " + r.error : v},
    {key: "size", label: "output", cls: "num", fmt: f.bytes},
    {key: "cpu_s", label: "CPU", cls: "num", fmt: f.dur},
    {key: "job", label: "download", fmt: downloads},
  ], p.results, "no results yet");
}

const results = up.poll("/api/results?limit=" + pageSize, 5000, p => {
  if (offset === 0) showResults(p);
});

async function page(to) {
  offset = Math.max(0, to);
  if (offset === 0) return results();
  try {
    showResults(await up.get("/api/results?limit=" + pageSize + "&offset=" + offset));
  } catch (err) {
    up.showError(String(err.message || err));
  }
}

document.getElementById("p-newer").addEventListener("click", () => page(offset - pageSize));
document.getElementById("p-older").addEventListener("click", () => page(offset + pageSize));
