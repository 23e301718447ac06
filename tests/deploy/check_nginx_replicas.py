"""deploy/nginx/ridge-replicas.conf for real: two `ridge serve` replicas on
stories260K and Debian's nginx on loopback ports, run as this user from a
temporary folder, the shipped file included as-is but for its ports.

1. `nginx -t` accepts the configuration.
2. `ridge bench serve` (streamed requests, many in flight) through nginx:
   every request completes with all its tokens, and the replicas' /metrics
   count exactly the requests sent, spread over both (least_conn).
3. One replica killed: a second run through nginx still loses nothing (a
   refused connection is passed to the other replica).

Usage: check_nginx_replicas.py RIDGE SHARED_DIR SOURCE_DIR NGINX WORK_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ridge_process import Failures, RidgeServe, convert_stories, free_port, http  # noqa: E402

MODEL_NAME = "stories"
PROMPTS = 48
CONCURRENCY = 8
OUTPUT_TOKENS = 24


def nginx_config(source_dir, work, listen_port, replica_ports):
    """The shipped file with this run's ports, inside a main configuration
    that keeps every file nginx writes in `work`."""
    with open(os.path.join(source_dir, "deploy", "nginx", "ridge-replicas.conf")) as fh:
        conf = fh.read()
    shipped = ["127.0.0.1:8081", "127.0.0.1:8082"]
    for old, port in zip(shipped, replica_ports):
        assert conf.count(f"server {old} ") == 1, f"ridge-replicas.conf: expected one 'server {old}'"
        conf = conf.replace(f"server {old} ", f"server 127.0.0.1:{port} ")
    assert conf.count("listen 127.0.0.1:8080;") == 1, "ridge-replicas.conf: expected 'listen 127.0.0.1:8080;'"
    conf = conf.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{listen_port};")
    with open(os.path.join(work, "ridge-replicas.conf"), "w") as fh:
        fh.write(conf)
    temp = os.path.join(work, "temp")
    os.makedirs(temp, exist_ok=True)
    main = f"""daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log notice;
events {{ worker_connections 256; }}
http {{
    access_log {work}/access.log;
    default_type application/octet-stream;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {work}/ridge-replicas.conf;
}}
"""
    path = os.path.join(work, "nginx.conf")
    with open(path, "w") as fh:
        fh.write(main)
    return path


def finished_requests(port):
    """Sum of ridge_request_finished_total on one replica."""
    status, text = http("GET", f"http://127.0.0.1:{port}/metrics")
    return sum(float(v) for v in re.findall(r"^ridge_request_finished_total\{[^}]*\} (\S+)$", text, re.M))


def bench(f, ridge, port, work, name, prompts):
    """`ridge bench serve` through nginx; checks that nothing was lost."""
    result = os.path.join(work, f"{name}.json")
    r = subprocess.run([ridge, "bench", "serve", "--base-url", f"http://127.0.0.1:{port}", "--model", MODEL_NAME,
                        "--num-prompts", str(prompts), "--max-concurrency", str(CONCURRENCY),
                        "--random-input-len", "32", "--random-output-len", str(OUTPUT_TOKENS),
                        "--skip-test-request", "--no-progress", "--result-json", result],
                       capture_output=True, text=True, timeout=600)
    print(r.stdout)
    if not f.check(r.returncode == 0 and os.path.isfile(result), f"{name}: ridge bench serve failed: {r.stderr}"):
        return
    with open(result) as fh:
        d = json.load(fh)
    f.check(d["completed"] == prompts and d["failed"] == 0,
            f"{name}: {d['completed']} of {prompts} completed, {d['failed']} failed: {d.get('errors')}")
    f.check(d["short_outputs"] == 0 and all(n == OUTPUT_TOKENS for n in d["output_lens"]),
            f"{name}: outputs cut short: {d['output_lens']}")


def main():
    ridge, shared, source_dir, nginx, work = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    f = Failures()
    gguf = convert_stories(ridge, shared, work)
    args = ["serve", "-m", gguf, "--port", "0", "--threads", "1", "--kv-memory", "16MiB", "--model-name", MODEL_NAME]
    replicas = [RidgeServe([ridge, *args]) for _ in range(2)]
    ports = [r.port for r in replicas]
    listen = free_port()
    conf = nginx_config(source_dir, work, listen, ports)
    r = subprocess.run([nginx, "-t", "-p", work, "-c", conf, "-e", f"{work}/error.log"], capture_output=True, text=True)
    f.check(r.returncode == 0, f"nginx -t: {r.stdout}{r.stderr}")
    proxy = subprocess.Popen([nginx, "-p", work, "-c", conf, "-e", f"{work}/error.log"])
    try:
        deadline = time.monotonic() + 30
        while http("GET", f"http://127.0.0.1:{listen}/health")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        f.check(http("GET", f"http://127.0.0.1:{listen}/health")[0] == 200, "nginx never answered /health")

        bench(f, ridge, listen, work, "both-replicas", PROMPTS)
        counts = [finished_requests(p) for p in ports]
        print(f"requests finished per replica: {counts}")
        f.check(sum(counts) == PROMPTS, f"the replicas finished {counts}, {PROMPTS} were sent")
        f.check(all(c > 0 for c in counts), f"least_conn left a replica idle: {counts}")

        replicas[1].proc.send_signal(signal.SIGKILL)
        replicas[1].stop()
        bench(f, ridge, listen, work, "one-replica-killed", PROMPTS // 2)
        after = finished_requests(ports[0])
        f.check(after == counts[0] + PROMPTS // 2, f"the surviving replica finished {after - counts[0]} of "
                f"{PROMPTS // 2} requests after the other was killed")
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
        for replica in replicas:
            replica.stop()
    with open(os.path.join(work, "error.log")) as fh:
        print("nginx error.log:\n" + fh.read())
    f.exit("nginx in front of ridge serve replicas")


if __name__ == "__main__":
    main()
