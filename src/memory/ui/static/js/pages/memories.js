// Memories: hybrid search with each hit's score parts, or a paged list; filters in the URL.
import { api, clearance } from "../api.js";
import { ago, chip, emptyNote, failure, h, isoFrom, num, splitList } from "../dom.js";

const FILTERS = ["user", "agent", "thread", "kinds", "tags", "since", "until", "validity"];

function filterInputs(params) {
  const input = (name, label, attrs = {}) =>
    h("label", {}, label, h("input", { name, value: params.get(name) || "", ...attrs }));
  return [
    input("user", "User"),
    input("agent", "Agent"),
    input("thread", "Thread"),
    input("kinds", "Kinds", { placeholder: "fact, trait" }),
    input("tags", "Tags (any)", { placeholder: "ui, work" }),
    input("since", "Created from", { type: "date" }),
    input("until", "Created before", { type: "date" }),
    h("label", {}, "Validity",
      h("select", { name: "validity" },
        h("option", { value: "", text: "valid now" }),
        h("option", { value: "all", text: "include closed facts", selected: params.get("validity") === "all" }))),
  ];
}

/** The filters, folded unless one is set. Their inputs are made when first shown: the first date input of a
 * visit costs ~20 ms (the browser sets up its date fields), which a search with no filter need not wait for. */
function filters(params) {
  const grid = h("div", { class: "grid" });
  const details = h("details", { class: "filters", open: FILTERS.some((f) => params.get(f)) },
    h("summary", { text: "Filters" }), grid);
  const fill = () => grid.childElementCount || grid.append(...filterInputs(params));
  if (details.open) fill();
  else details.addEventListener("toggle", fill, { once: true });
  return details;
}

function scope(params) {
  return {
    user: params.get("user") || undefined,
    agent: params.get("agent") || undefined,
    thread: params.get("thread") || undefined,
    kinds: splitList(params.get("kinds")).length ? splitList(params.get("kinds")) : undefined,
    tags: splitList(params.get("tags")).length ? splitList(params.get("tags")) : undefined,
    since: isoFrom(params.get("since")),
    until: isoFrom(params.get("until")),
  };
}

function itemMeta(item) {
  return h("div", { class: "meta" },
    chip(item.kind, "kind"),
    item.sensitivity !== "normal" ? chip(item.sensitivity, item.sensitivity) : null,
    item.valid_to ? chip(`closed ${item.valid_to.slice(0, 10)}`, "closed") : null,
    item.user ? chip(`user ${item.user}`) : null,
    item.agent ? chip(`agent ${item.agent}`) : null,
    item.thread ? chip(`thread ${item.thread}`) : null,
    item.tags.map((t) => chip(`#${t}`, "tag")),
    h("span", { class: "muted", text: ago(item.created_at), title: item.created_at }));
}

function scoreParts(hit) {
  // Channel names are ASCII: compared by code point (a first localeCompare loads the ICU collator, ~10 ms).
  const byName = (a, b) => (a.channel < b.channel ? -1 : a.channel > b.channel ? 1 : 0);
  const channels = Object.values(hit.channels).sort(byName);
  return h("div", { class: "scores" },
    h("span", { class: "score-final", title: "final score", text: num(hit.score) }),
    channels.map((c) => h("span", { class: `channel ${c.channel}`, title: `contribution ${num(c.contribution, 4)}` },
      `${c.channel} #${c.rank} raw ${num(c.raw)}`)),
    h("span", { class: "part", title: "weighted RRF, normalised" }, `fusion ${num(hit.parts.fusion)}`),
    h("span", { class: "part", title: "recency decay" }, `recency ${num(hit.parts.recency)}`),
    h("span", { class: "part", title: "importance" }, `importance ${num(hit.parts.importance, 2)}`),
    hit.parts.speaker != null
      ? h("span", { class: "part", title: "the other side of the chat than the question asks about: score scaled" },
        `speaker ×${num(hit.parts.speaker, 2)}`)
      : null,
    hit.parts.quantity != null
      ? h("span", { class: "part", title: "the question asks for an amount and this memory states none: score scaled" },
        `quantity ×${num(hit.parts.quantity, 2)}`)
      : null);
}

function row(item, extra) {
  return h("li", { class: "card item" },
    h("a", { class: "content", href: `#/memory/${encodeURIComponent(item.id)}`, text: item.content }),
    itemMeta(item), extra || null);
}

export async function render(main, { params }) {
  const q = params.get("q") || "";
  const form = h("form", { class: "search", role: "search" },
    h("div", { class: "searchbar" },
      h("input", { type: "search", name: "q", value: q, placeholder: "Search memories (hybrid: vectors + BM25)…",
        "aria-label": "Search memories", autofocus: true }),
      h("button", { type: "submit", class: "primary", text: "Search" })),
    filters(params));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form).entries()) if (v) next.set(k, String(v));
    location.hash = `#/memories?${next}`;
  });
  const results = h("section", { class: "results", "aria-label": "Results" });
  main.append(h("h1", { text: "Memories" }), form, results);
  try {
    if (q) await search(results, q, params);
    else await browse(results, params);
  } catch (error) {
    results.append(failure(error));
  }
}

async function search(results, q, params) {
  const body = { query: q, limit: 25, clearance: clearance(), include_invalid: params.get("validity") === "all", ...scope(params) };
  const started = performance.now();
  const { hits } = await api("POST", "/search", { body });
  const ms = Math.round(performance.now() - started);
  results.append(h("p", { class: "muted", text: `${hits.length} hits in ${ms} ms${params.get("validity") === "all" ? ", closed facts included" : ""}` }));
  if (!hits.length) return results.append(emptyNote("Nothing found."));
  results.append(h("ol", { class: "list hits" }, hits.map((hit) => row(hit.item, scoreParts(hit)))));
}

async function browse(results, params) {
  const cursor = params.get("cursor") || undefined;
  const query = {
    limit: 50, cursor, clearance: clearance(), include_invalid: params.get("validity") === "all", ...scope(params),
  };
  const page = await api("GET", "/memories", { query });
  results.append(h("p", { class: "muted", text: `Newest first, ${page.items.length} on this page.` }));
  if (!page.items.length) return results.append(emptyNote("No memories in this scope."));
  results.append(h("ul", { class: "list" }, page.items.map((item) => row(item))));
  const nav = h("div", { class: "pager" });
  if (cursor) nav.append(h("button", { type: "button", text: "← Previous", onclick: () => history.back() }));
  if (page.next_cursor) {
    const next = new URLSearchParams(params);
    next.set("cursor", page.next_cursor);
    nav.append(h("a", { class: "button", href: `#/memories?${next}`, text: "Next page →" }));
  }
  results.append(nav);
}
