// Jobs and health: sync job status (pending, cursor, last error, workers), store stats, prompt versions with rewards.
// Each part is drawn as soon as its own request answers (the counts of a large store take longest).
import { api, canWrite, session } from "../api.js";
import { confirmAction, emptyNote, failure, fields, fmtDate, fmtTime, h, num, toast } from "../dom.js";

function counts(title, map) {
  const entries = Object.entries(map || {});
  return h("section", { class: "card" }, h("h3", { text: title }),
    entries.length ? h("table", { class: "data compact" }, h("tbody", {}, entries.map(([k, v]) => h("tr", {}, h("th", { text: k }), h("td", { class: "num", text: String(v) }))))) : emptyNote("none"));
}

function loading() {
  return h("p", { class: "muted loading", text: "Loading…" });
}

/** Fill ``holder`` with ``draw(data)`` when ``request`` answers (or with the error). */
async function fill(holder, request, draw) {
  try {
    const data = await request;
    holder.replaceChildren(...[draw(data)].flat().filter(Boolean));
  } catch (error) {
    holder.replaceChildren(failure(error));
  }
}

function syncCards(sync) {
  const status = sync.status;
  const state = status.state || {};
  const workers = Object.entries(status.claimed || {});
  return h("div", { class: "cards" },
    h("section", { class: "card" }, h("h3", { text: "State" }), fields([
      ["pending", String(status.pending)], ["cursor", state.cursor ? h("code", { text: state.cursor }) : "—"],
      ["runs", String(state.runs ?? 0)], ["processed", String(state.processed ?? 0)], ["failed", String(state.failed ?? 0)],
      ["skipped", String(state.skipped ?? 0)], ["last started", fmtDate(state.last_started_at)], ["last finished", fmtDate(state.last_finished_at)],
      ["last worker", state.worker || "—"],
      ["last error", state.last_error ? h("span", { class: "error", text: `${state.last_error} (${fmtDate(state.last_error_at)})` }) : "none"],
    ])),
    counts("Messages by embedding status", status.messages),
    counts("Memories by embedding status", status.items),
    h("section", { class: "card" }, h("h3", { text: "Workers (claims in flight)" }),
      workers.length ? h("table", { class: "data compact" }, h("tbody", {}, workers.map(([w, n]) => h("tr", {}, h("th", { text: w }), h("td", { class: "num", text: String(n) }))))) : emptyNote("No claims in flight.")));
}

function statsCards(stats) {
  const ledger = stats.ledger_entries === null || stats.ledger_entries === undefined ? "" : `, ${stats.ledger_entries} ledger entries`;
  return [
    h("p", { text: `${stats.total} memories${ledger} · backend ${stats.backend} · embedder ${stats.embedding_model || "—"}${stats.embedding_dim ? ` (${stats.embedding_dim}-d)` : ""}` }),
    h("div", { class: "cards" }, counts("By kind", stats.by_kind), counts("By sensitivity", stats.by_sensitivity), counts("By embedding", stats.by_embedding_status)),
  ];
}

function promptTable(prompts) {
  if (!prompts.prompts.length) return emptyNote("No prompts recorded.");
  return h("table", { class: "data" },
    h("thead", {}, h("tr", {}, ["prompt", "version", "status", "origin", "scored", "mean reward", "95% interval", "conversations", "created"].map((t) => h("th", { text: t })))),
    h("tbody", {}, prompts.prompts.map(({ version: v, stats: s }) => h("tr", { class: v.status === "active" ? "active" : "" },
      h("td", { text: v.name }), h("td", { class: "num", text: `v${v.version}` }), h("td", { text: v.status }), h("td", { text: v.origin }),
      h("td", { class: "num", text: String(s ? s.count : 0) }),
      h("td", {}, s && s.mean !== null ? h("span", { class: "reward" }, h("span", { class: "bar small" }, h("span", { style: { width: `${100 * s.mean}%` } })), ` ${num(s.mean, 2)}`) : "—"),
      h("td", { text: s && s.ci_low !== null ? `${num(s.ci_low, 2)} – ${num(s.ci_high, 2)}` : "—" }),
      h("td", { class: "num", text: String(s ? s.conversations : 0) }), h("td", { text: fmtDate(v.created_at) })))));
}

// Namespace-wide counts may be this old (the server says how old; "Refresh" asks for fresh ones).
const MAX_AGE_S = 30;
let fresh = false;

function rerender(wantFresh) {
  fresh = wantFresh;
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

/** "counted 12:01:03 (5 s ago)" for the answers behind the counts (the oldest of them). */
function ageNote(metas) {
  // An answer without X-Computed-At was counted for this request (max-age 0): just now.
  const known = metas.filter((x) => "age" in x).map((x) => (x.computedAt ? x : { computedAt: new Date(), age: 0 }));
  if (!known.length) return "";
  const oldest = known.reduce((a, b) => (a.computedAt <= b.computedAt ? a : b));
  const age = oldest.age; // the server's own count of seconds (no clock skew)
  return `Counts as of ${fmtTime(oldest.computedAt)} (${age ? `${age} s ago` : "just now"}) · `;
}

export async function render(main, { params }) {
  const health = h("p", {}, loading());
  const sync = h("div", {}, loading());
  const store = h("div", {}, loading());
  const prompts = h("div", {}, loading());
  const asOf = h("span", { class: "muted", "aria-live": "polite" });
  const refresh = h("button", { type: "button", class: "small", text: "Refresh", title: "Count again now", onclick: () => rerender(true) });
  const actions = h("div", { class: "actions" });
  if (canWrite()) {
    actions.append(h("button", { type: "button", text: "Run sync now", onclick: async () => {
      if (!(await confirmAction("Run the sync job?", "Embeds pending messages and memories of this namespace now (secrets skipped).", "Run"))) return;
      try {
        const { result } = await api("POST", "/jobs/sync", { body: { max_batches: 50 } });
        toast(`Sync: ${result.messages_done ?? 0} messages, ${result.items_done ?? 0} memories embedded.`);
        rerender(true);
      } catch (error) {
        toast(`Sync failed: ${error.message}`, "error");
      }
    } }));
  }
  main.append(h("h1", { text: "Jobs & health" }), health, h("p", { class: "as-of" }, asOf, refresh),
    h("h2", { text: "Sync job (episodic → semantic)" }), actions, sync,
    h("h2", { text: "Store" }), store,
    h("h2", { text: "Prompt versions and rewards" }), prompts);
  const maxAge = fresh || params.get("fresh") ? 0 : MAX_AGE_S; // #/jobs?fresh=1 always counts afresh
  fresh = false;
  const metas = [{}, {}];
  const healthz = fetch("/healthz").then((r) => (r.ok ? r.json() : { status: `HTTP ${r.status}` }));
  await Promise.all([
    fill(health, healthz, (data) => `Server: ${data.status} · namespace ${session.ns}`),
    fill(sync, api("GET", "/jobs/sync", { maxAge, meta: metas[0] }), syncCards),
    fill(prompts, api("GET", "/prompts"), promptTable),
    fill(store, api("GET", "/stats", { maxAge, meta: metas[1] }), statsCards),
  ]);
  const took = metas.map((x) => x.serverMs).filter((x) => x !== null && x !== undefined);
  asOf.textContent = `${ageNote(metas)}${took.length ? `server ${Math.round(Math.max(...took))} ms · ` : ""}`;
  return null;
}
