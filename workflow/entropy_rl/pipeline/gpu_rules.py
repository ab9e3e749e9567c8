"""The rules whose jobs run on GPUs, declared once: each with its cost class, the prefix of its jobs' names in the
GPU-hours estimate (``train:RUN``, ``eval:RUN``, ``power:METHOD``, ``speed:pilot``; paper.cost.budget.job_hours),
and the wildcard that names a job. The paid-work guard, the estimate and the pilot's report read them here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuRule:
    name: str  # the rule
    cost: str  # its jobs' class in the estimate
    wildcard: str | None  # the wildcard that names a job, or None for the rule's one job

    def job(self, name: str | None = None) -> str:
        """A job's name in the estimate (``job_hours``'s key)."""
        return f"{self.cost}:{name if self.wildcard else 'pilot'}"


TRAIN = GpuRule("train_verl", "train", "run")
EVALUATE = GpuRule("evaluate_vllm", "eval", "run")
POWER = GpuRule("power_sample_vllm", "power", "method")
SPEED = GpuRule("pilot_speed", "speed", None)  # the GPU pilot's speed job (rules/pilot.smk)
GPU_RULES: dict[str, GpuRule] = {rule.name: rule for rule in (TRAIN, EVALUATE, POWER, SPEED)}
