"""The Debian package: CPack builds it from this build tree, dpkg installs it
into a temporary root, and the installed `ridge serve` answers a completion.

Why a temporary root (`dpkg --root=DIR`) rather than the real system: the test
must not change the machine it runs on, nor need root. dpkg still does a real
install there (its database, file lists, removal). The package's Depends are
checked against this machine's real packages: their dpkg records are copied
into the temporary root's database, so dpkg refuses the install if one is
missing or too old, exactly as it would on the real system. The binary then
runs from the temporary root with the system's shared libraries (which the
Depends name).

Usage: check_deb.py CPACK_CONFIG VERSION SHARED_DIR SOURCE_DIR WORK_DIR
"""
import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ridge_process import Failures, RidgeServe, complete, convert_stories  # noqa: E402

EXPECTED_FILES = [
    "usr/bin/ridge",
    "usr/lib/systemd/system/ridge.service",
    "usr/share/doc/ridge/README.md",
    "usr/share/doc/ridge/deploy/README.md",
    "usr/share/doc/ridge/deploy/grafana/ridge-dashboard.json",
    "usr/share/doc/ridge/deploy/prometheus/prometheus.yml",
    "usr/share/doc/ridge/deploy/Dockerfile",
    "usr/share/doc/ridge/deploy/nginx/ridge-replicas.conf",
    "usr/share/doc/ridge/examples/ridge.env",
    "usr/share/doc/ridge/examples/serve.toml",
]


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def control_fields(deb):
    text = run(["dpkg-deb", "--field", deb]).stdout
    return dict(re.findall(r"^([\w-]+): (.*)$", text, re.M))


def depends(field):
    """[(package, op, version)] of a Depends field (alternatives: the first)."""
    out = []
    for part in field.split(","):
        m = re.match(r"\s*([\w.+-]+)(?:\s*\((\S+)\s+([^)]+)\))?", part.split("|")[0])
        out.append((m.group(1), m.group(2), m.group(3)))
    return out


def needed_packages(binary, f):
    """Packages of this machine that hold the shared libraries the binary needs."""
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]", run(["readelf", "-d", binary]).stdout)
    f.check(needed, f"readelf found no NEEDED libraries in {binary}")
    resolved = dict(re.findall(r"^\s*(\S+) => (\S+)", run(["ldd", binary]).stdout, re.M))
    packages = {}
    for soname in needed:
        path = resolved.get(soname)
        if not f.check(path, f"ldd cannot resolve {soname}"):
            continue
        owner = run(["dpkg", "-S", os.path.realpath(path)])
        if owner.returncode != 0:  # usrmerge: dpkg may know the file under /lib
            owner = run(["dpkg", "-S", os.path.realpath(path).replace("/usr/lib/", "/lib/", 1)])
        if f.check(owner.returncode == 0, f"no package owns {path} ({soname})"):
            packages[soname] = owner.stdout.split(":")[0]
    return packages


def fake_dpkg_root(root, dependency_packages):
    """An empty dpkg database in root that knows this machine's records of the dependencies."""
    admin = os.path.join(root, "var", "lib", "dpkg")
    for d in ("info", "updates"):
        os.makedirs(os.path.join(admin, d), exist_ok=True)
    records = []
    for pkg in dependency_packages:
        record = run(["dpkg-query", "-s", pkg]).stdout.strip()
        if record:
            records.append(record)
            arch = re.search(r"^Architecture: (\S+)", record, re.M).group(1)
            same = re.search(r"^Multi-Arch: same", record, re.M)
            open(os.path.join(admin, "info", f"{pkg}:{arch}.list" if same else f"{pkg}.list"), "w").close()
    with open(os.path.join(admin, "status"), "w") as fh:
        fh.write("\n\n".join(records) + "\n")
    open(os.path.join(admin, "available"), "w").close()


def dpkg(root, *args):
    return run(["dpkg", f"--root={root}", "--force-not-root", f"--log={root}/dpkg.log", *args])


def check_installed_ridge(f, root, shared, work):
    ridge = os.path.join(root, "usr", "bin", "ridge")
    gguf = convert_stories(ridge, shared, work)
    examples = os.path.join(root, "usr", "share", "doc", "ridge", "examples")
    # The shipped TOML example is valid; its model and port overridden by flags.
    with RidgeServe([ridge, "serve", "--config", os.path.join(examples, "serve.toml"), "-m", gguf,
                     "--port", "0", "--threads", "2", "--kv-memory", "16MiB"]) as serve:
        status, body = complete(serve.port, max_tokens=12)
        text = body["choices"][0]["text"] if status == 200 else ""
        f.check(status == 200 and text, f"installed ridge serve: completion {status} {body}")
        print(f"installed ridge serve on port {serve.port} answered: {text!r}")
        f.check(serve.stop() == 0, f"installed ridge serve did not exit 0 on SIGTERM:\n{serve.output}")
    # The shipped environment file: every variable, commented or not, is a setting that takes its value.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIDGE_")}
    with open(os.path.join(examples, "ridge.env")) as fh:
        assignments = re.findall(r"^#? ?(RIDGE_\w+)=(.*)$", fh.read(), re.M)
    f.check(len(assignments) >= 5, f"ridge.env: only {assignments}")
    env.update(dict(assignments))
    env.pop("RIDGE_CONFIG", None)  # names a file that does not exist here
    r = run([ridge, "serve", "--print-config"], env=env)
    f.check(r.returncode == 0, f"ridge.env's settings: {r.stdout}{r.stderr}")
    for name, _ in assignments:
        if name != "RIDGE_CONFIG":
            f.check(f"(env {name})" in r.stdout, f"ridge.env: {name} is not a setting of ridge serve\n{r.stdout}")


def main():
    cpack_config, version, shared, source_dir, work = sys.argv[1:6]
    f = Failures()
    shutil.rmtree(work, ignore_errors=True)
    out = os.path.join(work, "cpack")
    r = run(["cpack", "--config", cpack_config, "-B", out])
    debs = glob.glob(os.path.join(out, "*.deb"))
    if not f.check(r.returncode == 0 and len(debs) == 1, f"cpack: {r.stdout}{r.stderr}"):
        f.exit("debian package")
    deb = debs[0]
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    f.check(os.path.basename(deb) == f"ridge_{version}_{arch}.deb", f"package file name {deb}")
    fields = control_fields(deb)
    print(f"{os.path.basename(deb)}: {os.path.getsize(deb)} bytes\n" +
          "\n".join(f"  {k}: {v}" for k, v in fields.items()))
    f.check(fields.get("Package") == "ridge", f"Package: {fields.get('Package')}")
    f.check(fields.get("Version") == version, f"Version {fields.get('Version')}, the project's is {version}")
    f.check(fields.get("Architecture") == arch, f"Architecture {fields.get('Architecture')}")
    f.check(fields.get("Maintainer"), "no Maintainer")

    contents = run(["dpkg-deb", "--contents", deb]).stdout
    paths = {line.split()[-1].lstrip("./") for line in contents.splitlines() if line.strip()}
    for expected in EXPECTED_FILES:
        f.check(expected in paths, f"the package lacks {expected}")
    f.check(all(line.split()[1] == "root/root" for line in contents.splitlines() if line.strip()),
            "files not owned by root/root")

    extracted = os.path.join(work, "extracted")
    run(["dpkg-deb", "-x", deb, extracted])
    binary = os.path.join(extracted, "usr", "bin", "ridge")
    f.check(".symtab" not in run(["readelf", "-S", binary]).stdout, "the packaged binary is not stripped")
    deps = depends(fields.get("Depends", ""))
    dep_names = {name for name, _, _ in deps}
    for soname, package in needed_packages(binary, f).items():
        f.check(package in dep_names, f"{soname} comes from {package}, which Depends does not name")

    # Install, run, remove in a temporary root (see the docstring).
    root = os.path.join(work, "root")
    fake_dpkg_root(root, dep_names)
    r = dpkg(root, "-i", deb)
    f.check(r.returncode == 0, f"dpkg -i into {root}: {r.stdout}{r.stderr}")
    f.check("dependency problems" not in r.stderr, f"dpkg: unmet dependencies: {r.stderr}")
    for expected in EXPECTED_FILES:
        f.check(os.path.isfile(os.path.join(root, expected)), f"dpkg did not install {expected}")
    unit = open(os.path.join(root, "usr/lib/systemd/system/ridge.service")).read()
    f.check("\nExecStart=/usr/bin/ridge serve\n" in unit, "the installed unit's ExecStart is not /usr/bin/ridge serve")
    if os.path.isfile(os.path.join(root, "usr", "bin", "ridge")):
        check_installed_ridge(f, root, shared, os.path.join(work, "model"))
    r = dpkg(root, "-r", "ridge")
    f.check(r.returncode == 0, f"dpkg -r: {r.stdout}{r.stderr}")
    for expected in EXPECTED_FILES:
        f.check(not os.path.exists(os.path.join(root, expected)), f"dpkg -r left {expected}")
    f.exit("debian package")


if __name__ == "__main__":
    main()
