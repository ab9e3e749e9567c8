"""The study the audit reads (``Study``): runs' specs, metrics and evaluation summaries, model sizes and
the power-sampling study's answers; and ``NotComparable``, raised when this scale cannot make a measurement."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from ...core import model_size
from ...core import spec as run_spec
from ...core.run import Run, replicates
from .. import analysis


class NotComparable(Exception):
    """The measurement cannot be made at this scale; the message says why."""


@dataclass
class Study:
    """What the audit reads: run outputs and the per-run settings, loaded lazily."""

    scale: str
    artifacts: dict[str, list[str]]  # artifact -> runs
    specs: dict[str, Run]  # run -> the run, resolved
    metrics_paths: dict[str, str]
    summary_paths: dict[str, str]  # run -> its evaluation summary, for the runs whose evaluations are read
    model_paths: dict[str, str]  # model -> directory holding its config.json
    val_samples: dict[str, int]  # benchmark -> validation samples per validation point
    bench_sizes: dict[str, int]  # benchmark -> problems, for the benchmarks Table 2 averages (math)
    bench_roles: dict[str, str]  # the paper's benchmark name -> this scale's benchmark
    model_roles: dict[str, str]  # the paper's model name -> this scale's model
    fit_steps: int
    # The power-sampling study, empty when the scale has none: "model" (the base model sampled),
    # "methods" (name -> settings; power.PLAIN_POWER_METHODS among them), "runs" (RL
    # method -> the run whose checkpoint it samples), "artifacts" (artifact -> methods it draws),
    # "problems" (benchmark -> problems answered) and "n" (answers per problem).
    power: dict = field(default_factory=dict)
    power_paths: dict[str, str] = field(default_factory=dict)  # method -> its answers (parquet)
    _cache: dict = field(default_factory=dict)

    def seeds(self, run: str) -> list[str]:
        """The replicates of a configured run, replicate 0 (the run itself) first (core.spec.with_replicates)."""
        return replicates(self.specs, run)

    @property
    def replicates(self) -> int:
        """Seeds per configured run: every run of a study has the same number."""
        counts = {len(self.seeds(r)) for r in self.specs if self.name(r) == r}
        if len(counts) > 1:
            raise ValueError(f"runs have different numbers of replicates: {sorted(counts)}")
        return counts.pop() if counts else 1

    @property
    def shared_base_models(self) -> bool | None:
        """Whether every replicate of a run starts from replicate 0's base model (None with one seed)."""
        if self.replicates < 2:
            return None
        return all(
            self.specs[s].model == self.specs[r].model for r in self.specs if self.name(r) == r for s in self.seeds(r)
        )

    def name(self, run: str) -> str:
        """The configured run a replicate repeats (the run itself when it is one)."""
        return self.specs[run].configured

    def at_seed(self, k: int) -> Study:
        """The study as seed ``k`` ran it: every artifact's runs are their replicate k, and every power-sampling
        method (by its plain name) is its replicate k's answers (core.power.methods). Same cache."""
        artifacts = {a: [self.seeds(r)[k] for r in runs] for a, runs in self.artifacts.items()}
        power_paths = {
            m: self.power_paths[rep]
            for m in self.power_paths
            if run_spec.replicate_of(m)[1] == 0 and (rep := run_spec.replicate_names(m, k + 1)[k]) in self.power_paths
        }
        return dataclasses.replace(self, artifacts=artifacts, power_paths=power_paths, _cache=self._cache)

    def runs(self, artifact: str) -> list[str]:
        if artifact not in self.artifacts:
            raise NotComparable(f"this scale has no runs for {artifact}")
        return self.artifacts[artifact]

    def metrics(self, run: str) -> pd.DataFrame:
        key = ("metrics", run)
        if key not in self._cache:
            self._cache[key] = pd.read_parquet(self.metrics_paths[run])
        return self._cache[key]

    def summary(self, run: str) -> pd.DataFrame:
        """A run's evaluation summary on the benchmarks Table 2 averages (``bench_sizes``'s)."""
        key = ("summary", run)
        if key not in self._cache:
            if run not in self.summary_paths:  # the workflow evaluates only the runs EVAL_MEASUREMENTS read
                raise KeyError(
                    f"{run} has no evaluation among the audit's inputs; a measurement that reads one is "
                    "named in study.artifacts.EVAL_MEASUREMENTS"
                )
            frame = pd.read_parquet(self.summary_paths[run])
            self._cache[key] = frame[frame["benchmark"].isin(list(self.bench_sizes))].reset_index(drop=True)
        return self._cache[key]

    def samples(self, method: str) -> pd.DataFrame:
        key = ("samples", self.power_paths[method])  # by file: a seed's study reads its own replicate's
        if key not in self._cache:
            self._cache[key] = pd.read_parquet(self.power_paths[method])
        return self._cache[key]

    def power_study(self) -> dict:
        if not self.power:
            raise NotComparable("this scale has no power-sampling study")
        return self.power

    def power_methods(self, artifact: str) -> list[str]:
        return self.power_study()["artifacts"][artifact]

    def size(self, run: str) -> int:
        model = self.specs[run].model
        key = ("size", model)
        if key not in self._cache:
            self._cache[key] = model_size.non_embedding_params(self.model_paths[model])
        return self._cache[key]

    def method(self, run: str) -> str:
        return method(self.specs[run])

    def test_average(self, run: str) -> float:
        """Mean test accuracy over benchmarks (%), Table 2's Avg."""
        return float(analysis.benchmark_accuracy({run: self.summary(run)}).loc[run, "Avg."])

    def baseline(self, runs: list[str], model: str | None = None) -> str:
        """The one GRPO run among ``runs`` (of ``model``, when given): what a treatment is compared with."""
        base = [r for r in runs if self.method(r) == "GRPO" and (model is None or self.specs[r].model == model)]
        if len(base) != 1:
            raise NotComparable(f"expected one GRPO baseline among {runs}, found {base}")
        return base[0]


def method(run: Run) -> str:
    """The paper's name for what a run does to the loss: GRPO, Clip-higher, Clip-Cov, KL-Cov, Entropy loss, Reference KL;
    or "Random reward", this workflow's control (issue 42), which is never a treatment's GRPO baseline."""
    loss = run.loss
    if run.random_reward:
        return "Random reward"
    if loss.loss_mode == "clip_cov":
        return "Clip-Cov"
    if loss.loss_mode == "kl_cov":
        return "KL-Cov"
    if loss.entropy_coeff:
        return "Entropy loss"
    if loss.kl_loss_coef:
        return "Reference KL"
    if loss.clip_ratio_high > loss.clip_ratio_low:
        return "Clip-higher"
    return run.method.label
