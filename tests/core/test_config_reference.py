"""docs/config.md is what the schema gives, every key has a meaning, and every key config.yaml uses is on the page."""

import re

import pytest
from entropy_rl.core import config_reference as ref
from entropy_rl.core.config import SCHEMA, read_yaml
from support import ROOT


def test_the_committed_page_is_the_generated_one(capsys):
    assert ref.check() == "", f"docs/config.md is out of date: run `{ref.COMMAND}`"
    assert ref.main(["--check"]) == 0
    assert ref.PAGE.read_text().startswith("_Generated from") and ref.COMMAND in ref.PAGE.read_text().splitlines()[0]


def described(schema: dict, node: dict) -> bool:
    """A description of its own, or through its $ref, an allOf part or every oneOf form."""
    if "description" in node:
        return True
    if "$ref" in node:
        return described(schema, ref.Reference(schema, {}).resolve(node["$ref"]))
    forms = node.get("oneOf", [])
    if forms:
        return all(described(schema, f) for f in forms)
    return any(described(schema, p) for p in node.get("allOf", []))


def undescribed(schema: dict, node, where: str = "", overlay: bool = False):
    """Every key the schema defines (a property, or a map's values) without a description, read from the schema's text
    rather than through the generator. Under allOf, if and then, properties only add constraints to keys defined
    elsewhere."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from undescribed(schema, item, f"{where}/{i}", overlay)
    if not isinstance(node, dict):
        return
    keys = dict(node.get("properties", {}))
    if isinstance(node.get("additionalProperties"), dict):
        keys["*"] = node["additionalProperties"]
    yield from (f"{where}/{k}" for k, v in keys.items() if not overlay and not described(schema, v))
    for k, v in node.items():
        yield from undescribed(schema, v, f"{where}/{k}", overlay or k in ("allOf", "if", "then"))


def test_every_key_has_a_description(tmp_path):
    schema = read_yaml(SCHEMA)
    assert list(undescribed(schema, schema)) == []
    # The generator refuses a key without one, naming it where it is used (here under both scales).
    text = SCHEMA.read_text()
    assert text.count(", description: tokens per rollout}") == 1
    (tmp_path / "schema.yaml").write_text(text.replace(", description: tokens per rollout}", "}"))
    assert list(undescribed(read_yaml(tmp_path / "schema.yaml"), read_yaml(tmp_path / "schema.yaml")))
    with pytest.raises(ValueError, match=r"without a description.*mini\.power_sampling\.sps\.horizon"):
        ref.generate(tmp_path / "schema.yaml")


def page_tables(text: str) -> dict[str, dict[str, tuple]]:
    """The page's tables by their heading's anchor: key -> (the anchor its row links to or None, takes any keys)."""
    tables: dict[str, dict] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            rows = tables.setdefault(ref.slug(line.lstrip("# ")), {})
        elif line.startswith("| `"):
            key, kind = line.split(" | ")[:2]
            link = re.search(r"\]\(#([\w-]+)\)", kind)
            rows[key.strip("| `")] = (link and link.group(1), "(any keys)" in kind)
    return tables


def on_page(tables: dict, anchor: str, path: tuple) -> bool:
    """``path`` (config.yaml's keys) is a row of the table at ``anchor`` (its names matching placeholders), or lies
    under a row that links to a shared definition's table, or under one that takes any keys."""
    for key, (link, free) in tables[anchor].items():
        parts = key.split(".")
        if len(parts) <= len(path) and all(k == p or k.startswith("<") for k, p in zip(parts, path)):
            rest = path[len(parts) :]
            if not rest or free or link and on_page(tables, link, rest):
                return True
    return False


def leaves(node, path=()):
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from leaves(v, (*path, str(k)))
    else:
        yield path


def test_the_page_lists_every_key_config_yaml_uses():
    tables = page_tables(ref.PAGE.read_text())
    paths = list(leaves(read_yaml(ROOT / "config.yaml")))
    assert {p[0] for p in paths} >= {"scale", "seed", "mini", "paper"}
    assert ("paper", "train", "loss", "clip_ratio_c") in paths
    assert ("mini", "runs", "qwen2-m-pg", "overrides", "ppo_mini_batch_size") in paths
    missing = [".".join(p) for p in paths if not on_page(tables, ref.slug(p[0]), p)]
    assert missing == []
    # the check is not vacuous: a key the schema does not have is not on the page
    assert not on_page(tables, "mini", ("mini", "train", "lrr"))
    assert not on_page(tables, "paper", ("paper", "runs", "x", "modell"))


def test_a_planted_disagreement_is_reported(tmp_path, capsys):
    text = SCHEMA.read_text()
    old = "the study's base seed, added to every training and pre-training seed of the scale"
    assert text.count(old) == 1
    (tmp_path / "schema.yaml").write_text(text.replace(old, "a planted description"))
    diff = ref.check(ref.PAGE, tmp_path / "schema.yaml")
    assert re.search(r"^-\| `seed` \|.*every training and pre-training seed", diff, re.M)
    assert re.search(r"^\+\| `seed` \|.*a planted description", diff, re.M)
    # and the command: a stale page exits 1 and prints the diff
    stale = tmp_path / "config.md"
    stale.write_text(ref.PAGE.read_text().replace("every training and pre-training seed", "an old description"))
    assert ref.main(["--check", "--out", str(stale)]) == 1
    assert "+| `seed` |" in capsys.readouterr().out
