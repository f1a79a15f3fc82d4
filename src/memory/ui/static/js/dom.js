// Small DOM helpers: elements from data (text only, never HTML), formatting, toasts, confirmation.

/** h("div", {class: "x", onclick: f}, child, ...) — strings become text nodes; null/false are skipped. */
export function h(tag, attrs = {}, ...children) {
  const svg = ["svg", "g", "line", "circle", "text", "path", "rect", "title", "defs", "marker"].includes(tag);
  const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "text") el.textContent = String(value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name === "style") Object.assign(el.style, value);
    else if (name === "value" && !svg) el.value = value;
    else if (name === "checked" && !svg) el.checked = !!value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const pad = (n) => String(n).padStart(2, "0");

/** "17:56:47", local time, 24 hours (not toLocaleTimeString: its first call loads ICU's date formats, ~15 ms). */
export function fmtTime(date) {
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

export function fmtDate(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function ago(iso) {
  if (!iso) return "";
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function num(x, digits = 3) {
  return x === null || x === undefined ? "—" : Number(x).toFixed(digits);
}

export function chip(text, kind = "") {
  return h("span", { class: `chip ${kind}`.trim(), text });
}

/** A definition list from [label, value] pairs (value: text or node). */
export function fields(pairs) {
  return h("dl", { class: "fields" }, pairs.filter((p) => p).map(([k, v]) => [h("dt", { text: k }), h("dd", {}, v ?? "—")]));
}

export function toast(message, kind = "info") {
  const el = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status", text: message });
  document.getElementById("toasts").append(el);
  setTimeout(() => el.remove(), 4000);
}

/** Ask before a change; resolves true when confirmed. */
export function confirmAction(title, text, ok = "Confirm") {
  const dialog = document.getElementById("confirm");
  dialog.querySelector("#confirm-title").textContent = title;
  dialog.querySelector("#confirm-text").textContent = text;
  dialog.querySelector("#confirm-ok").textContent = ok;
  dialog.returnValue = "";
  dialog.showModal();
  dialog.querySelector("#confirm-ok").focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

/** A message in place of content that failed to load. */
export function failure(error) {
  return h("p", { class: "error", role: "alert", text: `Could not load: ${error.message || error}` });
}

export function splitList(text) {
  return (text || "").split(",").map((s) => s.trim()).filter(Boolean);
}

/** A <label> with an input; returns [label, input]. */
export function field(label, attrs) {
  const input = h("input", attrs);
  return [h("label", {}, label, input), input];
}

/** ISO 8601 from an <input type=date|datetime-local> value, or undefined. */
export function isoFrom(value) {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

export function emptyNote(text) {
  return h("p", { class: "empty", text });
}
