// Summary statistics the dashboard shows, with numpy's conventions (as
// ridge's own reports): percentiles interpolate linearly between ranks.

export function percentile(values, p) {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

// Equal-width bins over [min, max]: { edges, counts }.
export function histogram(values, bins = 20) {
  if (!values.length) return { edges: [], counts: [] };
  let min = Math.min(...values);
  let max = Math.max(...values);
  if (max === min) { min -= 0.5; max += 0.5; }
  const width = (max - min) / bins;
  const counts = new Array(bins).fill(0);
  for (const v of values) counts[Math.min(bins - 1, Math.floor((v - min) / width))] += 1;
  const edges = counts.map((_, i) => min + i * width);
  return { edges, counts, width };
}

// Requests meeting both objectives (a request with one token has no TPOT and
// is judged on TTFT alone), as a fraction of finished successful requests,
// and per second over the span they finished in.
export function goodput(requests, ttftSloMs, tpotSloMs) {
  const ok = requests.filter((r) => r.ttft_ms !== null && r.ttft_ms <= ttftSloMs
    && (r.tpot_ms === null || r.tpot_ms <= tpotSloMs));
  const fraction = requests.length ? ok.length / requests.length : NaN;
  let perSecond = NaN;
  if (requests.length > 1) {
    const first = Math.min(...requests.map((r) => r.t_arrival_ms));
    const last = Math.max(...requests.map((r) => r.t_finish_ms));
    if (last > first) perSecond = ok.length / ((last - first) / 1000);
  }
  return { good: ok.length, total: requests.length, fraction, perSecond };
}

// Three significant digits, without exponents between 0.001 and 10^15.
export function formatNumber(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 10 ** digits) return String(Math.round(x));
  if (a !== 0 && a < 0.001) return x.toExponential(digits - 1);
  return String(Number(x.toPrecision(digits)));
}

const SI = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
export function formatSi(x, unit = '') {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  for (const [scale, prefix] of SI) if (Math.abs(x) >= scale) return `${formatNumber(x / scale)} ${prefix}${unit}`;
  return `${formatNumber(x)} ${unit}`;
}

export function formatBytes(x) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(x) >= 1024 && i < units.length - 1) { x /= 1024; i += 1; }
  return `${formatNumber(x)} ${units[i]}`;
}
