"""The layout's own rules, read off the tree: no package module grows past what one reading takes in, and each
figure or table is named where it is registered and where it is configured, nowhere else in the code."""

import re
import subprocess
import sys
from pathlib import Path

import yaml
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


# Config overlays (`--configfile config.yaml benchmarks/designs/<design>.yaml`): config, as config.yaml is, so they may
# name artifacts; each name they use must be registered (below), so that a rename fails here, not in a user's study.
DESIGNS = "benchmarks/designs/"


def test_an_artifact_is_named_only_where_it_is_registered_and_configured():
    names = [*artifacts.PAPER, *artifacts.POWER]
    assert len(names) > 20
    found = naming_files(names, code_texts())
    over = {name: files for name, files in found.items() if len([f for f in files if not f.startswith(DESIGNS)]) > 2}
    assert not over, f"artifacts named in more than their module and config.yaml: {over}"
    assert all(files for files in found.values()), "an artifact its module does not name"


def test_every_artifact_a_design_overlay_configures_is_registered():
    registered = {*artifacts.PAPER, *artifacts.POWER}
    named = {
        (path.name, name)
        for path in sorted((ROOT / DESIGNS).glob("*.yaml"))
        for section in (yaml.safe_load(path.read_text()) or {}).values()
        if isinstance(section, dict)
        for name in section.get("artifacts", {})
    }
    assert ("small-controls.yaml", "ctl01_random_reward") in named
    assert not {(f, n) for f, n in named if n not in registered}, "a design overlay names an unregistered artifact"


def test_the_checks_see_a_long_module_and_a_name_spelled_again():
    assert long_modules(limit=10)
    texts = {
        "a.py": "def fig99_x(): ...",
        "config.yaml": "fig99_x: {}",
        "b.py": "TARGETS = ['fig99_x']",
        "c.py": "fig99_xy",
    }
    assert naming_files(["fig99_x"], texts) == {"fig99_x": ["a.py", "b.py", "config.yaml"]}


LOADERS = re.compile(r"spec_from_file_location|run_path|SourceFileLoader|exec\(")  # code loaded by its path


def imported_names(text: str) -> set[str]:
    """The top-level names a file's import statements name and, where it loads code by path, every file of the
    benchmarks or the tests it spells (``benchmarks/x``); running a benchmark as a command imports nothing."""
    names = set(re.findall(r"^\s*(?:from|import) (\w+)", text, re.MULTILINE))
    path = r"[\"'/](benchmarks|tests)[\"']?\s*/\s*[\"']?(\w+)\.py"
    return names | ({f"{folder}/{stem}" for folder, stem in re.findall(path, text)} if LOADERS.search(text) else set())


def cross_imports(tests: dict[str, str], benchmarks: dict[str, str]) -> dict[str, list[str]]:
    """Each benchmark that imports a module of the tests other than ``support``, and each file of the tests (support
    included) that imports or loads a benchmark (texts by path relative to the root)."""
    ours = [Path(f) for f in tests if "support" not in Path(f).parts]
    test_modules = {p.stem for p in ours} | {p.parent.name for p in ours if p.name == "__init__.py"}
    test_modules -= {"__init__", "tests"}
    bench_modules = {Path(f).stem for f in benchmarks}
    found = {}
    for files, theirs, folder in ((benchmarks, test_modules, "tests"), (tests, bench_modules, "benchmarks")):
        for name, text in files.items():
            used = imported_names(text)
            if hits := sorted((used & theirs) | {u for u in used if u.startswith(f"{folder}/")}):
                found[name] = hits
    return found


def test_benchmarks_and_tests_share_the_support_module_alone():
    """A benchmark imports no test module, and a test no benchmark: what both need is in tests/support."""

    def texts(folder: str) -> dict[str, str]:  # all but this file, which plants both
        paths = sorted(p for p in (ROOT / folder).rglob("*.py") if p != Path(__file__).resolve())
        return {str(p.relative_to(ROOT)): p.read_text() for p in paths}

    found = cross_imports(texts("tests"), texts("benchmarks"))
    assert not found, f"benchmarks and tests importing each other: {found}"
    load = 'path = ROOT / "benchmarks" / "study_time.py"\nspec = spec_from_file_location("s", path)'
    planted = {"tests/test_x.py": load, "tests/support/__init__.py": "", "tests/support/log.py": "import study_time"}
    planted["tests/pilot_here.py"] = ""
    benches = {"benchmarks/study_time.py": "from support import x\nimport pilot_here\nfrom support.log import y"}
    assert cross_imports(planted, benches) == {
        "benchmarks/study_time.py": ["pilot_here"],
        "tests/support/log.py": ["study_time"],
        "tests/test_x.py": ["benchmarks/study_time"],
    }
