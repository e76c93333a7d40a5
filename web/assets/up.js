// up.js: what the U.P. pages share. No framework, nothing fetched from
// elsewhere. Data from the network is always inserted as text
// (textContent, createTextNode), never as HTML.
"use strict";
const up = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const palette = ["#2b6cb0", "#c05621", "#2f855a", "#b83280", "#6b46c1", "#b7791f", "#2c7a7b", "#c53030"];

  // el builds an element: up.el("td", {class: "num"}, "text", child…).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  // set puts text into the element with the given id (if any).
  function set(id, text) {
    const e = document.getElementById(id);
    if (e) e.textContent = text === undefined || text === null ? "" : String(text);
  }

  function showError(msg) {
    const e = document.getElementById("up-error");
    if (!e) return;
    e.textContent = msg || "";
    e.hidden = !msg;
  }

  function live() {
    const e = document.getElementById("up-live");
    if (e) {
      e.textContent = "live · " + new Date().toLocaleTimeString();
      e.classList.add("ok");
    }
  }

  async function get(url) {
    const r = await fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}});
    if (!r.ok) throw new Error(url + ": " + r.status + " " + (await r.text()).trim());
    return r.json();
  }

  // post sends an action (JSON body) with the action header the guard
  // asks for; it resolves to the JSON answer or throws the server's words.
  async function post(url, body) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-UP-Action": "1"},
      body: JSON.stringify(body || {}),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(text.trim() || (url + ": " + r.status));
    try { return JSON.parse(text); } catch (_) { return text; }
  }

  // poll calls fn with url's JSON now and every ms milliseconds, while the
  // page is visible (a hidden tab costs the daemon nothing). Errors show
  // in the page's error line. It returns a function that polls at once.
  function poll(url, ms, fn) {
    let timer = null;
    async function tick() {
      clearTimeout(timer);
      timer = null;
      if (document.hidden) return;
      try {
        fn(await get(url));
        showError("");
        live();
      } catch (err) {
        showError(String(err.message || err));
      }
      timer = setTimeout(tick, ms);
    }
    document.addEventListener("visibilitychange", () => { if (!document.hidden && timer === null) tick(); });
    tick();
    return tick;
  }

  // table fills el with a table: cols are [{key, label, fmt, cls}] (or
  // strings, key and label alike), rows objects; fmt(value, row) returns
  // text or a Node. An empty list shows empty (default "none").
  function table(el0, cols, rows, empty) {
    const target = typeof el0 === "string" ? document.getElementById(el0) : el0;
    if (!target) return;
    cols = cols.map(c => typeof c === "string" ? {key: c, label: c} : c);
    if (!rows || rows.length === 0) {
      target.replaceChildren(el("p", {class: "empty"}, empty || "none"));
      return;
    }
    const head = el("tr", {}, ...cols.map(c => el("th", {class: c.cls}, c.label)));
    const body = rows.map(r => el("tr", {}, ...cols.map(c => {
      const v = c.fmt ? c.fmt(r[c.key], r) : r[c.key];
      return el("td", {class: c.cls}, v === undefined || v === null ? "" : v);
    })));
    target.replaceChildren(el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
  }

  // chart draws series ([{name, points: [[x, y], …]}]) as lines in the
  // svg element (or id), with y from 0 (or opts.min) to the largest value,
  // and a legend. opts: {xfmt, yfmt, title, stacked: false}.
  function chart(svg0, series, opts) {
    const svg = typeof svg0 === "string" ? document.getElementById(svg0) : svg0;
    if (!svg) return;
    opts = opts || {};
    const W = 560, H = 200, L = 48, R = 8, T = 10, B = 40;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("role", "img");
    svg.replaceChildren();
    const pts = series.flatMap(s => s.points || []);
    if (pts.length === 0) {
      const t = svgEl("text", {x: W / 2, y: H / 2, "text-anchor": "middle", class: "axis"});
      t.textContent = "no data yet";
      svg.append(t);
      return;
    }
    let x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
    let y0 = opts.min !== undefined ? opts.min : Math.min(0, ...pts.map(p => p[1]));
    let y1 = Math.max(...pts.map(p => p[1]));
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) y1 = y0 + 1;
    const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R);
    const sy = y => H - B - (y - y0) / (y1 - y0) * (H - B - T);
    const xfmt = opts.xfmt || (v => String(Math.round(v)));
    const yfmt = opts.yfmt || fmtNum;
    svg.append(svgEl("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis-line"}));
    svg.append(svgEl("line", {x1: L, y1: T, x2: L, y2: H - B, class: "axis-line"}));
    for (const [v, y] of [[y0, sy(y0)], [y1, sy(y1)], [(y0 + y1) / 2, sy((y0 + y1) / 2)]]) {
      const t = svgEl("text", {x: L - 4, y: y + 4, "text-anchor": "end", class: "axis"});
      t.textContent = yfmt(v);
      svg.append(t);
    }
    for (const [v, anchor] of [[x0, "start"], [x1, "end"]]) {
      const t = svgEl("text", {x: sx(v), y: H - B + 14, "text-anchor": anchor, class: "axis"});
      t.textContent = xfmt(v);
      svg.append(t);
    }
    let lx = L;
    series.forEach((s, i) => {
      const color = s.color || palette[i % palette.length];
      const ps = (s.points || []).map(p => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(" ");
      if (ps) svg.append(svgEl("polyline", {points: ps, fill: "none", stroke: color, "stroke-width": 2, class: "series"}));
      const label = svgEl("text", {x: lx + 14, y: H - 6, class: "legend"});
      label.textContent = s.name;
      svg.append(svgEl("rect", {x: lx, y: H - 15, width: 10, height: 10, fill: color}));
      svg.append(label);
      lx += 24 + 7 * String(s.name).length;
    });
  }

  // ring draws the keyspace as a circle: self and others are positions
  // as hex strings (the first 8 digits give the angle); others may carry
  // a label. The first digits are enough to tell neighbours apart.
  function ring(svg0, self, others) {
    const svg = typeof svg0 === "string" ? document.getElementById(svg0) : svg0;
    if (!svg) return;
    const S = 220, C = S / 2, Rr = 80;
    svg.setAttribute("viewBox", `0 0 ${S} ${S}`);
    svg.replaceChildren(svgEl("circle", {cx: C, cy: C, r: Rr, fill: "none", class: "axis-line"}));
    const angle = hex => parseInt(String(hex).slice(0, 8), 16) / 4294967296 * 2 * Math.PI - Math.PI / 2;
    const dot = (hex, cls, r, title) => {
      const a = angle(hex);
      const c = svgEl("circle", {cx: C + Rr * Math.cos(a), cy: C + Rr * Math.sin(a), r, class: cls});
      const t = svgEl("title", {});
      t.textContent = title;
      c.append(t);
      svg.append(c);
    };
    for (const o of others || []) dot(o.position, "ring-peer", 4, (o.label || "") + " " + o.position);
    if (self) dot(self, "ring-self", 7, "this node " + self);
  }

  function fmtNum(v) {
    if (v === undefined || v === null || Number.isNaN(v)) return "–";
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
    if (Number.isInteger(v)) return String(v);
    return a >= 10 ? v.toFixed(1) : v.toFixed(2);
  }

  function fmtDur(s) {
    if (s === undefined || s === null || Number.isNaN(s)) return "–";
    if (s < 1) return Math.round(s * 1000) + " ms";
    if (s < 90) return s.toFixed(s < 10 ? 1 : 0) + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    if (s < 172800) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " d";
  }

  function fmtBytes(b) {
    if (b === undefined || b === null) return "–";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i === 0 ? String(b) : b.toFixed(1)) + " " + u[i];
  }

  function short(id, n) {
    id = String(id || "");
    n = n || 12;
    return id.length > n ? id.slice(0, 6) + "…" + id.slice(-(n - 7)) : id;
  }

  return {el, set, get, post, poll, table, chart, ring, showError,
    fmt: {num: fmtNum, dur: fmtDur, bytes: fmtBytes, ago: s => fmtDur(s) + " ago", pct: v => (v * 100).toFixed(1) + " %", short}};
})();
