// The client's page: what it runs, its projects, why it skips jobs, and
// BOINC Manager's everyday actions (pause, resume, attach, detach).
const done = [];
const t0 = Date.now();
const f = up.fmt;

async function act(url, body, what) {
  up.set("c-action", what + "…");
  try {
    await up.post(url, body);
    up.set("c-action", what + ": done");
  } catch (err) {
    up.set("c-action", what + ": " + err.message);
  }
  refresh();
}

document.getElementById("c-pause").addEventListener("click", () => act("/api/pause", {}, "pause"));
document.getElementById("c-resume").addEventListener("click", () => act("/api/resume", {}, "resume"));
document.getElementById("c-attach-form").addEventListener("submit", ev => {
  ev.preventDefault();
  const p = document.getElementById("c-attach").value.trim();
  if (p) act("/api/attach", {project: p}, "attach " + p);
});

function detachButton(name) {
  const b = up.el("button", {type: "button"}, "Detach");
  b.addEventListener("click", () => act("/api/detach", {project: name}, "detach " + name));
  return b;
}

function showStatus(st) {
  up.set("c-state", st.paused ? "paused" : (st.running && st.running.length ? "working" : "idle"));
  up.set("c-done", st.done);
  up.set("c-failed", st.failed);
  up.set("c-released", st.released);
  up.set("c-claims", st.claims.won + " / " + st.claims.lost);
  up.set("c-claimtime", f.dur(st.claim_p50_s) + " / " + f.dur(st.claim_p99_s));
  const q = st.queries || {};
  up.set("c-queries", (q.found || 0) + " / " + (q.empty || 0) + " / " + (q.error || 0));
  up.table("c-running", [
    {key: "project", label: "project"}, {key: "app", label: "application"}, {key: "state", label: "state"},
    {key: "elapsed_s", label: "elapsed", cls: "num", fmt: f.dur},
    {key: "limits", label: "limits (wall, CPU, memory)", fmt: l => l ? f.dur(l.wall_s) + ", " + f.dur(l.cpu_s) + ", " + (l.memory_bytes ? f.bytes(l.memory_bytes) : "no memory bound") : ""},
    {key: "job", label: "job", fmt: f.short},
  ], st.running, "no job running");
  const projects = st.projects || Object.keys(st.debts_s || {}).map(name => ({name, attached: true, debt_s: st.debts_s[name]}));
  up.table("c-projects", [
    {key: "name", label: "project"},
    {key: "attached", label: "attached", fmt: v => v ? "yes" : "no"},
    {key: "share", label: "share", cls: "num", fmt: v => v === undefined ? "" : f.num(v)},
    {key: "debt_s", label: "debt", cls: "num", fmt: f.dur},
    {key: "backoff_s", label: "backing off", cls: "num", fmt: v => v ? f.dur(v) : ""},
    {key: "name", label: "", fmt: (name, p) => p.attached ? detachButton(name) : ""},
  ], projects, "no project attached");
  done.push([(Date.now() - t0) / 1000, st.done]);
  if (done.length > 720) done.shift();
  up.chart("c-chart", [{name: "jobs done", points: done}], {xfmt: v => f.dur(v)});
}

function showExplain(ex) {
  const rows = [];
  for (const p of ex.projects || []) {
    for (const j of p.jobs || []) rows.push(Object.assign({project: p.name}, j));
    if (!(p.jobs || []).length) rows.push({project: p.name, decision: "no job seen yet"});
  }
  const sums = document.getElementById("c-explain-summary");
  if (sums) {
    sums.replaceChildren(...(ex.projects || []).map(p => up.el("li", {}, up.el("strong", {}, p.name + ": "), p.summary || "")));
  }
  up.table("c-explain", [
    {key: "project", label: "project"}, {key: "job", label: "job", fmt: f.short},
    {key: "app", label: "application"}, {key: "decision", label: "decision"}, {key: "reason", label: "why", fmt: (v, j) => v || j.detail || ""},
    {key: "age_s", label: "when", cls: "num", fmt: v => v === undefined ? "" : f.ago(v)},
  ], rows, "nothing queried yet");
}

function showHistory(h) {
  up.table("c-history", [
    {key: "project", label: "project"}, {key: "app", label: "application"}, {key: "outcome", label: "outcome"},
    {key: "elapsed_s", label: "elapsed", cls: "num", fmt: f.dur},
    {key: "cpu_s", label: "CPU", cls: "num", fmt: f.dur},
    {key: "age_s", label: "finished", cls: "num", fmt: v => v === undefined ? "" : f.ago(v)},
    {key: "job", label: "job", fmt: f.short},
    {key: "reason", label: "why given back", fmt: (v, j) => v || j.error || ""},
  ], h.jobs || [], "no job finished yet");
}

const refresh = up.poll("/status", 2000, showStatus);
up.poll("/api/explain", 5000, showExplain);
up.poll("/api/history", 5000, showHistory);
