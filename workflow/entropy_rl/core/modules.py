"""Which source files a module's behaviour depends on: its import closure inside this package, and
a hash of that behaviour that a comment, a docstring or a move of a module does not change.

Rules declare code as inputs (a change of it reruns the job) and training runs fingerprint the code
that shapes their trajectory; both name modules, and this module turns a name into the files that
can change its behaviour, by reading imports (never importing, so no heavy dependency loads).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import os
from pathlib import Path

from .. import PACKAGE_DIR
from . import atomic

PACKAGE = "entropy_rl"
# Plumbing that cannot change an output's content: left out of closures, so editing it reruns nothing.
PLUMBING = frozenset(
    f"{PACKAGE}.{m}"
    for m in (
        "core.atomic",
        "core.logs",
        "core.modules",
        "core.resume",
        "core.warm_start",
        "core.warm_server",
        "mini.checkpoints",
    )
)


@functools.cache
def source(module: str) -> Path:
    """The file of ``module`` (a package's ``__init__.py``). This package's modules are found by
    their dotted path under it, without importing anything (``find_spec`` would import the
    parent packages); another module by the import system's finders. Kept per process, as the
    layout is (``_layout``); the file's text is read afresh by whoever reads it."""
    if _ours(module):
        base = PACKAGE_DIR.joinpath(*module.split(".")[1:])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        raise ModuleNotFoundError(f"no module {module!r}")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no module {module!r}")
    return Path(spec.origin)


def _is_package(module: str) -> bool:
    return source(module).name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if _is_package(module) else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@functools.cache
def direct_imports(module: str) -> frozenset[str]:
    """The package's modules that ``module`` imports anywhere in its text (lazy imports included)."""
    return frozenset(_template(module)["imports"])


def _imports(module: str, tree: ast.Module) -> list[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if _ours(alias.name)}
        elif isinstance(node, ast.ImportFrom) and _ours(target := _resolve(module, node)):
            for alias in node.names:  # `from pkg import mod` names a module; `from mod import name` does not
                candidate = f"{target}.{alias.name}"
                found.add(candidate if _is_package(target) and _exists(candidate) else target)
    return sorted(found)


def _exists(module: str) -> bool:
    try:
        return source(module) is not None
    except ModuleNotFoundError:
        return False


def _ours(name: str) -> bool:
    """Only this package's modules are followed (finding another's spec would import its parents)."""
    return name == PACKAGE or name.startswith(PACKAGE + ".")


@functools.cache
def closure(*modules: str) -> tuple[str, ...]:
    """``modules`` and every package module they import, transitively, less plumbing and imported ``__init__``s (a
    package named in ``modules`` stays: it stands for its ``__init__``, as in ``behaviour_hashes``)."""
    seen, todo = set(), list(modules)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += direct_imports(m)
    return tuple(sorted(m for m in seen if m not in PLUMBING and (m in modules or not _is_package(m))))


def files(*modules: str) -> list[str]:
    """The source files of ``closure(*modules)``, as paths."""
    return [str(source(m)) for m in closure(*modules)]


# A module that reads its own name or place behaves differently when moved: its hash keeps its name.
_SELF_NAMES = frozenset({"__name__", "__file__", "__spec__", "__package__", "__path__"})


def _strip_docstrings(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                node.body = body[1:] or [ast.Pass()]


def _bound(module: str, node: ast.ImportFrom, alias: ast.alias, refs: list) -> list:
    """What ``from ... import name`` binds, by content: the hash of the module it names, or of the module it reads
    ``name`` from (with ``name``); never the modules' dotted paths. The hash stands as a placeholder (``refs``)."""
    target = _resolve(module, node)
    candidate = f"{target}.{alias.name}"
    named = candidate if _is_package(target) and _exists(candidate) else target
    refs.append(named)
    bound = [alias.asname or alias.name, _PLACEHOLDER.format(named)]
    return bound if named == candidate else [*bound, alias.name]


def _ref(module: str, memo: dict) -> str:
    if module in PLUMBING or _is_package(module):
        return "plumbing"  # left out of closures: it cannot change an output's content
    if memo.get(module, "") is None:
        return "cycle:" + module  # an import cycle (import-linter keeps them out): there, modules go by name
    if module not in memo:
        memo[module] = None
        memo[module] = _behaviour(module, memo)
    return memo[module]


# A module's syntax tree, dumped with each import of this package's modules standing as a placeholder for the imported
# module's hash, is a function of its source text alone: kept per text (``_template``), in this process and, where
# ``CACHE_DIR`` is set (the workflow sets it under .snakemake/), on disk, so each text is parsed once. The hash is then
# the template with the placeholders filled in, byte for byte the text a fresh parse would dump. The template also keeps
# the package modules the text imports (``direct_imports``: the closure's edges), read from the same parse.
CACHE_DIR: Path | None = None
_TEMPLATES: dict[tuple[str, str], dict] = {}
_PLACEHOLDER = "@@behaviour-of:{}@@"  # printable: json.dumps and ast.dump keep it as it is


def _behaviour(module: str, memo: dict) -> str:
    template = _template(module)
    text = template["text"]
    for ref in template["refs"]:  # in the order a fresh parse meets them (an import cycle is named by that order)
        text = text.replace(_PLACEHOLDER.format(ref), _ref(ref, memo))
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def _layout() -> str:
    """The package's module files, as a digest: whether ``from a import b`` names a module depends on them."""
    paths = sorted(p.relative_to(PACKAGE_DIR).as_posix() for p in PACKAGE_DIR.rglob("*.py"))
    return hashlib.sha256("\0".join(paths).encode()).hexdigest()


def clear_caches() -> None:
    """Forget what this process has read (for a package laid out anew, as tests do); the disk cache is keyed by
    content and needs no clearing."""
    for cached in (source, direct_imports, closure, _layout):
        cached.cache_clear()
    _TEMPLATES.clear()


def _template(module: str) -> dict:
    code = source(module).read_text()
    key = hashlib.sha256(f"{module}\0{_layout()}\0{code}".encode()).hexdigest()
    if (module, key) in _TEMPLATES:
        return _TEMPLATES[(module, key)]
    cached = CACHE_DIR / f"{key}.json" if CACHE_DIR is not None else None
    template = _read_template(cached, key) if cached is not None else None
    if template is None:
        template = {**_parse_template(module, code), "key": key}
        if cached is not None:
            atomic.write_text(cached, json.dumps(template))
    _TEMPLATES[(module, key)] = template
    return template


def _read_template(path: Path, key: str) -> dict | None:
    """A cached template, or None where there is none or it is not the one this module wrote for ``key`` (then it is
    parsed again): an entry names its key, so one copied, renamed or of another text is not read as this one."""
    try:
        template = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(template, dict) and template.get("key") == key and isinstance(template.get("text"), str)):
        return None
    if not all(_strings(template.get(field)) for field in ("refs", "imports")):
        return None
    if not all(_PLACEHOLDER.format(ref) in template["text"] for ref in template["refs"]):
        return None
    return template


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _parse_template(module: str, code: str) -> dict:
    tree = ast.parse(code)
    imports = _imports(module, tree)  # before the imports below are rewritten
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if "__doc__" not in names:  # a module that reads its docstring (a CLI's help) keeps it
        _strip_docstrings(tree)
    refs: list[str] = []
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and any(isinstance(v, ast.ImportFrom) for v in value):
                canonical = [_canonical(module, v, refs) if isinstance(v, ast.ImportFrom) else [v] for v in value]
                setattr(node, field, [statement for group in canonical for statement in group])
    text = ast.dump(tree, annotate_fields=False)
    if names & _SELF_NAMES:
        text = module + "\0" + text
    return {"text": text, "refs": refs, "imports": imports}


def _canonical(module: str, node: ast.ImportFrom, refs: list) -> list[ast.stmt]:
    """An import of this package's modules as one statement per name it binds (``from a import x, y`` binds as
    ``from a import x`` then ``from a import y`` do), each by content: the imported module's hash, a placeholder in the
    template (``refs``)."""
    if not _ours(_resolve(module, node)):
        return [node]
    return [ast.Expr(ast.Constant("import " + json.dumps(_bound(module, node, alias, refs)))) for alias in node.names]


def behaviour_hashes(*modules: str) -> dict[str, str]:
    """What each of ``modules`` computes, as a hash: its syntax tree without comments, layout or docstrings, with
    each import of this package's modules replaced by the imported module's own hash (so the whole closure counts,
    and a module moved to another name, its importers updated, hashes the same). Plumbing counts as nothing, as in
    ``closure``. Read afresh on every call: a long-lived process sees edits. A package named here (a rule whose script
    imports it whole) stands for its ``__init__`` and so for what that imports; imported, it counts as plumbing."""
    memo: dict = {}
    return {m: _behaviour(m, memo) if _is_package(m) else _ref(m, memo) for m in modules}


def behaviour_hash(module: str) -> str:
    return behaviour_hashes(module)[module]


def closure_hashes(*modules: str) -> dict[str, str]:
    """Every module of ``closure(*modules)`` with its ``behaviour_hash``."""
    return behaviour_hashes(*closure(*modules))


def combined_hash(*modules: str) -> str:
    """One hash of what ``modules`` compute together: their behaviour hashes, not their names."""
    hashes = behaviour_hashes(*modules).values()
    return hashlib.sha256("\0".join(sorted(hashes)).encode()).hexdigest()


def previous_path(path: str | Path) -> Path:
    """Where ``stamp`` keeps the record that its last change of behaviour replaced, for ``changed_modules``."""
    path = Path(path)
    return path.with_name(path.stem + ".previous" + path.suffix)


def record_path(path: str | Path) -> Path:
    """Where ``stamp`` keeps its modules by name, each with its hash (``closure_hashes``): beside the stamp, not in it,
    so that moving or renaming a module leaves the stamp's text as it was."""
    path = Path(path)
    return path.with_name(path.stem + ".modules" + path.suffix)


def stamp(path: str | Path, *modules: str) -> str:
    """A file that stands for the code ``modules`` run, for a rule to take as input: rewritten only when what the code
    computes changes (``combined_hash``), so Snakemake reruns a job on a change of behaviour and on nothing else. Its
    text is that hash alone, so code changed and changed back is the text Snakemake recorded the job's input with, and
    reruns nothing (Snakemake compares a newer input's checksum with the one it recorded), and a module moved after that
    changes nothing either. Which modules it stands for, by name, is kept beside it (``record_path``), and the record a
    change of behaviour replaced too (``previous_path``). A new stamp takes its sources' latest time, so that writing it
    the first time outdates nothing that the sources themselves did not."""
    path = Path(path)
    record = {"hash": combined_hash(*modules), "modules": closure_hashes(*modules)}
    text = json.dumps({"hash": record["hash"]}, indent=1) + "\n"
    old = path.read_text() if path.exists() else None
    if old != text:
        times = None
        if old is None:
            newest = max(source(m).stat().st_mtime for m in record["modules"])
            times = (newest, newest)
        else:
            replaced = _read_record(record_path(path))
            if replaced is not None:
                atomic.write_text(previous_path(path), _record_text(replaced))
        atomic.write_text(path, text)
        if times is not None:
            os.utime(path, times)
    if _read_record(record_path(path)) != record:
        atomic.write_text(record_path(path), _record_text(record))
    return str(path)


def _record_text(record: dict) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def _read_record(path: Path) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("modules"), dict) else None


def changed_modules(path: str | Path) -> list[str]:
    """The modules whose change rewrote the stamp at ``path``: those whose behaviour is new while none of the modules
    they import changed (the importers' hashes change with them), and those that left the code."""
    now, before = _read_record(record_path(path)), _read_record(previous_path(path))
    if now is None or before is None:
        return []
    now, before = now["modules"], before["modules"]
    changed = {m for m, h in now.items() if h not in set(before.values())}
    origins = [m for m in sorted(changed) if not set(direct_imports(m)) & changed]
    kept = set(now.values())
    return origins + [f"{m} (no longer run)" for m, h in sorted(before.items()) if h not in kept and m not in now]
