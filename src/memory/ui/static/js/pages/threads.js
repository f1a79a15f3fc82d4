// Conversations: threads, a thread's timeline (turns, media, embedding status), archive, live updates.
import { api, canWrite, clearance } from "../api.js";
import { ago, chip, confirmAction, emptyNote, failure, fmtDate, h, toast } from "../dom.js";

const POLL_MS = 2000;

function threadList(threads, current) {
  if (!threads.length) return emptyNote("No conversations in this namespace.");
  return h("ul", { class: "threads" }, threads.map((t) => h("li", {},
    h("a", { href: `#/thread/${encodeURIComponent(t.thread)}`, "aria-current": t.thread === current ? "page" : null },
      h("strong", { text: t.thread }),
      h("span", { class: "muted", text: ` ${t.messages} messages · turn ${t.last_turn}${t.archived ? ` · ${t.archived} archived` : ""} · ${ago(t.last_at)}` })))));
}

async function mediaOf(message, holder) {
  try {
    const media = await api("GET", `/messages/${encodeURIComponent(message.id)}/media`, { query: { clearance: clearance() } });
    if (media.data_base64) {
      const bytes = Uint8Array.from(atob(media.data_base64), (c) => c.charCodeAt(0));
      const url = URL.createObjectURL(new Blob([bytes], { type: media.mime || "application/octet-stream" }));
      if ((media.mime || "").startsWith("image/")) holder.append(h("img", { src: url, alt: media.name || "image", class: "media" }));
      else holder.append(h("a", { href: url, download: media.name || "file", text: `⬇ ${media.name || "file"} (${media.size} bytes)` }));
    } else if (media.uri) {
      holder.append(h("span", { class: "muted", text: `external: ${media.uri}` }));
    }
  } catch (error) {
    holder.append(h("span", { class: "error", text: `media: ${error.message}` }));
  }
}

function messageRow(message) {
  const media = h("div", { class: "media-holder" });
  if (message.media) mediaOf(message, media);
  return h("li", { class: `msg role-${message.role}`, id: `turn-${message.turn}`, dataset: { turn: message.turn } },
    h("div", { class: "meta" },
      h("span", { class: "turn", text: `#${message.turn}` }),
      h("strong", { text: message.speaker || message.role }),
      message.content_type !== "text" ? chip(message.content_type) : null,
      chip(`embedding ${message.embedding_status}`, `emb-${message.embedding_status}`),
      message.sensitivity !== "normal" ? chip(message.sensitivity, message.sensitivity) : null,
      h("span", { class: "muted", text: fmtDate(message.created_at) })),
    h("p", { class: "text", text: message.content }), media);
}

export async function render(main, { name, arg, params, isCurrent }) {
  const current = name === "thread" ? arg : null;
  const { threads } = await api("GET", "/threads", { query: { limit: 200 } });
  if (!isCurrent()) return;
  const live = h("input", { type: "checkbox", checked: true });
  const listStatus = h("p", { class: "muted small", "aria-live": "polite" });
  const side = h("aside", { class: "thread-list", "aria-label": "Threads" }, h("h2", { text: "Threads" }), threadList(threads, current), listStatus);
  const body = h("section", { class: "thread", "aria-label": "Timeline" });
  main.append(h("h1", { text: current ? `Conversation ${current}` : "Conversations" }), h("div", { class: "split" }, side, body));
  // The list itself is live too: new threads, message counts and archive marks appear as they change.
  let shown = JSON.stringify(threads);
  let listBusy = false;
  const pollList = async () => {
    if (!isCurrent()) return clearInterval(listTimer);
    if (!live.checked || listBusy) return;
    listBusy = true;
    try {
      const fresh = (await api("GET", "/threads", { query: { limit: 200 } })).threads;
      const text = JSON.stringify(fresh);
      if (text !== shown && isCurrent()) {
        shown = text;
        side.querySelector(".threads, .empty")?.replaceWith(threadList(fresh, current));
        listStatus.textContent = `updated ${fmtDate(new Date().toISOString())}`;
      }
    } catch (error) {
      listStatus.textContent = `live updates paused: ${error.message}`;
    } finally {
      listBusy = false;
    }
  };
  const listTimer = setInterval(pollList, POLL_MS);
  if (!current) {
    body.append(h("div", { class: "actions" }, h("label", { class: "check" }, live, " Live updates")), emptyNote(threads.length ? "Pick a thread." : ""));
    return () => clearInterval(listTimer);
  }
  const stopThread = await openThread(body, current, params, isCurrent, live);
  return () => {
    clearInterval(listTimer);
    if (stopThread) stopThread();
  };
}

async function openThread(body, thread, params, isCurrent, live) {
  const path = `/threads/${encodeURIComponent(thread)}/timeline`;
  const list = h("ol", { class: "timeline" });
  const status = h("span", { class: "muted", "aria-live": "polite" });
  const controls = h("div", { class: "actions" }, h("label", { class: "check" }, live, " Live updates"), status);
  if (canWrite()) {
    const keep = h("input", { type: "number", min: 0, value: 20, "aria-label": "Messages to keep", class: "small" });
    controls.append(h("span", { class: "inline" }, "Keep last ", keep,
      h("button", { type: "button", text: "Archive older", onclick: async () => {
        const n = Number(keep.value);
        if (!(await confirmAction("Archive older messages?", `Messages of ${thread} older than the last ${n} move to the archive (kept for export, gone from the timeline).`, "Archive"))) return;
        try {
          const { archived } = await api("POST", `/threads/${encodeURIComponent(thread)}/archive`, { body: { keep_last: n } });
          toast(`${archived} messages archived.`);
          window.dispatchEvent(new HashChangeEvent("hashchange"));
        } catch (error) {
          toast(`Not archived: ${error.message}`, "error");
        }
      } })));
  }
  body.append(controls, list);
  let first;
  try {
    first = await api("GET", path, { query: { limit: 100, clearance: clearance() } });
  } catch (error) {
    body.append(failure(error));
    return null;
  }
  if (!isCurrent()) return null;
  let oldest = first.messages.length ? first.messages[0].turn : null;
  let last = first.last_turn;
  if (first.has_older) {
    const older = h("button", { type: "button", text: "Load older messages", onclick: async () => {
      const page = await api("GET", path, { query: { limit: 100, before_turn: oldest, clearance: clearance() } });
      list.prepend(...page.messages.map(messageRow));
      if (page.messages.length) oldest = page.messages[0].turn;
      if (!page.has_older) older.remove();
    } });
    body.insertBefore(older, list);
  }
  list.append(...first.messages.map(messageRow));
  if (!first.messages.length) list.append(emptyNote("No visible messages."));
  const wanted = params.get("turn");
  const target = wanted ? list.querySelector(`#turn-${CSS.escape(wanted)}`) : list.lastElementChild;
  if (target) {
    target.classList.toggle("focus", !!wanted);
    target.scrollIntoView({ block: wanted ? "center" : "end" });
  }
  let timer = null;
  let busy = false;
  const poll = async () => {
    if (!live.checked || busy || !isCurrent()) return;
    busy = true;
    try {
      const page = await api("GET", path, { query: { after_turn: last, limit: 200, clearance: clearance() } });
      if (page.messages.length && isCurrent()) {
        list.querySelector(".empty")?.remove();
        list.append(...page.messages.map(messageRow));
        last = page.last_turn;
        status.textContent = `${page.messages.length} new · ${fmtDate(new Date().toISOString())}`;
        list.lastElementChild.scrollIntoView({ block: "end" });
      }
    } catch (error) {
      status.textContent = `live updates paused: ${error.message}`;
    } finally {
      busy = false;
    }
  };
  timer = setInterval(poll, POLL_MS);
  return () => clearInterval(timer);
}
