"""Which source files a module's behaviour depends on: its import closure inside this package.

Rules declare code as inputs (editing it reruns the job) and training runs fingerprint the code
that shapes their trajectory; both name modules, and this module turns a name into the files that
can change its behaviour, by reading imports (never importing, so no heavy dependency loads).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

from .. import PACKAGE_DIR

PACKAGE = "entropy_rl"
# Plumbing that cannot change an output's content: left out of closures, so editing it reruns nothing.
PLUMBING = frozenset(f"{PACKAGE}.{m}" for m in ("core.atomic", "core.logs", "core.modules", "core.resume", "mini.checkpoints"))


def source(module: str) -> Path:
    """The file of ``module`` (a package's ``__init__.py``). This package's modules are found by
    their dotted path under it, without importing anything (``find_spec`` would import the
    parent packages); another module by the import system's finders."""
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
    found = set()
    for node in ast.walk(ast.parse(source(module).read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if _ours(alias.name)}
        elif isinstance(node, ast.ImportFrom) and _ours(target := _resolve(module, node)):
            for alias in node.names:  # `from pkg import mod` names a module; `from mod import name` does not
                candidate = f"{target}.{alias.name}"
                found.add(candidate if _is_package(target) and _exists(candidate) else target)
    return frozenset(found)


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
    """``modules`` and every package module they import, transitively, less plumbing and ``__init__``s."""
    seen, todo = set(), list(modules)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += direct_imports(m)
    return tuple(sorted(m for m in seen if m not in PLUMBING and not _is_package(m)))


def files(*modules: str) -> list[str]:
    """The source files of ``closure(*modules)``, as paths."""
    return [str(source(m)) for m in closure(*modules)]
