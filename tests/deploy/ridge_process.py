"""`ridge serve` as a child process for the deployment tests, and the little
HTTP they need (Python's standard library only)."""
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


class Failures:
    """Collects failed checks, so that one run reports all of them."""

    def __init__(self):
        self.messages = []

    def check(self, condition, message):
        if not condition:
            self.messages.append(message)
            print(f"FAIL: {message}", flush=True)
        return condition

    def exit(self, what):
        if self.messages:
            print(f"{what}: {len(self.messages)} failure(s)", flush=True)
            sys.exit(1)
        print(f"{what}: ok", flush=True)


def convert_stories(ridge, shared, out_dir):
    """stories260K (llama2.c checkpoint in ../shared, read in place) as a GGUF in out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    gguf = os.path.join(out_dir, "stories260K.gguf")
    models = os.path.join(shared, "models")
    subprocess.run([ridge, "convert", "--checkpoint", os.path.join(models, "stories260K.bin"),
                    "--tokenizer", os.path.join(models, "tok512.bin"), "-o", gguf],
                   check=True, stdout=subprocess.DEVNULL)
    return gguf


def free_port():
    """A loopback port free now (for programs that cannot report the one they bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RidgeServe:
    """`ridge serve ARGS`; waits for its "listening on" line and knows its port."""

    def __init__(self, command, env=None, timeout_s=120):
        self.output = ""
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)
        match = self.read_until(re.compile(r"listening on http://[^:]+:(\d+)"), timeout_s)
        if not match:
            self.stop()
            raise RuntimeError(f"ridge serve did not start:\n{self.output}")
        self.port = int(match.group(1))

    def read_until(self, pattern, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            match = pattern.search(self.output)
            if match:
                return match
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    return pattern.search(self.output)
                self.output += chunk.decode(errors="replace")
        return None

    def stop(self):
        """SIGTERM, then the exit status (ridge exits 0 when stopped this way)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.output += self.proc.stdout.read().decode(errors="replace")
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def http(method, url, body=None, headers=None, timeout_s=60):
    """(status, body text) of one request; HTTP errors are returned, not
    raised, and a refused or broken connection is status 0."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        return 0, str(e)


def complete(port, prompt="Once upon a time", max_tokens=8, host="127.0.0.1"):
    """POST /v1/completions; (status, parsed JSON or the raw text)."""
    status, text = http("POST", f"http://{host}:{port}/v1/completions",
                        {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
    try:
        return status, json.loads(text)
    except json.JSONDecodeError:
        return status, text
