"""Section 4: entropy control: the entropy loss and reference KL (Figures 9, 10), Clip-Cov and KL-Cov against
GRPO and Clip-higher (Figures 11, 12) and the entropy level they set (Figure 13); and this workflow's own control,
true against random reward (issue 42)."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from .. import analysis, plotting
from ..inputs import Inputs
from ..registry import artifact
from .shared import band_note, checked_runs, seed_line

# Quantities drawn against the training step: column → (panel title, y label).
STEP_PANELS = {
    "entropy": ("Policy entropy", "Entropy (nats)"),
    "response_length": ("Response length", "Mean response length (tokens)"),
    "val_acc": ("Validation accuracy", "Accuracy (%)"),
    "reward_mean": ("Training reward", "Mean reward of the rollouts"),
}
# Figure 13's panels: loss mode -> (title, the setting that sorts its runs, its name, colour map).
CONTROL_PANELS = {
    "clip_cov": ("Clip-Cov", "clip_cov_ratio", "clip ratio", "crest"),
    "kl_cov": ("KL-Cov", "ppo_kl_coef", "KL coef", "flare"),
}


def step_curves(d: Inputs, stem, name: str, panels, title: str) -> tuple[Path, Path]:
    """One panel per quantity in ``panels`` (keys of ``STEP_PANELS``) against the step, one line per run.

    Accuracy is drawn only at validation steps, joined by lines and marked, since nothing is measured in
    between; the other quantities at every step. A run with several seeds is drawn as their mean, in a
    band of ±1 standard error.
    """
    plotting.style()
    runs = checked_runs(d, name, ("step", *panels))
    colors = plotting.palette(runs)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.4), layout="constrained", squeeze=False)
    for run in runs:
        for ax, col in zip(axes.flat, panels):
            marks = {"marker": "o", "ms": 3} if col == "val_acc" else {}
            seed_line(ax, d.metrics[run], col, colors[run], lw=1.4, **marks)
    for ax, col in zip(axes.flat, panels):
        ax.set_title(STEP_PANELS[col][0])
        ax.set_xlabel("Training step")
        ax.set_ylabel(STEP_PANELS[col][1])
    handles = [Line2D([], [], color=colors[run], lw=1.4, label=plotting.label(d.labels, run)) for run in runs]
    # The title heads the legend: a separate suptitle would overlap a legend placed outside the axes.
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncol=min(len(runs), 4),
        frameon=False,
        title=title,
        title_fontproperties={"size": "large"},
    )
    plotting.caption(fig, d.caption + band_note(d.metrics))
    return plotting.save(fig, stem)


@artifact("figure", "Figure 9", "Entropy and validation accuracy with an entropy loss of several coefficients.")
def fig09_entropy_loss(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 9: entropy loss at several coefficients: entropy and validation accuracy over training."""
    return step_curves(d, stem, "fig09", ("entropy", "val_acc"), "Entropy loss")


@artifact("figure", "Figure 10", "Entropy and validation accuracy with a KL penalty to the reference model.")
def fig10_reference_kl(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 10: KL penalty to the reference model: entropy and validation accuracy over training."""
    return step_curves(d, stem, "fig10", ("entropy", "val_acc"), "Reference-model KL penalty")


@artifact(
    "figure", "Figure 11", "GRPO, Clip-higher, Clip-Cov and KL-Cov: entropy, response length and validation accuracy."
)
def fig11_covariance_methods(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 11: GRPO, Clip-higher, Clip-Cov and KL-Cov: entropy, response length and accuracy over training."""
    title = "Covariance-based entropy control against GRPO and Clip-higher"
    return step_curves(d, stem, "fig11", ("entropy", "response_length", "val_acc"), title)


@artifact(
    "figure",
    "Figure 12",
    "GRPO, Clip-higher, Clip-Cov and KL-Cov on the larger model: entropy, response length and validation accuracy.",
)
def fig12_entropy_accuracy(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 12: entropy-preserving methods (Clip-Cov, KL-Cov) versus GRPO: entropy, response length, accuracy."""
    title = "Entropy-preserving methods against GRPO"
    return step_curves(d, stem, "fig12", ("entropy", "response_length", "val_acc"), title)


@artifact("figure", "Figure 13", "Entropy steered by the Clip-Cov clip ratio and by the KL-Cov coefficient.")
def fig13_entropy_control(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 13: the entropy level is set by Clip-Cov's clip ratio (left) and KL-Cov's KL coefficient (right).

    Runs are sorted into panels by their loss mode (``specs[run].loss.loss_mode``); darker lines have a larger setting.
    Vanilla-loss runs are the GRPO baseline, grey in both panels. Each panel's title gives the mean
    roughness of its runs' entropy (``analysis.entropy_stability``), since the paper finds KL-Cov stabler. A
    run with several seeds is their mean in a ±1 s.e. band; roughness is averaged over seeds too.
    """
    plotting.style()
    runs = checked_runs(d, "fig13")
    missing = [run for run in runs if run not in d.specs]
    if missing:
        raise ValueError(f"fig13: no settings given for runs {missing}")
    modes = {run: d.specs[run].loss.loss_mode for run in runs}
    if not any(mode in CONTROL_PANELS for mode in modes.values()):
        raise ValueError(f"fig13: no run uses loss_mode clip_cov or kl_cov (got {sorted(set(modes.values()))})")
    skipped = [run for run, mode in modes.items() if mode not in (*CONTROL_PANELS, "vanilla")]
    if skipped:
        warnings.warn(f"fig13: not drawing runs of other loss modes: {skipped}", stacklevel=2)
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8), layout="constrained", sharey=True)
    for ax, mode in zip(axes, CONTROL_PANELS):
        _control_panel(ax, d, modes, mode)
    axes[0].set_ylabel("Policy entropy (nats)")
    plotting.caption(fig, d.caption + band_note(d.metrics))
    return plotting.save(fig, stem)


def _control_panel(ax, d: Inputs, modes: dict[str, str], mode: str) -> None:
    """One loss mode's runs, darker for a larger setting, over the GRPO baselines in grey."""
    title, key, name, cmap = CONTROL_PANELS[mode]
    baselines = [run for run in d.metrics if modes[run] == "vanilla"]
    for i, run in enumerate(baselines):
        label = "GRPO" if len(baselines) == 1 else f"GRPO ({plotting.label(d.labels, run)})"
        seed_line(ax, d.metrics[run], "entropy", "0.55", lw=1.4, ls=("-", "--", ":", "-.")[i % 4], label=label)
    treated = sorted((run for run in d.metrics if modes[run] == mode), key=lambda r: getattr(d.specs[r].loss, key))
    for run, color in plotting.palette(treated, cmap).items():
        seed_line(ax, d.metrics[run], "entropy", color, lw=1.5, label=f"{name} = {getattr(d.specs[run].loss, key):g}")
    if treated:
        roughness = np.mean([analysis.entropy_stability(f) for run in treated for f in d.metrics[run]])
        ax.set_title(f"{title}\nentropy roughness, 2nd half (std of step changes): {roughness:.2g}", fontsize=9)
    else:
        ax.set_title(f"{title}\nno {title} runs", fontsize=9)
    ax.set_xlabel("Training step")
    ax.legend(loc="upper right", fontsize=8)


@artifact(
    "figure",
    "this workflow's own control (issue 42), no paper's figure",
    "GRPO under the true reward and under a random reward that ignores the answer: entropy, training reward and"
    " validation accuracy.",
)
def ctl01_random_reward(d: Inputs, stem) -> tuple[Path, Path]:
    """True against random reward, side by side: if entropy falls as fast under a coin-flip reward while validation
    accuracy stays put, the fall is clipping's doing, not performance bought with entropy (arXiv 2509.26114). The
    training reward panel shows what each run was paid: the random run's stays near 1/2."""
    return step_curves(d, stem, "ctl01", ("entropy", "reward_mean", "val_acc"), "True reward against a random reward")
