"""What an artifact's function receives: its rule's inputs, loaded, and its params (``Inputs``, built by ``load``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..core import model_size
from ..core.run import Run


@dataclass(frozen=True)
class Inputs:
    """What an artifact's function receives: its rule's inputs, loaded, and its params. Each series holds one
    frame per seed, the run's (or method's) own first."""

    caption: str = ""
    labels: dict[str, str] = field(default_factory=dict)  # run or method -> display label
    metrics: dict[str, list[pd.DataFrame]] = field(default_factory=dict)  # run -> each seed's metrics
    specs: dict[str, Run] = field(default_factory=dict)  # run -> the run, resolved
    sizes: dict[str, int] = field(default_factory=dict)  # run -> non-embedding parameters
    fit_steps: int | None = None  # Figure 5's early window
    summaries: dict[str, list[pd.DataFrame]] = field(default_factory=dict)  # run -> each seed's evaluation summary
    benchmark_names: dict[str, str] = field(default_factory=dict)  # Table 2's columns
    samples: dict[str, list[pd.DataFrame]] = field(default_factory=dict)  # method -> each seed's answers
    pass_k: tuple[int, ...] = ()
    settings: dict[str, dict] = field(default_factory=dict)  # method -> its sampling settings

    @property
    def first(self) -> dict[str, pd.DataFrame]:
        """Each run's first seed's metrics, in drawing order."""
        return {run: frames[0] for run, frames in self.metrics.items()}


def by_replicate(replicates: dict[str, list[str]], paths: list[str]) -> dict[str, list[str]]:
    """Each run's (or method's) files, replicate 0 first, from a rule input that lists them run by run and
    replicate by replicate (as ``replicates`` does: run -> its replicates, the run itself first)."""
    paths = list(paths)
    if len(paths) != sum(len(reps) for reps in replicates.values()):
        raise ValueError(
            f"{len(paths)} files for {sum(len(r) for r in replicates.values())} replicates of {list(replicates)}"
        )
    out, at = {}, 0
    for run, reps in replicates.items():
        out[run], at = paths[at : at + len(reps)], at + len(reps)
    return out


def load(files: dict[str, list[str]], params: dict) -> Inputs:
    """An artifact rule's inputs, read: each of metrics, summaries and samples listed run by run (or method by
    method) and seed by seed as ``params["replicates"]`` orders them, the models as their non-embedding sizes (a
    run's replicates share its architecture), and the params the functions read."""
    order = params["replicates"]

    def frames(key: str) -> dict[str, list[pd.DataFrame]]:
        if key not in files:
            return {}
        return {run: [pd.read_parquet(p) for p in paths] for run, paths in by_replicate(order, files[key]).items()}

    models = by_replicate(order, files["models"]) if "models" in files else {}
    return Inputs(
        caption=params["caption"],
        labels=params["labels"],
        metrics=frames("metrics"),
        specs={r: Run.from_params(s) for r, s in params.get("specs", {}).items()},
        sizes={run: model_size.non_embedding_params(paths[0]) for run, paths in models.items()},
        fit_steps=params.get("fit_steps"),
        summaries=frames("summaries"),
        benchmark_names=params.get("benchmark_names", {}),
        samples=frames("samples"),
        pass_k=tuple(params.get("pass_k", ())),
        settings=params.get("settings", {}),
    )
