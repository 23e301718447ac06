"""deploy/ridge.service, checked without a running systemd (a container has
none as PID 1, so the unit cannot be started here):
  - `systemd-analyze verify` accepts it with no warning at all (an unknown
    key or a bad value is only a warning there, so any output fails);
  - `systemd-analyze security --offline` rates its sandbox at most
    MAX_EXPOSURE (0 = fully locked down, 10 = unprotected);
  - the settings the unit promises are there: a dynamic user, ProtectSystem
    strict, ProtectHome, NoNewPrivileges, PrivateTmp, restart on failure, the
    RIDGE_* environment file, and no ExecReload (ridge cannot reload).
ExecStart is pointed at the built binary, as verify checks that it exists.

Usage: check_systemd_unit.py SOURCE_DIR RIDGE WORK_DIR
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ridge_process import Failures  # noqa: E402

MAX_EXPOSURE = 2.0
REQUIRED = {
    "DynamicUser": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "NoNewPrivileges": "yes",
    "PrivateTmp": "yes",
    "Restart": "on-failure",
    "EnvironmentFile": "-/etc/default/ridge",
    "ExecStart": "/usr/bin/ridge serve",
}


def main():
    source_dir, ridge, work = sys.argv[1:4]
    f = Failures()
    if not f.check(shutil.which("systemd-analyze"), "systemd-analyze is missing: install systemd (scripts/setup.sh)"):
        f.exit("systemd unit")
    with open(os.path.join(source_dir, "deploy", "ridge.service")) as fh:
        unit = fh.read()
    settings = {}
    for key, value in re.findall(r"^(\w+)=(.*)$", unit, re.M):
        settings.setdefault(key, value)
    for key, value in REQUIRED.items():
        f.check(settings.get(key) == value, f"ridge.service: {key}={settings.get(key)}, expected {value}")
    f.check("ExecReload" not in settings, "ridge.service: ExecReload, but ridge cannot reload its settings")

    os.makedirs(work, exist_ok=True)
    unit_path = os.path.join(work, "ridge.service")
    with open(unit_path, "w") as fh:
        fh.write(unit.replace("ExecStart=/usr/bin/ridge ", f"ExecStart={os.path.abspath(ridge)} "))
    r = subprocess.run(["systemd-analyze", "verify", unit_path], capture_output=True, text=True)
    f.check(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
            f"systemd-analyze verify (rc {r.returncode}):\n{r.stdout}{r.stderr}")
    r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", unit_path],
                       capture_output=True, text=True)
    m = re.search(r"Overall exposure level for ridge\.service: ([\d.]+)", r.stdout)
    if f.check(m, f"systemd-analyze security gave no exposure level:\n{r.stdout}{r.stderr}"):
        print(m.group(0))
        f.check(float(m.group(1)) <= MAX_EXPOSURE, f"exposure {m.group(1)} > {MAX_EXPOSURE}:\n{r.stdout}")
    f.exit("systemd unit")


if __name__ == "__main__":
    main()
