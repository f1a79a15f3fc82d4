// Working memory and tiers: blocks with their history; STM pages, MTM segments with heat, personas, system memory.
import { api, clearance } from "../api.js";
import { chip, emptyNote, failure, fields, fmtDate, h, num } from "../dom.js";

function blockCard(block, scope) {
  const used = block.value.length / Math.max(block.limit, 1);
  const history = h("div", { class: "block-history" });
  const details = h("details", {}, h("summary", { text: `History (version ${block.version})` }), history);
  details.addEventListener("toggle", async () => {
    if (!details.open || history.childElementCount) return;
    try {
      const { changes } = await api("GET", `/blocks/${encodeURIComponent(block.label)}/history`, { query: scope });
      history.append(changes.length ? h("ol", { class: "history" }, changes.map((c) => h("li", {},
        h("div", { class: "meta" }, chip(c.op, "kind"), h("span", { text: `v${c.version} · ${fmtDate(c.at)}` }), c.reason ? h("em", { text: c.reason }) : null),
        h("table", { class: "diff" }, h("tbody", {},
          h("tr", {}, h("th", { text: "before" }), h("td", { class: "before", text: c.before || "—" })),
          h("tr", {}, h("th", { text: "after" }), h("td", { class: "after", text: c.after || "—" }))))))) : emptyNote("Never changed."));
    } catch (error) {
      history.append(failure(error));
    }
  });
  return h("li", { class: "card block" },
    h("div", { class: "meta" }, h("strong", { text: block.label }),
      h("span", { class: "muted", text: `${block.value.length}/${block.limit} chars · ${block.updated_at ? fmtDate(block.updated_at) : "never written"}` })),
    h("div", { class: "bar", title: `${Math.round(used * 100)}% of the limit` }, h("span", { style: { width: `${Math.min(100, used * 100)}%` } })),
    h("p", { class: "text", text: block.value || "—" }), details);
}

function page(p) {
  return h("li", { class: "card page" }, h("div", { class: "meta" }, h("span", { class: "muted", text: fmtDate(p.created_at) }),
    p.thread ? chip(`thread ${p.thread}`) : null, p.sensitivity !== "normal" ? chip(p.sensitivity, p.sensitivity) : null, p.analyzed ? chip("analysed") : null),
  h("div", {}, h("strong", { text: "Q " }), p.query), h("div", { class: "muted" }, h("strong", { text: "A " }), p.response));
}

function persona(title, p) {
  if (!p) return null;
  return h("section", { class: "card" }, h("h3", { text: title }),
    Object.keys(p.profile || {}).length ? fields(Object.entries(p.profile)) : null,
    p.traits && p.traits.length ? h("p", {}, h("strong", { text: "Traits: " }), p.traits.join("; ")) : null,
    p.knowledge && p.knowledge.length ? h("ul", { class: "plain" }, p.knowledge.map((k) => h("li", { text: k }))) : null);
}

async function showTiers(holder, agent, user) {
  holder.replaceChildren();
  const snap = await api("GET", "/tiers/snapshot", { query: { agent, user, clearance: clearance() } });
  const maxHeat = Math.max(1, ...snap.segments.map((s) => s.heat));
  holder.append(
    h("h3", { text: `Short-term memory (${snap.stm.length}/${snap.config.stm_capacity} pages)` }),
    snap.stm.length ? h("ol", { class: "list" }, snap.stm.map(page)) : emptyNote("No STM pages."),
    h("h3", { text: `Mid-term segments (${snap.segments.length}), hottest first` }),
    snap.segments.length ? h("ol", { class: "list" }, snap.segments.map((s) => h("li", { class: "card segment" },
      h("div", { class: "meta" }, h("strong", { text: `heat ${num(s.heat, 2)}` }),
        h("span", { class: "muted", text: `${s.visits} visits · ${s.pages.length} pages${s.hidden_pages ? ` (+${s.hidden_pages} hidden)` : ""} · last ${fmtDate(s.last_accessed)}` })),
      h("div", { class: "bar heat", title: `heat ${num(s.heat, 2)} (threshold ${snap.config.heat_threshold})` }, h("span", { style: { width: `${(100 * s.heat) / maxHeat}%` } })),
      h("p", { text: s.summary }), h("p", {}, s.keywords.map((k) => chip(k, "tag"))),
      h("details", {}, h("summary", { text: "Pages" }), h("ol", { class: "list" }, s.pages.map(page)))))) : emptyNote("No MTM segments."),
    h("h3", { text: "Personas" }),
    persona(`User persona: ${snap.user}`, snap.user_persona) || emptyNote("No user persona yet."),
    persona(`Agent persona: ${snap.agent}`, snap.agent_persona),
    snap.objects.map((o) => persona(`${o.type}: ${o.identifier}`, o)),
    h("h3", { text: `System memory (${snap.system.length})` }),
    snap.system.length ? h("ul", { class: "plain" }, snap.system.map((e) => h("li", {}, h("strong", { text: num(e.importance, 2) }), ` ${e.content} `, h("span", { class: "muted", text: `from ${e.source_agent}` })))) : emptyNote("No system memory."));
}

export async function render(main, { params, isCurrent }) {
  const scope = { user: params.get("user") || undefined, agent: params.get("agent") || undefined };
  const [blocks, owners] = await Promise.all([
    api("GET", "/blocks", { query: scope }),
    api("GET", "/tiers/owners"),
  ]);
  if (!isCurrent()) return null;
  const form = h("form", { class: "toolbar" },
    h("label", {}, "User", h("input", { name: "user", value: params.get("user") || "" })),
    h("label", {}, "Agent", h("input", { name: "agent", value: params.get("agent") || "" })),
    h("button", { type: "submit", class: "primary", text: "Show" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form).entries()) if (v) next.set(k, String(v));
    location.hash = `#/tiers?${next}`;
  });
  const tierHolder = h("div", { class: "tiers" });
  const pairs = owners.owners;
  const select = h("select", { "aria-label": "Agent and user" }, pairs.map(([a, u]) => h("option", { value: `${a}\u0000${u}`, text: `agent ${a} · user ${u}` })));
  const chosen = pairs.findIndex(([a, u]) => (!scope.agent || a === scope.agent) && (!scope.user || u === scope.user));
  if (chosen >= 0) select.selectedIndex = chosen;
  const load = () => {
    const [a, u] = select.value.split("\u0000");
    showTiers(tierHolder, a, u).catch((error) => tierHolder.append(failure(error)));
  };
  select.addEventListener("change", load);
  main.append(h("h1", { text: "Working memory & tiers" }), form,
    h("div", { class: "columns" },
      h("section", { "aria-label": "Blocks" }, h("h2", { text: `Blocks${scope.user ? ` of user ${scope.user}` : ""}${scope.agent ? ` of agent ${scope.agent}` : ""}` }),
        h("ul", { class: "list" }, blocks.blocks.filter((b) => b.version > 0).map((b) => blockCard(b, { user: scope.user, agent: scope.agent }))),
        blocks.blocks.some((b) => b.version === 0)
          ? h("p", { class: "muted", text: `Never written: ${blocks.blocks.filter((b) => b.version === 0).map((b) => b.label).join(", ")}` }) : null),
      h("section", { "aria-label": "Tiers" }, h("h2", { text: "Tiers (MemoryOS)" }),
        pairs.length ? [h("label", {}, "Agent and user ", select), tierHolder] : emptyNote("No tiers yet: pages are added as agents converse (memory tiers add)."))));
  if (pairs.length) {
    const [a, u] = select.value.split("\u0000");
    try {
      await showTiers(tierHolder, a, u);
    } catch (error) {
      tierHolder.append(failure(error));
    }
  }
  return null;
}
