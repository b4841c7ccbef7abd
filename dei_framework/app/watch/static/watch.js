// DEI watch: polls /api/state and draws heatmaps, the champion flow and curves as SVG.
// Plain JavaScript, no libraries, nothing fetched from outside this server.
"use strict";

const POLL_MS = 1000;          // between polls of a caught-up run
const CATCH_UP_MS = 30;        // between polls while the server is still reading a large run
const SVG = "http://www.w3.org/2000/svg";

const view = { run: "", version: null, state: null, seen: new Map(), texts: new Map(), timer: 0 };

// --- small helpers -----------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g,
  (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const num = (v, digits = 2) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
const pct = (v) => (v === null || v === undefined ? "–" : (100 * v).toFixed(1) + "%");
const int = (v) => (v === null || v === undefined ? "–" : Number(v).toLocaleString("en"));
const money = (v) => (v === null ? "unknown" : v === undefined ? "–" : "$" + Number(v).toFixed(4));

// A node's colour comes with the state (the server's node_colors, which the report's plots use).
function color(name) {
  const node = (view.state?.nodes || []).find((n) => n.name === name);
  return node?.color || "#333";
}

// Fitness colour: a viridis-like ramp from dark blue (low) to yellow (high).
const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
function ramp(t) {
  t = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0.5)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(t)), f = t - i;
  const c = RAMP[i].map((a, k) => Math.round(a + f * (RAMP[i + 1][k] - a)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function bar(value, limit) {
  if (!limit) return "";
  const share = Math.min(1, value / limit);
  return `<span class="bar${value > limit ? " over" : ""}"><i style="width:${(100 * share).toFixed(1)}%"></i></span>`;
}

function el(tag, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

// --- polling -----------------------------------------------------------------------------------

async function getJSON(url) {
  const response = await fetch(url, { cache: "no-store" });
  if (!response.ok) throw new Error((await response.json()).error || response.statusText);
  return response.json();
}

async function loadRuns() {
  const listing = await getJSON("/api/runs");
  const runs = listing.runs;
  const wanted = new URLSearchParams(location.hash.slice(1)).get("run");
  if (listing.kind === "experiment") {
    $("picker").hidden = false;
    if (JSON.stringify(runs) === JSON.stringify($("picker").runs)) return listing;
    const current = wanted ?? view.run ?? "";
    fillPicker(runs, runs.some((r) => r.path === current) ? current : runs[0]?.path ?? "");
  } else {
    view.run = "";
  }
  return listing;
}

function fillPicker(runs, selected) {
  const conditions = [...new Set(runs.map((r) => r.condition))];
  const chosen = runs.find((r) => r.path === selected) || runs[0];
  $("condition").innerHTML = conditions.map((c) => `<option${chosen && c === chosen.condition ? " selected" : ""}>${esc(c)}</option>`).join("");
  const repeats = runs.filter((r) => chosen && r.condition === chosen.condition);
  $("repeat").innerHTML = repeats.map((r) => `<option value="${esc(r.path)}"${r.path === chosen.path ? " selected" : ""}>${esc(r.repeat ?? r.path)}</option>`).join("");
  $("picker").runs = runs;
  if (chosen && chosen.path !== view.run) switchRun(chosen.path);
}

function switchRun(path) {
  view.run = path;
  view.version = null;
  view.state = null;
  view.seen = new Map();
  history.replaceState(null, "", "#run=" + encodeURIComponent(path));
  $("panels").innerHTML = "";
  clearTimeout(view.timer);
  poll();
}

async function poll() {
  let delay = POLL_MS;
  const run = view.run;
  try {
    const since = view.version === null ? "" : `&since=${view.version}`;
    const state = await getJSON(`/api/state?run=${encodeURIComponent(run)}${since}`);
    if (run !== view.run) return;  // the user picked another run meanwhile
    if (!state.unchanged) {
      view.state = state;
      view.version = state.version;
      render(state);
    }
    if (state.run && state.run.behind_bytes > 0) delay = CATCH_UP_MS;
  } catch (error) {
    $("summary").textContent = "cannot reach the watch server: " + error.message;
  }
  clearTimeout(view.timer);
  view.timer = setTimeout(poll, delay);
}

// --- rendering ---------------------------------------------------------------------------------

function render(state) {
  renderSummary(state);
  const range = fitnessRange(state);
  const panels = $("panels");
  const wanted = [{ ...state.merged, name: "merged", merged: true }, ...state.nodes];
  for (const panel of wanted) renderPanel(panels, panel, state, range);
  for (const stale of [...panels.children]) {
    if (!wanted.some((p) => p.name === stale.dataset.node)) stale.remove();
  }
  renderFlow(state);
  renderAllocation(state);
  renderCharts(state);
  document.body.dataset.version = state.version;
}

// A dynamic allocator's decisions: one row per round, one column per node.
function renderAllocation(state) {
  const decisions = state.allocation || [];
  $("allocation").hidden = !decisions.length;
  if (!decisions.length) return;
  const names = state.nodes.map((n) => n.name);
  const head = `<tr><th>round</th><th>calls</th>${names.map((n) => `<th>${n}</th>`).join("")}</tr>`;
  const rows = decisions.map((d) => {
    const cells = names.map((n) => {
      const share = d.share[n] == null ? "" : ` (${(100 * d.share[n]).toFixed(0)}%`;
      const reward = d.reward[n] == null ? "" : `; ${d.reward[n].toFixed(3)}`;
      return `<td>${d.quotas[n] ?? "–"}${share}${reward}${share ? ")" : ""}</td>`;
    });
    return `<tr><td>${d.round}</td><td>${d.budget}</td>${cells.join("")}</tr>`;
  });
  $("allocation-table").innerHTML = head + rows.join("");
}

function renderSummary(state) {
  const run = state.run, merged = state.merged, usage = run.usage || {};
  const rounds = state.nodes.map((n) => n.rounds_done);
  const done = rounds.length ? Math.min(...rounds) : 0;  // the slowest node's current round
  const parts = [
    `<b>${esc(run.domain ?? "?")}</b> · ${esc(run.transport ?? "?")} · ${state.nodes.length} nodes`,
    roundText(done, run.rounds),
    `calls ${int(run.calls)}/${int(run.limit)}`,
    `merged coverage <b>${pct(merged.coverage)}</b>`,
    `QD-score <b>${num(merged.qd_score)}</b>`,
    `best ${num(merged.best?.fitness, 3)}`,
    `tokens ${int((usage.prompt_tokens || 0) + (usage.completion_tokens || 0))}`,
    `cost ${money(usage.cost_usd)}${run.max_cost_usd ? " / $" + run.max_cost_usd : ""}`,
    `<span class="status-${esc(run.status)}">${esc(run.status)}</span>` +
      (run.updated_s_ago !== null && run.status !== "finished" ? ` (updated ${num(run.updated_s_ago, 0)} s ago)` : ""),
    `${int(run.events)} events`,
  ];
  if (run.behind_bytes > 0) parts.push(`<b>reading the run… ${int(Math.round(run.behind_bytes / 1024))} KiB to go</b>`);
  if (state.space.inferred) parts.push("grid size inferred from the cells seen so far");
  $("summary").innerHTML = parts.join(" · ");
}

function fitnessRange(state) {
  let lo = Infinity, hi = -Infinity;
  for (const cell of state.merged.cells) { lo = Math.min(lo, cell.fitness); hi = Math.max(hi, cell.fitness); }
  for (const node of state.nodes) for (const cell of node.cells) { lo = Math.min(lo, cell.fitness); hi = Math.max(hi, cell.fitness); }
  return Number.isFinite(lo) ? [lo, hi] : [0, 1];
}

// The grid drawn in 2-D: the first two axes; with more axes each drawn cell shows the best
// elite over the others.
function project(cells, shape) {
  const best = new Map();
  for (const cell of cells) {
    const key = `${cell.cell[0] ?? 0},${cell.cell[1] ?? 0}`;
    const held = best.get(key);
    if (!held || cell.fitness > held.fitness) best.set(key, cell);
  }
  return best;
}

function renderPanel(container, data, state, range) {
  let panel = [...container.children].find((p) => p.dataset.node === data.name);
  if (!panel) {
    panel = document.createElement("article");
    panel.className = "panel" + (data.merged ? " merged" : "");
    panel.dataset.node = data.name;
    panel.innerHTML = `<h3></h3><svg class="heatmap"></svg><dl class="stats"></dl><ul class="errors"></ul>`;
    container.appendChild(panel);
  }
  panel.dataset.cells = data.cells.length;
  panel.dataset.calls = data.merged ? state.run.calls : data.calls;
  const title = data.merged
    ? `merged <small>best per cell over the nodes' current archives</small>`
    : `<span class="swatch" style="background:${color(data.name)}"></span>${esc(data.name)} <small>${esc(data.operator ?? "")}</small>`;
  panel.querySelector("h3").innerHTML = title;
  drawHeatmap(panel.querySelector("svg"), data, state, range);
  panel.querySelector("dl").innerHTML = data.merged ? mergedStats(data, state) : nodeStats(data);
  const errors = data.merged ? [] : data.errors;
  panel.querySelector("ul").innerHTML = (data.stopped ? `<li class="stopped">stopped: ${esc(data.stopped)}</li>` : "") +
    errors.map((e) => `<li title="${esc(e.example)}">${int(e.count)} × ${esc(e.cause)}</li>`).join("");
}

function drawHeatmap(svg, data, state, range) {
  const shape = state.space.shape.length ? state.space.shape : [1, 1];
  const nx = shape[0] || 1, ny = shape[1] || 1;
  const size = Math.max(8, Math.min(34, Math.floor(240 / Math.max(nx, ny))));
  const left = 16, top = 4, width = left + nx * size + 4, height = top + ny * size + 16;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.replaceChildren();
  const cells = project(data.cells, shape);
  const seen = view.seen.get(data.name) || new Set();
  const nowSeen = new Set();
  const champion = data.best ? `${data.best.cell[0] ?? 0},${data.best.cell[1] ?? 0}` : null;
  const [lo, hi] = range;
  for (let x = 0; x < nx; x++) {
    for (let y = 0; y < ny; y++) {
      const key = `${x},${y}`, cell = cells.get(key);
      // y grows upwards, as on a plot
      const rect = el("rect", { x: left + x * size, y: top + (ny - 1 - y) * size, width: size - 1, height: size - 1 }, svg);
      if (!cell) { rect.setAttribute("class", "empty"); continue; }
      const stamp = `${key}:${cell.id}`;
      nowSeen.add(stamp);
      rect.setAttribute("fill", ramp(hi > lo ? (cell.fitness - lo) / (hi - lo) : 0.5));
      rect.setAttribute("class", "filled" + (view.seen.has(data.name) && !seen.has(stamp) ? " fresh" : ""));
      rect.dataset.id = cell.id;
      rect.dataset.node = data.name;
      rect.dataset.key = key;
    }
  }
  if (champion && cells.has(champion)) {
    const [x, y] = champion.split(",").map(Number);
    el("rect", { class: "champion", x: left + x * size + 1, y: top + (ny - 1 - y) * size + 1, width: size - 3, height: size - 3 }, svg);
  }
  const names = state.space.axes || [];
  el("text", { x: left, y: height - 3 }, svg).textContent = names[0] ? `${names[0]} →` : "";
  const yl = el("text", { x: 10, y: top + ny * size, transform: `rotate(-90 10 ${top + ny * size})` }, svg);
  yl.textContent = names[1] ? `${names[1]} →` : "";
  view.seen.set(data.name, nowSeen);
  svg.cells = cells;
}

// Rounds are 0-based indices everywhere (as in the run directory and the logs): "round k of R"
// is round index k of R rounds, and a run whose R rounds have all ended says so.
function roundText(index, rounds) {
  if (rounds && index >= rounds) return rounds === 1 ? "1 round done" : `all ${rounds} rounds done`;
  return `round ${index} of ${rounds ?? "?"}`;
}

function nodeStats(node) {
  const usage = node.usage || {};
  const attempts = usage.attempts ?? null;
  const failed = attempts === null ? null : attempts - (usage.calls ?? node.calls);
  const tokens = (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0);
  const finished = node.rounds && node.rounds_done >= node.rounds;
  return [
    ["round", finished ? roundText(node.rounds_done, node.rounds)
      : `${bar(node.round_calls, node.round_quota)}${roundText(node.round, node.rounds)} · ${int(node.round_calls)}/${int(node.round_quota)} calls`],
    ["calls", `${bar(node.calls, node.quota)}${int(node.calls)}/${int(node.quota)}`],
    ["attempts", attempts === null ? "–" : `${int(attempts)}${failed > 0 ? ` (${int(failed)} failed or retried)` : ""}`],
    ["invalid", `${int(node.invalid)}${node.calls ? ` (${pct(node.invalid / node.calls)})` : ""}${limitText(node.limits)}`],
    ["tokens", `${int(tokens)}${usage.prompt_tokens !== undefined ? ` (${int(usage.prompt_tokens)} in, ${int(usage.completion_tokens)} out)` : ""}`],
    ["cost", `${node.cost_cap_usd ? bar(usage.cost_usd || 0, node.cost_cap_usd) : ""}${money(usage.cost_usd)}${node.cost_cap_usd ? " / $" + num(node.cost_cap_usd, 4) : ""}`],
    ["archive", `${int(node.num_elites)} elites · coverage ${pct(node.coverage)} · QD ${num(node.qd_score)}`],
    ["champion", node.best ? `fitness ${num(node.best.fitness, 3)} in (${node.best.cell.join(", ")})` : "–"],
    ...operatorStatus(node.operator_status),
  ].map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join("");
}

// Candidates a sandbox limit stopped (timeout, memory, killed by a signal), by kind.
function limitText(limits) {
  const parts = Object.entries(limits || {}).filter(([, n]) => n > 0).map(([k, n]) => `${int(n)} ${esc(k)}`);
  return parts.length ? ` · stopped: ${parts.join(", ")}` : "";
}

// The operator's own counters (LLM operators: errors, retries, the last error), at the end.
function operatorStatus(status) {
  if (!status || !Object.keys(status).length) return [];
  const counts = Object.entries(status).filter(([k, v]) => typeof v === "number" && v && k !== "calls" && k !== "in_flight");
  const rows = counts.length ? [["operator", counts.map(([k, v]) => `${int(v)} ${esc(k.replace(/_/g, " "))}`).join(", ")]] : [];
  if (status.last_error) rows.push(["last error", `<span class="stopped">${esc(status.last_error)}</span>`]);
  return rows;
}

function mergedStats(merged, state) {
  const rows = [
    ["archive", `${int(merged.num_elites)} elites · coverage ${pct(merged.coverage)}`],
    ["QD-score", num(merged.qd_score)],
    ["champion", merged.best ? `${esc(merged.best.node)} · fitness ${num(merged.best.fitness, 3)}` : "–"],
    ["sharing", `${int(state.transfers_total)} champions received · ${int(state.edges.reduce((n, e) => n + e.filled, 0))} took their cell · ${int(state.edges.reduce((n, e) => n + e.novel, 0))} new niches`],
  ];
  // Final figures of summary.json, including any a newer DEI adds (e.g. common-ground ones).
  const figure = (v) => (Number.isInteger(v) ? int(v) : num(v, 3));
  for (const [key, value] of Object.entries(merged.final || {})) {
    if (typeof value === "number") rows.push([`final ${key}`, figure(value)]);
    else if (value && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) if (typeof v === "number") rows.push([`final ${key}.${k}`, figure(v)]);
    }
  }
  return rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("");
}

// --- champion flow -----------------------------------------------------------------------------

const STATUS_TEXT = { filled: "took its cell", taken: "kept out by a better elite", invalid: "invalid there", pending: "not evaluated yet" };

function renderFlow(state) {
  $("flow-legend").innerHTML = Object.entries(STATUS_TEXT).map(([k, v]) => `<span class="${k}">${v}</span>`).join("") +
    `<span style="color:#ff006e">ring: a niche new to the receiver</span>`;
  const svg = $("flow");
  const nodes = state.nodes.map((n) => n.name);
  // The last rounds only (the server sends a window); the edges give all-time totals.
  const minRound = state.flow_from_round || 0;
  const maxRound = Math.max(minRound, Math.min((state.run.rounds ?? 1) - 1, minRound + 29),
    ...state.champions.map((c) => c.round), ...state.transfers.map((t) => t.round));
  const left = 90, right = 20, lane = 34, top = 22;
  const width = Math.max(600, svg.clientWidth || 900), height = top + lane * nodes.length + 8;
  const step = (width - left - right) / Math.max(1, maxRound - minRound + 0.5);
  const X = (round) => left + step * (Math.max(round, minRound - 0.5) - minRound + 0.25);
  const Y = (name) => top + lane * (nodes.indexOf(name) + 0.5);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", height);
  svg.replaceChildren();
  const labelEvery = Math.ceil((maxRound - minRound + 1) / 15);
  for (let r = minRound; r <= maxRound; r += labelEvery) el("text", { x: X(r) - 10, y: 12 }, svg).textContent = `round ${r}`;
  for (const name of nodes) {
    el("line", { class: "lane", x1: left, x2: width - right, y1: Y(name), y2: Y(name) }, svg);
    const label = el("text", { x: 4, y: Y(name) + 4 }, svg);
    label.textContent = name;
    label.setAttribute("fill", color(name));
  }
  const fitness = state.champions.map((c) => c.fitness).filter(Number.isFinite);
  const lo = Math.min(...fitness, 0), hi = Math.max(...fitness, 1);
  state.transfers.forEach((t, i) => {
    if (!nodes.includes(t.from) || !nodes.includes(t.to)) return;
    const x1 = X(t.from_round), y1 = Y(t.from), x2 = X(t.round) - 6, y2 = Y(t.to);
    const mid = (x1 + x2) / 2;
    const path = el("path", { class: `transfer ${t.status}`, d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}` }, svg);
    path.dataset.transfer = i;
    if (t.novel) el("circle", { class: "novel", cx: x2, cy: y2, r: 5 }, svg);
  });
  for (const c of state.champions) {
    if (!nodes.includes(c.node)) continue;
    const r = 4 + 6 * (hi > lo ? (c.fitness - lo) / (hi - lo) : 0.5);
    const dot = el("circle", { class: "champion", cx: X(c.round), cy: Y(c.node), r, fill: color(c.node), stroke: "#111" }, svg);
    dot.dataset.id = c.id;
    dot.dataset.node = c.node;
  }
  const recent = state.transfers.slice(-12).reverse();
  $("transfers").innerHTML = recent.map((t) =>
    `<li>round ${t.round}: <b style="color:${color(t.from)}">${esc(t.from)}</b>'s round-${t.from_round} champion → ` +
    `<b style="color:${color(t.to)}">${esc(t.to)}</b>: ${STATUS_TEXT[t.status] || esc(t.status)}` +
    (t.cell ? ` (${t.cell.join(", ")}), fitness ${num(t.fitness, 3)}` : "") +
    (t.novel ? `; ${esc(t.to)} held no elite there in its previous round (a new niche)` : "") +
    (t.error ? ` — ${esc(t.error)}` : "") + `</li>`).join("");
  $("transfers").setAttribute("start", state.transfers_total);
}

// --- curves ------------------------------------------------------------------------------------

function renderCharts(state) {
  // x: calls per node; the merged curve's calls (all nodes') are divided by the node count.
  const perNode = Math.max(1, state.nodes.length);
  const series = (field) => [
    ...state.nodes.map((n) => ({ name: n.name, color: color(n.name), points: n.curve.map((p) => [p[0], p[field]]) })),
    { name: "merged", color: "#111", merged: true, points: state.merged.curve.map((p) => [p[0] / perNode, p[field]]) },
  ];
  lineChart($("coverage-chart"), series(1), (v) => pct(v));
  lineChart($("qd-chart"), series(2), (v) => num(v, 1));
}

function lineChart(svg, series, format) {
  const width = Math.max(360, svg.clientWidth || 480), height = 220;
  const left = 52, right = 90, top = 8, bottom = 24;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.replaceChildren();
  const all = series.flatMap((s) => s.points).filter((p) => p[1] !== null && p[1] !== undefined);
  if (!all.length) { el("text", { x: left, y: height / 2 }, svg).textContent = "no data yet"; return; }
  const xmax = Math.max(1, ...all.map((p) => p[0]));
  const ymax = Math.max(...all.map((p) => p[1])) || 1, ymin = Math.min(0, ...all.map((p) => p[1]));
  const X = (x) => left + (width - left - right) * x / xmax;
  const Y = (y) => top + (height - top - bottom) * (1 - (y - ymin) / (ymax - ymin || 1));
  for (let i = 0; i <= 4; i++) {
    const y = ymin + (ymax - ymin) * i / 4;
    el("line", { class: "grid", x1: left, x2: width - right, y1: Y(y), y2: Y(y) }, svg);
    el("text", { x: 2, y: Y(y) + 3 }, svg).textContent = format(y);
    const x = xmax * i / 4;
    el("text", { x: X(x) - 8, y: height - 8 }, svg).textContent = int(Math.round(x));
  }
  el("line", { class: "axis", x1: left, x2: left, y1: top, y2: height - bottom }, svg);
  el("line", { class: "axis", x1: left, x2: width - right, y1: height - bottom, y2: height - bottom }, svg);
  series.forEach((s, i) => {
    const points = s.points.filter((p) => p[1] !== null && p[1] !== undefined);
    if (!points.length) return;
    const d = points.map((p, k) => `${k ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join("");
    const path = el("path", { d, stroke: s.color, class: s.merged ? "merged" : "" }, svg);
    path.dataset.series = s.name;
    const label = el("text", { x: width - right + 6, y: top + 12 * (i + 1) }, svg);
    label.textContent = s.name;
    label.setAttribute("fill", s.color);
  });
}

// --- hover -------------------------------------------------------------------------------------

async function elite(id) {
  if (!view.texts.has(id)) {
    view.texts.set(id, getJSON(`/api/elite?run=${encodeURIComponent(view.run)}&id=${encodeURIComponent(id)}`)
      .catch(() => ({ text: null })));
  }
  return view.texts.get(id);
}

function describeCell(cell, space) {
  const labels = space.labels || [];
  const where = cell.cell.map((i, axis) => `${esc(space.axes?.[axis] ?? "axis " + axis)} ${esc(labels[axis]?.[i] ?? i)}`).join(", ");
  const descriptor = Object.entries(cell.descriptor || {}).map(([k, v]) => `${esc(k)}=${num(v, 2)}`).join(" ");
  return `<b>${esc(cell.id)}</b> <span class="k">on</span> ${esc(cell.node)} <span class="k">round</span> ${cell.round}<br>` +
    `<span class="k">fitness</span> ${num(cell.fitness, 4)} · <span class="k">operator</span> ${esc(cell.operator)} (${esc(cell.kind)})<br>` +
    `<span class="k">cell</span> ${where}<br><span class="k">descriptor</span> ${descriptor}`;
}

function showTip(html, event) {
  const tip = $("tip");
  tip.innerHTML = html;
  tip.hidden = false;
  const x = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
  const y = Math.min(event.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
  tip.style.left = x + "px";
  tip.style.top = Math.max(4, y) + "px";
}

document.addEventListener("mousemove", async (event) => {
  const target = event.target;
  const state = view.state;
  if (!state || !(target instanceof SVGElement)) { $("tip").hidden = true; return; }
  let html = null, id = null;
  if (target.matches(".heatmap rect.filled")) {
    const cell = target.ownerSVGElement.cells.get(target.dataset.key);
    html = describeCell(cell, state.space);
    id = cell.id;
  } else if (target.matches(".flow circle.champion")) {
    const c = state.champions.find((x) => x.id === target.dataset.id && x.node === target.dataset.node);
    html = `<b>${esc(c.node)}</b> round ${c.round} champion · fitness ${num(c.fitness, 4)} · cell (${(c.cell || []).join(", ")})<br>` +
      `<span class="k">received by</span> ${state.transfers.filter((t) => t.from === c.node && t.from_round === c.round).map((t) => `${esc(t.to)} (${STATUS_TEXT[t.status] || t.status})`).join(", ") || "nobody yet"}`;
    id = c.id;
  } else if (target.matches(".flow path.transfer")) {
    const t = state.transfers[Number(target.dataset.transfer)];
    html = `${esc(t.from)} round ${t.from_round} → ${esc(t.to)} round ${t.round}: ${STATUS_TEXT[t.status] || esc(t.status)}` +
      (t.cell ? `<br>cell (${t.cell.join(", ")}), fitness there ${num(t.fitness, 4)}${t.novel ? ", a niche new to " + esc(t.to) : ""}` : "") +
      (t.error ? `<br>${esc(t.error)}` : "");
    id = t.id;
  } else { $("tip").hidden = true; return; }
  showTip(html, event);
  if (id) {
    const found = await elite(id);
    if (!$("tip").hidden && $("tip").innerHTML.startsWith(html.slice(0, 40))) {
      const source = found.text_source === "reply" ? `<br><span class="k">the operator's reply (the archive's copy comes with the next checkpoint)</span>` : "";
      showTip(html + (found.text ? `${source}<pre>${esc(found.text)}</pre>` : `<br><span class="k">program text not available yet</span>`), event);
    }
  }
});

// --- start -------------------------------------------------------------------------------------

$("condition").addEventListener("change", () => {
  const runs = $("picker").runs.filter((r) => r.condition === $("condition").value);
  fillPicker($("picker").runs, runs[0]?.path ?? "");
});
$("repeat").addEventListener("change", () => switchRun($("repeat").value));

(async function start() {
  try {
    const listing = await loadRuns();
    if (listing.kind !== "experiment") poll();
    // New repeats appear while an experiment runs.
    setInterval(() => loadRuns().catch(() => {}), 5000);
  } catch (error) {
    $("summary").textContent = "cannot reach the watch server: " + error.message;
    setTimeout(start, 2000);
  }
})();
