// The API as the console's user sees it: every request carries the token they signed in with,
// and the server applies the same rules as to any other client. The token is kept in this tab's
// sessionStorage: readable by this origin only, where the page's Content-Security-Policy lets
// no script but the console's run; it is sent to this origin only (relative URLs).
const KEY = 'tessera.token';

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, message, reason) {
    super(message);
    this.status = status;
    this.reason = reason || '';
  }
}

function headers(extra) {
  return Object.assign({Authorization: 'Bearer ' + token(), Accept: 'application/json'}, extra);
}

async function errorOf(r) {
  const text = await r.text();
  try {
    const s = JSON.parse(text);
    return new ApiError(r.status, s.message || text, s.reason);
  } catch (e) {
    return new ApiError(r.status, text || r.statusText, '');
  }
}

// One request; the answer's JSON, or an ApiError with the server's message.
export async function request(method, path, body, contentType) {
  const init = {method, headers: headers(), cache: 'no-store', credentials: 'omit'};
  if (body !== undefined) {
    init.headers['Content-Type'] = contentType || 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const r = await fetch(path, init);
  if (!r.ok) throw await errorOf(r);
  const text = await r.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path) => request('GET', path);

// A GET whose body comes over time (a watch, a followed log): the response, to be read as it
// arrives; an ApiError with the server's message when refused. `signal` aborts it.
export async function openStream(path, signal) {
  const r = await fetch(path, {headers: headers(), signal, cache: 'no-store', credentials: 'omit'});
  if (!r.ok) throw await errorOf(r);
  return r;
}

// Who the token is (a SelfSubjectReview): {admin, namespace, username}.
export async function whoAmI() {
  const r = await request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews',
                          {apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview'});
  const u = (r.status && r.status.userInfo) || {};
  const groups = u.groups || [];
  const prefix = 'tessera:namespace:';
  return {
    username: u.username || '',
    admin: groups.includes('tessera:admins'),
    namespace: (u.username || '').startsWith(prefix) ? u.username.slice(prefix.length) : '',
  };
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// Main-thread time spent reading watch events (parsing, handing on), for the views' own
// accounting of an update's cost (gpumap.js); `take` returns it and starts again.
export const watchWork = {
  ms: 0,
  take() {
    const ms = this.ms;
    this.ms = 0;
    return ms;
  },
};

// Lists `path`, then watches it from the list's resourceVersion, as client-go's reflector does:
// onReset(items) after each list, onEvent(type, object) for each change; a watch that ends is
// resumed from the last version seen, and one answered 410 Gone (a compacted version) lists
// again. Returns a function that stops it.
export function listAndWatch(path, {onReset, onEvent, onError}) {
  let stopped = false;
  let aborter = null;
  const sep = path.includes('?') ? '&' : '?';
  async function watchFrom(rv) {
    for (;;) {
      aborter = new AbortController();
      const url = path + sep + 'watch=1&allowWatchBookmarks=true&resourceVersion=' +
                  encodeURIComponent(rv);
      let r;
      try {
        r = await openStream(url, aborter.signal);
      } catch (e) {
        if (e instanceof ApiError && e.status === 410) return;  // list again
        throw e;
      }
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buf += decoder.decode(value, {stream: true});
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const t0 = performance.now();
          const ev = JSON.parse(line);
          if (ev.type === 'ERROR') {
            if (ev.object && ev.object.code === 410) return;
            throw new ApiError(ev.object && ev.object.code, ev.object && ev.object.message);
          }
          const meta = (ev.object && ev.object.metadata) || {};
          if (meta.resourceVersion) rv = meta.resourceVersion;
          if (ev.type !== 'BOOKMARK') onEvent(ev.type, ev.object);
          watchWork.ms += performance.now() - t0;
        }
      }
      if (stopped) return;
    }
  }
  (async () => {
    while (!stopped) {
      try {
        const list = await get(path);
        if (stopped) return;
        onReset(list.items || []);
        await watchFrom(list.metadata.resourceVersion);
      } catch (e) {
        if (stopped) return;
        if (onError) onError(e);
        if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return;
        await sleep(2000);
      }
    }
  })();
  return () => {
    stopped = true;
    if (aborter) aborter.abort();
  };
}
