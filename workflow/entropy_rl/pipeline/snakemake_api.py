"""Every use of Snakemake's internals, in one place: the planned DAG (jobs, their reasons and dependencies), the
persistence's records (input checksums, the params a job ran with, and how Snakemake serialises a param), the
command line's targets and settings, and the error that stops a workflow. A Snakemake upgrade that moves any of
these touches this module alone; the rest of ``entropy_rl.pipeline`` reads the workflow through ``Workflow`` and a job
through the functions below, and its tests through fakes with the same methods (tests/pipeline/fakes.py).

Snakemake 9.27: ``workflow.dag`` (``needrun_jobs``, ``reason``, ``needrun``, ``dependencies``),
``workflow.persistence`` (``input_checksums``, ``params``, the private ``_serialize_param``),
``workflow.dag_settings.targets``, ``workflow.touch``, ``workflow.is_main_process``, ``workflow.local_exec``,
``workflow.get_rule(name).restart_times``, the private ``workflow._build_dag`` (``after_dag``); a job's ``rule.name``,
``rule.basedir``, ``rule.script``, ``wildcards``, ``input``, ``output``, ``params``, ``non_derived_params`` and
``container_img_url``; a reason's ``forced``, ``updated_input``, ``missing_output``, ``input_changed`` and
``software_stack_changed``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from snakemake.exceptions import WorkflowError

__all__ = [
    "Reason",
    "Workflow",
    "WorkflowError",
    "job_container",
    "job_input",
    "job_output",
    "job_params",
    "job_script",
    "job_wildcard",
    "rule_name",
]


@dataclass(frozen=True)
class Reason:
    """Why Snakemake runs a job, as the guard reads it."""

    forced: bool = False
    updated_input: frozenset = frozenset()
    missing_output: frozenset = frozenset()
    input_changed: bool = False
    software_stack_changed: bool = False
    text: str = "reason: unknown"

    def __str__(self) -> str:
        return self.text


class Workflow:
    """Snakemake's workflow as the pipeline's plan, hooks and estimate read it."""

    def __init__(self, workflow):
        self._workflow = workflow

    def after_dag(self, callback) -> None:
        """Call ``callback()`` once the DAG is built, before any job runs: in a dry run too (Snakemake runs ``onstart``
        only when jobs are to run). Snakemake has no such hook: this wraps the workflow's ``_build_dag``, which every
        execution, dry or not, calls once its targets are known."""
        build, called = self._workflow._build_dag, []

        def build_then_call():
            build()
            if not called:
                called.append(True)
                callback()

        self._workflow._build_dag = build_then_call

    def allow_restarts(self, rule: str, times: int) -> None:
        """Let Snakemake submit ``rule``'s failed jobs again up to ``times`` times (its ``restart_times``)."""
        self._workflow.get_rule(rule).restart_times = times

    # ---- the command line -------------------------------------------------------------------------
    def targets(self) -> set[str] | None:
        """The command line's targets, or None when it names none (the default target)."""
        return self._workflow.dag_settings.targets or None

    @property
    def touch(self) -> bool:
        return bool(self._workflow.touch)

    @property
    def is_main_process(self) -> bool:
        """The process the user started (not a SLURM job's nor a local subprocess job's parse)."""
        return bool(self._workflow.is_main_process)

    @property
    def local_exec(self) -> bool:
        return bool(self._workflow.local_exec)

    @property
    def basedir(self) -> str:
        return self._workflow.basedir

    @property
    def cores(self) -> int:
        """The cores Snakemake was given (``--cores``; a cluster executor's own count otherwise)."""
        return int(self._workflow.cores or 1)

    # ---- the planned DAG --------------------------------------------------------------------------
    def needrun_jobs(self):
        return self._workflow.dag.needrun_jobs()

    def reason(self, job) -> Reason:
        """Snakemake's reason for running ``job``."""
        r = self._workflow.dag.reason(job)
        return Reason(
            forced=bool(r.forced),
            updated_input=frozenset(r.updated_input),
            missing_output=frozenset(r.missing_output),
            input_changed=bool(r.input_changed),
            software_stack_changed=bool(r.software_stack_changed),
            text=str(r),
        )

    def needrun(self, job) -> bool:
        return bool(self._workflow.dag.needrun(job))

    def dependencies(self, job) -> dict:
        """The jobs ``job`` reads from, each with the files it reads from it."""
        return self._workflow.dag.dependencies[job]

    # ---- the persistence's records ----------------------------------------------------------------
    def input_checksums(self, job, path: str) -> set[str]:
        """The checksums recorded of input ``path`` when ``job`` last ran."""
        return set(self._workflow.persistence.input_checksums(job, path))

    def recorded_params(self, output: str) -> list[str] | None:
        """The params (serialised) recorded with ``output``, or None."""
        return self._workflow.persistence.params(output)

    def serialize_param(self, value) -> str:
        """A param's value as Snakemake records and compares it (its params trigger)."""
        return self._workflow.persistence._serialize_param(value)


# ---- a job's parts --------------------------------------------------------------------------------


def rule_name(job) -> str:
    return job.rule.name


def job_wildcard(job, *names: str):
    """The first of ``names`` the job's wildcards have (a run's or a method's name), or None."""
    for name in names:
        if value := job.wildcards.get(name):
            return value
    return None


def job_script(job) -> str | None:
    """The path of the job's rule's script, or None for a rule without one."""
    return os.path.join(job.rule.basedir, job.rule.script) if job.rule.script else None


def job_params(job) -> tuple[dict, list]:
    """The job's params by name, and the values Snakemake compares with the recorded ones (non-derived)."""
    return dict(job.params.items()), job.non_derived_params


def job_input(job) -> list[str]:
    return list(job.input)


def job_output(job) -> list[str]:
    return list(job.output)


def job_container(job) -> str | None:
    """The image the job runs in."""
    return job.container_img_url
