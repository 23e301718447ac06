// What the dashboard knows, built from /v1/dashboard/events (see
// docs/dashboard-events.md): requests with their timelines, recent steps,
// finished requests' latencies, the latest snapshot.

const MAX_STEPS = 2000;      // steps kept for the charts
const MAX_FINISHED = 2000;   // finished requests kept for the histograms
const MAX_REQUESTS = 200;    // timelines kept
const MAX_MARKS = 4096;      // decode steps kept per timeline

export class DashboardState {
  constructor() {
    this.hello = null;
    this.snapshot = null;
    this.steps = [];
    this.finished = [];
    this.requests = new Map();
  }

  request(id) {
    let r = this.requests.get(id);
    if (!r) {
      r = { id, n_prompt: null, t_arrival_ms: null, chunks: [], decodes: [], decode_steps: 0, done: null };
      this.requests.set(id, r);
      if (this.requests.size > MAX_REQUESTS) this.requests.delete(this.requests.keys().next().value);
    }
    return r;
  }

  onHello(h) {
    this.hello = h;
    for (const f of h.recent) this.onFinished(f);
  }

  onQueued(q) {
    const r = this.request(q.id);
    r.n_prompt = q.n_prompt;
    r.t_arrival_ms = q.t_ms;
  }

  onSteps(list) {
    for (const s of list) {
      this.steps.push(s);
      for (const [id, phase, tokens] of s.segments) {
        const r = this.request(id);
        if (phase === 'prefill') r.chunks.push({ t0: s.t_start_ms, t1: s.t_end_ms, tokens });
        else {
          r.decode_steps += 1;
          if (r.decodes.length < MAX_MARKS) r.decodes.push(s.t_end_ms);
        }
      }
    }
    if (this.steps.length > MAX_STEPS) this.steps.splice(0, this.steps.length - MAX_STEPS);
  }

  onFinished(f) {
    const r = this.request(f.id);
    r.done = f;
    if (r.t_arrival_ms === null) r.t_arrival_ms = f.t_arrival_ms;
    if (r.n_prompt === null) r.n_prompt = f.n_prompt;
    if (this.finished.some((x) => x.id === f.id)) return;
    this.finished.push(f);
    if (this.finished.length > MAX_FINISHED) this.finished.splice(0, this.finished.length - MAX_FINISHED);
  }

  onSnapshot(s) { this.snapshot = s; }

  // Successful requests (stop or length with a token), as the histograms count them.
  succeeded() {
    return this.finished.filter((f) => (f.finish_reason === 'stop' || f.finish_reason === 'length') && f.n_output > 0);
  }
}
