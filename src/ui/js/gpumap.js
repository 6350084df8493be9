// The GPU map: every node and, inside it, its cards. Each card shows its mode (whole, MIG with
// its instances, shares, time-slice replicas), who holds each part (namespace/job/pod, a link to
// the job), health, cordon and quarantine, temperature, power, and utilisation against
// allocation; allocated cards that do no work stand out. Live: Nodes, Jobs and
// GpuSharingConfigs are watched; a change redraws the cards it touches only.
//
// The admin sees every card (GET /apis/tessera.io/v1/gpus gives each card's sharing as the
// scheduler applies it). A namespace token reads no Nodes: it sees the cards its own Jobs hold.
import {get, watchWork} from './api.js';
import {h} from './dom.js';
import {drawCard} from './gpucard.js';
import {cordonGpu, cordonNode} from './node_actions.js';

export function gpuMapView(root, session) {
  const admin = session.who.admin;
  const jobs = session.collection(session.jobsPath());
  const nodes = admin ? session.collection('/apis/tessera.io/v1/nodes') : null;
  const configs = admin ? session.collection('/apis/tessera.io/v1/gpusharingconfigs') : null;

  const layouts = new Map();  // "node/index" -> the card's entry of /gpus
  let byNode = null;           // node -> its cards' keys by index (from layouts; null: stale)
  const nodeSig = new Map();  // node -> what /gpus depends on, to refetch when it changes
  const holders = new Map();  // "node/index" -> [{ns, job, pod, device, queue, idleSince}]
  const jobCards = new Map();  // job key -> ["node/index", ...] it holds
  const cardEls = new Map();   // "node/index" -> element
  const nodeEls = new Map();   // node -> section element
  const filter = {model: '', label: '', ns: '', queue: ''};
  const opened = performance.now();
  let disposed = false;
  let built = false;

  const status = h('p', {class: 'status', text: 'Loading…'});
  const map = h('div', {id: 'gpumap', class: 'gpumap'});
  const controls = filterBar();
  root.append(h('div', {class: 'view-head'}, h('h1', {text: 'GPU map'}), controls.el), status,
              legend(), map);

  // --- data -------------------------------------------------------------------------------
  function indexJob(key, job) {
    for (const ck of jobCards.get(key) || []) {
      const list = (holders.get(ck) || []).filter((x) => x.key !== key);
      if (list.length) holders.set(ck, list);
      else holders.delete(ck);
    }
    jobCards.delete(key);
    if (!job) return;
    const st = job.status || {};
    if (st.phase !== 'Admitted') return;
    const cards = [];
    const meta = job.metadata;
    for (const pod of st.pods || []) {
      for (const d of pod.devices || []) {
        const ck = pod.node + '/' + (d.index !== undefined ? d.index : d.gpu);
        cards.push(ck);
        const list = holders.get(ck) || [];
        list.push({key, ns: meta.namespace, job: meta.name, pod: pod.name, device: d,
                   queue: st.queue || (job.spec && job.spec.queue) || '',
                   idleSince: st.idle && st.idle.since});
        holders.set(ck, list);
        if (!admin && !layouts.has(ck)) {
          byNode = null;
          // A namespace token's card: what its own devices say of it.
          layouts.set(ck, {node: pod.node, index: d.index, uuid: d.uuid, model: '',
                           mode: {whole: 'exclusive', mig: 'mig', share: 'shared',
                                  replica: 'timeslice'}[d.kind] || 'exclusive',
                           replicas: d.replicas, mig: [], health: 'Healthy'});
        }
      }
    }
    jobCards.set(key, cards);
  }

  function signature(node) {
    const m = node.metadata || {};
    const st = node.status || {};
    return JSON.stringify([m.labels, m.annotations, node.spec, st.gpus]);
  }

  async function fetchLayouts(nodeName) {
    const q = nodeName ? '?node=' + encodeURIComponent(nodeName) : '';
    const list = await get('/apis/tessera.io/v1/gpus' + q);
    if (nodeName) {
      for (const k of [...layouts.keys()]) if (k.startsWith(nodeName + '/')) layouts.delete(k);
    } else {
      layouts.clear();
    }
    for (const g of list.items) layouts.set(g.node + '/' + g.index, g);
    byNode = null;
  }

  function cardsOf(name) {
    if (!byNode) {
      byNode = new Map();
      for (const ck of layouts.keys()) {
        const node = splitKey(ck)[0];
        if (!byNode.has(node)) byNode.set(node, []);
        byNode.get(node).push(ck);
      }
      for (const list of byNode.values()) {
        list.sort((a, b) => Number(splitKey(a)[1]) - Number(splitKey(b)[1]));
      }
    }
    return byNode.get(name) || [];
  }

  // --- drawing ----------------------------------------------------------------------------
  function telemetryOf(ck) {
    if (!nodes) return null;
    const [node, index] = splitKey(ck);
    const n = nodes.items.get('/' + node);
    const t = n && n.status && n.status.telemetry;
    return (t || []).find((x) => String(x.index) === index) || null;
  }

  // A card as its layout, holders and telemetry say (gpucard.js); the admin's has a cordon
  // button.
  function cardOf(ck) {
    const onCordon = admin ? (g, on) => cordonGpu(g.node, g.uuid, g.index, on)
                                            .catch((e) => session.banner(e.message))
                           : null;
    return drawCard(layouts.get(ck), holders.get(ck) || [], telemetryOf(ck), onCordon);
  }

  function nodeHeader(name) {
    const n = nodes ? nodes.items.get('/' + name) : null;
    const cordoned = n && n.spec && n.spec.unschedulable;
    const gpus = cardsOf(name).map((ck) => layouts.get(ck));
    const models = [...new Set(gpus.map((g) => g.model).filter(Boolean))].join(', ');
    return h('div', {class: 'node-head'},
             h('span', {class: 'node-name', text: name}),
             h('span', {class: 'node-info', text: gpus.length + ' GPU' +
                                                  (gpus.length === 1 ? '' : 's') +
                                                  (models ? ' · ' + models : '')}),
             cordoned ? h('span', {class: 'badge warn', text: 'node cordoned'}) : null,
             admin ? h('button', {class: 'act', type: 'button',
                                  text: cordoned ? 'Uncordon node' : 'Cordon node',
                                  onclick: () => cordonNode(name, !cordoned)
                                                     .catch((e) => session.banner(e.message))})
                   : null);
  }

  // A node's section: its head at once, its cards when it comes near the screen (the map of
  // 10,000 cards builds the few hundred in view; scrolling builds the rest, once each).
  const near = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      near.unobserve(e.target);
      fillNode(e.target.dataset.node);
    }
  }, {rootMargin: '1200px 0px'});

  function drawNode(name) {
    const s = h('section', {class: 'node', dataset: {node: name}}, nodeHeader(name),
                h('div', {class: 'cards'}));
    s.style.containIntrinsicSize = 'auto ' + (58 + 128 * Math.ceil(cardsOf(name).length / 8)) + 'px';
    near.observe(s);
    return s;
  }

  function fillNode(name) {
    const s = nodeEls.get(name);
    if (!s || s.dataset.filled) return;
    s.dataset.filled = 'true';
    const grid = s.lastChild;
    for (const ck of cardsOf(name)) {
      const c = cardOf(ck);
      cardEls.set(ck, c);
      matchCard(c, ck);
      grid.append(c);
    }
  }

  function drawAll() {
    const t0 = performance.now();
    near.disconnect();
    cardEls.clear();
    nodeEls.clear();
    cardsOf('');  // the index, built once
    const names = [...byNode.keys()].sort();
    const frag = document.createDocumentFragment();
    for (const name of names) {
      const s = drawNode(name);
      nodeEls.set(name, s);
      frag.append(s);
    }
    map.replaceChildren(frag);
    applyFilter();
    controls.refresh();
    built = true;
    perf({gpuMapBuildMs: performance.now() - t0});
    status.textContent = layouts.size
        ? layouts.size + ' GPUs on ' + names.length + ' node' + (names.length === 1 ? '' : 's')
        : (admin ? 'No GPUs: no node has registered.' : 'Your namespace holds no GPU now.');
    // Read by the browser tests and the benchmark (bench/console_bench.py): the time to the
    // frame that shows the map (built, laid out, painted) from this draw and from the view's
    // start (the lists and /gpus read), as window.tesseraPerf.
    requestAnimationFrame(() => setTimeout(() => {
      const end = performance.now();
      performance.measure('gpumap-draw', {start: t0, end});
      perf({gpuMapDrawMs: end - t0, gpuMapOpenMs: end - opened, gpuMapCards: layouts.size});
    }, 0));
  }

  // An update: the cards and node heads that changed drawn again. Its main-thread cost, kept in
  // window.tesseraPerf.updates: the watch events read since the last one, the drawing, and the
  // style and layout it causes (forced here, so that it is counted).
  function redraw(cardKeys, nodeNames) {
    const t0 = performance.now();
    const read = watchWork.take();
    for (const name of nodeNames) {
      const old = nodeEls.get(name);
      if (!old) continue;
      old.firstChild.replaceWith(nodeHeader(name));
    }
    for (const ck of cardKeys) {
      const old = cardEls.get(ck);
      if (!old || !layouts.has(ck)) continue;
      const fresh = cardOf(ck);
      old.replaceWith(fresh);
      cardEls.set(ck, fresh);
      matchCard(fresh, ck);
    }
    void map.offsetHeight;  // style and layout now
    const updates = (window.tesseraPerf && window.tesseraPerf.updates) || [];
    updates.push({ms: read + performance.now() - t0, cards: cardKeys.size});
    if (updates.length > 500) updates.shift();
    perf({updates});
  }

  // --- filters ----------------------------------------------------------------------------
  function matches(ck) {
    const g = layouts.get(ck);
    const held = holders.get(ck) || [];
    if (filter.model && g.model !== filter.model) return false;
    if (filter.ns && !held.some((x) => x.ns === filter.ns)) return false;
    if (filter.queue && !held.some((x) => x.queue === filter.queue)) return false;
    if (filter.label) {
      const n = nodes && nodes.items.get('/' + g.node);
      const labels = (n && n.metadata.labels) || {};
      const [k, v] = filter.label.split('=');
      if (!(k in labels) || (v !== undefined && labels[k] !== v)) return false;
    }
    return true;
  }

  function matchCard(el, ck) {
    el.classList.toggle('dim', !matches(ck));
  }

  // Cards drawn are dimmed when they do not match; a node none of whose cards match (drawn or
  // not) is hidden.
  function applyFilter() {
    const any = filter.model || filter.label || filter.ns || filter.queue;
    for (const [ck, el] of cardEls) el.classList.toggle('dim', !matches(ck));
    for (const [name, s] of nodeEls) s.hidden = Boolean(any) && !cardsOf(name).some(matches);
  }

  function filterBar() {
    const model = h('select', {'aria-label': 'model'});
    const ns = h('select', {'aria-label': 'namespace'});
    const queue = h('select', {'aria-label': 'queue'});
    const label = h('input', {type: 'search', placeholder: 'node label, e.g. zone=a',
                              'aria-label': 'node label'});
    function fill(sel, all, values) {
      const was = sel.value;
      sel.replaceChildren(h('option', {value: '', text: all}),
                          ...[...values].sort().map((v) => h('option', {value: v, text: v})));
      sel.value = [...values].includes(was) ? was : '';
    }
    const onChange = () => {
      filter.model = model.value;
      filter.ns = ns.value;
      filter.queue = queue.value;
      filter.label = label.value.trim();
      applyFilter();
    };
    for (const e of [model, ns, queue]) e.addEventListener('change', onChange);
    label.addEventListener('input', onChange);
    return {
      el: h('div', {class: 'filters'}, model, admin ? label : null, ns, queue),
      refresh() {
        fill(model, 'every model', new Set([...layouts.values()].map((g) => g.model).filter(Boolean)));
        const all = [...holders.values()].flat();
        fill(ns, 'every namespace', new Set(all.map((x) => x.ns)));
        fill(queue, 'every queue', new Set(all.map((x) => x.queue).filter(Boolean)));
      },
    };
  }

  // --- live -------------------------------------------------------------------------------
  function ready() {
    return jobs.ready && (!admin || (nodes.ready && configs.ready));
  }

  // The admin's first drawing fetches /gpus while the lists load (started below).
  let firstLayouts = admin ? fetchLayouts('') : null;
  if (firstLayouts) firstLayouts.catch(() => {});  // reported when awaited
  let loading = null;
  async function reloadAll() {
    if (admin) {
      const first = firstLayouts;
      firstLayouts = null;
      await (first || fetchLayouts(''));
      for (const [k, n] of nodes.items) nodeSig.set(k, signature(n));
    }
    holders.clear();
    jobCards.clear();
    if (!admin) {
      layouts.clear();
      byNode = null;
    }
    for (const [k, j] of jobs.items) indexJob(k, j);
    drawAll();
  }

  function fullReload() {
    if (loading) return;
    loading = reloadAll().catch((e) => {
      status.textContent = 'Could not read the GPUs: ' + e.message;
    }).finally(() => {
      loading = null;
    });
  }

  const unsubscribe = [];
  unsubscribe.push(jobs.subscribe((keys) => {
    if (!ready() || disposed) return;
    if (!built || keys === null || !admin) return fullReload();
    const cards = new Set();
    for (const k of keys) {
      for (const ck of jobCards.get(k) || []) cards.add(ck);
      indexJob(k, jobs.items.get(k));
      for (const ck of jobCards.get(k) || []) cards.add(ck);
    }
    redraw(cards, []);
    controls.refresh();
  }));
  if (admin) {
    unsubscribe.push(nodes.subscribe(async (keys) => {
      if (!ready() || disposed) return;
      if (!built || keys === null) return fullReload();
      const cards = new Set();
      const heads = [];
      for (const k of keys) {
        const n = nodes.items.get(k);
        const name = k.slice(1);
        const sig = n ? signature(n) : null;
        if (!n || !nodeEls.has(name) || sig !== nodeSig.get(k)) {
          // Added, removed, relabelled, cordoned, quarantined: its layout is read again.
          nodeSig.set(k, sig);
          if (!n || !nodeEls.has(name)) return fullReload();
          await fetchLayouts(name);
          heads.push(name);
        }
        for (const ck of cardsOf(name)) cards.add(ck);
      }
      redraw(cards, heads);
    }));
    unsubscribe.push(configs.subscribe(() => {
      if (ready() && !disposed) fullReload();
    }));
  }
  if (ready()) fullReload();

  return {
    dispose() {
      disposed = true;
      near.disconnect();
      for (const u of unsubscribe) u();
    },
  };
}

function perf(figures) {
  window.tesseraPerf = Object.assign(window.tesseraPerf || {}, figures);
}

function splitKey(ck) {
  const i = ck.lastIndexOf('/');
  return [ck.slice(0, i), ck.slice(i + 1)];
}

function legend() {
  return h('div', {class: 'legend'},
           h('span', {class: 'swatch held'}), 'held',
           h('span', {class: 'swatch free'}), 'free',
           h('span', {class: 'swatch idle'}), 'allocated, idle',
           h('span', {class: 'swatch bad'}), 'unhealthy or quarantined',
           h('span', {class: 'swatch warn'}), 'cordoned');
}
