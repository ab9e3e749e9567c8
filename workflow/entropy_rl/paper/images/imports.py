"""What each image's %test must import: every module from outside the project that the code its rules run imports,
so that a broken image fails when it is built, not at its first job on the cluster.

A rule's code is what its code stamp names (the ``code=`` input of its block in workflow/rules: ``PLAN.code(...)``, or
the study plan's ``train_code`` and ``power_sampler_code``), the script it runs with the package's modules that script imports (its job's ``main``), and
the modules its jobs launch with ``python -m``; the image is its ``container:``. Imports are read from the source (lazy ones included), never by importing it. A module counts as
imported by %test when %test imports it or one of its submodules.

    python -m entropy_rl.paper.images.imports [NAME ...]   # each image's missing imports (exit 1 if any)
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

from ...core import algorithms, modules
from ...core.images import ROOT, names, section
from .. import launch, reward_launch

RULES = "workflow/rules"
SCRIPTS = "workflow/scripts"
# What a rule's run_image may be (pipeline.plan): each trainer's image, with the trainer it runs.
RUN_IMAGES = {"train": algorithms.VERL, "prime": algorithms.PRIME}
# Entry points run as `python -m` (not imported by any module, so read here): verl's trainer (launch.command),
# verl's checkpoint merger (paper.train_job.main) in both training images.
LAUNCHED = {"train": ("verl.trainer.main_ppo", "verl.model_merger"), "prime": ("verl.model_merger",)}


# What the code stamps over-count: a stamp covers a whole module, and paper.preflight holds the checks of every
# trainer and of the power study's model, each run in its own image. Each entry: image -> {module prefix: why}.
NOT_RUN_THERE = {
    "eval": {
        p: "paper.preflight's run checks (verl's config, dataset and trainer; PRIME's recipe) run in the training "
        "images; the eval image runs only its engine checks (preflight_eval, preflight_power: engine_problems)"
        for p in ("verl", "recipe", "hydra", "omegaconf", "ray")
    },
    "train": {
        p: "paper.verl.prime_check's (PRIME's recipe on verl 0.4.1, where fsdp_workers still is): paper.preflight "
        "checks a PRIME run with it in the prime image"
        for p in ("recipe", "verl.workers.fsdp_workers")
    },
    "prime": {
        p: "verl 0.9.1's modules, imported by paper.preflight's check of a verl 0.9.1 run (the train image); a "
        "PRIME run's check (paper.verl.prime_check) runs on verl 0.4.1, which has none of them"
        for p in ("verl.trainer.ppo.v1", "verl.workers.config", "verl.trainer.ppo.utils")
    },
}


class ImageImportError(RuntimeError):
    pass


def _block_code(block: str, images: list[str]) -> dict[str, set[str]]:
    """The project modules a rule block's code input names, per image it runs in."""
    found: dict[str, set[str]] = {image: set() for image in images}
    match = re.search(r"\bcode=(.+)", block)
    if match is None:
        return found
    expr = match.group(1).strip().rstrip(",")
    literal = re.search(r"\bcode\(\s*\"[^\"]+\"((?:\s*,\s*\"[^\"]+\")*)", expr)
    named = set(re.findall(r"\"([\w.]+)\"", literal.group(1))) if literal else set()
    for image in images:
        if "*preflight.LAUNCH_CODE" in expr:  # the launch check of the image's own trainer
            found[image] |= {
                "paper.preflight",
                *(m.removeprefix("entropy_rl.") for m in launch.TRAINER_MODULES[RUN_IMAGES[image]]),
            }
        elif expr == "train_code":  # pipeline.stamps.trainer_code: the job around the trainer, the trainer's modules
            trainer = launch.TRAINER_MODULES[RUN_IMAGES[image]]
            if RUN_IMAGES[image] == "verl":  # the random-reward control's stamp adds its reward (paper.reward_launch)
                trainer = (*trainer, reward_launch.RANDOM_REWARD_MODULE)
            found[image] |= {reward_launch.TRAINING_JOB, *(m.removeprefix("entropy_rl.") for m in trainer)}
        elif "power_sampler_code" in expr:  # pipeline.stamps.SAMPLER_CODE's modules, with the job around them
            found[image] |= {"core.power.sample_job", "paper.power_sampling", "paper.power_samplers"}
        elif not literal:
            raise ImageImportError(f"a rule's code input is `{expr}`, which {__name__} does not know how to read")
        found[image] |= named
    return found


@cache
def _rule_blocks(root: str) -> list[str]:
    blocks = []
    for path in sorted(Path(root, RULES).glob("*.smk")):
        blocks += re.split(r"\n\s*rule\b", "\n" + path.read_text())[1:]
    return blocks


@cache
def image_code(root: str = str(ROOT)) -> dict[str, dict[str, set[str]]]:
    """Per image: {"modules": project modules its rules' code stamps name, "scripts": the scripts it runs}."""
    per: dict[str, dict[str, set[str]]] = {}
    for block in _rule_blocks(root):
        container = re.search(r"container:\s*\n\s*(PLAN\.image\(\"(\w+)\"\)|run_image)", block)
        script = re.search(r"script:\s*\n\s*\"\.\./scripts/([\w.]+)\"", block)
        if container is None:
            continue
        images = [container.group(2)] if container.group(2) else list(RUN_IMAGES)
        if "artifact_inputs(PLAN" in block:  # a figure or table: the study registry's modules, read here as the whole
            # study layer (this layer may not import it; the analysis image runs all of it)
            study = Path(root, "workflow", modules.PACKAGE, "study")
            code = {
                images[0]: {
                    ".".join(("study", *p.relative_to(study).with_suffix("").parts))
                    for p in study.rglob("*.py")
                    if p.name != "__init__.py"
                }
            }
        else:
            code = _block_code(block, images)
        for image in images:
            entry = per.setdefault(image, {"modules": set(), "scripts": set()})
            entry["modules"] |= {f"{modules.PACKAGE}.{m}" for m in code[image]}
            if script:
                entry["scripts"].add(script.group(1))
    return per


def _external(tree: ast.Module) -> set[str]:
    """Modules from outside the project and the standard library that a module's text imports."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return {
        m
        for m in found
        if m.split(".")[0] not in sys.stdlib_module_names and m != "__future__" and m.split(".")[0] != modules.PACKAGE
    }


def _ours(tree: ast.Module) -> set[str]:
    """The package's modules a script imports (``from entropy_rl.layer import module``, ``import entropy_rl.x``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == modules.PACKAGE}
        elif (
            isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == modules.PACKAGE
        ):
            for alias in node.names:
                named = f"{node.module}.{alias.name}"
                try:
                    found.add(named if modules.source(named) else node.module)
                except ModuleNotFoundError:  # a name the module defines, not a module of its package
                    found.add(node.module)
    return found


def required(name: str, root: str = str(ROOT)) -> set[str]:
    """The modules from outside the project that the code run in image ``name`` imports."""
    code = image_code(root).get(name, {"modules": set(), "scripts": set()})
    needed, ran = set(LAUNCHED.get(name, ())), set(code["modules"])
    for script in code["scripts"]:
        tree = ast.parse(Path(root, SCRIPTS, script).read_text())
        needed |= _external(tree)
        ran |= _ours(tree)
    for module in modules.closure(*sorted(ran)):
        needed |= _external(ast.parse(modules.source(module).read_text()))
    return needed


def tested(name: str, root: str = str(ROOT)) -> set[str]:
    """The modules the image's %test imports (in its `python -c "import ..."` lines)."""
    imported = set()
    for statement in re.findall(r"-c \"([^\"]+)\"", section(name, "%test", root)):
        for part in (p.strip() for p in statement.split(";")):
            if part.startswith("import "):
                imported |= {m.strip().split(" as ")[0] for m in part[len("import ") :].split(",")}
            elif part.startswith("from ") and " import " in part:
                imported.add(part[len("from ") :].split(" import ")[0].strip())
    return imported


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def missing(name: str, root: str = str(ROOT)) -> list[str]:
    """What the image's rules import and its %test does not (importing a submodule imports its parents), less what
    runs elsewhere (NOT_RUN_THERE); an exclusion that no longer matches anything is reported too, so the list stays
    true."""
    have, needed = tested(name, root), required(name, root)
    excluded = NOT_RUN_THERE.get(name, {})
    gaps = [
        m for m in sorted(needed) if not any(_under(t, m) for t in have) and not any(_under(m, p) for p in excluded)
    ]
    stale = [f"(stale exclusion {p})" for p in excluded if not any(_under(m, p) for m in needed)]
    return gaps + stale


def main(argv: list[str] | None = None) -> int:
    wanted = (argv if argv is not None else sys.argv[1:]) or names()
    bad = 0
    for name in wanted:
        gaps = missing(name)
        bad += bool(gaps)
        print(
            f"{name}: {len(required(name))} modules its rules import, {len(NOT_RUN_THERE.get(name, {}))} prefixes "
            f"run elsewhere; %test misses {', '.join(gaps) or 'none'}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
