// One memory: its fields, history (before/after), links, sources, extracted facts; edit and forget.
import { api, canWrite, clearance } from "../api.js";
import { chip, confirmAction, emptyNote, fields, fmtDate, h, isoFrom, num, splitList, toast } from "../dom.js";

const SHOWN = ["content", "kind", "tags", "importance", "sensitivity", "valid_from", "valid_to", "context"];

function diff(entry) {
  const before = entry.before || {};
  const after = entry.after || {};
  if (before.redacted || after.redacted) return h("p", { class: "muted", text: "Redacted: above your clearance." });
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
    .filter((k) => (entry.before && entry.after ? !["updated_at", "content_hash"].includes(k) : SHOWN.includes(k)));
  if (!keys.length) return null;
  const show = (v) => (v === undefined || v === null ? "—" : typeof v === "string" ? v : JSON.stringify(v));
  return h("table", { class: "diff" },
    h("thead", {}, h("tr", {}, h("th", { text: "field" }), h("th", { text: "before" }), h("th", { text: "after" }))),
    h("tbody", {}, keys.map((k) => h("tr", {}, h("th", { text: k }),
      h("td", { class: "before", text: entry.before ? show(before[k]) : "" }),
      h("td", { class: "after", text: entry.after ? show(after[k]) : "" })))));
}

function relationText(r) {
  const closed = r.invalid_at ? ` (until ${r.invalid_at.slice(0, 10)})` : "";
  return `${r.subject} —${r.predicate}→ ${r.object}${closed}`;
}

function editForm(item, onSaved) {
  const dialog = h("dialog", { class: "wide", "aria-label": "Edit memory" });
  const input = (name, label, attrs = {}) => h("label", {}, label, h("input", { name, ...attrs }));
  const form = h("form", { method: "dialog" },
    h("h2", { text: "Edit memory" }),
    h("label", {}, "Content", h("textarea", { name: "content", rows: 4, required: true, text: item.content })),
    h("div", { class: "grid" },
      input("kind", "Kind", { value: item.kind }),
      input("tags", "Tags (comma separated)", { value: item.tags.join(", ") }),
      input("importance", "Importance", { type: "number", min: 0, max: 1, step: 0.05, value: item.importance }),
      input("valid_to", "Valid until (close the fact)", { type: "date", value: (item.valid_to || "").slice(0, 10) })),
    input("reason", "Reason (kept in the history)", { placeholder: "corrected by hand" }),
    h("div", { class: "actions" },
      h("button", { type: "button", text: "Cancel", onclick: () => dialog.close() }),
      h("button", { type: "submit", class: "primary", text: "Save" })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = {};
    if (data.get("content") !== item.content) body.content = data.get("content");
    if (data.get("kind") !== item.kind) body.kind = data.get("kind");
    const tags = splitList(data.get("tags"));
    if (tags.join(",") !== item.tags.join(",")) body.tags = tags;
    if (Number(data.get("importance")) !== item.importance) body.importance = Number(data.get("importance"));
    const validTo = isoFrom(data.get("valid_to"));
    if ((data.get("valid_to") || "") !== (item.valid_to || "").slice(0, 10) && validTo) body.valid_to = validTo;
    if (data.get("reason")) body.reason = data.get("reason");
    if (!Object.keys(body).filter((k) => k !== "reason").length) return dialog.close();
    const ok = await confirmAction("Save changes?", `Change ${Object.keys(body).filter((k) => k !== "reason").join(", ")} of this memory. The old state stays in its history.`, "Save");
    if (!ok) return;
    try {
      await api("PATCH", `/memories/${encodeURIComponent(item.id)}`, { body });
      dialog.close();
      toast("Saved.");
      onSaved();
    } catch (error) {
      toast(`Not saved: ${error.message}`, "error");
    }
  });
  dialog.append(form);
  dialog.addEventListener("close", () => dialog.remove());
  return dialog;
}

export async function render(main, { arg, isCurrent }) {
  const id = arg;
  const [detail, history] = await Promise.all([
    api("GET", `/memories/${encodeURIComponent(id)}/detail`, { query: { clearance: clearance() } }),
    api("GET", `/memories/${encodeURIComponent(id)}/history`, { query: { clearance: clearance() } }),
  ]);
  if (!isCurrent()) return;
  const item = detail.item;
  const actions = h("div", { class: "actions" });
  if (canWrite()) {
    actions.append(
      h("button", { type: "button", text: "Edit", onclick: () => {
        const dialog = editForm(item, () => window.dispatchEvent(new HashChangeEvent("hashchange")));
        document.body.append(dialog);
        dialog.showModal();
      } }),
      h("button", { type: "button", class: "danger", text: "Forget", onclick: async () => {
        const ok = await confirmAction("Forget this memory?", `“${item.content.slice(0, 120)}” will be deleted (the deletion is recorded in its history).`, "Forget");
        if (!ok) return;
        try {
          await api("DELETE", `/memories/${encodeURIComponent(item.id)}`, { query: { reason: "forgotten in the inspector" } });
          toast("Forgotten.");
          location.hash = "#/memories";
        } catch (error) {
          toast(`Not forgotten: ${error.message}`, "error");
        }
      } }));
  }
  main.append(
    h("p", {}, h("a", { href: "#/memories", text: "← Memories" })),
    h("h1", { class: "memory-content", text: item.content }),
    actions,
    h("div", { class: "columns" },
      h("section", { "aria-label": "Fields" }, h("h2", { text: "Fields" }), fields([
        ["id", h("code", { text: item.id })], ["kind", item.kind], ["user", item.user], ["agent", item.agent],
        ["thread", item.thread ? h("a", { href: `#/thread/${encodeURIComponent(item.thread)}`, text: item.thread }) : null],
        ["tags", item.tags.length ? item.tags.map((t) => chip(`#${t}`, "tag")) : null],
        ["importance", num(item.importance, 2)], ["sensitivity", item.sensitivity],
        ["created", fmtDate(item.created_at)], ["updated", fmtDate(item.updated_at)],
        ["accessed", `${fmtDate(item.accessed_at)} (${item.access_count}×)`],
        ["valid", `${fmtDate(item.valid_from)} → ${item.valid_to ? fmtDate(item.valid_to) : "now"}`],
        ["expires", item.expires_at ? fmtDate(item.expires_at) : null],
        ["embedding", `${item.embedding_status}${item.embedding_model ? ` (${item.embedding_model})` : ""}`],
        ["context", item.context], ["keywords", item.keywords.join(", ") || null],
        ["metadata", Object.keys(item.metadata).length ? h("code", { text: JSON.stringify(item.metadata) }) : null],
      ])),
      h("section", { "aria-label": "Provenance and graph" },
        h("h2", { text: "Sources" }),
        detail.sources.length ? h("ul", { class: "plain" }, detail.sources.map((s) => h("li", {},
          s.message ? [h("a", { href: `#/thread/${encodeURIComponent(s.message.thread)}?turn=${s.message.turn}`, text: `${s.message.thread} #${s.message.turn}` }), ` ${s.message.role}: ${s.message.content.slice(0, 200)}`]
            : s.memory ? h("a", { href: `#/memory/${encodeURIComponent(s.memory.id)}`, text: s.memory.content.slice(0, 200) })
              : h("code", { text: s.id })))) : emptyNote("No sources recorded."),
        h("h2", { text: "Extracted facts" }),
        detail.facts.length ? h("ul", { class: "plain facts" }, detail.facts.map((r) => h("li", { class: r.invalid_at ? "closed" : "" },
          h("a", { href: `#/graph?start=${encodeURIComponent(r.subject)}`, text: relationText(r) })))) : emptyNote("No facts extracted from it."),
        h("h2", { text: "Entities" }),
        detail.entities.length ? h("p", {}, detail.entities.map((e) => h("a", { class: "chip entity", href: `#/graph?start=${encodeURIComponent(e.name)}`, text: `${e.name} (${e.type})` }))) : emptyNote("None."),
        h("h2", { text: "Links" }),
        detail.links.length ? h("ul", { class: "plain" }, detail.links.map((l) => {
          const other = l.source_id === item.id ? l.target_id : l.source_id;
          return h("li", {}, `${l.source_id === item.id ? "→" : "←"} ${l.type} `, h("a", { href: `#/memory/${encodeURIComponent(other)}`, text: other }));
        })) : emptyNote("No links."))),
    h("section", { "aria-label": "History" }, h("h2", { text: "History" }),
      h("ol", { class: "history" }, history.entries.map((e) => h("li", { class: `op-${e.op}` },
        h("div", { class: "meta" }, chip(e.op, "kind"), h("span", { text: fmtDate(e.at) }), e.reason ? h("em", { text: e.reason }) : null),
        diff(e))))));
}
