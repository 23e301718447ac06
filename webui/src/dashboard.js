// The dashboard tab: connects to /v1/dashboard/events and draws what it
// says. Everything shown comes from that stream (its snapshot's "metrics"
// are the counters /metrics renders).
import { authHeaders, errorText, readSse } from './api.js';
import { batchChart, batchData, histogramChart, rooflineChart, rooflineData } from './charts.js';
import { DashboardState } from './dashboard_state.js';
import { formatBytes, formatNumber, formatSi, goodput, histogram, percentile } from './stats.js';

const $ = (id) => document.getElementById(id);
const SVG = 'http://www.w3.org/2000/svg';

let state = new DashboardState();
let charts = null;
let dirty = false;
let visible = false;
let connection = null;

export const requestColor = (id) => `hsl(${(id * 137.508) % 360} 65% 50%)`;

function cell(text) {
  const td = document.createElement('td');
  td.textContent = String(text);
  return td;
}

function renderRequests() {
  const s = state.snapshot;
  if (!s) return;
  $('count-running').textContent = String(s.running.length);
  $('count-waiting').textContent = String(s.waiting.length);
  const rows = [];
  for (const [list, label] of [[s.running, 'running'], [s.waiting, 'waiting']]) {
    for (const r of list) {
      const tr = document.createElement('tr');
      const id = cell(`#${r.id}`);
      id.style.borderLeft = `6px solid ${requestColor(r.id)}`;
      tr.append(id, cell(label), cell(r.n_prompt), cell(r.n_computed), cell(r.n_generated), cell(r.kv_blocks));
      rows.push(tr);
    }
  }
  if (!rows.length) {
    const tr = document.createElement('tr');
    const td = cell('No request in flight.');
    td.colSpan = 6;
    tr.append(td);
    rows.push(tr);
  }
  $('requests-table').tBodies[0].replaceChildren(...rows);
}

function renderTotals() {
  const s = state.snapshot;
  if (!s) return;
  const m = s.metrics;
  const finished = m.requests_finished;
  const items = [
    ['total-finished', 'Requests finished', finished.stop + finished.length + finished.abort + finished.error],
    ['total-finished-detail', 'by reason', `stop ${finished.stop}, length ${finished.length}, abort ${finished.abort}, error ${finished.error}`],
    ['total-prompt-tokens', 'Prompt tokens', m.prompt_tokens],
    ['total-generation-tokens', 'Generated tokens', m.generation_tokens],
    ['total-running', 'Running', m.running],
    ['total-waiting', 'Waiting', m.waiting],
    ['total-kv-usage', 'KV usage ratio', formatNumber(m.kv_usage_ratio, 4)],
    ['total-kv-blocks', 'KV blocks (used / total)', `${s.kv.blocks_used} / ${s.kv.blocks_total}`],
    ['total-steps', 'Engine steps', s.steps],
    ['total-preemptions', 'Preemptions', s.preemptions],
    ['total-dropped', 'Events this page missed', s.dropped_events],
  ];
  const nodes = [];
  for (const [id, label, value] of items) {
    const dt = document.createElement('dt');
    dt.textContent = label;
    const dd = document.createElement('dd');
    dd.id = id;
    dd.textContent = String(value);
    nodes.push(dt, dd);
  }
  $('totals').replaceChildren(...nodes);
}

function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

function renderTimelines() {
  const now = state.snapshot ? state.snapshot.t_ms : 0;
  const list = [...state.requests.values()].filter((r) => r.t_arrival_ms !== null).slice(-10).reverse();
  const items = list.map((r) => {
    const li = document.createElement('li');
    li.className = 'timeline';
    li.dataset.request = String(r.id);
    const end = r.done ? r.done.t_finish_ms : Math.max(now, r.t_arrival_ms);
    const span = Math.max(end - r.t_arrival_ms, 0.001);
    const W = 600;
    const x = (t) => 4 + ((t - r.t_arrival_ms) / span) * (W - 8);
    const chart = svg('svg', { viewBox: `0 0 ${W} 24`, width: '100%', height: 24, 'aria-hidden': 'true' });
    const firstWork = r.chunks.length ? r.chunks[0].t0 : (r.done && r.done.t_scheduled_ms) || end;
    chart.append(svg('rect', { x: x(r.t_arrival_ms), y: 8, width: Math.max(1, x(firstWork) - x(r.t_arrival_ms)), height: 8, class: 'queue' }));
    for (const c of r.chunks) chart.append(svg('rect', { x: x(c.t0), y: 2, width: Math.max(2, x(c.t1) - x(c.t0)), height: 20, class: 'prefill' }));
    const stride = Math.max(1, Math.ceil(r.decodes.length / 300));
    for (let i = 0; i < r.decodes.length; i += stride) chart.append(svg('rect', { x: x(r.decodes[i]) - 0.5, y: 5, width: 1, height: 14, class: 'decode' }));
    if (r.done) chart.append(svg('rect', { x: x(end) - 2, y: 0, width: 4, height: 24, class: 'finish' }));
    const label = document.createElement('p');
    const prefillTokens = r.chunks.reduce((a, c) => a + c.tokens, 0);
    const parts = [`Request #${r.id}`, `prompt ${r.n_prompt ?? '?'} tokens`,
      `${r.chunks.length} prefill chunk${r.chunks.length === 1 ? '' : 's'} (${prefillTokens} tokens)`];
    // A prompt that starts with cached blocks is computed only past them.
    if (r.n_prompt !== null && r.chunks.length && prefillTokens < r.n_prompt) parts.push(`${r.n_prompt - prefillTokens} from the prefix cache`);
    parts.push(`${r.decode_steps} decode steps`);
    if (r.done) {
      parts.push(`finished: ${r.done.finish_reason}`, `${r.done.n_output} tokens`, `${r.done.kv_blocks} KV blocks at the end`,
        `TTFT ${formatNumber(r.done.ttft_ms)} ms`, `E2E ${formatNumber(r.done.e2e_ms)} ms`);
    } else parts.push('in flight');
    label.textContent = parts.join(' · ');
    li.append(label, chart);
    return li;
  });
  $('timelines').replaceChildren(...items);
}

function renderKv() {
  const h = state.hello;
  const s = state.snapshot;
  if (!h || !s) return;
  const kv = s.kv;
  $('kv-formula').textContent = `Per token: ${h.kv.formula}; block: ${h.kv.block_tokens} tokens = ${formatBytes(h.kv.block_bytes)}`;
  $('kv-summary').textContent = `${kv.blocks_used} of ${kv.blocks_total} blocks in use (${formatBytes(kv.bytes_used)} of ${formatBytes(kv.bytes_total)}), `
    + `${kv.blocks_cached} cached for prefix reuse, ${kv.blocks_free - kv.blocks_cached} free; `
    + `${kv.tokens_stored} tokens stored = ${formatBytes(kv.formula_bytes_stored)} by the formula, utilisation ${formatNumber(kv.utilization * 100)}%`;
  const canvas = $('kv-map');
  const ctx = canvas.getContext('2d');
  const total = kv.blocks_total;
  const cellSize = Math.max(2, Math.min(14, Math.floor(Math.sqrt((canvas.width * canvas.height) / Math.max(total, 1)))));
  const columns = Math.floor(canvas.width / cellSize);
  const capacity = columns * Math.floor(canvas.height / cellSize);
  const perCell = Math.max(1, Math.ceil(total / capacity));
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const colors = { free: '#e3e3e3', cached: '#8fd19e', shared: '#9b59b6' };
  const owners = new Map();
  let block = 0;
  for (const [kind, count, id] of kv.map) {
    if (kind === 'request') owners.set(id, (owners.get(id) || 0) + count);
    const color = kind === 'request' ? requestColor(id) : colors[kind];
    // Cells of perCell blocks: a cell takes the colour of the run that reaches it last (used beats free in long runs).
    const firstCell = Math.floor(block / perCell);
    const lastCell = Math.floor((block + count - 1) / perCell);
    ctx.fillStyle = color;
    for (let c = firstCell; c <= lastCell; c += 1) {
      if (kind === 'free' && c !== firstCell && c !== lastCell) { /* fill below */ }
      ctx.fillRect((c % columns) * cellSize, Math.floor(c / columns) * cellSize, cellSize - 1, cellSize - 1);
    }
    block += count;
  }
  canvas.setAttribute('aria-label', `KV block map: ${kv.blocks_used} used, ${kv.blocks_cached} cached, of ${total} blocks${perCell > 1 ? `, ${perCell} blocks per cell` : ''}`);
  const items = [...owners.entries()].map(([id, n]) => {
    const li = document.createElement('li');
    li.dataset.request = String(id);
    const sw = document.createElement('span');
    sw.className = 'sw';
    sw.style.background = requestColor(id);
    li.append(sw, document.createTextNode(`#${id}: ${n} blocks (${formatBytes(n * h.kv.block_bytes)})`));
    return li;
  });
  $('kv-owners').replaceChildren(...items);
}

function latencySamples() {
  const ok = state.succeeded();
  return {
    ttft: ok.map((f) => f.ttft_ms).filter((v) => v !== null),
    tpot: ok.map((f) => f.tpot_ms).filter((v) => v !== null),
    itl: ok.flatMap((f) => f.itl_ms),
  };
}

function renderLatency() {
  const samples = latencySamples();
  for (const name of ['ttft', 'tpot', 'itl']) {
    const v = samples[name];
    const caption = $(`cap-${name}`);
    caption.textContent = `${name.toUpperCase()} (${v.length} samples): P50 ${formatNumber(percentile(v, 50))} ms, `
      + `P95 ${formatNumber(percentile(v, 95))} ms, P99 ${formatNumber(percentile(v, 99))} ms`;
    if (charts) {
      const h = histogram(v, 20);
      charts[name].setData([h.edges, h.counts]);
    }
  }
  const g = goodput(state.succeeded(), Number($('slo-ttft').value), Number($('slo-tpot').value));
  $('goodput').textContent = `Goodput: ${g.good} of ${g.total} requests met both objectives`
    + ` (${formatNumber(g.fraction * 100)}%), ${formatNumber(g.perSecond)} requests/s over the span they ran`;
}

function renderSteps() {
  const steps = state.steps;
  const last = steps[steps.length - 1];
  if (last) {
    $('batch-summary').textContent = `Last step #${last.step}: ${last.prefill_tokens} prefill + ${last.decode_tokens} decode tokens in `
      + `${formatNumber(last.t_end_ms - last.t_start_ms)} ms (forward ${formatNumber(last.forward_ms)} ms)`;
  }
  const h = state.hello;
  if (!h) return;
  const roof = h.roofline;
  $('roofline-hw').textContent = `${roof.description} — ${roof.source}: peak ${formatSi(roof.peak_flops, 'FLOP/s')}, `
    + `bandwidth ${formatSi(roof.bandwidth_bytes_per_s, 'B/s')}, ridge point ${formatNumber(roof.ridge_point)} FLOP/byte`;
  const plotted = steps.filter((s) => s.intensity > 0 && s.achieved_flops_per_s > 0);
  $('roofline').dataset.points = String(plotted.length);
  if (last) {
    $('roofline-summary').textContent = `${plotted.length} steps plotted; last: ${formatNumber(last.intensity)} FLOP/byte, `
      + `${formatSi(last.achieved_flops_per_s, 'FLOP/s')} achieved (${formatNumber((last.achieved_flops_per_s / Math.min(roof.peak_flops, roof.bandwidth_bytes_per_s * last.intensity)) * 100)}% of the roof)`;
  }
  if (charts) {
    charts.batch.setData(batchData(steps));
    charts.roofline.setData(rooflineData(plotted.slice(-1000), roof));
  }
}

function render() {
  dirty = false;
  renderRequests();
  renderTotals();
  renderTimelines();
  renderKv();
  renderLatency();
  renderSteps();
}

function changed() {
  if (dirty) return;
  dirty = true;
  requestAnimationFrame(render);
}

function onEvent(name, data) {
  const e = JSON.parse(data);
  if (name === 'hello') {
    state = new DashboardState();
    state.onHello(e);
    $('model-name').textContent = `model: ${e.model}`;
  } else if (name === 'queued') state.onQueued(e);
  else if (name === 'steps') state.onSteps(e.steps);
  else if (name === 'finished') state.onFinished(e);
  else if (name === 'snapshot') state.onSnapshot(e);
  changed();
}

async function connect() {
  if (connection) connection.abort();
  const mine = new AbortController();
  connection = mine;
  const status = $('dash-status');
  try {
    const res = await fetch('/v1/dashboard/events', { headers: authHeaders(), signal: mine.signal });
    if (!res.ok) throw new Error(await errorText(res));
    status.textContent = 'Connected to /v1/dashboard/events.';
    await readSse(res, onEvent);
    status.textContent = 'The server ended the stream; reconnecting…';
  } catch (e) {
    if (mine.signal.aborted) return;
    status.textContent = `Not connected: ${e.message}. Retrying…`;
  }
  if (connection === mine) setTimeout(() => { if (connection === mine) connect(); }, 2000);
}

// Charts are made when the tab is first shown (uPlot needs the width).
export function showDashboard() {
  visible = true;
  if (!charts) {
    charts = {
      batch: batchChart($('batch-chart')),
      ttft: histogramChart($('hist-ttft'), 'TTFT', '#2b6cd9'),
      tpot: histogramChart($('hist-tpot'), 'TPOT', '#d9822b'),
      itl: histogramChart($('hist-itl'), 'ITL', '#3a9a5b'),
      roofline: rooflineChart($('roofline-chart')),
    };
  }
  changed();
}

export function initDashboard() {
  $('slo').addEventListener('input', changed);
  $('slo').addEventListener('submit', (e) => e.preventDefault());
  document.addEventListener('ridge-key-changed', connect);
  connect();
  return { get visible() { return visible; } };
}
