// The REST client: API key, the caller's rights (whoami), the chosen namespace.
const KEY = "memory.apiKey";
const NS = "memory.namespace";

export const session = { key: null, who: null, ns: null, namespaces: [], keysRequired: true };

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

export function storedKey() {
  return sessionStorage.getItem(KEY) || localStorage.getItem(KEY);
}

export function storeKey(key, remember) {
  sessionStorage.setItem(KEY, key);
  if (remember) localStorage.setItem(KEY, key);
  session.key = key;
}

export function forgetKey() {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
  session.key = null;
}

export function rememberNamespace(ns) {
  session.ns = ns;
  sessionStorage.setItem(NS, ns);
}

export function storedNamespace() {
  return sessionStorage.getItem(NS);
}

function url(path, scoped, query) {
  let out = scoped ? `/v1/namespaces/${encodeURIComponent(session.ns)}${path}` : `/v1${path}`;
  if (query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined || value === null || value === "") continue;
      if (Array.isArray(value)) value.forEach((v) => params.append(name, v));
      else params.append(name, String(value));
    }
    const text = params.toString();
    if (text) out += `?${text}`;
  }
  return out;
}

/** Call the API; resolves to the JSON body, rejects with ApiError.
 *
 * ``maxAge`` (seconds) accepts an answer computed that long ago (the server reuses namespace-wide counts);
 * ``meta``, an object, receives ``computedAt`` (Date) and ``age`` (s) of such an answer and ``serverMs``.
 */
export async function api(method, path, { query, body, scoped = true, signal, maxAge, meta } = {}) {
  const headers = { Accept: "application/json" };
  if (session.key) headers.Authorization = `Bearer ${session.key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (maxAge) headers["Cache-Control"] = `max-age=${maxAge}`;
  const response = await fetch(url(path, scoped, query), {
    method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (meta) {
    const computed = response.headers.get("X-Computed-At");
    meta.computedAt = computed ? new Date(computed) : null;
    meta.age = Number(response.headers.get("Age") || 0);
    const timing = /dur=([\d.]+)/.exec(response.headers.get("Server-Timing") || "");
    meta.serverMs = timing ? Number(timing[1]) : null;
  }
  const type = response.headers.get("content-type") || "";
  const data = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) throw new ApiError(response.status, typeof data === "object" ? data : { detail: data });
  return data;
}

/** The caller's clearance, to pass where an operation takes one (never more than the key has). */
export function clearance() {
  return (session.who && session.who.clearance) || "private";
}

export function canWrite() {
  return !!session.who && !session.who.read_only;
}

export async function loadConfig() {
  const response = await fetch("/ui/config.json", { headers: { Accept: "application/json" } });
  if (response.ok) Object.assign(session, await response.json());
}

/** Who the key is; fills session.who and the namespaces it may see. */
export async function signIn() {
  const [who, listing] = await Promise.all([
    api("GET", "/whoami", { scoped: false }),
    api("GET", "/namespaces", { scoped: false }),
  ]);
  session.who = who;
  const listed = listing.namespaces;
  const allowed = session.who.namespaces;
  const names = new Set(allowed === null ? listed : allowed);
  names.add(session.who.default_namespace);
  session.namespaces = [...names].sort();
  const wanted = storedNamespace();
  session.ns = session.namespaces.includes(wanted) ? wanted : session.who.default_namespace;
  return session.who;
}
