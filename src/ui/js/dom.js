// Small helpers for building the console's elements. Text always goes in as text (never as
// HTML), so nothing an object holds can become markup.
export function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// "3m 20s", "2h 5m", "4d 1h": how long since `ms` (epoch milliseconds).
export function since(ms, now) {
  let s = Math.max(0, Math.floor(((now || Date.now()) - ms) / 1000));
  const d = Math.floor(s / 86400), hr = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  if (d) return d + 'd ' + hr + 'h';
  if (hr) return hr + 'h ' + m + 'm';
  if (m) return m + 'm ' + s + 's';
  return s + 's';
}

export function jobHref(ns, name) {
  return '#/job/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name);
}

export function table(headers, rows, attrs) {
  return h('table', attrs || {},
           h('thead', {}, h('tr', {}, headers.map((t) => h('th', {text: t})))),
           h('tbody', {}, rows));
}
