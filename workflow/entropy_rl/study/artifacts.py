"""The paper's figures and tables: what each shows and which inputs it reads.

One ``register`` call per artifact. The name is the Snakemake rule, the plotting
(or table) function and the output file stem, so `snakemake fig07_coefficients_vs_size`
and `results/figures/fig07_coefficients_vs_size.pdf` name the same thing; a name
registered twice is refused. Which runs an artifact draws is configuration
(`<scale>.artifacts.<name>.runs`); what it is and what it reads is fixed here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Artifact:
    kind: str  # "figure" or "table"
    source: str  # where in the paper
    what: str  # first sentence of the caption
    needs: tuple[str, ...] = ("metrics",)  # inputs beyond the code: metrics, models, eval


ARTIFACTS: dict[str, Artifact] = {}


def register(name: str, artifact: Artifact) -> Artifact:
    """Add ``artifact`` as ``name``. A name is a rule, a function and an output stem, so one
    registered twice is refused (a dict literal would keep the second silently)."""
    if name in ARTIFACTS:
        raise ValueError(f"artifact {name!r} is registered twice: each name is one rule and one output")
    ARTIFACTS[name] = artifact
    return artifact


# fmt: off
register("fig01_entropy_collapse", Artifact("figure", "Figure 1", "Entropy collapse and the fitted curve R = -a exp(H) + b, extended to H = 0, where it predicts the ceiling b - a."))
register("fig02_cumulative_shares", Artifact("figure", "Figure 2", "Share of the entropy consumed and of the validation accuracy gained over training."))
register("fig03_fitted_curves", Artifact("figure", "Figure 3", "Validation accuracy against policy entropy on math, with the fit R = -a exp(H) + b per run."))
register("fig04_code_fits", Artifact("figure", "Figure 4", "Validation accuracy against policy entropy on code, with the fit R = -a exp(H) + b per run."))
register("fig05_early_prediction", Artifact("figure", "Figure 5", "Late validation accuracy predicted from a fit on the early steps only."))
register("fig06_algorithms", Artifact("figure", "Figure 6", "The fitted curves of one base model under different RL algorithms, beside one pooled curve."))
register("fig07_coefficients_vs_size", Artifact("figure", "Figure 7", "The coefficients a and b against the non-embedding parameter count (log scale), with log-linear fits.", ("metrics", "models")))
register("fig08_covariance", Artifact("figure", "Figure 8", "The bandit covariance (Eq. 8-9, per prompt over its responses, batch mean) beside the entropy decrease -dH over training and by prompt accuracy (1/8, 4/8, 7/8), with the batch-level token covariance (Eq. 10) beside -dH."))
register("fig09_entropy_loss", Artifact("figure", "Figure 9", "Entropy and validation accuracy with an entropy loss of several coefficients."))
register("fig10_reference_kl", Artifact("figure", "Figure 10", "Entropy and validation accuracy with a KL penalty to the reference model."))
register("fig11_covariance_methods", Artifact("figure", "Figure 11", "GRPO, Clip-higher, Clip-Cov and KL-Cov: entropy, response length and validation accuracy."))
register("fig12_entropy_accuracy", Artifact("figure", "Figure 12", "GRPO, Clip-higher, Clip-Cov and KL-Cov on the larger model: entropy, response length and validation accuracy."))
register("fig13_entropy_control", Artifact("figure", "Figure 13", "Entropy steered by the Clip-Cov clip ratio and by the KL-Cov coefficient."))
register("appB_more_fits", Artifact("figure", "Appendix B", "More fits of R = -a exp(H) + b."))
register("appC_training_data", Artifact("figure", "Appendix C", "Fits of one base model trained on different data: the coefficients depend on the data."))
register("appD_instruct_models", Artifact("figure", "Appendix D", "Fits of R = -a exp(H) + b on instruct models."))
register("table01_covariance_distribution", Artifact("table", "Table 1", "Mean token covariance of the top p% of tokens and of all tokens, at the first step with a measured covariance and averaged over training."))
register("table02_benchmarks", Artifact("table", "Table 2", "Accuracy (%) per benchmark; AIME and AMC (or their stand-ins) sampled at temperature 0.6 and averaged, the rest greedy.", ("eval",)))
# fmt: on

FIGURES = [name for name, a in ARTIFACTS.items() if a.kind == "figure"]
TABLES = [name for name, a in ARTIFACTS.items() if a.kind == "table"]

# The audit's measurements that read test-set evaluations (results/eval), by name: those of study.audit.accuracy
# (a test holds the two equal). The names are here so that the workflow, which imports this module, plans the
# evaluations without loading the audit.
EVAL_MEASUREMENTS = frozenset({"accuracy_vs_baseline", "benchmark_average", "benchmark_cell", "best_gain_over_grpo"})


def evaluated(claims: list[dict]) -> list[str]:
    """The artifacts whose runs' test-set evaluations are read: those that show them (``needs`` "eval") and
    those a claim of the ledger (claims.yaml's ``claims``) measures with one of ``EVAL_MEASUREMENTS``. Only
    their runs are evaluated for the study; the other runs' curves are measured on the validation sets."""
    named = {c["measure"]["artifact"] for c in claims if c["measure"]["fn"] in EVAL_MEASUREMENTS}
    return [name for name, a in ARTIFACTS.items() if "eval" in a.needs or name in named]


def by_replicate(replicates: dict[str, list[str]], paths: list[str]) -> dict[str, list[str]]:
    """Each run's files, replicate 0 first, from a rule input that lists them run by run and replicate by
    replicate (as ``replicates`` does: run -> its replicates, the run itself first)."""
    paths = list(paths)
    if len(paths) != sum(len(reps) for reps in replicates.values()):
        raise ValueError(f"{len(paths)} files for {sum(len(r) for r in replicates.values())} replicates of {list(replicates)}")
    out, at = {}, 0
    for run, reps in replicates.items():
        out[run], at = paths[at : at + len(reps)], at + len(reps)
    return out


def output_files(name: str) -> list[str]:
    """The files an artifact writes (figures: PDF and PNG; tables: CSV and Markdown)."""
    if ARTIFACTS[name].kind == "figure":
        return [f"results/figures/{name}.pdf", f"results/figures/{name}.png"]
    return [f"results/tables/{name}.csv", f"results/tables/{name}.md"]


def _setting(spec: dict) -> str:
    """What sets a run apart: its algorithm and the loss settings its treatment changes."""
    loss = spec["loss"]
    parts = [spec["algorithm"].upper().replace("_PLUS_PLUS", "++")]
    mode = loss["loss_mode"]
    if mode == "clip_cov":
        parts.append(
            f"Clip-Cov ratio {loss['clip_cov_ratio']:g}, bounds [{loss['clip_cov_lb']:g}, {loss['clip_cov_ub']:g}]"
        )
    elif mode == "kl_cov":
        parts.append(f"KL-Cov ratio {loss['kl_cov_ratio']:g}, coefficient {loss['ppo_kl_coef']:g}")
    if mode == "vanilla" and loss["clip_ratio_high"] != loss["clip_ratio_low"]:
        parts.append(f"clip-higher {loss['clip_ratio_low']:g}/{loss['clip_ratio_high']:g}")
    if loss["entropy_coeff"]:
        parts.append(f"entropy loss {loss['entropy_coeff']:g}")
    if loss["kl_loss_coef"]:
        parts.append(f"reference KL {loss['kl_loss_coef']:g}")
    if "train_data" in spec:
        parts.append(f"trained on {spec['train_data']}")
    return ", ".join(parts)


def caption(name: str, scale: str, specs: dict[str, dict], labels: dict[str, str]) -> str:
    """Scale, what is shown, the shared training settings and what sets each run apart."""
    first = next(iter(specs.values()))
    rates = sorted({s["lr"] for s in specs.values()})  # one each when learning rates scale with width
    lr = f"lr {rates[0]:g}" if len(rates) == 1 else f"lr {rates[0]:g}-{rates[-1]:g} (scaled with 1/width)"
    shared = (f"{first['steps']} steps of {first['prompts_per_step']} prompts x {first['rollout_n']} responses, "
              f"{lr}, temperature {first['temperature']:g}, validation every {first['val_every']} steps")  # fmt: skip
    per_run = "; ".join(f"{labels[r]}: {_setting(s)}" for r, s in specs.items())
    return f"{scale.capitalize()} scale. {ARTIFACTS[name].what} ({ARTIFACTS[name].source}.) Settings: {shared}. Runs: {per_run}."
