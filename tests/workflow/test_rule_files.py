"""The rule files read as modules: each imports what it uses; and no file spells a results path but core.paths.

Snakemake gives every included file one namespace, so a rule file can use a module another file imported, and
a path can be spelled again beside its constant; no tool reads .smk files to say so. This test does, with patterns
over the text (the files are not Python that `ast` can read)."""

import ast
import re
from pathlib import Path

from entropy_rl.core import paths
from support import ROOT

RULES = ROOT / "workflow" / "rules"
FILES = {p.name: p.read_text() for p in sorted(RULES.glob("*.smk"))} | {"Snakefile": (ROOT / "Snakefile").read_text()}
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


def smk_strings(text: str) -> list[str]:
    """The string literals of a rule file's code (its docstrings and comments left out)."""
    code = re.sub(r'"""[\s\S]*?"""', "", COMMENT.sub("", text))
    return re.findall(r'"([^"\n]*)"', code)


def py_strings(text: str) -> list[str]:
    """The string literals of a Python file's code, the parts of f-strings included, its docstrings left out."""
    tree = ast.parse(text)
    keys = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}  # cfg["results"]: a key, no path
    keys |= {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys}
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs | keys
    ]


def spelled(files: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Each file's string literals that spell a path under results/ (core.paths' layout) themselves."""
    return [
        (name, text)
        for name, strings in files.items()
        for text in strings
        if text.startswith(f"{paths.RESULTS}/") or re.match(rf"^{paths.RESULTS}/?$", text)
    ]


def code_strings() -> dict[str, list[str]]:
    """Every rule file's and every Python file's of the workflow, benchmarks and scripts, but core/paths.py's."""
    out = {name: smk_strings(text) for name, text in FILES.items()}
    for folder in ("workflow", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != Path(paths.__file__) and ".egg-info" not in str(path):
                out[str(path.relative_to(ROOT))] = py_strings(path.read_text())
    return out


def test_each_rule_file_imports_the_modules_it_uses():
    assert not borrowed(FILES), f"rule files that use a module another file imported: {borrowed(FILES)}"


def test_no_file_spells_a_results_path_but_core_paths():
    """The results layout is core.paths' alone: no rule file and no Python file of the workflow or the benchmarks
    spells a path under results/ again (a docstring or a comment may name one)."""
    strings = code_strings()
    assert len(strings) > 100 and not spelled(strings), f"results paths spelled outside core.paths: {spelled(strings)}"


def test_the_checks_see_a_borrowed_module_and_a_spelled_path():
    """The two checks above can fail: a rule file that uses `reward_launch` without importing it and spells a path, and
    Python that spells one (a dict key named so is no path)."""
    bad = 'rule x:\n    output:\n        "results/runs/{run}/metrics.parquet",\n    params:\n        c=reward_launch.verl_command(S, "r"),\n'
    files = {**FILES, "bad.smk": bad}
    assert borrowed(files) == {"bad.smk": ["reward_launch"]}
    assert spelled({"bad.smk": smk_strings(bad)}) == [("bad.smk", "results/runs/{run}/metrics.parquet")]
    python = '"""results/x in a docstring"""\nroot = "results"\nlog = f"results/logs/{name}.log"\nx = cfg["results"]\n'
    assert spelled({"bad.py": py_strings(python)}) == [("bad.py", "results"), ("bad.py", "results/logs/")]
    assert not used("launch", "# launch.verl_command\nscript: '../scripts/launch.py'\n")
