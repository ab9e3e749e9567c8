"""The rule files read as modules: each imports what it uses, and no rule spells a path that paths.smk's table has.

Snakemake gives every included file one namespace, so a rule file can use a module another file imported, and
a path can be spelled again beside its constant; no tool reads .smk files to say so. This test does, with patterns
over the text (the files are not Python that `ast` can read)."""

import re

from support import ROOT

RULES = ROOT / "workflow" / "rules"
FILES = {p.name: p.read_text() for p in sorted(RULES.glob("*.smk"))} | {"Snakefile": (ROOT / "Snakefile").read_text()}
# What the rule files call: it is given paths.smk's templates, and spells none of them either.
PIPELINE = {f"pipeline/{p.name}": p.read_text() for p in sorted((ROOT / "workflow" / "entropy_rl" / "pipeline").glob("*.py"))}
COMMENT = re.compile(r"#[^\n]*")


def imported(text: str) -> set[str]:
    """The names a file binds by import statements at the start of a line."""
    names = set()
    for m in re.finditer(r"^(?:from [\w.]+ )?import ([\w, ]+)$", text, re.MULTILINE):
        names |= {part.strip().split(" as ")[-1] for part in m.group(1).split(",")}
    return names


def used(name: str, text: str) -> bool:
    """``name.attribute`` in code, not in a comment or a path such as ../scripts/name.py."""
    return bool(re.search(rf"(?<![\w./\"']){re.escape(name)}\.(?!(py|smk|rst|txt|json)\b)\w", COMMENT.sub("", text)))


def borrowed(files: dict[str, str]) -> dict[str, list[str]]:
    """Each file's uses of a module that only another file imports."""
    out = {}
    for name, text in files.items():
        others = set().union(*(imported(t) for n, t in files.items() if n != name)) - imported(text)
        if found := sorted(m for m in others if used(m, text)):
            out[name] = found
    return out


def spelled(files: dict[str, str]) -> list[tuple[str, str]]:
    """Each path a rule file spells that paths.smk's table names (as is, or with its braces doubled for expand)."""
    table = dict(re.findall(r'^([A-Z_]+) = "(results/[^"]+)"', files["paths.smk"], re.MULTILINE))
    return [
        (name, const)
        for name, text in files.items()
        if name != "paths.smk"
        for const, path in table.items()
        if f'"{path}"' in text or f'"{path.replace("{", "{{").replace("}", "}}")}"' in text
    ]


def test_each_rule_file_imports_the_modules_it_uses():
    assert not borrowed(FILES), f"rule files that use a module another file imported: {borrowed(FILES)}"


def test_no_rule_file_spells_a_path_that_paths_smk_names():
    assert len(re.findall(r'^[A-Z_]+ = "results/', FILES["paths.smk"], re.MULTILINE)) > 20
    assert not spelled(FILES), f"paths spelled beside their constant in paths.smk: {spelled(FILES)}"
    spelled_in_pipeline = spelled({"paths.smk": FILES["paths.smk"], **PIPELINE})
    assert not spelled_in_pipeline, f"paths the pipeline spells beside their constant in paths.smk: {spelled_in_pipeline}"


def test_the_checks_see_a_borrowed_module_and_a_spelled_path():
    """The two checks above can fail: a rule file that uses `launch` without importing it and spells RUN_METRICS."""
    bad = 'rule x:\n    output:\n        "results/runs/{run}/metrics.parquet",\n    params:\n        c=launch.verl_command(S, "r"),\n'
    files = {**FILES, "bad.smk": bad}
    assert borrowed(files) == {"bad.smk": ["launch"]} and spelled(files) == [("bad.smk", "RUN_METRICS")]
    assert not used("launch", "# launch.verl_command\nscript: '../scripts/launch.py'\n")
