// The node's page: reachability, its position beside its neighbours,
// what it holds, its load and moves, the requests it serves, its peers
// and the certificates its revocation list revokes. It polls /status
// every 2 s and /api/series every 5 s (the series' step).
const f = up.fmt;
const SVG = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function peer(id) { return up.el("span", {title: id}, f.short(id, 16)); }

// offset is where position b lies from a on the ring, as a fraction of
// the ring in (-1/2, 1/2], from their first 13 hex digits (52 bits).
function offset(a, b) {
  const M = 2 ** 52;
  let d = (parseInt(b.slice(0, 13), 16) - parseInt(a.slice(0, 13), 16)) / M;
  if (d > 0.5) d -= 1;
  if (d <= -0.5) d += 1;
  return d;
}

// zoom draws the neighbours on a line centred on this node, scaled to
// the farthest one: the ring seen through a magnifier.
function zoom(self, neighbours) {
  const svg = document.getElementById("n-zoom");
  const W = 560, H = 90, C = W / 2, Y = 50;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren(svgEl("line", {x1: 10, y1: Y, x2: W - 10, y2: Y, class: "axis-line"}));
  if (!self) return;
  const ds = neighbours.map(n => offset(self, n.position));
  const span = Math.max(1e-15, ...ds.map(Math.abs));
  neighbours.forEach((n, i) => {
    const x = C + ds[i] / span * (C - 20);
    const c = svgEl("circle", {cx: x, cy: Y, r: 4, class: "ring-peer"});
    c.append(svgEl("title", {}, `${n.peer_id} · ${n.common_prefix_bits} bits in common · ${n.position}`));
    svg.append(c, svgEl("text", {x, y: i % 2 ? Y + 18 : Y - 10, "text-anchor": "middle", class: "legend"}, f.short(n.peer_id, 9)));
  });
  svg.append(svgEl("circle", {cx: C, cy: Y, r: 6, class: "ring-self"}));
  const bits = Math.round(-Math.log2(span));
  const how = neighbours.length === 0 ? "no neighbours yet"
    : bits <= 1 ? "the farthest neighbour is up to half the ring away"
    : `the farthest neighbour is about 1/${2 ** bits} of the ring away`;
  svg.append(svgEl("text", {x: C, y: H - 4, "text-anchor": "middle", class: "axis"}, how));
}

function reachText(r) {
  switch (r.reachability) {
    case "public": return ["reachable", "good"];
    case "private": return ["not reachable (behind NAT)", "bad"];
    default: return ["reachability unknown", "muted"];
  }
}

function showStatus(st) {
  const r = st.reachability || {};
  const [text, cls] = reachText(r);
  up.set("n-reach", text);
  document.getElementById("n-reach").className = "big " + cls;
  up.set("n-why", r.why);
  up.set("n-name", st.name);
  up.set("n-peer", st.peer_id);
  up.set("n-uptime", f.dur(st.uptime_s));
  up.set("n-dht", st.dht_mode + (st.dht_server ? " (serving the DHT)" : " (not serving the DHT: holds no job)"));
  up.set("n-addrs", (r.addrs || st.addrs || []).join("  ") || "none");
  up.set("n-position", st.position + " (sequence " + st.position_seq + ")");
  const nbs = st.neighbours || [];
  up.ring("n-ring", st.position, nbs.map(n => ({position: n.position, label: n.peer_id})));
  zoom(st.position, nbs);
  up.table("n-neighbours", [
    {key: "peer_id", label: "neighbour", fmt: peer},
    {key: "common_prefix_bits", label: "common prefix (bits)", cls: "num"},
    {key: "position", label: "position", fmt: v => v.slice(0, 12) + "…"},
  ], nbs, "no neighbours yet");
  up.set("n-jobs", st.jobs_held);
  up.set("n-index", st.index_entries);
  up.set("n-conns", st.connections);
  up.set("n-rt", st.routing_table);
  const l = st.lookups || {};
  up.set("n-lookups", (l.network || 0) + " / " + (l.cached || 0));
  const roles = Object.entries(st.admitted || {}).sort().map(([role, n]) => ({role, n}));
  up.table("n-admitted", [{key: "role", label: "role"}, {key: "n", label: "peers", cls: "num"}], roles, "nobody admitted yet");
  const rp = st.routing_peers || [];
  const shown = rp.slice(0, 50).map(p => ({peer: p}));
  up.table("n-routing", [{key: "peer", label: rp.length > 50 ? `peer (50 of ${rp.length})` : "peer", fmt: peer}], shown, "none");
  const rev = st.revocations || {count: 0, serials: []};
  up.set("n-crl", st.crl_number || "none held");
  up.set("n-revcount", rev.count);
  const serials = (rev.serials || []).map(s => ({serial: s}));
  up.table("n-revoked", [{key: "serial", label: rev.count > serials.length ? `serial (first ${serials.length})` : "serial"}],
    serials, "no certificate revoked");
}

const xfmt = v => (Math.abs(v) < 0.05 ? "now" : v.toFixed(Math.abs(v) < 10 ? 1 : 0) + " min");

function showSeries(se) {
  const s = se.samples || [];
  const x = m => -m.age_s / 60;
  const pts = key => s.map(m => [x(m), m[key]]);
  up.chart("n-holdings", [{name: "jobs held", points: pts("jobs_held")}, {name: "index entries", points: pts("index_entries")}], {xfmt});
  up.chart("n-loadchart", [{name: "load", points: pts("load")}], {xfmt});
  up.chart("n-moveschart", [{name: "moves", points: pts("moves")}], {xfmt});
  up.chart("n-connchart", [{name: "connections", points: pts("connections")}], {xfmt});
  const last = s[s.length - 1];
  if (last) {
    up.set("n-load", f.num(last.load));
    up.set("n-moves", last.moves);
  }
  // Requests by protocol: the six busiest over the series on the chart,
  // all in the table.
  const stats = {};
  for (const m of s) {
    for (const [p, v] of Object.entries(m.rpc || {})) {
      const st = stats[p] || (stats[p] = {protocol: p, sum: 0, peak: 0});
      st.sum += v;
      st.peak = Math.max(st.peak, v);
    }
  }
  const rows = Object.values(stats).map(st => ({...st, mean: st.sum / Math.max(1, s.length), now: last && last.rpc ? last.rpc[st.protocol] || 0 : 0}));
  rows.sort((a, b) => b.mean - a.mean || a.protocol.localeCompare(b.protocol));
  const name = p => p.replace(/^\/up\//, "").replace(/\/[0-9.]+$/, "");
  up.chart("n-rpcchart", rows.slice(0, 6).map(r => ({name: name(r.protocol), points: s.map(m => [x(m), (m.rpc || {})[r.protocol] || 0])})), {xfmt});
  up.table("n-rpc", [
    {key: "protocol", label: "protocol"},
    {key: "now", label: "now /s", cls: "num", fmt: f.num},
    {key: "mean", label: `mean /s (${f.dur(s.length * se.step_s)})`, cls: "num", fmt: f.num},
    {key: "peak", label: "peak /s", cls: "num", fmt: f.num},
  ], rows, "no request served yet");
}

up.poll("/status", 2000, showStatus);
up.poll("/api/series", 5000, showSeries);
