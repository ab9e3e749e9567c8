"""What the rules compare to decide a rerun: ``canonical`` params (their text is what Snakemake compares) and the
code stamps (core.modules.stamp) that stand for the code a job runs, one per rule or per what its jobs run."""

from __future__ import annotations

import functools
from pathlib import Path

from ..core import backends
from ..core import modules as modules_closure
from ..core.run import Run
from ..paper import reward_launch

# At paper scale each sampling module has its own code stamp (core.backends.SAMPLERS), named for it: a
# change to the later samplers outdates none of the jobs of plain sampling and Algorithm 1.
SAMPLER_CODE = {"paper.power_sampling": "power_sampling_vllm", "paper.power_samplers": "power_samplers_vllm"}
SAMPLING_JOB = "core.power.sample_job"  # the job around every sampler (workflow/scripts/power_sample.py)


def use_template_cache(path: str | Path) -> None:
    """Each module's parsed form, kept by its text, for the code stamps of every later plan and job (core.modules:
    each text is parsed once; an entry that is not one the module wrote is parsed again)."""
    modules_closure.CACHE_DIR = Path(path)


def canonical(obj):
    """Params with keys sorted at every level: Snakemake compares params by their
    text, so a reordered but equal config must not look like a change."""
    if isinstance(obj, dict):
        return {k: canonical(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    return obj


def code(template: str, key: str, *modules: str) -> str:
    """The code that shapes a job's outputs, as an input: the modules the rule's script calls (``layer.module``, or a
    full dotted name) and everything they import in the package, less plumbing (core.modules.PLUMBING), stood for by
    one stamp per ``key`` (``template``: core.paths.CODE_STAMP) that is rewritten only when what that code computes
    changes (core.modules.stamp). A comment, a docstring or a moved module reruns nothing; a change of behaviour
    reruns the jobs that run it, and at paper scale the GPU rules' jobs only when asked (guard.paid_work_guard)."""
    dotted = [m if m.startswith("entropy_rl.") else f"entropy_rl.{m}" for m in modules]
    return modules_closure.stamp(template.format(key=key), *dotted)


@functools.cache
def trainer_code(template: str, key: str, modules: tuple[str, ...]) -> str:
    """The code a trainer's runs execute (``modules``: launch.TRAINER_MODULES of the trainer, with the job around it,
    reward_launch.TRAINING_JOB: the launch and the log translation), one stamp per ``key``: train_verl.json for verl
    0.9.1's runs, train_prime.json for PRIME's, train_verl_random_reward.json for the random-reward control."""
    return code(template, key, reward_launch.TRAINING_JOB, *modules)


def train_code(template: str, run: Run) -> str:
    """A run's code input: its own trainer's, so an edit of the loss plugin outdates
    no PRIME run and an edit of PRIME's main no verl 0.9.1 run; a random-reward run's adds its reward's module."""
    return trainer_code(template, reward_launch.stamp_key(run), tuple(reward_launch.trainer_modules(run)))


@functools.cache
def sampler_stamp(template: str, module: str) -> str:
    return code(template, SAMPLER_CODE[module], SAMPLING_JOB, module)


def power_sampler_code(template: str, kind: str) -> str:
    """The code stamp of the module that samples a method of ``kind`` at paper scale."""
    return sampler_stamp(template, backends.sampler_module("paper", kind))
