#!/usr/bin/python3
"""The independent judge of ridge's JSON Schema front end: Debian's python3-jsonschema.

Subcommands (every record is one JSON line; schemas travel as JSON *text* so
that the declaration order of properties survives a C++ map):

  cases            the hand-written table: {"name", "schema", "cases": [{"text", "valid", "expect"}]}
  fuzz --seed S --count N [--bounded]
                   random schemas (nesting, enums, bounded arrays, anyOf, refs, bounds)
                   with generated instances, in the same shape (--bounded: only
                   schemas whose documents are all short, for sampling models)
  validate         reads {"schema", "text"} lines, writes {"ok", "error"} lines

"valid" is jsonschema's verdict (Draft 2020-12, formats checked) on the text
parsed by Python's json. "expect" is what the grammar must do with the text:
"accept" (valid, and written in the layout json_schema_to_gbnf.h documents),
"reject" (invalid), or "either" (valid, but perhaps outside that layout: a
mutation the generator cannot vouch for). The grammar may never accept an
invalid text.

jsonschema checks "date-time" and "time" only with rfc3339-validator, which
Debian 12 does not package: those two are checked here with the standard
library's datetime parser behind RFC 3339's shape.
"""
import argparse
import datetime
import json
import random
import re
import string
import sys

import jsonschema
from jsonschema import Draft202012Validator

FORMAT_CHECKER = jsonschema.FormatChecker()
_RFC3339_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)")


@FORMAT_CHECKER.checks("time")
def _is_time(text):
    if not isinstance(text, str):
        return True
    if not _RFC3339_TIME.fullmatch(text):
        return False
    datetime.time.fromisoformat(text.replace("z", "+00:00").replace("Z", "+00:00"))
    return True


@FORMAT_CHECKER.checks("date-time")
def _is_date_time(text):
    if not isinstance(text, str):
        return True
    parts = re.split("[Tt]", text)
    if len(parts) != 2 or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", parts[0]):
        return False
    datetime.date.fromisoformat(parts[0])
    return _is_time(parts[1])


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def verdict(schema, text):
    """(ok, error): does `text` parse as JSON and validate against `schema`?"""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:
        return False, f"not JSON: {e}"
    try:
        validator = Draft202012Validator(schema, format_checker=FORMAT_CHECKER)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except Exception as e:  # a format checker that raised: the value is not in that format
        return False, f"{type(e).__name__}: {e}"
    return (error is None), (None if error is None else error.message)


# ---------------------------------------------------------------- instances

ALPHABET = string.ascii_letters + string.digits + " _-.,:;!?" + '"\\/\n\t' + "éß中😀"


def random_text(rng, lo, hi):
    n = rng.randint(lo, hi)
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def resolve(root, ref):
    node = root
    for token in ref[1:].split("/")[1:] if ref != "#" else []:
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node


def any_value(rng, depth):
    kinds = ["string", "integer", "number", "boolean", "null"] + (["object", "array"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "object":
        return {f"k{i}": any_value(rng, depth + 1) for i in range(rng.randint(0, 2))}
    if kind == "array":
        return [any_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return generate({"type": kind}, {}, rng, depth)


def pick_integer(rng, lo, hi):
    lo = max(lo, -10**15)
    hi = min(hi, 10**15)
    return rng.choice([lo, hi, rng.randint(lo, hi), rng.randint(lo, min(hi, lo + 20))])


def integer_bounds(schema):
    import math
    lo, hi = -10**15, 10**15
    if "minimum" in schema:
        lo = max(lo, math.ceil(schema["minimum"]))
    if "exclusiveMinimum" in schema:
        lo = max(lo, math.floor(schema["exclusiveMinimum"]) + 1)
    if "maximum" in schema:
        hi = min(hi, math.floor(schema["maximum"]))
    if "exclusiveMaximum" in schema:
        hi = min(hi, math.ceil(schema["exclusiveMaximum"]) - 1)
    return lo, hi


def generate_number(schema, rng):
    """A number in the layout json_number_ranges.h documents for bounded numbers."""
    bounded = any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
    if not bounded:
        return rng.choice([0, -3, 17, round(rng.uniform(-1000, 1000), 4), 1.5e-05, -2.25e+30])
    lo, hi = integer_bounds(schema)
    candidates = []
    if lo <= hi:
        candidates.append(pick_integer(rng, lo, hi))
    a = max(schema.get("minimum", -1e300), schema.get("exclusiveMinimum", -1e300))
    c = min(schema.get("maximum", 1e300), schema.get("exclusiveMaximum", 1e300))
    for n in range(max(0, int(a) - 1), max(0, int(a) - 1) + 5):  # n.25 for n >= 0 (n == a: the digits are not 0)
        if n >= a and n + 1 <= c:
            candidates.append(n + 0.25)
    return rng.choice(candidates) if candidates else None


def generate_string(schema, rng):
    fmt = schema.get("format")
    if fmt == "date":
        return f"{rng.randint(1, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if fmt == "time":
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}" + rng.choice(
            ["Z", "+02:00", "-11:30", ".5Z", ".123456+05:45"])
    if fmt == "date-time":
        return generate_string({"format": "date"}, rng) + "T" + generate_string({"format": "time"}, rng)
    if fmt == "uuid":
        h = "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    if fmt == "email":
        return rng.choice(["a@b.co", "first.last+tag@sub.example.org", "x_y@host-name.io"])
    if "pattern" in schema:
        return PATTERN_EXAMPLES[schema["pattern"]](rng)
    lo = schema.get("minLength", 0)
    hi = schema.get("maxLength", lo + 8)
    return random_text(rng, lo, hi)


def generate(schema, root, rng, depth=0):
    """A value valid against `schema`, laid out as the grammar writes it (declared order first)."""
    if schema is True or schema == {}:
        return any_value(rng, depth)
    if "$ref" in schema:
        return generate(resolve(root, schema["$ref"]), root, rng, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return generate(rng.choice(schema[key]), root, rng, depth + 1)
    if "allOf" in schema:
        return generate(schema["allOf"][0], root, rng, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind is None:
        kind = ("object" if "properties" in schema else "array" if "items" in schema or "prefixItems" in schema
                else "string" if "minLength" in schema or "pattern" in schema or "format" in schema
                else "number" if "minimum" in schema or "maximum" in schema else None)
        if kind is None:
            return any_value(rng, depth)
    if kind == "object":
        out = {}
        required = set(schema.get("required", []))
        for key, sub in schema.get("properties", {}).items():
            if key in required or (depth < 4 and rng.random() < 0.6):
                out[key] = generate(sub, root, rng, depth + 1)
        extra = schema.get("additionalProperties", True)
        if extra is not False and depth < 4:
            for i in range(rng.randint(0, 2)):
                key = f"x{rng.randint(0, 99)}_{i}"
                if key not in out and key not in schema.get("properties", {}):
                    out[key] = any_value(rng, depth + 1) if extra is True else generate(extra, root, rng, depth + 1)
        return out
    if kind == "array":
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", True)
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", max(lo, len(prefix)) + (0 if depth >= 4 else 3))
        if items is False:
            hi = min(hi, len(prefix))
        n = rng.randint(lo, hi) if depth < 4 else lo
        return [generate(prefix[i] if i < len(prefix) else items, root, rng, depth + 1) for i in range(n)]
    if kind == "string":
        return generate_string(schema, rng)
    if kind == "integer":
        lo, hi = integer_bounds(schema)
        return pick_integer(rng, lo, hi)
    if kind == "number":
        return generate_number(schema, rng)
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def depth_of(value):
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def layout(value, rng):
    """JSON text in one of the layouts the grammar's bounded whitespace allows."""
    styles = [dict(separators=(",", ":")), dict(separators=(", ", ": "))]
    if depth_of(value) <= 9:
        styles.append(dict(indent=2))
    return json.dumps(value, ensure_ascii=False, **rng.choice(styles))


def mutate(value, rng):
    """A value with one change somewhere that often makes it invalid."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        action = rng.random()
        if action < 0.3:
            del out[key]
        elif action < 0.5:
            out["zz_extra"] = 1
        else:
            out[key] = mutate(out[key], rng)
        return out
    if isinstance(value, list) and value and rng.random() < 0.7:
        out = list(value)
        action = rng.random()
        if action < 0.3:
            out.pop()
        elif action < 0.5:
            out.append(out[0])
        else:
            i = rng.randrange(len(out))
            out[i] = mutate(out[i], rng)
        return out
    if isinstance(value, bool) or value is None:
        return rng.choice([0, "true", [], not value if isinstance(value, bool) else False])
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, -value - 1, value * 1000 + 7, value + 0.5, str(value)])
    if isinstance(value, float):
        return rng.choice([value * 10 + 1, -value - 1, int(value), str(value)])
    if isinstance(value, str):
        return rng.choice([value + "x", value[:-1], value + "9", "", 42, value.upper() + "-"])
    return rng.choice([None, 1, "s"])


def text_mutations(text, rng):
    cut = rng.randrange(len(text)) if text else 0
    return [text[:cut], text[:cut] + rng.choice('x,}]" 1') + text[cut:], text + text[-1:], "  " + text + "\n\n\n"]


def cases_for(schema, rng, valid_values=(), invalid_texts=(), n_generated=6, n_mutations=10):
    out = []
    schema_obj = json.loads(schema)

    def add(text, expect_if_valid):
        ok, error = verdict(schema_obj, text)
        out.append({"text": text, "valid": ok, "error": error,
                    "expect": expect_if_valid if ok else "reject"})

    values = list(valid_values)
    for _ in range(n_generated):
        v = generate(schema_obj, schema_obj, rng)
        if v is not None or schema_obj.get("type") in ("null", ["null"]) or schema_obj == {}:
            values.append(v)
    for v in values:
        add(layout(v, rng), "accept")
    for t in invalid_texts:
        add(t, "either")
    for _ in range(n_mutations):
        if not values:
            break
        v = rng.choice(values)
        if rng.random() < 0.6:
            add(layout(mutate(v, rng), rng), "either")
        else:
            add(rng.choice(text_mutations(layout(v, rng), rng)), "either")
    return out


# ---------------------------------------------------------------- the table

# Patterns the table and the fuzz use, with a generator of matching strings each.
PATTERN_EXAMPLES = {
    "^[a-z]+\\d{2,3}$": lambda r: "".join(r.choice("abcxyz") for _ in range(r.randint(1, 5))) + str(r.randint(10, 999)),
    "abc": lambda r: r.choice(["abc", "xxabc", "abc\"\\yy", "_abc_", "\nabc"]),
    "^(foo|bar)-\\w+$": lambda r: r.choice(["foo", "bar"]) + "-" + r.choice(["x", "a_1", "Z9"]),
    "^\\+?[0-9 ()-]{7,15}$": lambda r: r.choice(["+1 (555) 010-99", "0123456", "(01) 234-5678"]),
    '^a"b\\\\c$': lambda r: 'a"b\\c',
    "^[^\\s]{2,4}(?:\\.[A-Z]{1,2})?$": lambda r: r.choice(["ab", "a-b!", "é中.Q", "xy.AB"]),
    "^\\d+(\\.\\d*)?|^none$": lambda r: r.choice(["12", "3.", "4.56", "none", "7abc"]),
    "^.{0,3}$": lambda r: r.choice(["", "a", "\"\\\t", "😀😀😀"]),
}

# (name, schema, extra valid values, invalid texts)
TABLE = [
    ("object_required_optional",
     {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                       "email": {"type": "string", "format": "email"}},
      "required": ["name", "age"], "additionalProperties": False},
     [{"name": "Ann", "age": 31}, {"name": "", "age": -2, "email": "a@b.cd"}],
     ['{"age": 3, "name": "x"}', '{"name":"x"}', '{"name":"x","age":1,"other":2}', '{"name":"x","age":1.5}']),
    ("object_optional_only",
     {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"type": "number"}},
      "additionalProperties": False},
     [{}, {"b": None}, {"a": True, "c": 2.5}],
     ['{"a": true,}', '{,"a":true}', '{"c":1 "a":true}']),
    ("additional_properties_default",
     {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
     [{"id": 1, "extra": "x", "more": [1, {"y": None}]}],
     ['{"id":1,"id":"dup"}', '{"id":1,"id":2}', '{"extra":1}']),
    ("additional_properties_schema",
     {"type": "object", "properties": {"title": {"type": "string"}},
      "additionalProperties": {"type": "integer", "minimum": 0}},
     [{"title": "t", "x": 0, "y": 12}, {"z": 5}],
     ['{"title":"t","x":-1}', '{"x":"1"}', '{"title":1}']),
    ("nested",
     {"type": "object", "properties": {
         "user": {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {
             "type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 3}},
                  "required": ["id", "tags"], "additionalProperties": False},
         "score": {"type": "number", "minimum": 0, "maximum": 1}},
      "required": ["user", "score"], "additionalProperties": False},
     [{"user": {"id": 7, "tags": ["a", "bb"]}, "score": 0.25}, {"user": {"id": 0, "tags": []}, "score": 1}],
     ['{"user":{"id":7,"tags":["toolong"]},"score":0.5}', '{"user":{"id":7,"tags":[]},"score":1.5}',
      '{"user":{"id":7,"tags":["a","b","c","d"]},"score":0}']),
    ("array_bounds",
     {"type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 5}, "minItems": 2, "maxItems": 4},
     [[0, 0], [-5, 5, 1, 2]],
     ["[]", "[1]", "[1,2,3,4,5]", "[1,6]", "[1, 2,]"]),
    ("prefix_items_closed",
     {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": False, "minItems": 1},
     [["x"], ["y", False]],
     ["[]", "[true]", '["x", true, 1]']),
    ("prefix_items_then_items",
     {"type": "array", "prefixItems": [{"const": "head"}], "items": {"type": "null"}},
     [[], ["head"], ["head", None, None]],
     ['["tail"]', '["head", 1]']),
    ("enum_mixed",
     {"enum": ["red", "say \"hi\"", "naïve", 42, None, True, {"k": [1, 2]}, [1, "a"]]},
     ["red", 'say "hi"', "naïve", 42, None, True, {"k": [1, 2]}],
     ['"blue"', "43", "false", '"Red"']),
    ("enum_with_type",
     {"type": "string", "enum": ["a", 1, "b"]},
     ["a", "b"],
     ["1", '"c"']),
    ("const_object",
     {"const": {"v": 1, "w": "x"}},
     [{"v": 1, "w": "x"}],
     ['{"v":2,"w":"x"}', '{"v":1}']),
    ("any_of",
     {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10},
                {"type": "array", "items": {"type": "boolean"}}]},
     ["ab", 10, [True, False], []],
     ['"abc"', "9", "[1]", "null"]),
    ("one_of_disjoint",
     {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                 "required": ["kind", "x"], "additionalProperties": False},
                {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}},
                 "required": ["kind", "y"], "additionalProperties": False}]},
     [{"kind": "a", "x": 1}, {"kind": "b", "y": "s"}],
     ['{"kind":"a","y":"s"}', '{"kind":"c","x":1}']),
    ("type_list",
     {"type": ["string", "null"], "maxLength": 3},
     ["abc", None, ""],
     ['"abcd"', "0", "false"]),
    ("defs_ref",
     {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                          "required": ["x", "y"], "additionalProperties": False}},
      "type": "array", "items": {"$ref": "#/$defs/point"}},
     [[{"x": 1, "y": 2.5}], []],
     ['[{"x":1}]', '[{"x":1,"y":"2"}]']),
    ("definitions_ref",
     {"definitions": {"name": {"type": "string", "minLength": 1}},
      "type": "object", "properties": {"first": {"$ref": "#/definitions/name"}}, "required": ["first"],
      "additionalProperties": False},
     [{"first": "J"}],
     ['{"first":""}', '{"first":null}']),
    ("recursive_tree",
     {"$defs": {"node": {"type": "object", "properties": {
         "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                         "required": ["value"], "additionalProperties": False}},
      "$ref": "#/$defs/node"},
     [{"value": 1, "children": [{"value": 2}, {"value": 3, "children": [{"value": 4, "children": []}]}]}],
     ['{"value":1,"children":[{"children":[]}]}', '{"value":1,"children":[{"value":"2"}]}']),
    ("recursive_root",
     {"type": "object", "properties": {"name": {"type": "string"}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
      "required": ["name", "next"], "additionalProperties": False},
     [{"name": "a", "next": {"name": "b", "next": None}}],
     ['{"name":"a","next":{"name":"b"}}', '{"name":"a","next":0}']),
    ("string_lengths",
     {"type": "string", "minLength": 2, "maxLength": 4},
     ["ab", "é😀", '"\\\n', "abcd"],
     ['"a"', '"abcde"', '"\\u00e9"', '"\\ud83d\\ude00"']),
    ("patterns",
     {"type": "object", "properties": {
         "code": {"type": "string", "pattern": "^[a-z]+\\d{2,3}$"},
         "contains": {"type": "string", "pattern": "abc"},
         "choice": {"type": "string", "pattern": "^(foo|bar)-\\w+$"},
         "phone": {"type": "string", "pattern": "^\\+?[0-9 ()-]{7,15}$"},
         "quote": {"type": "string", "pattern": '^a"b\\\\c$'},
         "nospace": {"type": "string", "pattern": "^[^\\s]{2,4}(?:\\.[A-Z]{1,2})?$"},
         "alt_anchor": {"type": "string", "pattern": "^\\d+(\\.\\d*)?|^none$"},
         "short": {"type": "string", "pattern": "^.{0,3}$"}},
      "additionalProperties": False},
     [{"code": "ab12", "contains": "xabcx"}, {"quote": 'a"b\\c', "short": "\t"}],
     ['{"code":"ab1"}', '{"code":"AB12"}', '{"contains":"ab c"}', '{"choice":"baz-x"}', '{"phone":"12"}',
      '{"nospace":"a b"}', '{"short":"abcd"}', '{"short":"\\n"}', '{"alt_anchor":"x"}']),
    ("formats",
     {"type": "object", "properties": {"d": {"type": "string", "format": "date"},
                                       "t": {"type": "string", "format": "time"},
                                       "dt": {"type": "string", "format": "date-time"},
                                       "u": {"type": "string", "format": "uuid"},
                                       "e": {"type": "string", "format": "email"}},
      "additionalProperties": False},
     [{"d": "2024-02-28", "t": "23:59:59Z", "dt": "1999-12-31T00:00:00.5+01:00",
       "u": "123e4567-e89b-12d3-a456-426614174000", "e": "a.b@c.de"}],
     ['{"d":"2023-02-30"}', '{"d":"2023-13-01"}', '{"t":"24:00:00Z"}', '{"t":"12:00:00"}',
      '{"dt":"2020-01-01 10:00:00Z"}', '{"u":"123e4567e89b12d3a456426614174000"}', '{"e":"nope"}']),
    ("integer_bounds",
     {"type": "object", "properties": {
         "pct": {"type": "integer", "minimum": 0, "maximum": 100},
         "sym": {"type": "integer", "minimum": -50, "maximum": 50},
         "odd": {"type": "integer", "minimum": 37, "maximum": 512},
         "big": {"type": "integer", "minimum": 1000000, "maximum": 999999999},
         "neg": {"type": "integer", "minimum": -1000, "maximum": -10},
         "excl": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
         "from": {"type": "integer", "minimum": 5},
         "upto": {"type": "integer", "maximum": -3},
         "frac": {"type": "integer", "minimum": 1.5, "maximum": 3.5}},
      "additionalProperties": False},
     [{"pct": 0, "sym": -50, "odd": 37, "big": 1000000, "neg": -1000, "excl": 1, "from": 5, "upto": -3, "frac": 2},
      {"pct": 100, "sym": 50, "odd": 512, "big": 999999999, "neg": -10, "excl": 9, "from": 123456789, "upto": -99999,
       "frac": 3},
      {"odd": 99, "big": 5000000, "neg": -99}],
     ['{"pct":101}', '{"pct":-1}', '{"sym":-51}', '{"odd":36}', '{"odd":513}', '{"odd":1000}', '{"big":999999}',
      '{"big":1000000000}', '{"neg":-9}', '{"neg":-1001}', '{"excl":0}', '{"excl":10}', '{"from":4}', '{"upto":-2}',
      '{"frac":1}', '{"frac":4}', '{"pct":007}', '{"sym":-0}']),
    ("number_bounds",
     {"type": "object", "properties": {
         "unit": {"type": "number", "minimum": 0, "maximum": 1},
         "span": {"type": "number", "minimum": -1.5, "maximum": 2.5},
         "pos": {"type": "number", "exclusiveMinimum": 0},
         "neg": {"type": "number", "maximum": -2}},
      "additionalProperties": False},
     [{"unit": 0, "span": -1, "pos": 0.25, "neg": -2}, {"unit": 1, "span": 1.75, "pos": 3, "neg": -3.5}],
     ['{"unit":1.5}', '{"unit":-0.5}', '{"span":2.75}', '{"span":-1.75}', '{"pos":0}', '{"pos":-1}',
      '{"neg":-1.5}', '{"neg":0}', '{"unit":1e5}']),
    ("anything", {}, [1, "x", None, [1, {"a": {}}], {"b": [True]}], ["", "tru", "[1,]"]),
    ("scalars", {"type": "object", "properties": {"b": {"type": "boolean"}, "n": {"type": "null"},
                                                  "i": {"type": "integer"}, "f": {"type": "number"},
                                                  "s": {"type": "string"}},
                 "required": ["b", "n", "i", "f", "s"], "additionalProperties": False},
     [{"b": False, "n": None, "i": -12, "f": -0.5e-3, "s": "\u0001\"\\/"}],
     ['{"b":0,"n":null,"i":1,"f":1,"s":""}', '{"b":true,"n":null,"i":1.5,"f":1,"s":""}',
      '{"b":true,"n":null,"i":1,"f":01,"s":""}', '{"b":true,"n":null,"i":1,"f":1,"s":"\x01"}']),
    ("implied_types", {"properties": {"a": {"minLength": 1}, "b": {"minimum": 3}}, "required": ["a"],
                       "additionalProperties": False},
     [{"a": "x", "b": 3}],
     ['{"a":""}', '{"a":"x","b":2}']),
]


def cmd_cases(args):
    rng = random.Random(args.seed)
    for name, schema, valid_values, invalid_texts in TABLE:
        text = json.dumps(schema, ensure_ascii=False)
        print(json.dumps({"name": name, "schema": text,
                          "cases": cases_for(text, rng, valid_values, invalid_texts)}, ensure_ascii=False))


# ---------------------------------------------------------------- random schemas

def random_leaf(rng, bounded=False):
    kinds = ["integer", "number", "boolean", "null", "enum", "string_bounded", "integer_bounded", "format"]
    if not bounded:  # strings a sampling model may never close
        kinds += ["string", "pattern"]
    kind = rng.choice(kinds)
    if kind == "enum":
        return {"enum": rng.sample(["a", "b c", 'q"t', 1, 2.5, None, False, "é"], rng.randint(1, 4))}
    if kind == "string_bounded":
        lo = rng.randint(0, 3)
        return {"type": "string", "minLength": lo, "maxLength": lo + rng.randint(0, 5)}
    if kind == "integer_bounded":
        lo = rng.randint(-2000, 2000)
        return {"type": "integer", "minimum": lo, "maximum": lo + rng.choice([0, 9, 100, 12345])}
    if kind == "format":
        formats = ["date", "time", "date-time", "uuid"] + ([] if bounded else ["email"])  # email: unbounded
        return {"type": "string", "format": rng.choice(formats)}
    if kind == "pattern":
        return {"type": "string", "pattern": rng.choice(list(PATTERN_EXAMPLES))}
    return {"type": kind}


def random_schema(rng, depth, defs, bounded=False):
    """bounded: every document of the schema is short (strings with maxLength, arrays with
    maxItems, no free-form values), so that a sampling model finishes one within its context."""
    roll = rng.random()
    if depth >= 3 or roll < 0.35:
        return random_leaf(rng, bounded)
    if roll < 0.6:
        names = rng.sample(["id", "name", "tags", "meta", "x", "y", "ok", "list"], rng.randint(1, 4))
        props = {n: random_schema(rng, depth + 1, defs, bounded) for n in names}
        schema = {"type": "object", "properties": props,
                  "required": [n for n in names if rng.random() < 0.5]}
        choice = rng.random()
        if choice < 0.6 or bounded:
            schema["additionalProperties"] = False
        elif choice < 0.8:
            schema["additionalProperties"] = random_leaf(rng)
        return schema
    if roll < 0.8:
        lo = rng.randint(0, 2)
        schema = {"type": "array", "items": random_schema(rng, depth + 1, defs, bounded), "minItems": lo}
        if bounded or rng.random() < 0.7:
            schema["maxItems"] = lo + rng.randint(0, 3)
        return schema
    if roll < 0.9:
        return {"anyOf": [random_schema(rng, depth + 1, defs, bounded) for _ in range(rng.randint(2, 3))]}
    name = f"d{len(defs)}"
    defs[name] = None  # the name is taken before the body, which may define more
    defs[name] = random_schema(rng, depth + 1, defs, bounded)
    return {"$ref": f"#/$defs/{name}"}


def cmd_fuzz(args):
    rng = random.Random(args.seed)
    for i in range(args.count):
        defs = {}
        body = random_schema(rng, 0, defs, args.bounded)
        schema = dict(body)
        if defs and "$ref" not in body:
            schema["$defs"] = defs
        elif defs:  # $ref beside other keywords is refused: wrap the reference
            schema = {"$defs": defs, "anyOf": [body]}
        text = json.dumps(schema, ensure_ascii=False)
        print(json.dumps({"name": f"fuzz_{args.seed}_{i}", "schema": text,
                          "cases": cases_for(text, rng, n_generated=4, n_mutations=6)}, ensure_ascii=False))


def cmd_validate(args):
    for line in sys.stdin:
        if not line.strip():
            continue
        record = json.loads(line)
        ok, error = verdict(json.loads(record["schema"]), record["text"])
        print(json.dumps({"ok": ok, "error": error}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("cases")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(run=cmd_cases)
    p = sub.add_parser("fuzz")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=50)
    p.add_argument("--bounded", action="store_true", help="only schemas whose documents are all short")
    p.set_defaults(run=cmd_fuzz)
    p = sub.add_parser("validate")
    p.set_defaults(run=cmd_validate)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
