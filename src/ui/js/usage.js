// Usage: GPU-hours and cost per namespace or queue over time, and the cluster's allocation and
// idle GPUs, as charts (Debian's dygraphs, embedded) with a range picker and dygraphs' range
// selector; totals for the range below. From the accounting ledger
// (GET /apis/tessera.io/v1/usage?step=...), read again each minute: it grows with time, not
// with objects.
import {get} from './api.js';
import {h, table} from './dom.js';

const RANGES = {'24h': '1h', '7d': '6h', '30d': '1d'};
const STEP_HOURS = {'1h': 1, '6h': 6, '1d': 24};

export function usageView(root, session) {
  const range = h('select', {'aria-label': 'range'},
                  Object.keys(RANGES).map((r) => h('option', {value: r, text: 'last ' + r})));
  const by = h('select', {'aria-label': 'by'},
               h('option', {value: 'namespace', text: 'by namespace'}),
               session.who.admin ? h('option', {value: 'queue', text: 'by queue'}) : null);
  const status = h('p', {class: 'status', text: 'Loading…'});
  const hoursChart = h('div', {class: 'chart', id: 'chart-hours'});
  const costChart = h('div', {class: 'chart', id: 'chart-cost'});
  const allocChart = h('div', {class: 'chart', id: 'chart-alloc'});
  const totals = h('div');
  root.append(h('div', {class: 'view-head'}, h('h1', {text: 'Usage'}),
                h('div', {class: 'filters'}, range, by)),
              status,
              h('h2', {text: 'GPU-hours'}), hoursChart,
              h('h2', {text: 'Cost'}), costChart,
              h('h2', {text: session.who.admin ? 'Cluster: GPUs allocated and idle (average)'
                                               : 'Your GPUs allocated and idle (average)'}),
              allocChart,
              h('h2', {text: 'Totals'}), totals);
  const charts = [];
  let disposed = false;

  function chart(el, labels, rows, ylabel) {
    if (!window.Dygraph) {
      el.textContent = 'The chart library did not load.';
      return null;
    }
    return new window.Dygraph(el, rows.length ? rows : [[new Date(), ...labels.slice(1).map(() => 0)]], {
      labels, ylabel, stackedGraph: labels.length > 2, fillGraph: true, showRangeSelector: true,
      rangeSelectorHeight: 24, legend: 'always', labelsSeparateLines: false, height: 220,
      connectSeparatedPoints: true, stepPlot: true,
    });
  }

  async function load() {
    const step = RANGES[range.value];
    const key = by.value;
    try {
      const r = await get('/apis/tessera.io/v1/usage?by=' + key + '&since=' + range.value +
                          '&step=' + step);
      if (disposed) return;
      const groups = [...new Set(r.series.flatMap((b) => b.items.map((i) => i[key])))].sort();
      const at = (b) => new Date(Date.parse(b.start));
      const per = (field) => r.series.map((b) => [at(b), ...groups.map((g) => {
        const row = b.items.find((i) => i[key] === g);
        return row ? row[field] : 0;
      })]);
      const hours = STEP_HOURS[step];
      const alloc = r.series.map((b) => {
        const sum = (f) => b.items.reduce((n, i) => n + i[f], 0);
        const span = (Date.parse(b.end) - Date.parse(b.start)) / 3600000 || hours;
        return [at(b), (sum('gpuHours') - sum('idleGpuHours')) / span, sum('idleGpuHours') / span];
      });
      for (const c of charts.splice(0)) c.destroy();
      const labels = ['time', ...groups];
      charts.push(chart(hoursChart, labels, per('gpuHours'), 'GPU-hours'));
      charts.push(chart(costChart, labels, per('cost'), r.currency));
      charts.push(chart(allocChart, ['time', 'in use', 'idle'], alloc, 'GPUs'));
      const rows = r.items.map((i) => h('tr', {dataset: {group: i[key]}},
          h('td', {text: i[key]}), h('td', {class: 'num', text: i.gpuHours.toFixed(2)}),
          h('td', {class: 'num', text: i.idleGpuHours.toFixed(2)}),
          h('td', {class: 'num', text: i.priced ? i.cost.toFixed(2) : '—'}),
          h('td', {class: 'num', text: i.priced ? i.wastedCost.toFixed(2) : '—'})));
      totals.replaceChildren(rows.length ? table([key === 'queue' ? 'Queue' : 'Namespace',
                                                  'GPU-hours', 'Idle GPU-hours',
                                                  'Cost (' + r.currency + ')', 'Idle cost'], rows,
                                                 {class: 'grid'})
                                         : h('p', {class: 'status', text: 'Nothing recorded.'}));
      status.textContent = r.since + ' to ' + r.until + ', per ' + step;
    } catch (e) {
      status.textContent = 'Could not read the usage: ' + e.message;
    }
  }
  range.addEventListener('change', load);
  by.addEventListener('change', load);
  load();
  const timer = setInterval(load, 60000);
  return {
    dispose() {
      disposed = true;
      clearInterval(timer);
      for (const c of charts) if (c) c.destroy();
    },
  };
}
