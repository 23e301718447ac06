#!/usr/bin/env python3
"""Soak benchmark for `ridge serve` (a benchmark, not a CI test).

Starts `ridge serve` on 127.0.0.1 with an ephemeral port, then for --minutes
sends a mixed load from --clients threads: streaming and non-streaming
completions and chat requests, a fraction of the streams dropped mid-way
(the socket reset), with seeded random prompt and output lengths. Every
--sample-s seconds it records the server's RSS, /metrics' KV usage and the
requests in flight. At the end it waits for the server to go idle and reports:

  errors            requests that failed without being dropped on purpose (want 0)
  rss growth        RSS at the end vs after the first minute (warm-up)
  kv blocks leaked  KV usage once idle (want 0)
  ttft p99 drift    P99 TTFT of the last minute vs the first full minute

Python standard library only. Traffic goes to loopback only, bounded in time.
Usage: bench/soak/soak.py --ridge build/ridge --model models/stories260K.gguf [--minutes 10]
"""
import argparse
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

WORDS = ("once upon a time there was a little girl named lily she loved to play outside with her dog "
         "the sun was shining and the birds were singing one day she found a shiny red ball").split()


def start_server(ridge, model, extra):
    proc = subprocess.Popen([ridge, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0"] + extra,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    for line in proc.stdout:
        sys.stdout.write("  server: " + line)
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return proc, int(m.group(1))
        if time.time() > deadline:
            break
    proc.kill()
    sys.exit("soak: the server did not start")


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:  # the server is gone: reported as not alive
        pass
    return 0


def metric(port, name):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
    except OSError:
        return float("nan")
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            return float(line.rsplit(" ", 1)[1])
    return float("nan")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.dropped = 0
        self.errors = []
        self.ttft = []  # (finish time, ttft seconds)

    def add(self, kind, value=None):
        with self.lock:
            if kind == "ok":
                self.ok += 1
            elif kind == "dropped":
                self.dropped += 1
            elif kind == "error":
                self.errors.append(value)
            elif kind == "ttft":
                self.ttft.append(value)


def one_request(port, rng, stats):
    prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60)))
    stream = rng.random() < 0.7
    drop_after = rng.randint(1, 20) if stream and rng.random() < 0.3 else None
    chat = rng.random() < 0.3
    body = {"max_tokens": rng.randint(8, 160), "temperature": rng.choice([0.0, 0.8]), "seed": rng.randint(0, 1 << 30),
            "stream": stream}
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = prompt
        path = "/v1/completions"
    start = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            stats.add("error", f"HTTP {resp.status}: {resp.read()[:200]!r}")
            return
        if not stream:
            data = json.loads(resp.read())
            if "choices" not in data:
                stats.add("error", f"no choices: {str(data)[:200]}")
                return
            stats.add("ok")
            return
        events = 0
        first = None
        finished = False
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                finished = True
                break
            data = json.loads(payload)
            if "error" in data:
                stats.add("error", f"stream error: {str(data)[:200]}")
                return
            events += 1
            if first is None:
                first = time.time() - start
            if drop_after is not None and events >= drop_after:
                # Reset, not a polite close: the server sees the peer vanish mid-stream.
                conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.sock.close()
                stats.add("dropped")
                return
        if not finished:
            stats.add("error", "stream ended without [DONE]")
            return
        stats.add("ttft", (time.time(), first if first is not None else float("nan")))
        stats.add("ok")
    except Exception as e:  # a failure of the server, not of the plan
        stats.add("error", f"{type(e).__name__}: {e}")
    finally:
        conn.close()


def p99(values):
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(0.99 * len(values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ridge", default="build/ridge")
    ap.add_argument("--model", required=True)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("server_args", nargs="*", help="extra `ridge serve` arguments (after --)")
    args = ap.parse_args()

    proc, port = start_server(args.ridge, args.model, args.server_args)
    stats = Stats()
    t0 = time.time()
    stop_at = t0 + args.minutes * 60
    samples = []

    def client(i):
        rng = random.Random(args.seed * 1000 + i)
        while time.time() < stop_at and proc.poll() is None:
            one_request(port, rng, stats)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.clients)]
    for t in threads:
        t.start()
    while time.time() < stop_at and proc.poll() is None:
        time.sleep(args.sample_s)
        samples.append((time.time() - t0, rss_bytes(proc.pid), metric(port, "ridge_kv_cache_usage_ratio")))
        print(f"  t={samples[-1][0]:6.0f}s rss={samples[-1][1] / 2**20:7.1f} MiB kv={samples[-1][2]:.3f} "
              f"ok={stats.ok} dropped={stats.dropped} errors={len(stats.errors)}", flush=True)
    for t in threads:
        t.join(timeout=180)
    alive = proc.poll() is None
    if not alive:
        print(f"  the server died with exit status {proc.returncode}")
    idle_kv = float("nan")
    if alive:
        for _ in range(60):  # the engine frees a dropped stream's blocks at its next step
            idle_kv = metric(port, "ridge_kv_cache_usage_ratio")
            if idle_kv == 0:
                break
            time.sleep(1)
    end_rss = rss_bytes(proc.pid) if alive else 0
    warm = [s for s in samples if s[0] >= 60] or samples
    first_min = [v for (t, v) in stats.ttft if t - t0 < 120 and t - t0 >= 60] or [v for (t, v) in stats.ttft][:50]
    last_min = [v for (t, v) in stats.ttft if t > stop_at - 60]
    result = {
        "minutes": args.minutes, "clients": args.clients, "server_alive": alive,
        "ok": stats.ok, "dropped_on_purpose": stats.dropped, "errors": len(stats.errors),
        "rss_after_warmup_mib": warm[0][1] / 2**20 if warm else None,
        "rss_end_mib": end_rss / 2**20,
        "kv_usage_when_idle": idle_kv,
        "ttft_p99_first_minute_s": p99(first_min), "ttft_p99_last_minute_s": p99(last_min),
    }
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        result["clean_exit"] = False
    else:
        result["clean_exit"] = proc.returncode == 0
    for e in stats.errors[:10]:
        print("  error:", e)
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0 if alive and not stats.errors and idle_kv == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
