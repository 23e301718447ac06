#!/usr/bin/env python3
"""Holds ridge's Jinja interpreter to Jinja2 itself (Debian's python3-jinja2).

For one template file, renders every conversation of conversations.json, with
add_generation_prompt false and true, the way transformers' apply_chat_template
does (ImmutableSandboxedEnvironment, trim_blocks and lstrip_blocks on,
keep_trailing_newline off, loop controls, its tojson, raise_exception and
strftime_now), and with `ridge template` on the same variables; the outputs
must be byte-equal. When Jinja2 raises, ridge must fail too, and with the same
message when the template raised it itself (raise_exception).

Usage: oracle.py --ridge PATH/TO/ridge TEMPLATE.jinja [...]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
import jinja2.sandbox

HERE = os.path.dirname(os.path.abspath(__file__))
NOW_S = 1721001600  # 2024-07-15 00:00:00 UTC, strftime_now's clock on both sides
BOS, EOS = "<|bos|>", "<|eos|>"


class Raised(Exception):
    pass


def jinja_render(source, variables):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW_S, tz=datetime.timezone.utc).strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source).render(**variables)


def ridge_render(ridge, template_path, variables, work):
    context = os.path.join(work, "context.json")
    with open(context, "w", encoding="utf-8") as f:
        json.dump(variables, f, ensure_ascii=False)
    p = subprocess.run([ridge, "template", "-t", template_path, "-c", context, "--now", str(NOW_S)],
                       capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check_template(ridge, path, conversations, work):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    failures, rendered = [], 0
    for name, conv in conversations.items():
        for agp in (False, True):
            variables = {"messages": conv["messages"], "tools": conv.get("tools"), "documents": conv.get("documents"),
                         "add_generation_prompt": agp, "bos_token": BOS, "eos_token": EOS}
            case = f"{name} add_generation_prompt={agp}"
            try:
                expected, expected_error = jinja_render(source, variables), None
            except Exception as e:  # Jinja2 errors, and the TypeErrors Python raises inside a template
                expected, expected_error = None, e
            rc, out, err = ridge_render(ridge, path, variables, work)
            if expected_error is None:
                if rc != 0:
                    failures.append(f"{case}: ridge failed ({err.strip()}), Jinja2 rendered {expected!r}")
                elif out != expected:
                    failures.append(f"{case}: outputs differ\n  jinja2: {expected!r}\n  ridge:  {out!r}")
                else:
                    rendered += 1
            else:
                if rc == 0:
                    failures.append(f"{case}: Jinja2 raised {expected_error!r}, ridge rendered {out!r}")
                elif type(expected_error) is jinja2.exceptions.TemplateError and \
                        not err.strip().endswith(str(expected_error)):
                    failures.append(f"{case}: raise_exception message differs\n  jinja2: {expected_error}\n"
                                    f"  ridge:  {err.strip()}")
    return rendered, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ridge", required=True)
    ap.add_argument("--conversations", default=os.path.join(HERE, "conversations.json"))
    ap.add_argument("templates", nargs="+")
    args = ap.parse_args()
    with open(args.conversations, encoding="utf-8") as f:
        conversations = json.load(f)
    failed = False
    with tempfile.TemporaryDirectory() as work:
        for path in args.templates:
            rendered, failures = check_template(args.ridge, path, conversations, work)
            total = 2 * len(conversations)
            status = "FAIL" if failures else "ok"
            print(f"{status} {os.path.basename(path)}: {rendered}/{total} byte-equal renders, "
                  f"{total - rendered - len(failures)} errors matched, {len(failures)} failures")
            for failure in failures:
                print("  " + failure)
            failed = failed or bool(failures)
            if rendered == 0:
                print("  (no conversation rendered: the template tests nothing)")
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
