// The inspector's shell: sign-in, namespace choice, hash routing, keyboard shortcuts.
import { ApiError, forgetKey, loadConfig, rememberNamespace, session, signIn, storedKey, storeKey } from "./api.js";
import { failure, h } from "./dom.js";

// Page modules load when first shown (the first visit fetches and compiles only the page it opens,
// from the start, beside the sign-in call); the rest are fetched and compiled once the browser is
// idle, so moving between pages never waits for them.
const PAGES = {
  memories: () => import("./pages/memories.js"),
  memory: () => import("./pages/memory.js"),
  threads: () => import("./pages/threads.js"),
  graph: () => import("./pages/graph.js"),
  tiers: () => import("./pages/tiers.js"),
  context: () => import("./pages/context.js"),
  jobs: () => import("./pages/jobs.js"),
};
const ROUTES = {
  memories: ["memories", "memories", "Memories"],
  memory: ["memory", "memories", "Memory"],
  threads: ["threads", "threads", "Conversations"],
  thread: ["threads", "threads", "Conversation"],
  graph: ["graph", "graph", "Knowledge graph"],
  tiers: ["tiers", "tiers", "Working memory & tiers"],
  context: ["context", "context", "Context"],
  jobs: ["jobs", "jobs", "Jobs & health"],
};

function preloadPages() {
  const later = window.requestIdleCallback || ((work) => setTimeout(work, 200));
  later(() => Object.values(PAGES).forEach((load) => load().catch(() => {})));
}
const ORDER = ["memories", "threads", "graph", "tiers", "context", "jobs"];
let cleanup = null;
let generation = 0;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || "memories", arg: parts.slice(1).join("/"), params: new URLSearchParams(query) };
}

async function render() {
  const { name, arg, params } = parseHash();
  const route = ROUTES[name] || ROUTES.memories;
  const [module, nav, title] = route;
  const main = document.getElementById("main");
  const mine = ++generation;
  if (cleanup) cleanup();
  cleanup = null;
  main.removeAttribute("data-ready");
  main.replaceChildren();
  document.title = `${title} · memory inspector`;
  for (const link of document.querySelectorAll("nav.side a")) {
    link.toggleAttribute("aria-current", link.dataset.page === nav);
  }
  const started = performance.now();
  try {
    const page = await PAGES[module]();
    if (mine !== generation) return;
    cleanup = (await page.render(main, { name, arg, params, isCurrent: () => mine === generation })) || null;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return askForKey(error.message);
    main.append(failure(error));
  }
  if (mine === generation) {
    main.dataset.ready = name;
    main.dataset.renderMs = String(Math.round(performance.now() - started));
    main.dataset.readyAt = String(Math.round(performance.now())); // ms since this page's navigation started
  }
}

function askForKey(message) {
  const dialog = document.getElementById("login");
  document.getElementById("login-error").textContent = message || "";
  if (!dialog.open) dialog.showModal();
  document.getElementById("login-key").focus();
}

async function start() {
  try {
    await signIn();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      forgetKey();
      return askForKey(error.message);
    }
    document.getElementById("main").append(failure(error));
    return;
  }
  const who = session.who;
  const select = document.getElementById("ns");
  select.replaceChildren(...session.namespaces.map((ns) => h("option", { value: ns, text: ns })));
  select.value = session.ns;
  const badges = [who.read_only ? "read-only" : "read-write", `clearance: ${who.clearance}`];
  if (who.key_id) badges.unshift(`key ${who.key_id}`);
  document.getElementById("who").textContent = badges.join(" · ");
  document.body.classList.toggle("read-only", who.read_only);
  document.getElementById("signout").hidden = !session.key;
  await render();
  preloadPages();
}

function setUp() {
  document.getElementById("login-form").addEventListener("submit", (event) => {
    const key = document.getElementById("login-key").value.trim();
    const remember = document.getElementById("login-remember").checked;
    if (!key) {
      event.preventDefault();
      return;
    }
    storeKey(key, remember);
    document.getElementById("login-key").value = "";
    setTimeout(start, 0);
  });
  document.getElementById("login").addEventListener("cancel", (event) => event.preventDefault());
  document.getElementById("signout").addEventListener("click", () => {
    forgetKey();
    session.who = null;
    location.hash = "#/memories";
    location.reload();
  });
  document.getElementById("ns").addEventListener("change", (event) => {
    rememberNamespace(event.target.value);
    render();
  });
  window.addEventListener("hashchange", () => session.who && render());
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName) || event.target.isContentEditable;
    if (typing || event.ctrlKey || event.metaKey || event.altKey || document.querySelector("dialog[open]")) return;
    if (event.key >= "1" && event.key <= "6") {
      location.hash = `#/${ORDER[Number(event.key) - 1]}`;
      event.preventDefault();
    } else if (event.key === "/") {
      const input = document.querySelector("main input, main textarea");
      if (input) {
        input.focus();
        event.preventDefault();
      }
    }
  });
}

setUp();
// The page the address names starts loading now, beside the sign-in call, not after it.
PAGES[(ROUTES[parseHash().name] || ROUTES.memories)[0]]().catch(() => {});
session.key = storedKey();
if (session.key) start();
else loadConfig().then(() => (session.keysRequired ? askForKey("") : start()));
