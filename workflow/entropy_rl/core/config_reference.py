"""docs/config.md, the configuration reference, generated from the config schema so that the two cannot drift.

Every key as a dotted path (``<run>`` stands for any name in a map), with its type, default, whether it is required
and the schema's ``description``. A definition the schema reuses (``train``, ``loss``, ``run``, ...) is documented
once and linked from each place that uses it. A key's meaning lives in the schema only: a key without a
``description`` is an error here, not a blank cell.

    python -m entropy_rl.core.config_reference [--check] [--out docs/config.md]
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
import sys
from pathlib import Path

from .. import PROJECT_DIR
from .config import SCHEMA, read_yaml
from .pages import md_table

CONFIG, PAGE = PROJECT_DIR / "config.yaml", PROJECT_DIR / "docs" / "config.md"
COMMAND = "python -m entropy_rl.core.config_reference --out docs/config.md"
# A map's keys are named for the map, singular (runs.<run>), except where that would mislead.
PLACEHOLDERS = {"where": "field", "power_sampling.runs": "method", "gpu_conversion": "gpu"}
MISSING = object()  # no value in config.yaml (None is one: `mirror: null`)


class Reference:
    def __init__(self, schema: dict, config: dict):
        self.schema, self.config, self.undescribed = schema, config, []
        self.sections: dict[str, dict] = {}  # a top-level key, or a shared definition's $ref -> its section
        # Shared: an object definition reached from two places, by two $refs or by a $ref and where it is written
        # (power_sampling.smc, which the pilot reuses). A definition used once is documented where it is used.
        counts: dict[str, int] = {}
        for ref in re.findall(r'"\$ref": "([^"]+)"', json.dumps(schema)):
            counts[ref] = counts.get(ref, int(ref.count("/") > 2)) + 1
        self.shared = {id(self.resolve(r)): r for r, n in counts.items() if n > 1 and is_map(self.resolve(r))}

    def resolve(self, ref: str) -> dict:  # a JSON pointer into this schema: "#/$defs/run"
        return functools.reduce(lambda node, part: node[part], ref[2:].split("/"), self.schema)

    def flat(self, node: dict) -> dict:
        """``node`` with its ``$ref`` and ``allOf`` merged in; keys beside a ``$ref`` win (a site's own description)."""
        out: dict = {}
        parts = ([self.resolve(node["$ref"])] if "$ref" in node else []) + node.get("allOf", [])
        for part in [*map(self.flat, parts), {k: v for k, v in node.items() if k not in ("$ref", "allOf")}]:
            props, required = {**out.get("properties", {})}, out.get("required", []) + part.get("required", [])
            for k, v in part.get("properties", {}).items():
                props[k] = {"allOf": [props[k], v]} if k in props else v
            out.update(part, **({"properties": props} if props else {}), **({"required": required} if required else {}))
        return out

    def link(self, node: dict):
        """The shared definition ``node`` is (or extends through ``allOf``), and what it adds: its overlay."""
        for i, part in enumerate(node.get("allOf", [])):
            if self.link(part)[0]:
                return self.link(part)[0], {**node, "allOf": node["allOf"][:i] + node["allOf"][i + 1 :]}
        if "$ref" in node and id(self.resolve(node["$ref"])) in self.shared:
            return node["$ref"], {k: v for k, v in node.items() if k != "$ref"}
        return self.shared.get(id(node)), {}  # the definition itself, where it is written

    def walk(self, sec: str, key: str, node: dict, required: str, site, value) -> None:
        """Document ``key`` (relative to its section; ``site``: where a shared definition is used) and its keys."""
        flat, (target, overlay), where = self.flat(node), self.link(node), f"{site}.{key}" if site else key
        forms = [self.flat(f).get("description") for f in node.get("oneOf", [])]
        desc = flat.get("description") or "; ".join(f"(form {i}) {d}" for i, d in enumerate(forms, 1) if d)
        self.undescribed += [] if desc else [where]
        if target:
            name = target[len("#/$defs/") :].replace("/properties/", ".")
            kind = f"object: see [{name}](#{slug('Shared: ' + name)}){self.required_note(overlay, target)}"
            self.row(sec, key, kind, required, desc, flat)
            shared = dict(name=name, title=f"Shared: {name}", ref=target, rows={}, used_at=[])
            self.sections.setdefault(target, shared)["used_at"].append(where)
            return self.children(target, "", self.flat(self.resolve(target)), where, value)
        row = self.row(sec, key, describe(self, flat), required, desc, flat)
        if value is not MISSING and not is_map(flat):  # in a shared definition, kept by site: each has its own
            row["values"].setdefault(json.dumps(value), (value, []))[1].append(site)
        self.children(sec, key, flat, site, value)

    def children(self, sec: str, key: str, flat: dict, site, value) -> None:
        below = lambda k: f"{key}.{k}" if key else k  # noqa: E731
        forms = [(f" (form {i})", self.flat(f)) for i, f in enumerate(flat.get("oneOf", []), 1)]
        when = ", ".join(f"`{k}` is `{v['const']}`" for k, v in flat.get("if", {}).get("properties", {}).items())
        for form, part in [("", flat)] + forms:
            for k, sub in part.get("properties", {}).items():
                req = "yes" + form if k in part.get("required", []) else "no"
                req = f"if {when}" if k in flat.get("then", {}).get("required", []) else req
                self.walk(sec, below(k), sub, req, site, value.get(k, MISSING) if isinstance(value, dict) else MISSING)
        if isinstance(flat.get("additionalProperties"), dict):
            name = self.sections[sec]["name"]
            last = (key or name).rsplit(".", 1)[-1]
            name = PLACEHOLDERS.get(f"{name}.{key}") or PLACEHOLDERS.get(last) or last.removesuffix("s")
            self.walk(sec, below(f"<{name}>"), flat["additionalProperties"], "—", site, MISSING)

    def required_note(self, overlay: dict, target: str) -> str:
        """What a site requires of a shared definition (each scale's ``train`` requires nearly all of it)."""
        overlay, props = self.flat(overlay), self.flat(self.resolve(target)).get("properties", {})
        levels = [("", overlay.get("required", []), props)] + [
            (f"in `{k}` ", self.flat(v).get("required", []), self.flat(props[k]).get("properties", {}))
            for k, v in overlay.get("properties", {}).items()
        ]
        notes = [
            where
            + "every key"
            + "".join(f"{', ' if i else ' but '}`{k}`" for i, k in enumerate(k for k in keys if k not in req))
            for where, req, keys in levels
            if req
        ]
        return "; required here: " + "; ".join(notes) if notes else ""

    def row(self, sec, key, kind, required, desc, flat) -> dict:
        default = f"{code(flat['default'])} (schema)" if "default" in flat else None
        row = dict(kind=kind, required=required, desc=desc, default=default, values={})
        return self.sections[sec]["rows"].setdefault(key, row)

    def page(self) -> str:
        for key, node in self.schema["properties"].items():
            self.sections[key] = dict(name=key, title=key, rows={})
            required = "yes" if key in self.schema.get("required", []) else "no"
            self.walk(key, key, node, required, None, self.config.get(key, MISSING))
        if self.undescribed:
            raise ValueError("config keys without a description in the schema: " + ", ".join(self.undescribed))
        top, shared = ([s for s in self.sections.values() if ("ref" in s) == want] for want in (False, True))
        lines = [
            f"_Generated from `workflow/schemas/config.schema.yaml` (defaults also from `config.yaml`) by `{COMMAND}`: "
            "edit the schema, not this page._",
            "\n# Configuration reference\n",
            f"{self.schema['description']} Each key is a dotted path; `<run>`, `<model>`, ... stand for any name in a "
            "map. **Default**: the schema's `default` (what applies when the key is left out), else the value that the "
            "repository's `config.yaml` sets at that path. A definition used in several places is documented once, "
            "under [Shared definitions](#shared-definitions), its keys relative to each place that uses it.",
            "\n## Contents\n",
            *(f"- [{s['title']}](#{slug(s['title'])})" for s in top),
            "- [Shared definitions](#shared-definitions): "
            + ", ".join(f"[{s['name']}](#{slug(s['title'])})" for s in shared),
        ]
        intro = "Definitions the schema uses in more than one place; each row that uses one links to it here."
        for s in top + [dict(title="Shared definitions", rows={}, intro=intro)] + shared:
            lines += [f"\n{'###' if 'ref' in s else '##'} {s['title']}\n"] + ([s["intro"]] if "intro" in s else [])
            if "ref" in s:
                desc = self.flat(self.resolve(s["ref"])).get("description", "").rstrip(".")
                used = ", ".join(f"`{u}`" for u in dict.fromkeys(s["used_at"]))
                lines.append(f"{escape(desc) + '. ' if desc else ''}Used at {used}; its keys are relative to these.\n")
            rows = [
                (code(key), r["kind"], r["default"] or defaults(r["values"]), r["required"], escape(r["desc"]))
                for key, r in s["rows"].items()
            ]
            lines += md_table(("Key", "Type", "Default", "Required", "Description"), rows) if rows else []
        return "\n".join(lines) + "\n"


def is_map(node: dict) -> bool:
    return "properties" in node or isinstance(node.get("additionalProperties"), dict)


def defaults(values: dict) -> str:
    """config.yaml's value; in a shared definition, each site's own."""
    if len(values) == 1 and next(iter(values.values()))[1] == [None]:
        return f"{code(next(iter(values.values()))[0])} (config.yaml)"
    by_site = "; ".join(f"{code(v)} at " + ", ".join(f"`{s}`" for s in sites) for v, sites in values.values())
    return f"{by_site} (config.yaml)" if values else "—"


def describe(ref: Reference, s: dict) -> str:
    """A (flattened) schema node's type, with its enum values, bounds and pattern."""
    if "oneOf" in s:
        forms = [ref.flat(f) for f in s["oneOf"]]
        return " or ".join(
            f"(form {i}) object with "
            + ", ".join(f"`{k}`" for k in f["required"][:2])
            + ", ..." * (len(f["required"]) > 2)
            if is_map(f)
            else describe(ref, f)
            for i, f in enumerate(forms, 1)
        )
    if "const" in s or "enum" in s:
        return code(s["const"]) if "const" in s else "one of " + ", ".join(code(v) for v in s["enum"])
    kind = " or ".join(s["type"]) if isinstance(s.get("type"), list) else s.get("type", "any")
    if kind == "array":
        many = f" (≥ {s['minItems']} items)" if "minItems" in s else ""
        return f"array{many} of {describe(ref, ref.flat(s.get('items', {})))}"
    kind += " (any keys)" if kind == "object" and not is_map(s) else ""
    bound = lambda *ways: next(((b, op, s[k]) for k, b, op in ways if k in s), None)  # noqa: E731
    low = bound(("minimum", "[", "≥"), ("exclusiveMinimum", "(", ">"))
    high = bound(("maximum", "]", "≤"), ("exclusiveMaximum", ")", "<"))
    if low and high:
        kind += f" in {low[0]}{low[2]}, {high[2]}{high[0]}"
    elif low or high:
        kind += " {1} {2}".format(*(low or high))
    kind += f" ≠ {s['not']['const']}" if "const" in s.get("not", {}) else ""
    kind += f" (≥ {s['minProperties']} keys)" if "minProperties" in s else ""
    return kind + (f" matching {code(s['pattern'])}" if "pattern" in s else "")


def code(value) -> str:
    """``value`` as a Markdown code span: a plain string bare, anything else as JSON; fenced past its own backticks."""
    plain = isinstance(value, str) and re.fullmatch(r"[\w.\-/<>*^$\[\]+~{}\\ ()=?|]+", value)
    text = value if plain else json.dumps(value, ensure_ascii=False)
    fence, pad = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1), " " * ("`" in text[:1] + text[-1:])
    return f"{fence}{pad}{text}{pad}{fence}"


def escape(text: str) -> str:
    """A description as Markdown: outside code spans, ``<`` would open an HTML tag."""
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(text.split("`")))


def slug(title: str) -> str:
    """The anchor GitHub (and Python-Markdown's toc) give a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def generate(schema_path=SCHEMA, config_path=CONFIG) -> str:
    return Reference(read_yaml(schema_path), read_yaml(config_path)).page()


def check(page_path=PAGE, schema_path=SCHEMA, config_path=CONFIG) -> str:
    """A unified diff from the page on disk to the page the schema gives; empty when they agree."""
    old = Path(page_path).read_text() if Path(page_path).exists() else ""
    new = generate(schema_path, config_path)
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(page_path), "generated"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1, printing a diff, if the page is out of date")
    parser.add_argument("--out", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    if args.check:
        diff = check(args.out)
        sys.stdout.write(diff or f"{args.out} is up to date\n")
        return int(bool(diff))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(generate())
    return 0


if __name__ == "__main__":
    sys.exit(main())
