// Context: build the prompt for an observation under a budget; the trace drawn as a budget picture.
import { api, clearance } from "../api.js";
import { chip, emptyNote, failure, h, num } from "../dom.js";

const STATUS_TEXT = { kept: "kept", shrunk: "shrunk", dropped: "dropped", duplicate: "deduplicated", fixed: "framing" };

function budgetPicture(trace) {
  // Framing: what the compiled prompt holds beyond its sections (headers, message overhead, reply priming).
  const after = trace.sections.reduce((n, x) => n + x.tokens_after, 0);
  const before = trace.sections.reduce((n, x) => n + x.tokens_before, 0);
  const framing = Math.max(0, trace.tokens.total - after);
  const scale = Math.max(trace.budget_total, framing + before, 1);
  const pct = (n) => `${(100 * n) / scale}%`;
  const seg = (cls, tokens, label, title) => h("span", { class: `seg ${cls}`, style: { width: pct(tokens) }, title },
    (100 * tokens) / scale > 7 ? h("span", { class: "seg-label", text: label }) : null);
  const fixedSegs = () => (framing ? [seg("fixed", framing, "framing", `headers and message overhead: ${framing} tokens`)] : []);
  const wanted = h("div", { class: "budget", role: "img", "aria-label": `Hydrated: ${trace.tokens_in} tokens of sections` },
    fixedSegs(), trace.sections.filter((s) => s.tokens_before > 0).map((s) =>
      seg(`wanted ${s.status}`, s.tokens_before, s.label, `${s.label}: ${s.tokens_before} tokens hydrated (${s.status})`)));
  const compiled = h("div", { class: "budget", role: "img", "aria-label": `Budget ${trace.budget_total} tokens, ${trace.tokens.total} used` },
    fixedSegs(), trace.sections.filter((s) => s.tokens_after > 0).map((s) =>
      seg(s.status, s.tokens_after, s.label, `${s.label}: ${s.tokens_before}→${s.tokens_after} tokens (${s.status})`)));
  const reserve = trace.budget_total - trace.budget_usable;
  if (reserve > 0) compiled.append(seg("reserve", reserve, "reserve", `reserved for the answer: ${reserve} tokens`));
  const limit = h("div", { class: "budget-limit", style: { left: pct(trace.budget_total) }, title: `budget: ${trace.budget_total} tokens` });
  return h("div", { class: "budget-picture" },
    h("div", { class: "budget-row" }, h("span", { class: "budget-name", text: "hydrated" }), h("div", { class: "budget-track" }, wanted, limit.cloneNode())),
    h("div", { class: "budget-row" }, h("span", { class: "budget-name", text: "compiled" }), h("div", { class: "budget-track" }, compiled, limit)),
    h("p", { class: "legend" }, ["kept", "shrunk", "dropped", "duplicate", "fixed", "reserve"].map((k) => h("span", {}, h("span", { class: `dot seg ${k}` }), ` ${STATUS_TEXT[k] || k} `)),
      h("span", {}, "│ = budget")),
    h("p", { class: "muted", text: `budget ${trace.budget_total} tokens (usable ${trace.budget_usable}, allocation ${trace.allocation}) · used ${trace.tokens.total} · hydrated ${trace.tokens_in} · kept ${Math.round(trace.compression_ratio * 100)}% · tokenizer ${trace.tokenizer}${trace.tokenizer_exact ? "" : " (approx.)"}` }));
}

function sectionTable(sections) {
  const maxBefore = Math.max(1, ...sections.map((s) => s.tokens_before));
  return h("table", { class: "data trace" },
    h("thead", {}, h("tr", {}, ["section", "source", "status", "tokens before → after", "value", "why"].map((t) => h("th", { text: t })))),
    h("tbody", {}, sections.map((s) => h("tr", { class: `st-${s.status}` },
      h("td", { text: s.label }), h("td", { class: "muted", text: s.source }), h("td", {}, chip(STATUS_TEXT[s.status] || s.status, s.status)),
      h("td", {}, h("div", { class: "tokbar", title: `${s.tokens_before} → ${s.tokens_after}` },
        h("span", { class: "before", style: { width: `${(100 * s.tokens_before) / maxBefore}%` } }),
        h("span", { class: "after", style: { width: `${(100 * s.tokens_after) / maxBefore}%` } })), `${s.tokens_before} → ${s.tokens_after}`),
      h("td", { text: num(s.value) }), h("td", { text: s.reason })))));
}

export async function render(main, { params }) {
  const input = (name, label, attrs = {}) => h("label", {}, label, h("input", { name, value: params.get(name) || "", ...attrs }));
  const form = h("form", { class: "context-form" },
    h("label", {}, "Observation (the user's next message)",
      h("textarea", { name: "observation", rows: 3, required: true, text: params.get("observation") || "" })),
    h("div", { class: "grid" },
      input("user", "User"), input("agent", "Agent"), input("thread", "Thread"),
      input("budget", "Budget (tokens)", { type: "number", min: 64, max: 1000000, value: params.get("budget") || "2000" }),
      input("goal", "Goal"), input("system", "System prompt")),
    h("button", { type: "submit", class: "primary", text: "Build context" }));
  const out = h("section", { class: "context-out", "aria-live": "polite" });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form).entries()) if (v) next.set(k, String(v));
    location.hash = `#/context?${next}`;
  });
  main.append(h("h1", { text: "Context" }), form, out);
  const observation = params.get("observation");
  if (!observation) {
    out.append(emptyNote("Type what the user says next and build the context the model would get."));
    return null;
  }
  const body = { observation, budget_tokens: Number(params.get("budget") || 2000), clearance: clearance() };
  for (const k of ["user", "agent", "thread", "goal", "system"]) if (params.get(k)) body[k] = params.get(k);
  try {
    const ctx = await api("POST", "/context", { body });
    const trace = ctx.trace;
    out.append(h("h2", { text: "Budget" }), budgetPicture(trace),
      h("h2", { text: "Sections" }), sectionTable(trace.sections),
      trace.sources && trace.sources.length ? [h("h2", { text: "Sources" }), h("ul", { class: "plain" }, trace.sources.map((s) => h("li", { text: JSON.stringify(s) })))] : null,
      h("h2", { text: "Compiled prompt" }),
      h("ol", { class: "prompt" }, ctx.messages.map((m) => h("li", { class: `role-${m.role}` },
        h("strong", { text: m.role }), h("pre", { text: typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 2) })))));
  } catch (error) {
    out.append(failure(error));
  }
  return null;
}
