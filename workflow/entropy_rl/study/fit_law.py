"""``fit-law``: what the paper's Figures 3 and 5 give for one run, from its training log.

R = −a·exp(H) + b fitted on every validation point (``analysis.fit_run``, Figure 3), its ceiling −a + b at H = 0,
and the accuracy of the last validation predicted by a fit on the first 15% of steps (``analysis.early_prediction``,
Figure 5: the paper fits 36 of 240 steps), with a prediction interval: the fit is least squares of R on exp(H), so
under normal residuals the interval is the textbook one, t(n − 2)·s·√(1 + 1/n + (x − x̄)²/Sxx) about the curve.
The logs it reads are ``run_logs``'s. Prints a summary; writes <stem>.json and <stem>.png (and .pdf).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats

from ..core import atomic, logs
from . import analysis, plotting, run_logs
from .figures.fit_grid import fit_panel  # Figure 3's panel
from .figures.law import PREDICTED, prediction_panel  # Figure 5's panel
from .figures.shared import law_curve

EARLY_FRACTION = 0.15  # Figure 5: "using only the first 36 training steps" of 240


def early_window(last_step: int, fit_steps: int | None, fraction: float) -> int:
    """The last step of the early fit: ``fit_steps``, or ``fraction`` of the log's last step (rounded down)."""
    return int(fit_steps) if fit_steps is not None else math.floor(fraction * last_step + 1e-9)


def prediction_halfwidth(early: dict, entropy, level: float):
    """Half the ``level`` prediction interval of the early fit at ``entropy``, from the points it was fitted on."""
    used = [p for p in early["points"] if p["used_for_fit"]]
    x = np.exp([p["entropy"] for p in used])
    n, fit = len(x), early["fit"]
    s = fit["rmse"] * math.sqrt(n / (n - 2))  # rmse is sqrt(SSR / n); the residual scale has n - 2 dof
    sxx = float(np.sum((x - x.mean()) ** 2))
    t = scipy.stats.t.ppf(0.5 + level / 2, n - 2)
    return t * s * np.sqrt(1 + 1 / n + (np.exp(entropy) - x.mean()) ** 2 / sxx)


def fit_log(
    log: run_logs.RunLog, fit_steps: int | None = None, fraction: float = EARLY_FRACTION, level: float = 0.95
) -> dict:
    """The fit on every point, the early prediction and its interval at the last validation, with what was read."""
    pts = analysis.validation_points(log.table)
    keys = f"entropy {log.entropy_key!r}, accuracy {log.accuracy_keys}"
    if len(pts) < 3:
        raise run_logs.LogError(
            f"{log.path}: {len(pts)} validation point(s) with an entropy beside them ({keys}); "
            "fitting R = -a*exp(H) + b needs at least 3"
        )
    outside = pts["R"][(pts["R"] < 0) | (pts["R"] > 1)]
    if len(outside):
        raise run_logs.LogError(
            f"{log.path}: accuracy outside [0, 1] at {len(outside)} point(s) (e.g. "
            f"{outside.iloc[0]:g}): give fractions, or --percent for percentages"
        )
    window = early_window(log.last_step, fit_steps, fraction)
    n_early = int((pts["step"] <= window).sum())
    if n_early < 3:
        raise run_logs.LogError(
            f"{log.path}: the steps <= {window} ({window / max(log.last_step, 1):.0%} of "
            f"{log.last_step}) hold {n_early} validation point(s); the early fit needs 3: give "
            "a later --fit-steps or a larger --early-fraction"
        )
    early = analysis.early_prediction(log.table, window)
    last = early["points"][-1]
    half = float(prediction_halfwidth(early, last["entropy"], level))
    return {
        "log": log.path,
        "format": log.format,
        "entropy_key": log.entropy_key,
        "entropy_kind": log.entropy_kind,
        "accuracy_keys": log.accuracy_keys,
        "pairing": log.pairing,
        "dropped_non_finite": log.dropped,
        "last_step": log.last_step,
        "n_points": len(pts),
        "fit": analysis.fit_run(log.table),
        "early_prediction": {**{k: v for k, v in early.items() if k != "points"}, "fraction": window / log.last_step},
        "last_prediction": {
            "step": last["step"],
            "entropy": last["entropy"],
            "observed": last["R"],
            "predicted": last["R_pred"],
            "level": level,
            "low": last["R_pred"] - half,
            "high": last["R_pred"] + half,
            "held_out": not last["used_for_fit"],
            "inside": abs(last["R"] - last["R_pred"]) <= half,
        },
        "points": early["points"],
    }


def summary(result: dict) -> str:
    fit, early, last = result["fit"], result["early_prediction"], result["last_prediction"]
    dropped = result["dropped_non_finite"]
    pct = 100 * (last["high"] - last["predicted"])
    lines = [
        f"fit-law: {result['log']} ({result['format']} log, last step {result['last_step']})",
        f"  entropy:  {result['entropy_key']}: {result['entropy_kind']}",
        f"  accuracy: {', '.join(result['accuracy_keys'])}"
        + (" (their mean)" if len(result["accuracy_keys"]) > 1 else ""),
        f"  pairing:  {result['pairing']}",
        (
            f"  dropped:  {dropped.get('entropy', 0)} entropy and {dropped.get('accuracy', 0)} accuracy value(s) that "
            "were not finite numbers"
        ),
        f"R = -a*exp(H) + b on {fit['n']} validation points (Figure 3):",
        f"  a = {fit['a']:.4f} ± {fit['a_stderr']:.4f}   b = {fit['b']:.4f} ± {fit['b_stderr']:.4f}",
        f"  R² = {fit['r2']:.4f}   RMSE = {fit['rmse']:.4f} ({100 * fit['rmse']:.2f} points)",
        f"  predicted ceiling at H = 0: -a + b = {fit['ceiling']:.4f} ({100 * fit['ceiling']:.2f}%)",
        (
            f"Early prediction (Figure 5): fit on steps <= {early['fit_steps']} ({early['fraction']:.0%} of the steps), "
            f"{early['n_fit']} points: a = {early['fit']['a']:.4f}, b = {early['fit']['b']:.4f}"
        ),
        (
            f"  last validation, step {last['step']}: predicted {100 * last['predicted']:.2f}% ± {pct:.2f} "
            f"({last['level']:.0%} prediction interval {100 * last['low']:.2f}–{100 * last['high']:.2f}%), observed "
            f"{100 * last['observed']:.2f}%, error {early['final_error_pct']:.2f} points"
            + ("" if last["inside"] else ", outside the interval")
        ),
        f"  held-out RMSE: {early['rmse_pct']:.2f} points on {early['n_pred']} points"
        if early["n_pred"]
        else "  no validation after the early window: the last point was fitted, not predicted",
    ]
    return "\n".join(lines)


def plot(result: dict, stem) -> tuple[Path, Path]:
    """Left, Figure 3's panel (points coloured by step, the fit) extended to the ceiling at H = 0, with the early
    fit and its prediction band; right, Figure 5's panel (accuracy by step, the early prediction) with the band."""
    plotting.style()
    fit, level = result["fit"], result["last_prediction"]["level"]
    early = {**result["early_prediction"], "points": result["points"]}  # as analysis.early_prediction gave it
    points = pd.DataFrame(result["points"])
    half = prediction_halfwidth(early, points["entropy"].to_numpy(), level)
    fig, (ax_h, ax_t) = plt.subplots(1, 2, figsize=(10.5, 4.0), layout="constrained")
    norm = plt.Normalize(vmin=float(points["step"].min()), vmax=float(points["step"].max()))
    fig.colorbar(fit_panel(ax_h, [points], norm), ax=ax_h, label="Training step")
    lo, hi = float(points["entropy"].min()), float(points["entropy"].max())
    law_curve(ax_h, fit, 0.0, lo, color="crimson", lw=1.2, ls=":")
    ax_h.plot([0.0], [100 * fit["ceiling"]], marker="*", ms=12, color="crimson", mec="0.2", ls="none", clip_on=False)
    ax_h.annotate(
        f"ceiling −a + b = {100 * fit['ceiling']:.1f}%",
        xy=(0.0, 100 * fit["ceiling"]),
        xytext=(8, 4),
        textcoords="offset points",
        fontsize=8,
        color="crimson",
    )
    grid = np.linspace(0.0, hi, 200)
    band = 100 * prediction_halfwidth(early, grid, level)
    curve = 100 * analysis.entropy_law(grid, early["fit"]["a"], early["fit"]["b"])
    ax_h.plot(grid, curve, color="0.35", lw=1.0, ls="--", label=f"early fit (step ≤ {early['fit_steps']})")
    ax_h.fill_between(
        grid, curve - band, curve + band, color="0.5", alpha=0.15, lw=0, label=f"its {level:.0%} prediction band"
    )
    ax_h.set_xlim(left=-0.03 * hi)
    ax_h.set_xlabel(f"Policy entropy (nats, {result['entropy_key']})")
    ax_h.set_ylabel("Validation accuracy (%)")
    ax_h.legend(loc="lower left", fontsize=7)
    prediction_panel(ax_t, [early], early["fit_steps"])
    ax_t.fill_between(
        points["step"],
        100 * (points["R_pred"] - half),
        100 * (points["R_pred"] + half),
        color=PREDICTED,
        alpha=0.12,
        lw=0,
    )
    ax_t.set_xlabel("Training step")
    ax_t.set_ylabel("Validation accuracy (%)")
    fig.suptitle(
        f"{Path(result['log']).name}: R = −a·exp(H) + b, and the last step predicted from the first "
        f"{early['fraction']:.0%} of steps",
        fontsize=10,
    )
    plotting.caption(
        fig,
        f"Entropy: {result['entropy_key']}, {result['entropy_kind']}. Shaded: the {level:.0%} "
        "prediction interval of the early fit.",
    )
    return plotting.save(fig, stem)


def _json_safe(value):
    """NaN (a held-out RMSE with nothing held out) as null, so the file is strict JSON."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value.item() if isinstance(value, np.generic) else value


def run(
    path,
    stem=None,
    fmt=None,
    entropy_key=None,
    accuracy_keys=None,
    fit_steps=None,
    fraction=EARLY_FRACTION,
    level=0.95,
    percent=False,
) -> tuple[dict, str]:
    """Read, fit, write <stem>.json and the figure (stem: the log's path less its suffix, plus .fit_law)."""
    log = run_logs.read_log(path, fmt, entropy_key, accuracy_keys)
    if percent:
        log.table["val_acc"] = log.table["val_acc"] / 100.0
    result = fit_log(log, fit_steps, fraction, level)
    stem = Path(stem) if stem else Path(path).with_suffix(".fit_law")
    atomic.write_text(f"{stem}.json", json.dumps(_json_safe(result), indent=2))
    _, png = plot(result, stem)
    return result, summary(result) + f"\nwrote {stem}.json and {png} (and .pdf)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fit-law", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "log", help="verl file-logger .jsonl, TRL trainer_state.json, or .csv (step, entropy, accuracy)"
    )
    parser.add_argument("--format", choices=run_logs.FORMATS, help="the log's format (default: from its suffix)")
    parser.add_argument(
        "--entropy-key",
        help="the entropy's key or column (default: paper/entropy, else actor/entropy "
        "for verl; entropy for TRL and CSV)",
    )
    parser.add_argument(
        "--accuracy-key",
        action="append",
        dest="accuracy_keys",
        metavar="KEY",
        help="an accuracy key or column, repeated to average several (default: every val-core key for "
        "verl; eval_rewards/accuracy_reward/mean, else eval_reward, for TRL; accuracy for CSV)",
    )
    window = parser.add_mutually_exclusive_group()
    window.add_argument("--fit-steps", type=int, help="fit the early prediction on steps <= this")
    window.add_argument(
        "--early-fraction",
        type=float,
        default=EARLY_FRACTION,
        help="...or on this fraction of the log's steps (default 0.15, the paper's 36 of 240)",
    )
    parser.add_argument("--level", type=float, default=0.95, help="of the prediction interval (default 0.95)")
    parser.add_argument("--percent", action="store_true", help="the accuracy is in percent")
    parser.add_argument("--out", help="output stem (default: the log's path less its suffix, plus .fit_law)")
    args = parser.parse_args(argv)
    try:
        _, text = run(
            args.log,
            args.out,
            args.format,
            args.entropy_key,
            args.accuracy_keys,
            args.fit_steps,
            args.early_fraction,
            args.level,
            args.percent,
        )
    except ValueError as err:  # run_logs.LogError, or a fit the data cannot give (constant entropy)
        print(f"fit-law: error: {err}", file=sys.stderr)
        return 1
    print(text)
    return 0


def fit_law_main(snakemake) -> None:
    """Rule fit_law (`snakemake fit_law --config fit_law_log=PATH`): ``run`` on the log given, its outputs named by the
    rule's."""
    job_log = logs.setup(snakemake.log[0])
    _, text = run(snakemake.input.log, stem=Path(snakemake.output.json).with_suffix(""))
    job_log.info("\n%s", text)


if __name__ == "__main__":
    sys.exit(main())
