"""deploy/grafana/ridge-dashboard.json and deploy/prometheus/prometheus.yml
against a real `ridge serve` on stories260K and a real Prometheus:

1. The dashboard's structure, as Grafana imports it: panels with ids, types,
   grid positions that fit 24 columns and do not overlap, Prometheus targets
   through the `datasource` variable, every $variable defined.
2. After a few completions, /metrics is scraped: every metric name and label
   the panels' PromQL references is exported, and every metric family ridge
   exports is on some panel (a new metric needs a panel, or this fails).
3. promtool (Debian's prometheus package): `check config` on the shipped
   scrape config, `check metrics` (the exposition format and naming lint) on
   ridge's /metrics.
4. Prometheus itself scrapes ridge with the shipped config (the target and
   interval changed for the test), and every panel query and variable query
   is run through its HTTP API: each parses and returns finite numbers.

Usage: check_dashboard.py RIDGE SHARED_DIR SOURCE_DIR PROMETHEUS_BIN_DIR WORK_DIR
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ridge_process import Failures, RidgeServe, complete, convert_stories, free_port, http  # noqa: E402

GRID_COLUMNS = 24
PANEL_TYPES = {"row", "timeseries", "stat", "gauge", "bargauge", "table", "heatmap", "text", "piechart"}
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__range", "__interval_ms", "__range_s"}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# PromQL words that are not metric names.
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or",
                   "unless", "inf", "nan"}
# Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"instance", "job"}


def check_structure(dash, f):
    """Grafana's import needs: a title, a uid, a schema version, panels with
    ids, types, grid positions and targets; the datasource as a variable."""
    f.check(isinstance(dash.get("title"), str) and dash["title"], "dashboard: no title")
    f.check(re.fullmatch(r"[A-Za-z0-9_-]{1,40}", str(dash.get("uid", ""))), "dashboard: uid missing or invalid")
    f.check(isinstance(dash.get("schemaVersion"), int), "dashboard: no integer schemaVersion")
    f.check("from" in dash.get("time", {}) and "to" in dash.get("time", {}), "dashboard: no time range")
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    f.check(ds.get("type") == "datasource" and ds.get("query") == "prometheus",
            "dashboard: no 'datasource' variable of type datasource for prometheus")
    for name, v in variables.items():
        if v.get("type") == "query":
            f.check(v.get("datasource") == DATASOURCE, f"variable {name}: datasource is not ${{datasource}}")
    panels = dash.get("panels", [])
    f.check(len(panels) >= 10, f"dashboard: only {len(panels)} panels")
    ids = [p.get("id") for p in panels]
    f.check(len(set(ids)) == len(ids) and all(isinstance(i, int) for i in ids), "panels: ids not unique integers")
    boxes = []
    for p in panels:
        where = f"panel {p.get('id')} '{p.get('title')}'"
        f.check(p.get("type") in PANEL_TYPES, f"{where}: unknown type {p.get('type')}")
        f.check(isinstance(p.get("title"), str) and p["title"], f"{where}: no title")
        g = p.get("gridPos", {})
        if not f.check(all(isinstance(g.get(k), int) for k in "hwxy"), f"{where}: gridPos needs integer h, w, x, y"):
            continue
        f.check(g["w"] >= 1 and g["h"] >= 1 and g["x"] >= 0 and g["x"] + g["w"] <= GRID_COLUMNS,
                f"{where}: gridPos {g} outside the {GRID_COLUMNS} columns")
        boxes.append((where, g))
        if p["type"] == "row":
            continue
        f.check(p.get("datasource") == DATASOURCE, f"{where}: datasource is not {DATASOURCE}")
        f.check("unit" in p.get("fieldConfig", {}).get("defaults", {}), f"{where}: no unit")
        targets = p.get("targets", [])
        f.check(targets, f"{where}: no targets")
        refs = [t.get("refId") for t in targets]
        f.check(len(set(refs)) == len(refs) and all(refs), f"{where}: refIds missing or repeated")
        for t in targets:
            f.check(t.get("datasource") == DATASOURCE, f"{where} {t.get('refId')}: datasource is not {DATASOURCE}")
            f.check(isinstance(t.get("expr"), str) and t["expr"].strip(), f"{where} {t.get('refId')}: no expr")
    for i, (a, ga) in enumerate(boxes):
        for b, gb in boxes[i + 1:]:
            overlap = (ga["x"] < gb["x"] + gb["w"] and gb["x"] < ga["x"] + ga["w"] and
                       ga["y"] < gb["y"] + gb["h"] and gb["y"] < ga["y"] + ga["h"])
            f.check(not overlap, f"{a} and {b} overlap")
    return variables


def panel_queries(dash):
    """(where, expr) of every panel target."""
    return [(f"panel '{p['title']}' {t['refId']}", t["expr"])
            for p in dash.get("panels", []) if p.get("type") != "row" for t in p.get("targets", [])]


def variable_queries(variables):
    """(name, metric selector, label) of each label_values(...) variable."""
    out = []
    for name, v in variables.items():
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query", "")
        m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", q.strip())
        out.append((name, m.group(1) if m else None, m.group(2) if m else None, q))
    return out


def referenced(expr):
    """The metric names and, for each, the label names an expression uses
    (in its selectors and, for every metric in it, its by/without clauses)."""
    labels = {}
    for m in re.finditer(r"([A-Za-z_:][\w:]*)\s*\{([^}]*)\}", expr):
        labels.setdefault(m.group(1), set()).update(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)\s*\"", m.group(2)))
    grouping = set()
    for m in re.finditer(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        grouping.update(x.strip() for x in m.group(1).split(",") if x.strip())
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", bare)  # selectors' matchers, ranges
    bare = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", bare)
    for m in re.finditer(r"(?<![\w$.])([A-Za-z_:][\w:]*)\s*(\(?)", bare):
        if not m.group(2) and m.group(1).lower() not in PROMQL_KEYWORDS:
            labels.setdefault(m.group(1), set())
    return {name: used | grouping for name, used in labels.items()}


def parse_exposition(text):
    """sample name -> label names, and family name -> type, from /metrics."""
    samples, families = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            families[name] = kind
        elif line and not line.startswith("#"):
            m = re.match(r"([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s", line)
            if m:
                samples.setdefault(m.group(1), set()).update(re.findall(r"(\w+)=\"", m.group(2) or ""))
    return samples, families


def grafana_to_promql(expr):
    """A panel query as Grafana sends it with every variable on All."""
    return (expr.replace("$__rate_interval", "1m").replace('"$instance"', '".*"')
            .replace('"$model_name"', '".*"'))


def prometheus_query(port, query):
    status, text = http("GET", f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
    try:
        return status, json.loads(text)
    except json.JSONDecodeError:
        return status, {"status": "unparsable", "error": text}


def wait_for(condition, timeout_s, step_s=0.25):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return False


def run_prometheus(f, prom_dir, source_dir, work, ridge_port, queries, variable_checks):
    """Scrapes ridge with the shipped config and runs every query."""
    with open(os.path.join(source_dir, "deploy", "prometheus", "prometheus.yml")) as fh:
        config = fh.read()
    for old, new in (("127.0.0.1:8080", f"127.0.0.1:{ridge_port}"), ("scrape_interval: 5s", "scrape_interval: 1s"),
                     ("scrape_timeout: 4s", "scrape_timeout: 1s")):
        if not f.check(config.count(old) == 1, f"prometheus.yml: expected one '{old}' to adapt for the test"):
            return
        config = config.replace(old, new)
    config_path = os.path.join(work, "prometheus-test.yml")
    with open(config_path, "w") as fh:
        fh.write(config)
    port = free_port()
    log = open(os.path.join(work, "prometheus.log"), "w")
    proc = subprocess.Popen([os.path.join(prom_dir, "prometheus"), f"--config.file={config_path}",
                             f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def up():
            status, body = prometheus_query(port, f'up{{job="ridge", instance="127.0.0.1:{ridge_port}"}}')
            result = body.get("data", {}).get("result", []) if status == 200 else []
            return bool(result) and result[0]["value"][1] == "1"
        if not f.check(wait_for(up, 60), "Prometheus never scraped ridge (up{job=\"ridge\"} != 1)"):
            return
        # Traffic after the first scrape, so that every rate() sees the counters rise.
        requests = [complete(ridge_port, max_tokens=n) for n in (4, 8, 16)]
        f.check(all(s == 200 for s, _ in requests), f"completions failed during the scrape: {requests}")

        def scraped():
            status, body = prometheus_query(port, "sum(ridge_request_finished_total)")
            result = body.get("data", {}).get("result", []) if status == 200 else []
            return bool(result) and float(result[0]["value"][1]) >= len(requests) + 1
        f.check(wait_for(scraped, 30), "Prometheus never saw the finished requests")
        time.sleep(2.5)  # two more scrapes
        for where, expr in queries:
            status, body = prometheus_query(port, grafana_to_promql(expr))
            if not f.check(status == 200 and body.get("status") == "success",
                           f"{where}: Prometheus refused the query ({status}): {body.get('error')}\n  {expr}"):
                continue
            values = [float(r["value"][1]) for r in body["data"]["result"]]
            f.check(values, f"{where}: no series\n  {expr}")
            f.check(all(math.isfinite(v) for v in values), f"{where}: non-finite values {values}\n  {expr}")
        for name, selector, label, expected in variable_checks:
            status, text = http("GET", f"http://127.0.0.1:{port}/api/v1/label/{label}/values?" +
                                urllib.parse.urlencode({"match[]": grafana_to_promql(selector)}))
            values = json.loads(text).get("data", []) if status == 200 else []
            f.check(expected in values, f"variable {name}: label_values gives {values}, expected {expected}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def main():
    ridge, shared, source_dir, prom_dir, work = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)  # a previous run's Prometheus data among others
    os.makedirs(work)
    f = Failures()
    with open(os.path.join(source_dir, "deploy", "grafana", "ridge-dashboard.json")) as fh:
        dash = json.load(fh)
    variables = check_structure(dash, f)
    queries = panel_queries(dash)
    var_queries = variable_queries(variables)
    for name, selector, label, q in var_queries:
        f.check(selector is not None, f"variable {name}: query '{q}' is not label_values(METRIC, LABEL)")
    used_vars = set()
    for _, expr in queries + [(n, q) for n, _, _, q in var_queries]:
        used_vars.update(re.findall(r"\$\{?(\w+)\}?", expr))
    for v in sorted(used_vars - set(variables) - GRAFANA_BUILTINS):
        f.check(False, f"dashboard: ${v} is used but not defined")

    gguf = convert_stories(ridge, shared, work)
    model_name = "stories-deploy"
    with RidgeServe([ridge, "serve", "-m", gguf, "--port", "0", "--threads", "2", "--kv-memory", "16MiB",
                     "--model-name", model_name]) as serve:
        status, body = complete(serve.port)
        f.check(status == 200, f"completion: {status} {body}")
        status, metrics = http("GET", f"http://127.0.0.1:{serve.port}/metrics")
        f.check(status == 200, f"/metrics: {status}")
        with open(os.path.join(work, "metrics.txt"), "w") as fh:
            fh.write(metrics)
        samples, families = parse_exposition(metrics)
        f.check(len(families) >= 10, f"/metrics exports only {sorted(families)}")

        used_families = set()
        for where, expr in queries + [(f"variable {n}", s) for n, s, _, _ in var_queries if s]:
            refs = referenced(expr)
            f.check(refs, f"{where}: no metric found in {expr}")
            for metric, labels in refs.items():
                if not f.check(metric in samples, f"{where}: '{metric}' is not exported by /metrics"):
                    continue
                family = next((fam for fam in families if metric == fam or (
                    families[fam] == "histogram" and metric in (fam + "_bucket", fam + "_sum", fam + "_count"))),
                    metric)
                used_families.add(family)
                missing = labels - samples[metric] - TARGET_LABELS
                f.check(not missing, f"{where}: '{metric}' has no label(s) {sorted(missing)}")
        for family in sorted(set(families) - used_families):
            f.check(False, f"/metrics exports '{family}' ({families[family]}) but no panel shows it")

        promtool = os.path.join(prom_dir, "promtool")
        config = os.path.join(source_dir, "deploy", "prometheus", "prometheus.yml")
        r = subprocess.run([promtool, "check", "config", config], capture_output=True, text=True)
        f.check(r.returncode == 0, f"promtool check config: {r.stdout}{r.stderr}")
        r = subprocess.run([promtool, "check", "metrics"], input=metrics, capture_output=True, text=True)
        f.check(r.returncode == 0, f"promtool check metrics on ridge's /metrics: {r.stdout}{r.stderr}")

        variable_checks = [(n, s, l, f"127.0.0.1:{serve.port}" if l == "instance" else model_name)
                           for n, s, l, _ in var_queries if s]
        run_prometheus(f, prom_dir, source_dir, work, serve.port, queries, variable_checks)
        f.check(serve.stop() == 0, f"ridge serve did not exit 0 on SIGTERM:\n{serve.output}")
    print(f"{len(queries)} panel queries, {len(var_queries)} variable queries, {len(families)} metric families")
    f.exit("grafana dashboard and prometheus config")


if __name__ == "__main__":
    main()
