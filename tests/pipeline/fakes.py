"""Stand-ins for what pipeline.snakemake_api reads of Snakemake: a job, its reason, and the plan (the DAG, the
persistence's records, the command line), with the same attributes and methods."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace


class Wildcards(dict):
    def __getattr__(self, name):
        return self[name]


class Params(dict):
    pass


@dataclass
class Reason:
    forced: bool = False
    updated_input: set = field(default_factory=set)
    missing_output: set = field(default_factory=set)
    input_changed: bool = False
    software_stack_changed: bool = False
    text: str = "reason: unknown"

    def __str__(self):
        return self.text


class Job:
    def __init__(
        self, rule, output=(), input=(), params=None, script=None, basedir=".", container="img.sif", **wildcards
    ):
        self.rule = SimpleNamespace(name=rule, script=script, basedir=basedir)
        self.wildcards = Wildcards(wildcards)
        self.output = list(output)
        self.input = list(input)
        self.params = Params(params or {})
        self.non_derived_params = list((params or {}).values())
        self.container_img_url = container

    def __repr__(self):
        return f"Job({self.rule.name}, {dict(self.wildcards)})"


class Workflow:
    """What the pipeline reads through snakemake_api.Workflow, given outright."""

    def __init__(
        self,
        jobs=(),
        reasons=None,
        deps=None,
        needrun=None,
        checksums=None,
        params=None,
        targets=None,
        touch=False,
        main=True,
        local=False,
        basedir=".",
    ):
        self.basedir = str(basedir)
        self.jobs = list(jobs)
        self.reasons = reasons or {}
        self.deps = deps or {}
        self.needed = set(needrun if needrun is not None else self.jobs)
        self.checksums = checksums or {}
        self.params = params or {}
        self._targets = targets
        self.touch, self.is_main_process, self.local_exec = touch, main, local

    def targets(self):
        return self._targets

    def needrun_jobs(self):
        return [j for j in self.jobs if j in self.needed]

    def reason(self, job):
        return self.reasons.get(job, Reason())

    def needrun(self, job):
        return job in self.needed

    def dependencies(self, job):
        return self.deps.get(job, {})

    def input_checksums(self, job, path):
        return set(self.checksums.get((job, path), ()))

    def recorded_params(self, output):
        return self.params.get(output)

    def serialize_param(self, value):
        return repr(value)
