// Knowledge graph: entities and relations around a chosen entity, drawn as SVG with a small force layout.
import { api, clearance } from "../api.js";
import { chip, emptyNote, failure, fmtDate, h, isoFrom, splitList } from "../dom.js";

const W = 900;
const H = 560;
const TYPE_COLORS = { person: "#2563eb", place: "#16a34a", organization: "#9333ea", organisation: "#9333ea", date: "#d97706", thing: "#64748b" };

/** Positions for the nodes: a few hundred steps of springs, repulsion and centring (deterministic start). */
function layout(nodes, edges, centre) {
  const n = nodes.length;
  nodes.forEach((node, i) => {
    const angle = (2 * Math.PI * i) / Math.max(n, 1);
    const r = node.id === centre ? 0 : 160 + 40 * (i % 3);
    node.x = W / 2 + r * Math.cos(angle);
    node.y = H / 2 + r * Math.sin(angle);
  });
  const index = new Map(nodes.map((node, i) => [node.id, i]));
  const links = edges.map((e) => [index.get(e.subject_id), index.get(e.object_id)]).filter(([a, b]) => a !== undefined && b !== undefined);
  const steps = n > 150 ? 120 : 300;
  for (let step = 0; step < steps; step++) {
    const cool = 1 - step / steps;
    const fx = new Float64Array(n);
    const fy = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        let dx = nodes[i].x - nodes[j].x;
        let dy = nodes[i].y - nodes[j].y;
        let d2 = dx * dx + dy * dy;
        if (d2 < 1) { dx = 1; dy = 0; d2 = 1; }
        const f = 9000 / d2;
        const d = Math.sqrt(d2);
        fx[i] += (f * dx) / d; fy[i] += (f * dy) / d;
        fx[j] -= (f * dx) / d; fy[j] -= (f * dy) / d;
      }
    }
    for (const [a, b] of links) {
      const dx = nodes[b].x - nodes[a].x;
      const dy = nodes[b].y - nodes[a].y;
      const d = Math.max(Math.sqrt(dx * dx + dy * dy), 1);
      const f = (d - 140) * 0.05;
      fx[a] += (f * dx) / d; fy[a] += (f * dy) / d;
      fx[b] -= (f * dx) / d; fy[b] -= (f * dy) / d;
    }
    for (let i = 0; i < n; i++) {
      fx[i] += (W / 2 - nodes[i].x) * 0.01;
      fy[i] += (H / 2 - nodes[i].y) * 0.01;
      if (nodes[i].id === centre) continue;
      nodes[i].x = Math.min(W - 40, Math.max(40, nodes[i].x + Math.max(-20, Math.min(20, fx[i])) * cool));
      nodes[i].y = Math.min(H - 24, Math.max(24, nodes[i].y + Math.max(-20, Math.min(20, fy[i])) * cool));
    }
  }
  fit(nodes);
}

/** Scale and move the picture to fill the view (labels need room on the right). */
function fit(nodes) {
  if (nodes.length < 2) return;
  const xs = nodes.map((n) => n.x);
  const ys = nodes.map((n) => n.y);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const scale = Math.min(3, (W - 200) / Math.max(x1 - x0, 1), (H - 80) / Math.max(y1 - y0, 1));
  for (const n of nodes) {
    n.x = 60 + (n.x - x0) * scale + (W - 200 - (x1 - x0) * scale) / 2;
    n.y = 40 + (n.y - y0) * scale + (H - 80 - (y1 - y0) * scale) / 2;
  }
}

function relationLabel(r) {
  return r.invalid_at ? `${r.predicate} (until ${r.invalid_at.slice(0, 10)})` : r.predicate;
}

async function showRelation(panel, relation, visible) {
  const ids = relation.source_ids.filter((id) => visible.has(id)).slice(0, 10);
  panel.replaceChildren(h("h2", { text: relation.text || `${relation.subject} ${relation.predicate} ${relation.object}` }),
    h("p", {}, relation.invalid_at ? chip("closed", "closed") : chip("valid", "valid"),
      ` valid ${fmtDate(relation.valid_at || relation.created_at)} → ${relation.invalid_at ? fmtDate(relation.invalid_at) : "now"}`),
    h("h3", { text: "Supporting memories" }));
  if (!ids.length) return panel.append(emptyNote("None visible to you."));
  const list = h("ul", { class: "plain" });
  panel.append(list);
  for (const id of ids) {
    try {
      const item = await api("GET", `/memories/${encodeURIComponent(id)}`, { query: { clearance: clearance() } });
      list.append(h("li", {}, h("a", { href: `#/memory/${encodeURIComponent(id)}`, text: item.content })));
    } catch {
      list.append(h("li", {}, h("a", { href: `#/memory/${encodeURIComponent(id)}`, text: id })));
    }
  }
}

function draw(result, start, onNode, onEdge) {
  const nodes = result.entities.map((e) => ({ ...e }));
  const centre = nodes.length ? nodes[0].id : null;
  layout(nodes, result.relations, start ? centre : null);
  const pos = new Map(nodes.map((n) => [n.id, n]));
  const svg = h("svg", { viewBox: `0 0 ${W} ${H}`, class: "graph", role: "img", "aria-label": "Knowledge graph" },
    h("defs", {}, h("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 22, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      h("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))));
  const edgesOf = new Map(nodes.map((n) => [n.id, []]));
  for (const r of result.relations) {
    const a = pos.get(r.subject_id);
    const b = pos.get(r.object_id);
    if (!a || !b) continue;
    const g = h("g", { class: `edge${r.invalid_at ? " closed" : ""}`, tabindex: 0, role: "button", "aria-label": r.text, onclick: () => onEdge(r),
      onkeydown: (e) => e.key === "Enter" && onEdge(r) },
      h("title", { text: `${r.text}${r.invalid_at ? ` — closed ${r.invalid_at.slice(0, 10)}` : ""}` }),
      h("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, "marker-end": "url(#arrow)" }),
      h("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, "text-anchor": "middle", text: relationLabel(r) }));
    svg.append(g);
    const edge = { a, b, line: g.querySelector("line"), label: g.querySelector("text") };
    edgesOf.get(a.id).push(edge);
    edgesOf.get(b.id).push(edge);
  }
  for (const n of nodes) {
    const g = h("g", { class: `node${n.id === centre && start ? " centre" : ""}`, transform: `translate(${n.x},${n.y})`, tabindex: 0, role: "button",
      "aria-label": `${n.name} (${n.type}); open its neighbourhood`, onkeydown: (e) => e.key === "Enter" && onNode(n) },
      h("title", { text: `${n.name} (${n.type}); drag to move, click to centre` }),
      h("circle", { r: n.id === centre && start ? 13 : 9, fill: TYPE_COLORS[n.type] || TYPE_COLORS.thing }),
      n.x < W / 2 - 40 ? h("text", { x: -16, y: 5, "text-anchor": "end", text: n.name }) : h("text", { x: 16, y: 5, text: n.name }));
    draggable(svg, g, n, edgesOf.get(n.id), () => onNode(n));
    svg.append(g);
  }
  return svg;
}

/** Drag a node with the pointer (its relations follow); a press without a move is a click. */
function draggable(svg, g, node, edges, onClick) {
  let from = null;
  g.addEventListener("pointerdown", (event) => {
    from = { x: event.clientX, y: event.clientY, moved: false };
    g.setPointerCapture(event.pointerId);
  });
  g.addEventListener("pointermove", (event) => {
    if (!from) return;
    if (Math.abs(event.clientX - from.x) + Math.abs(event.clientY - from.y) > 4) from.moved = true;
    if (!from.moved) return;
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(svg.getScreenCTM().inverse());
    node.x = point.x;
    node.y = point.y;
    g.setAttribute("transform", `translate(${node.x},${node.y})`);
    for (const e of edges) {
      e.line.setAttribute(e.a === node ? "x1" : "x2", node.x);
      e.line.setAttribute(e.a === node ? "y1" : "y2", node.y);
      e.label.setAttribute("x", (e.a.x + e.b.x) / 2);
      e.label.setAttribute("y", (e.a.y + e.b.y) / 2 - 4);
    }
  });
  g.addEventListener("pointerup", () => {
    const click = from && !from.moved;
    from = null;
    if (click) onClick();
  });
}

export async function render(main, { params, isCurrent }) {
  const start = params.get("start") || "";
  const depth = params.get("depth") || "1";
  const { entities } = await api("GET", "/graph/entities", { query: { limit: 1000, clearance: clearance() } });
  if (!isCurrent()) return;
  const datalist = h("datalist", { id: "entity-names" }, entities.map((e) => h("option", { value: e.name })));
  const form = h("form", { class: "toolbar" },
    h("label", {}, "Entity", h("input", { name: "start", list: "entity-names", value: start, placeholder: "whole graph", "aria-label": "Entity" })),
    h("label", {}, "Depth", h("select", { name: "depth" }, [1, 2, 3, 4].map((d) => h("option", { value: d, text: d, selected: String(d) === depth })))),
    h("label", {}, "Predicates", h("input", { name: "predicates", value: params.get("predicates") || "", placeholder: "lives_in, works_at" })),
    h("label", {}, "As of", h("input", { name: "as_of", type: "date", value: params.get("as_of") || "" })),
    h("label", { class: "check" }, h("input", { name: "closed", type: "checkbox", checked: params.get("closed") === "1", value: "1" }), " Closed relations"),
    h("button", { type: "submit", class: "primary", text: "Show" }), datalist);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form).entries()) if (v) next.set(k, String(v));
    location.hash = `#/graph?${next}`;
  });
  const canvas = h("div", { class: "graph-holder" });
  const panel = h("aside", { class: "panel", "aria-live": "polite" }, emptyNote("Click a relation to see its dates and supporting memories; click an entity to centre on it."));
  const table = h("section", { "aria-label": "Relations" });
  main.append(h("h1", { text: "Knowledge graph" }), form, h("div", { class: "split graph-split" }, canvas, panel), table);
  if (!entities.length) {
    canvas.append(emptyNote("The graph is empty: remember with extraction (extract=true) to build it."));
    return null;
  }
  const body = {
    start: start || null, depth: Number(depth), predicates: splitList(params.get("predicates")).length ? splitList(params.get("predicates")) : null,
    include_invalid: params.get("closed") === "1", as_of: isoFrom(params.get("as_of") ? `${params.get("as_of")}T23:59:59` : ""),
    limit: 300, clearance: clearance(),
  };
  let result;
  try {
    result = await api("POST", "/graph/view", { body });
  } catch (error) {
    canvas.append(failure(error));
    return null;
  }
  if (!isCurrent()) return null;
  const visible = new Set(result.memory_ids);
  const onNode = (n) => {
    const next = new URLSearchParams(params);
    next.set("start", n.name);
    location.hash = `#/graph?${next}`;
  };
  const onEdge = (r) => showRelation(panel, r, visible);
  canvas.append(h("p", { class: "muted", text: `${result.entities.length} entities, ${result.relations.length} relations` }),
    draw(result, start, onNode, onEdge),
    h("p", { class: "legend" }, Object.entries(TYPE_COLORS).filter(([k]) => k !== "organisation").map(([k, c]) =>
      h("span", {}, h("span", { class: "dot", style: { background: c } }), ` ${k} `)), h("span", { class: "closed-sample", text: "- - closed relation" })));
  table.append(h("h2", { text: "Relations" }), result.relations.length ? h("table", { class: "data" },
    h("thead", {}, h("tr", {}, ["subject", "predicate", "object", "valid from", "valid to", "sources"].map((t) => h("th", { text: t })))),
    h("tbody", {}, result.relations.map((r) => h("tr", { class: r.invalid_at ? "closed" : "", tabindex: 0, onclick: () => onEdge(r), onkeydown: (e) => e.key === "Enter" && onEdge(r) },
      h("td", { text: r.subject }), h("td", { text: r.predicate }), h("td", { text: r.object }),
      h("td", { text: fmtDate(r.valid_at || r.created_at) }), h("td", { text: r.invalid_at ? fmtDate(r.invalid_at) : "—" }),
      h("td", { text: String(r.source_ids.filter((id) => visible.has(id)).length) }))))) : emptyNote("No relations match."));
  return null;
}
