"""The layout's own rules, read off the tree: no package module grows past what one reading takes in, and each
figure or table is named where it is registered and where it is configured, nowhere else in the code."""

import re
import subprocess
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "workflow"))
from entropy_rl.study import artifacts

PACKAGE = ROOT / "workflow" / "entropy_rl"
MAX_LINES = 400
# Where an artifact's name may stand besides its registration and its config entries: the tests, the docs, the
# claims ledger, and the records benchmarks write (JSON of what they ran).
EXEMPT = ("tests/", "docs/", "claims.yaml")


def long_modules(limit: int = MAX_LINES) -> dict[str, int]:
    lengths = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    return {path: n for path, n in lengths.items() if n > limit}


def naming_files(names, texts: dict[str, str]) -> dict[str, list[str]]:
    """Each name with the files (other than ``EXEMPT``) that spell it as a word."""
    return {name: sorted(f for f, t in texts.items() if re.search(rf"\b{re.escape(name)}\b", t)) for name in names}


def code_texts() -> dict[str, str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    keep = [f for f in files if not f.startswith(EXEMPT) and not f.endswith((".md", ".rst", ".json"))]
    return {f: (ROOT / f).read_text(errors="ignore") for f in keep if (ROOT / f).is_file()}


def test_no_package_module_is_over_400_lines():
    assert not long_modules(), f"modules over {MAX_LINES} lines: {long_modules()}"


def test_an_artifact_is_named_only_where_it_is_registered_and_configured():
    names = [*artifacts.PAPER, *artifacts.POWER]
    assert len(names) > 20
    found = naming_files(names, code_texts())
    over = {name: files for name, files in found.items() if len(files) > 2}
    assert not over, f"artifacts named in more than their module and config.yaml: {over}"
    assert all(files for files in found.values()), "an artifact its module does not name"


def test_the_checks_see_a_long_module_and_a_name_spelled_again():
    assert long_modules(limit=10)
    texts = {"a.py": "def fig99_x(): ...", "config.yaml": "fig99_x: {}", "b.py": "TARGETS = ['fig99_x']", "c.py": "fig99_xy"}
    assert naming_files(["fig99_x"], texts) == {"fig99_x": ["a.py", "b.py", "config.yaml"]}


def test_the_old_power_methods_name_serves_the_sampling_script_alone():
    """core.power_methods stays only for workflow/scripts/power_sample.py, whose text a GPU job's date depends on."""
    users = [f for f, t in code_texts().items() if re.search(r"\bcore(\.| import )power_methods\b", t)]
    assert users == ["workflow/scripts/power_sample.py"], users
    from entropy_rl.core import power_methods
    from entropy_rl.core.power import methods

    assert power_methods.sampler_module is methods.sampler_module


def test_benchmarks_take_from_the_tests_through_bench_support_alone():
    """A benchmark that needs a test platform imports it from tests/bench_support.py, never a test module itself."""
    helpers = {p.stem for p in (ROOT / "tests").glob("*.py")} - {"bench_support", "conftest"}
    taken = {}
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        names = set(re.findall(r"^\s*(?:from|import) (\w+)", path.read_text(), re.MULTILINE)) & helpers
        if names:
            taken[path.name] = sorted(names)
    assert not taken, f"benchmarks importing test modules directly: {taken}"
