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

async function describe(id) {
  const pre = document.getElementById("p-describe");
  pre.hidden = false;
  pre.textContent = "describe " + id + "…";
  try {
    pre.textContent = JSON.stringify(await up.get("/api/describe?id=" + encodeURIComponent(id)), null, 2);
  } catch (err) {
    pre.textContent = String(err.message || err);
  }
}

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
