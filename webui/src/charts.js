// The dashboard's charts, drawn by uPlot: batch composition per step,
// latency histograms, and the roofline (log-log) with a point per step.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const HEIGHT = 220;

function widthOf(el) { return Math.max(320, Math.min(1100, el.clientWidth || 800)); }

function bars() { return uPlot.paths.bars({ size: [0.9, 40], align: 1 }); }

export function batchChart(el) {
  return new uPlot({
    width: widthOf(el),
    height: HEIGHT,
    scales: { x: { time: false }, ms: { auto: true } },
    axes: [
      { label: 'step' },
      { label: 'tokens' },
      { scale: 'ms', side: 1, label: 'step time (ms)', grid: { show: false } },
    ],
    series: [
      { label: 'step' },
      { label: 'prefill tokens', stroke: '#d9822b', fill: '#d9822b', paths: bars(), points: { show: false } },
      { label: 'decode tokens', stroke: '#2b6cd9', fill: '#2b6cd9', paths: bars(), points: { show: false } },
      { label: 'step time (ms)', scale: 'ms', stroke: '#333', width: 1, points: { show: false } },
    ],
  }, [[], [], [], []], el);
}

// Bars stack: the prefill series is drawn as prefill + decode, behind the decode one.
export function batchData(steps) {
  const recent = steps.slice(-300);
  return [
    recent.map((s) => s.step),
    recent.map((s) => s.prefill_tokens + s.decode_tokens),
    recent.map((s) => s.decode_tokens),
    recent.map((s) => s.t_end_ms - s.t_start_ms),
  ];
}

export function histogramChart(el, label, color) {
  return new uPlot({
    width: Math.max(260, Math.min(360, el.clientWidth || 340)),
    height: 180,
    scales: { x: { time: false } },
    axes: [{ label: `${label} (ms)` }, { label: 'requests' }],
    legend: { show: false },
    series: [{}, { label, stroke: color, fill: color, paths: bars(), points: { show: false } }],
  }, [[], []], el);
}

export function rooflineChart(el) {
  return new uPlot({
    width: widthOf(el),
    height: 300,
    scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
    axes: [
      { label: 'arithmetic intensity (FLOP/byte)' },
      { label: 'FLOP/s', size: 70, values: (u, vals) => vals.map((v) => (v == null ? '' : v.toExponential(0))) },
    ],
    series: [
      { label: 'FLOP/byte' },
      { label: 'roof', stroke: '#111', width: 2, points: { show: false } },
      { label: 'decode steps', stroke: '#2b6cd9', fill: '#2b6cd9', paths: () => null, points: { show: true, size: 6 } },
      { label: 'steps with prefill', stroke: '#d9822b', fill: '#d9822b', paths: () => null, points: { show: true, size: 6 } },
    ],
  }, [[], [], [], []], el);
}

// x sorted ascending (uPlot's need): the steps' intensities plus the roof's
// ends a decade either side.
export function rooflineData(steps, roof) {
  const points = steps.filter((s) => s.intensity > 0 && s.achieved_flops_per_s > 0);
  const xs = points.map((s) => s.intensity);
  const ridge = roof.peak_flops / roof.bandwidth_bytes_per_s;
  const lo = Math.min(ridge / 100, ...xs) / 2;
  const hi = Math.max(ridge * 10, ...xs) * 2;
  const rows = [[lo, null, null], [ridge, null, null], [hi, null, null]];
  for (const s of points) rows.push([s.intensity, s.prefill_tokens > 0 ? null : s.achieved_flops_per_s, s.prefill_tokens > 0 ? s.achieved_flops_per_s : null]);
  rows.sort((a, b) => a[0] - b[0]);
  const roofAt = (x) => Math.min(roof.peak_flops, roof.bandwidth_bytes_per_s * x);
  return [rows.map((r) => r[0]), rows.map((r) => roofAt(r[0])), rows.map((r) => r[1]), rows.map((r) => r[2])];
}
