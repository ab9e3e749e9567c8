"""Power sampling beside RL: the comparison of Karan & Du (2025) on this workflow's models.

Every method answers the same problems ``n`` times (``mini.power_sampling`` or ``paper.power_sampling``); these
functions turn those samples into that paper's measurements: single-shot accuracy per
benchmark (its Table 1), pass@k with the unbiased estimator (its Figure 5), the base model's
log-likelihood of each method's answers (its Figure 4), and the tokens each method draws.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..core import pass_rates
from . import majority, plotting
from .inputs import Inputs
from .registry import artifact


def accuracy_table(samples: dict[str, pd.DataFrame], reference: str = "base") -> pd.DataFrame:
    """One row per method: single-shot accuracy per benchmark (the mean over all samples, i.e.
    avg@n), tokens per answer, tokens drawn per answer, wall time per answer, and drawn tokens and wall time
    relative to ``reference`` (plain sampling, which draws each answer token once)."""
    rows = {}
    for method, frame in samples.items():
        row = frame.groupby("benchmark", sort=True)["correct"].mean().to_dict()
        row["tokens per answer"] = frame["response_tokens"].mean()
        row["tokens drawn per answer"] = frame["drawn_tokens"].mean()
        # Answers made before samplers timed themselves (paper scale's first jobs) have no wall time.
        row["seconds per answer"] = frame["seconds"].mean() if "seconds" in frame else float("nan")
        rows[method] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table["cost vs " + reference] = table["tokens drawn per answer"] / table.loc[reference, "tokens drawn per answer"]
    table["time vs " + reference] = table["seconds per answer"] / table.loc[reference, "seconds per answer"]
    return table.rename_axis("method")


def pass_at_k_curves(samples: dict[str, pd.DataFrame], ks: list[int]) -> pd.DataFrame:
    """Unbiased pass@k (Chen et al., 2021) per method, benchmark and k, averaged over problems
    (``pass_rates.summarize``, as for every evaluation; a k above the samples per problem is left out)."""
    rows = []
    for method, frame in samples.items():
        for bench, group in frame.groupby("benchmark", sort=True):
            summary = pass_rates.summarize(group, ks)
            rows += [
                {"method": method, "benchmark": bench, "k": k, "pass_at_k": summary[f"pass_at_{k}"]}
                for k in ks
                if f"pass_at_{k}" in summary
            ]
    return pd.DataFrame(rows)


def likelihoods(samples: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The base model's mean log-likelihood per token of every answer, by method (long format)."""
    return pd.concat(
        [
            f.assign(method=m)[["method", "benchmark", "problem_id", "sample", "base_loglik_per_token", "correct"]]
            for m, f in samples.items()
        ],
        ignore_index=True,
    )


# ---- the study's table and figures, registered as every artifact is (study.registry) ------------------------
# Each reads every method's answers as one frame per seed (``Inputs.samples``, replicate 0 first; ``core.power.methods``):
# a seed samples its own replicate of the base model and of the RL runs, so a value is computed per
# seed and shown as the mean over seeds, with its standard error when there are several.


def _seed(samples: dict[str, list[pd.DataFrame]], k: int) -> dict[str, pd.DataFrame]:
    return {method: frames[k] for method, frames in samples.items()}


def _seed_count(samples: dict[str, list[pd.DataFrame]]) -> int:
    counts = {len(frames) for frames in samples.values()}
    if len(counts) != 1:
        raise ValueError(f"every method needs the same number of seeds, got {sorted(counts)}")
    return counts.pop()


def _one_seed_table(samples: dict[str, pd.DataFrame], k: int) -> pd.DataFrame:
    table = accuracy_table(samples)
    benches = [c for c in table.columns if c in set().union(*(set(f["benchmark"]) for f in samples.values()))]
    table[benches] *= 100
    table.insert(len(benches), "Avg.", table[benches].mean(axis=1))
    curves = pass_at_k_curves(samples, [k])
    table.insert(len(benches) + 1, f"pass@{k}", 100 * curves.groupby("method", sort=False)["pass_at_k"].mean())
    # The same tokens spent otherwise: a vote over k of the method's answers, k matched to one Algorithm 1 answer.
    votes = majority.majority_table(samples)
    table.insert(len(benches) + 2, "maj@k Avg.", 100 * votes[benches].mean(axis=1))
    table.insert(len(benches) + 3, "maj@k k", votes["k"].astype(float))
    table.insert(len(benches) + 4, "maj@k tokens drawn", votes["tokens drawn"])
    table["MH acceptance"] = [samples[m]["acceptance"].mean() for m in table.index]
    return table


def _largest_k(samples: dict[str, pd.DataFrame], ks) -> int:
    """The largest configured k that every problem's answers allow (all of them without a configured k)."""
    n = min(int(f.groupby(["benchmark", "problem_id"]).size().min()) for f in samples.values())
    return max([k for k in ks if k <= n], default=n)


def _per_seed_tables(samples: dict[str, list[pd.DataFrame]], k: int) -> pd.DataFrame:
    """``_one_seed_table`` of every seed, indexed by (seed, method)."""
    seeds = _seed_count(samples)
    return pd.concat([_one_seed_table(_seed(samples, s), k) for s in range(seeds)], keys=range(seeds), names=["seed"])


# The columns whose spread over seeds the table shows beside them.
_SPREAD = ("Avg.", "pass@", "maj@k Avg.", "cost vs", "time vs")


@artifact(
    "table",
    "Karan & Du (2025), Table 1",
    "Single-shot accuracy (%, pass@1: the mean over all answers) per benchmark, pass@k at the largest k (%, the mean over benchmarks), majority-vote accuracy over k answers (%, the mean over benchmarks) with k the answers that draw the tokens of one power-sampling answer (k capped at the answers per problem, its tokens then falling short), tokens per answer, tokens drawn and wall time per answer and their ratios to plain sampling, and the Metropolis-Hastings acceptance rate.",
    ("samples",),
    "main",
)
def power01_accuracy(d: Inputs) -> pd.DataFrame:
    """That paper's Table 1 here, with the later samplers' costs beside it: accuracy (%) per benchmark and on average,
    pass@k at the largest k the answers allow, majority voting at power sampling's tokens (``study.majority``:
    ``maj@k Avg.``, its ``k`` and the tokens its k answers draw, to read against power sampling's tokens drawn per
    answer), tokens, cost in tokens and in wall time, acceptance; with several seeds each cell is the mean over them
    (k too, matched per seed), and the averages, pass@k and both costs have their standard error over seeds beside
    them (``<column> s.e.``)."""
    samples = d.samples
    seeds = _seed_count(samples)
    per_seed = _per_seed_tables(samples, _largest_k(_seed(samples, 0), d.pass_k))
    by_method = per_seed.groupby(level="method", sort=False)
    table = by_method.mean()
    if seeds > 1:
        for column in [c for c in table.columns if c.startswith(_SPREAD)]:
            table.insert(table.columns.get_loc(column) + 1, f"{column} s.e.", by_method[column].sem())
    return table.rename(index=d.labels)


@artifact(
    "figure",
    "Karan & Du (2025), Figure 5",
    "pass@k against k per benchmark (unbiased estimator).",
    ("samples",),
    "main",
)
def power02_pass_at_k(d: Inputs, stem):
    """pass@k against k per benchmark (that paper's Figure 5): does sharpening keep the base model's diversity?
    Several seeds: the mean of each seed's curve, in a band of ±1 standard error."""
    samples, labels, pass_k = d.samples, d.labels, list(d.pass_k)
    seeds = _seed_count(samples)
    per_seed = pd.concat([pass_at_k_curves(_seed(samples, k), pass_k).assign(seed=k) for k in range(seeds)])
    curves = per_seed.groupby(["method", "benchmark", "k"], sort=False)["pass_at_k"].agg(["mean", "sem"]).reset_index()
    benches = sorted(curves["benchmark"].unique())
    plotting.style()
    fig, axes = plt.subplots(1, len(benches), figsize=(3.4 * len(benches), 3.0), squeeze=False)
    colours = plotting.palette(samples)
    for ax, bench in zip(axes[0], benches):
        for method in samples:
            c = curves[(curves["method"] == method) & (curves["benchmark"] == bench)]
            ax.plot(
                c["k"], 100 * c["mean"], marker="o", ms=3, color=colours[method], label=plotting.label(labels, method)
            )
            if seeds > 1:
                ax.fill_between(
                    c["k"],
                    100 * (c["mean"] - c["sem"]),
                    100 * (c["mean"] + c["sem"]),
                    color=colours[method],
                    alpha=0.2,
                    lw=0,
                )
        ax.set_xscale("log", base=2)
        ax.set_title(bench)
        ax.set_xlabel("k")
        ax.set_ylabel("pass@k (%)")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    plotting.caption(fig, d.caption)
    return plotting.save(fig, stem)


@artifact(
    "figure",
    "Karan & Du (2025), Figure 4",
    "The base model's log-likelihood per token of each method's answers.",
    ("samples",),
    "main",
)
def power03_likelihoods(d: Inputs, stem):
    """The base model's log-likelihood per token of each method's answers (that paper's Figure 4), every
    seed's answers pooled (each scored by its own seed's base model)."""
    samples, labels = d.samples, d.labels
    data = likelihoods({m: pd.concat(frames, ignore_index=True) for m, frames in samples.items()})
    data["method"] = data["method"].map(lambda m: plotting.label(labels, m))
    plotting.style()
    fig, ax = plt.subplots(figsize=(7.0, 3.2))
    order = [plotting.label(labels, m) for m in samples]
    sns.boxplot(data=data, y="method", x="base_loglik_per_token", order=order, ax=ax, fliersize=1, color="0.85")
    means = data.groupby("method")["base_loglik_per_token"].mean()
    ax.scatter([means[o] for o in order], range(len(order)), color="C3", zorder=3, s=12, label="mean")
    ax.set_xlabel("Base model log-likelihood per answer token (nats)")
    ax.set_ylabel("")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    plotting.caption(fig, d.caption)
    return plotting.save(fig, stem)


@artifact(
    "figure",
    "Karan & Du (2025), Figure 6",
    "Power-sampling accuracy against alpha, and against the number of MCMC steps per block.",
    ("samples",),
    "sweep",
)
def power04_hyperparameters(d: Inputs, stem):
    """Accuracy against alpha (at the main N_MCMC) and against N_MCMC (at the main alpha), that paper's Figure 6, on the
    benchmarks every sweep point answers (the sweeps may answer fewer than the main setting, ``sweeps.benchmarks``);
    several seeds: their mean in a band of ±1 standard error."""
    samples, settings = d.samples, d.settings
    main = settings["power"]
    seeds = _seed_count(samples)
    shared = set.intersection(*(set(f["benchmark"]) for frames in samples.values() for f in frames))
    rows = [
        {
            "method": m,
            "seed": k,
            "alpha": settings[m]["alpha"],
            "n_mcmc": settings[m]["n_mcmc"],
            "benchmark": b,
            "accuracy": 100 * g["correct"].mean(),
        }
        for m, frames in samples.items()
        for k, f in enumerate(frames)
        for b, g in f.groupby("benchmark")
        if b in shared
    ]
    sweep = pd.DataFrame(rows)
    plotting.style()
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.0))
    names = {"alpha": "alpha", "n_mcmc": "N_MCMC"}
    for ax, knob, fixed in ((axes[0], "alpha", "n_mcmc"), (axes[1], "n_mcmc", "alpha")):
        part = sweep[sweep[fixed] == main[fixed]].sort_values(knob)
        sns.lineplot(
            data=part, x=knob, y="accuracy", hue="benchmark", marker="o", ax=ax, errorbar="se" if seeds > 1 else None
        )
        ax.set_xlabel(names[knob])
        ax.set_ylabel("Accuracy (%)")
        ax.set_title(f"{names[knob]} swept ({names[fixed]} = {main[fixed]:g})")
    fig.tight_layout()
    plotting.caption(fig, d.caption)
    return plotting.save(fig, stem)


@artifact(
    "figure",
    "Ji et al. (2026), Figure 2; Azizi et al. (2026)",
    "Average single-shot accuracy against cost per answer relative to plain sampling: tokens drawn, and wall time; hollow, each method's majority vote over the k answers that draw a power-sampling answer's tokens.",
    ("samples",),
    "main",
)
def power05_cost_accuracy(d: Inputs, stem):
    """Accuracy against cost for every method of the main comparison: tokens drawn per answer and wall time per
    answer, each over plain sampling's (an RL checkpoint's training is not counted); beside each method that answers
    more cheaply than power sampling, hollow and joined to it, its majority vote over k answers at k times its cost
    (``study.majority``). Several seeds: the mean of each seed's point, with bars of ±1 standard error on both axes."""
    samples, labels = d.samples, d.labels
    per_seed = _per_seed_tables(samples, 1)
    # k answers cost k times one answer, in tokens and in wall time.
    ratios = ("cost vs base", "time vs base")
    per_seed = per_seed.assign(**{f"maj@k {c}": per_seed["maj@k k"] * per_seed[c] for c in ratios})
    columns = ["Avg.", *ratios, "maj@k Avg.", "maj@k k", *(f"maj@k {c}" for c in ratios)]
    stats = per_seed.groupby(level="method", sort=False)[columns].agg(["mean", "sem"])
    plotting.style()
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.2), sharey=True)
    colours = plotting.palette(samples)
    costs = (("cost vs base", "Tokens drawn per answer"), ("time vs base", "Wall time per answer"))
    for ax, (cost, name) in zip(axes, costs):
        for method, row in stats.iterrows():
            ax.errorbar(
                row[(cost, "mean")],
                row[("Avg.", "mean")],
                xerr=row[(cost, "sem")],
                yerr=row[("Avg.", "sem")],
                fmt="o",
                ms=4,
                capsize=2,
                color=colours[method],
                label=plotting.label(labels, method),
            )
            if row[("maj@k k", "mean")] > 1:  # k = 1: the vote is the single answer, already drawn
                x, y = row[(f"maj@k {cost}", "mean")], row[("maj@k Avg.", "mean")]
                ax.plot([row[(cost, "mean")], x], [row[("Avg.", "mean")], y], ls=":", lw=0.8, color=colours[method])
                ax.errorbar(
                    x,
                    y,
                    xerr=row[(f"maj@k {cost}", "sem")],
                    yerr=row[("maj@k Avg.", "sem")],
                    fmt="o",
                    ms=4,
                    mfc="white",
                    capsize=2,
                    color=colours[method],
                )
        ax.set_xscale("log")
        ax.set_xlabel(f"{name} (× plain sampling)")
    axes[0].set_ylabel("Accuracy (%, average over benchmarks)")
    axes[1].plot([], [], "o", ms=4, mfc="white", color="0.4", label="hollow: majority of k answers")
    axes[1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    plotting.caption(fig, d.caption)
    return plotting.save(fig, stem)
