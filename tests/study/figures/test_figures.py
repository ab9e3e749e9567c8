"""Tests of the figures: each writes a real, non-trivial PDF and PNG from synthetic runs, and draws what it claims."""

from __future__ import annotations

import inspect
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from entropy_rl.core.run import Run
from entropy_rl.study import analysis, plotting, registry
from entropy_rl.study.figures.shared import seed_curve
from entropy_rl.study.inputs import Inputs
from support import a_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BENCHMARKS = ("math500", "aime24", "amc")
ARTIFACTS = registry.load()  # with their functions
PUBLIC = sorted(name for name, a in ARTIFACTS.items() if a.kind == "figure" and not a.power)  # the paper's figures
FIT_GRIDS = ["fig03_fitted_curves", "fig04_code_fits", "appB_more_fits", "appC_training_data", "appD_instruct_models"]


def synthetic_metrics(n_steps=120, val_every=6, h0=1.3, h_end=0.05, tau=12.0, a=0.3, b=0.9, seed=0) -> pd.DataFrame:
    """A metrics table following the contract, entropy decaying and accuracy following Eq. 6 with noise."""
    rng = np.random.default_rng(seed)
    step = np.arange(n_steps + 1)
    entropy = h_end + (h0 - h_end) * np.exp(-step / tau) + rng.normal(0, 0.005, step.size)
    val = (step % val_every == 0) | (step == n_steps)
    decay = np.exp(-step / tau)
    frame = {
        "step": step,
        "entropy": entropy,
        "entropy_change": np.r_[np.nan, np.diff(entropy)],
        "reward_mean": analysis.entropy_law(entropy, a, b) + rng.normal(0, 0.02, step.size),
        "response_length": 400 + 2.0 * step,
        "kept_prompt_frac": rng.uniform(0.5, 0.9, step.size),
        "cov_all": 1e-3 * decay + rng.normal(0, 5e-5, step.size),
    }
    cov_scales = {"cov_top0.02": 5.0, "cov_top0.2": 2.0, "cov_top2": 0.5, "cov_top20": 0.05, "cov_top50": 0.01}
    for col, scale in cov_scales.items():
        frame[col] = scale * decay + rng.normal(0, 1e-4, step.size)
    frame["bandit_cov"] = 2e-2 * decay + 2e-3 + rng.normal(0, 1e-3, step.size)
    for col, scale in {"bandit_cov_acc0.125": 0.3, "bandit_cov_acc0.5": 1.0, "bandit_cov_acc0.875": 1.5}.items():
        frame[col] = 2e-2 * scale * decay + rng.normal(0, 1e-3, step.size)
    frame["bandit_cov_acc0.875"][rng.random(step.size) < 0.1] = np.nan  # easy groups are missing on some steps
    frame["cliphigher_cov"] = rng.normal(-0.03, 0.01, step.size)
    frame["cov_touched_frac"] = np.nan
    frame["pg_loss"] = rng.normal(-0.05, 0.02, step.size)
    frame["pg_clipfrac"] = rng.uniform(0.0, 0.02, step.size)
    frame["ppo_kl"] = rng.normal(1e-3, 5e-4, step.size)
    accs = []
    for i, name in enumerate(BENCHMARKS):
        acc = np.clip(analysis.entropy_law(entropy, a, b - 0.1 * i) + rng.normal(0, 0.01, step.size), 0, 1)
        frame[f"val_acc/{name}"] = np.where(val, acc, np.nan)
        accs.append(frame[f"val_acc/{name}"])
    frame["val_acc"] = np.mean(accs, axis=0)
    return pd.DataFrame(frame)


def spec(loss_mode="vanilla", train_data=None, **loss) -> Run:
    """A resolved run with the loss settings the figures read."""
    settings = {"loss_mode": loss_mode, "clip_cov_ratio": 0.0002, "ppo_kl_coef": 1.0, "clip_ratio_high": 0.2, **loss}
    return a_run(train_data=train_data, loss=settings)


@pytest.fixture
def runs() -> dict[str, pd.DataFrame]:
    return {
        "grpo": synthetic_metrics(seed=0),
        "clip_cov": synthetic_metrics(h_end=0.3, tau=40, a=0.25, seed=1),
        "kl_cov": synthetic_metrics(h_end=0.4, tau=60, a=0.22, b=0.92, seed=2),
    }


LABELS = {"grpo": "GRPO", "clip_cov": "Clip-Cov", "kl_cov": "KL-Cov"}
SPECS = {"grpo": spec(), "clip_cov": spec("clip_cov", clip_cov_ratio=0.0002), "kl_cov": spec("kl_cov", ppo_kl_coef=1.0)}
SIZES = {"grpo": 494_032_768, "clip_cov": 1_312_000_000, "kl_cov": 6_537_000_000}
CAPTION = "Synthetic runs used to test the figure code; the caption is long enough to wrap onto a second line of text."


def call(name, metrics_by_run, stem, replicates=None, **given):
    """Call a figure as workflow/scripts/figure.py does: its registered function with the rule's Inputs, each run
    with its seeds (``replicates``, or the run's one frame)."""
    params = {"labels": LABELS, "specs": SPECS, "sizes": SIZES, "fit_steps": 36, "caption": CAPTION, **given}
    metrics = {run: (replicates or {}).get(run) or [frame] for run, frame in metrics_by_run.items()}
    return ARTIFACTS[name].make(Inputs(metrics=metrics, **params), stem)


@pytest.fixture
def drawn(monkeypatch):
    """Keep the figures instead of writing them, so a test can look at what was drawn."""
    kept = []

    def keep(fig, stem):
        kept.append(fig)
        return f"{stem}.pdf", f"{stem}.png"

    monkeypatch.setattr(plotting, "save", keep)
    yield kept
    for fig in kept:
        plt.close(fig)


def texts(fig) -> str:
    """Every piece of text in a figure (titles, boxes, annotations, legends), one string."""
    return "\n".join(t.get_text() for t in fig.findobj(plt.Text))


def panels(fig) -> list:
    """The visible axes that are panels (not colour bars or twin axes)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>" and ax.get_title()]


def assert_written(stem):
    pdf, png = stem.parent / f"{stem.name}.pdf", stem.parent / f"{stem.name}.png"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    data = png.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000


def test_synthetic_metrics_follow_contract():
    m = synthetic_metrics()
    assert m["step"].tolist() == list(range(121))
    assert np.isnan(m["entropy_change"].iloc[0])
    val = m["val_acc"].notna()
    assert val.iloc[0] and val.iloc[-1] and val.sum() == 21
    assert m.loc[val, "val_acc"].between(0, 1).all()
    assert {
        "bandit_cov",
        "bandit_cov_acc0.125",
        "bandit_cov_acc0.5",
        "bandit_cov_acc0.875",
        "pg_loss",
        "pg_clipfrac",
        "ppo_kl",
    } <= set(m.columns)


# ---- the contract every figure keeps ------------------------------------------------------------


def test_module_has_every_paper_figure():
    assert set(PUBLIC) == {
        "fig01_entropy_collapse",
        "fig02_cumulative_shares",
        "fig03_fitted_curves",
        "fig04_code_fits",
        "fig05_early_prediction",
        "fig06_algorithms",
        "fig07_coefficients_vs_size",
        "fig08_covariance",
        "fig09_entropy_loss",
        "fig10_reference_kl",
        "fig11_covariance_methods",
        "fig12_entropy_accuracy",
        "fig13_entropy_control",
        "appB_more_fits",
        "appC_training_data",
        "appD_instruct_models",
        "ctl01_random_reward",  # this workflow's own control (issue 42)
    }


@pytest.mark.parametrize("name", sorted(a.name for a in ARTIFACTS.values() if a.kind == "figure"))
def test_every_figure_takes_its_inputs_and_the_stem(name):
    """The one calling convention of workflow/scripts/figure.py, for the paper's figures and the power study's."""
    params = inspect.signature(ARTIFACTS[name].make).parameters
    assert list(params) == ["d", "stem"] and all(p.default is inspect.Parameter.empty for p in params.values())


@pytest.mark.parametrize("name", PUBLIC)
def test_writes_pdf_and_png(tmp_path, runs, name):
    use = {"grpo": runs["grpo"]} if name == "fig08_covariance" else runs
    stem = tmp_path / name
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # clean input draws without complaint
        assert call(name, use, stem) == (stem.with_suffix(".pdf"), stem.with_suffix(".png"))
    assert_written(stem)


@pytest.mark.parametrize("name", PUBLIC)
def test_rejects_no_runs(tmp_path, name):
    with pytest.raises(ValueError, match="no runs"):
        call(name, {}, tmp_path / name)
    assert not list(tmp_path.iterdir())


# ---- what each figure draws -------------------------------------------------------------------


def test_fig01_marks_and_annotates_the_ceiling(tmp_path, runs, drawn):
    call("fig01_entropy_collapse", {"grpo": runs["grpo"]}, tmp_path / "f")
    fig = drawn[0]
    fit = analysis.fit_run(runs["grpo"])
    ceiling = 100 * fit["ceiling"]
    assert f"b − a = {ceiling:.1f}%" in texts(fig)
    ax_fit = next(ax for ax in fig.axes if "H = 0" in ax.get_title())
    stars = [line for line in ax_fit.lines if line.get_marker() == "*"]
    assert len(stars) == 1 and stars[0].get_xdata()[0] == 0.0 and stars[0].get_ydata()[0] == pytest.approx(ceiling)
    assert ax_fit.get_xlim()[0] < 0.0  # the curve reaches H = 0


def test_fig01_raises_when_no_run_can_be_fitted(tmp_path):
    short = synthetic_metrics(n_steps=6, val_every=6)  # 2 validation points
    with pytest.warns(UserWarning, match="no fit for run short"), pytest.raises(ValueError, match="fig01: no run"):
        call("fig01_entropy_collapse", {"short": short}, tmp_path / "f")


def test_fig02(tmp_path, runs):
    stem = tmp_path / "fig02_cumulative_shares"
    assert call("fig02_cumulative_shares", runs, stem) == (
        stem.with_suffix(".pdf"),
        stem.with_suffix(".png"),
    )
    assert_written(stem)


def test_fig02_single_run_without_caption(tmp_path, runs):
    stem = tmp_path / "sub" / "fig02"  # parent directory is created
    call("fig02_cumulative_shares", {"grpo": runs["grpo"]}, stem, caption="")
    assert_written(stem)


def test_fig03(tmp_path, runs):
    stem = tmp_path / "fig03_fitted_curves"
    call("fig03_fitted_curves", runs, stem)
    assert_written(stem)


def test_fig03_many_runs_and_unfittable_run(tmp_path, runs):
    many = {f"run{i}": synthetic_metrics(seed=i, a=0.2 + 0.02 * i) for i in range(5)}  # two rows of panels
    many["short"] = synthetic_metrics(n_steps=6, val_every=6)  # 2 validation points: no fit
    stem = tmp_path / "fig03_many"
    call("fig03_fitted_curves", many, stem, labels={})
    assert_written(stem)


@pytest.mark.parametrize("name", FIT_GRIDS)
def test_fit_grids_share_the_drawing_under_their_own_title(tmp_path, runs, drawn, name):
    call(name, runs, tmp_path / name)
    fig = drawn[0]
    assert [ax.get_title() for ax in panels(fig)] == ["GRPO", "Clip-Cov", "KL-Cov"]
    for ax in panels(fig):
        assert len(ax.lines) == 1  # the fitted curve
    assert fig.get_suptitle()
    if name == "fig04_code_fits":
        assert "Code task" in fig.get_suptitle()


def test_fit_grid_titles_differ(tmp_path, runs, drawn):
    for name in FIT_GRIDS:
        call(name, {"grpo": runs["grpo"]}, tmp_path / name)
    assert len({fig.get_suptitle() for fig in drawn}) == len(FIT_GRIDS)


def test_fig05_marks_fit_points_and_reports_errors(tmp_path, runs, drawn):
    call("fig05_early_prediction", runs, tmp_path / "f", fit_steps=36)
    fig = drawn[0]
    pred = analysis.early_prediction(runs["grpo"], 36)
    ax = next(ax for ax in panels(fig) if ax.get_title() == "GRPO")
    filled, hollow = ax.collections[:2]
    assert len(filled.get_offsets()) == pred["n_fit"] == 7
    assert len(hollow.get_offsets()) == pred["n_pred"] == 14
    assert any(list(line.get_xdata()) == [36, 36] for line in ax.lines)  # the end of the fit window
    box = texts(fig)
    assert f"RMSE = {pred['rmse_pct']:.2f} pts" in box and f"final error = {pred['final_error_pct']:.2f} pts" in box
    summary = analysis.early_prediction_summary(runs, 36)
    assert f"RMSE {summary['rmse_pct'].mean():.2f}" in box


def test_fig05_raises_when_the_window_holds_fewer_than_3_points(tmp_path, runs):
    with pytest.raises(ValueError, match=r"fig05: run 'grpo' cannot be fitted on steps <= 6"):
        call("fig05_early_prediction", runs, tmp_path / "f", fit_steps=6)  # validation at steps 0 and 6 only


def test_fig05_window_covering_the_whole_run(tmp_path, runs, drawn):
    call("fig05_early_prediction", {"grpo": runs["grpo"]}, tmp_path / "f", fit_steps=1000)
    assert "RMSE = n/a" in texts(drawn[0])


def test_fig06_pooled_curve_and_f_test(tmp_path, runs, drawn):
    call("fig06_algorithms", runs, tmp_path / "f")
    (ax,) = drawn[0].axes
    test = analysis.shared_coefficients_test(runs)
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and dashed[0].get_color() == "black"
    assert len(ax.lines) == 1 + len(runs)  # own curve per run + pooled
    assert f"p = {test['p_value']:.3g}" in texts(drawn[0])
    assert f"max curve gap = {test['max_curve_gap_pct']:.2f} pts" in texts(drawn[0])


def test_fig06_needs_two_runs(tmp_path, runs):
    with pytest.raises(ValueError, match="at least 2 runs"):
        call("fig06_algorithms", {"grpo": runs["grpo"]}, tmp_path / "f")


def size_runs(n, train_data=None, offset=0):
    metrics = {f"{train_data}{i}": synthetic_metrics(seed=offset + i, a=0.2 + 0.05 * i) for i in range(n)}
    sizes = {run: int(5e8 * 3**i) for i, run in enumerate(metrics)}
    specs = {run: spec(train_data=train_data) for run in metrics}
    return metrics, sizes, specs


def test_fig07_two_sizes_draw_points_without_a_line(tmp_path, drawn):
    metrics, sizes, specs = size_runs(2)
    call("fig07_coefficients_vs_size", metrics, tmp_path / "f", sizes=sizes, specs=specs)
    for ax in drawn[0].axes:
        assert ax.get_xscale() == "log"
        assert not [line for line in ax.lines if len(line.get_xdata()) > 2]  # no trend line
    assert "R^2" not in texts(drawn[0])


def test_fig07_labels_sizes_as_the_paper_names_them(tmp_path, drawn):
    """Sizes from 29k to 296k: ticks named 30k ... 300k, and the mini labels never in scientific notation."""
    metrics, sizes, specs = size_runs(3, "math")
    sizes = dict(zip(sizes, (29_160, 74_304, 296_064)))
    call("fig07_coefficients_vs_size", metrics, tmp_path / "f", sizes=sizes, specs=specs)
    ax = drawn[0].axes[0]
    drawn[0].canvas.draw()
    lo, hi = ax.get_xlim()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert ticks == ["30k", "50k", "100k", "200k", "300k"]
    assert [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()] == []
    names = [plotting.count_label(v) for v in (500, 29_160, 1.5e6, 7e9, 3.2e10)]
    assert names == ["500", "29.16k", "1.5M", "7B", "32B"]


def test_fig07_trend_per_training_set(tmp_path, drawn):
    math, math_sizes, math_specs = size_runs(3, "math")
    code, code_sizes, code_specs = size_runs(4, "code", offset=10)
    call(
        "fig07_coefficients_vs_size",
        {**math, **code},
        tmp_path / "f",
        sizes={**math_sizes, **code_sizes},
        specs={**math_specs, **code_specs},
    )
    ax_a, ax_b = drawn[0].axes
    fits = {run: analysis.fit_run(m) for run, m in {**math, **code}.items()}
    trend = analysis.log_linear_fit([math_sizes[r] for r in math], [fits[r]["a"] for r in math])
    legend = [t.get_text() for t in ax_a.get_legend().get_texts()]
    assert legend == [f"math (log-linear $R^2$ = {trend['r2']:.3f})", legend[1]] and legend[1].startswith("code (")
    assert len([line for line in ax_b.lines if len(line.get_xdata()) == 50]) == 2  # one trend line per set


def test_fig07_over_seeds_draws_each_seed_and_fits_the_trend_to_all(tmp_path, drawn):
    metrics, sizes, specs = size_runs(3, "math")
    seeds = {
        run: [
            frame,
            synthetic_metrics(seed=30 + i, a=0.25 + 0.05 * i),
            synthetic_metrics(seed=40 + i, a=0.22 + 0.05 * i),
        ]
        for i, (run, frame) in enumerate(metrics.items())
    }
    call("fig07_coefficients_vs_size", metrics, tmp_path / "f", sizes=sizes, specs=specs, replicates=seeds)
    ax_a = drawn[0].axes[0]
    a = {run: [analysis.fit_run(f)["a"] for f in frames] for run, frames in seeds.items()}
    assert sorted(ax_a.collections[0].get_offsets()[:, 1]) == pytest.approx(sorted(v for vs in a.values() for v in vs))
    trend = analysis.log_linear_fit([sizes[r] for r in a for _ in a[r]], [v for r in a for v in a[r]])
    assert f"$R^2$ = {trend['r2']:.3f}" in ax_a.get_legend().get_texts()[0].get_text()
    markers = next(line for line in ax_a.lines if line.get_marker() == "o")
    assert list(markers.get_ydata()) == pytest.approx([np.mean(a[r]) for r in a])
    caption = " ".join(drawn[0].texts[-1].get_text().replace("-\n", "-").split())  # unwrapped
    assert (
        "Markers are means over 3 seeds; error bars ±1 standard error over them; small points are the seeds." in caption
    )


@pytest.mark.parametrize("name", FIT_GRIDS)
def test_fit_grids_over_seeds_draw_every_seeds_points_and_fit(tmp_path, runs, drawn, name):
    frames = {"grpo": [runs["grpo"], synthetic_metrics(seed=60), synthetic_metrics(seed=61)]}
    call(name, {"grpo": runs["grpo"]}, tmp_path / "f", replicates=frames)
    ax = panels(drawn[0])[0]
    fits = [analysis.fit_run(f) for f in frames["grpo"]]
    assert len(ax.collections) == 3 and len(ax.lines) == 3  # each seed's points and its own fit
    box = texts(drawn[0])
    assert f"a = {np.mean([f['a'] for f in fits]):.3f} ± {np.std([f['a'] for f in fits], ddof=1):.2g}" in box
    assert "(3 seeds)" in box and "Each panel draws 3 seeds" in drawn[0].texts[-1].get_text()


def test_fig01_over_seeds_draws_bands_and_fits_every_seeds_points(tmp_path, runs, drawn):
    frames = [runs["grpo"], synthetic_metrics(seed=50), synthetic_metrics(seed=51)]
    call("fig01_entropy_collapse", {"grpo": runs["grpo"]}, tmp_path / "f", replicates={"grpo": frames})
    ax_t = drawn[0].axes[0]
    entropy = pd.concat([f[["step", "entropy"]] for f in frames]).groupby("step")["entropy"].mean()
    np.testing.assert_allclose(ax_t.lines[0].get_ydata(), entropy.to_numpy())
    assert len(ax_t.collections) == 1  # the entropy band
    pts = pd.concat([analysis.validation_points(f) for f in frames])
    ceiling = 100 * analysis.fit_entropy_law(pts["entropy"], pts["R"])["ceiling"]
    assert f"b − a = {ceiling:.1f}%" in texts(drawn[0])
    assert "means over 3 seeds" in drawn[0].texts[-1].get_text()


def test_fig07_needs_a_size_for_every_run(tmp_path, runs):
    with pytest.raises(ValueError, match="no model size given for run 'kl_cov'"):
        call("fig07_coefficients_vs_size", runs, tmp_path / "f", sizes={"grpo": 1, "clip_cov": 2})


def test_fig08_warns_on_several_runs_and_draws_the_first(tmp_path, runs, drawn):
    with pytest.warns(UserWarning, match="fig08 draws one run: using 'grpo'"):
        call("fig08_covariance", runs, tmp_path / "f")
    fig = drawn[0]
    r = analysis.covariance_dynamics(runs["grpo"], "bandit_cov")["pearson_r"]
    assert f"Pearson r = {r:.2f}" in texts(fig)
    ax_d = next(ax for ax in fig.axes if "accuracy" in ax.get_title())
    assert [t.get_text() for t in ax_d.get_legend().get_texts()] == ["Accuracy=0.125", "Accuracy=0.5", "Accuracy=0.875"]


def test_fig08_draws_the_bandit_covariance_beside_next_step_entropy_change_and_the_token_covariance(
    tmp_path, runs, drawn
):
    m = runs["grpo"]
    call("fig08_covariance", {"grpo": m}, tmp_path / "f")
    fig = drawn[0]
    ax_c, ax_d, ax_t = panels(fig)
    assert "Eq. 8–9" in ax_c.get_ylabel() and "Bandit" in ax_c.get_ylabel()
    assert "Eq. 8–9" in ax_d.get_ylabel()
    assert "Eq. 10" in ax_t.get_ylabel() and "Token" in ax_t.get_ylabel()
    np.testing.assert_allclose(ax_c.lines[0].get_ydata(), m["bandit_cov"])
    np.testing.assert_allclose(ax_t.lines[0].get_ydata(), m["cov_all"])
    twin = next(ax for ax in fig.axes if ax not in (ax_c, ax_d, ax_t) and ax.bbox.bounds == ax_c.bbox.bounds)
    neg_dH = twin.lines[0].get_ydata()
    # row t: H[t] - H[t+1]; the last step has no next one and is not drawn
    np.testing.assert_allclose(neg_dH, m["entropy"].to_numpy()[:-1] - m["entropy"].to_numpy()[1:])
    token_r = analysis.covariance_dynamics(m, "cov_all")["pearson_r"]
    assert f"Pearson r = {token_r:.2f}" in texts(fig)


def test_fig08_over_seeds_draws_the_seed_mean_and_tests_each_seed(tmp_path, runs, drawn):
    frames = [runs["grpo"], synthetic_metrics(seed=70), synthetic_metrics(seed=71)]
    call("fig08_covariance", {"grpo": runs["grpo"]}, tmp_path / "f", replicates={"grpo": frames})
    fig = drawn[0]
    ax_c, ax_d, _ = panels(fig)
    mean = pd.concat([f[["step", "bandit_cov"]] for f in frames]).groupby("step")["bandit_cov"].mean()
    np.testing.assert_allclose(ax_c.lines[0].get_ydata(), mean.to_numpy())
    assert len(ax_c.collections) == 1  # its band
    r = [analysis.covariance_dynamics(f, "bandit_cov")["pearson_r"] for f in frames]
    box = texts(fig)
    assert f"Pearson r = {np.mean(r):.2f} ± {np.std(r, ddof=1):.2f}" in box and "over 3 seeds" in box
    ps = [analysis.covariance_by_difficulty(f)["hard_below_easy_p"] for f in frames]
    assert "Wilcoxon p by seed\n" + ", ".join(f"{p:.2g}" for p in ps) in box
    assert "means over 3 seeds" in drawn[0].texts[-1].get_text()


def test_fig05_over_seeds_predicts_each_seed_and_draws_their_mean(tmp_path, runs, drawn):
    frames = [runs["grpo"], synthetic_metrics(seed=80), synthetic_metrics(seed=81)]
    call("fig05_early_prediction", {"grpo": runs["grpo"]}, tmp_path / "f", fit_steps=36, replicates={"grpo": frames})
    (ax,) = panels(drawn[0])
    preds = [analysis.early_prediction(f, 36) for f in frames]
    band, filled, hollow = ax.collections[:3]
    assert len(filled.get_offsets()) == 7 and len(hollow.get_offsets()) == 14
    observed = pd.concat([analysis.validation_points(f) for f in frames]).groupby("step")["R"].mean()
    np.testing.assert_allclose(ax.lines[0].get_ydata(), 100 * observed.to_numpy())
    rmse = [p["rmse_pct"] for p in preds]
    box = texts(drawn[0])
    assert f"RMSE = {np.mean(rmse):.2f} ± {np.std(rmse, ddof=1):.2f} pts" in box and "(3 seeds)" in box
    summary = analysis.early_prediction_summary({k: f for k, f in enumerate(frames)}, 36)
    assert f"mean over runs and seeds: RMSE {summary['rmse_pct'].mean():.2f}" in box


def test_fig06_over_seeds_draws_each_seeds_fit_and_the_anova(tmp_path, runs, drawn):
    seeds = {
        run: [frame, synthetic_metrics(seed=90 + i), synthetic_metrics(seed=95 + i)]
        for i, (run, frame) in enumerate(runs.items())
    }
    call("fig06_algorithms", runs, tmp_path / "f", replicates=seeds)
    (ax,) = drawn[0].axes
    assert len(ax.lines) == 3 * len(runs) + 1  # every seed's own curve + the pooled one
    anova = analysis.coefficients_anova({run: [analysis.fit_run(f) for f in frames] for run, frames in seeds.items()})
    box = texts(drawn[0])
    assert f"a: F = {anova['a']['F']:.2f}, p = {anova['a']['p_value']:.3g}" in box
    assert f"p (both, Bonferroni) = {anova['p_value']:.3g}" in box


def test_fig08_needs_the_bandit_and_token_covariance_columns(tmp_path, runs):
    for column in ("bandit_cov", "bandit_cov_acc0.125", "cov_all"):
        with pytest.raises(ValueError, match=column):
            call("fig08_covariance", {"grpo": runs["grpo"].drop(columns=column)}, tmp_path / "f")


@pytest.mark.parametrize(
    ("name", "titles"),
    [
        ("fig09_entropy_loss", ["Policy entropy", "Validation accuracy"]),
        ("fig10_reference_kl", ["Policy entropy", "Validation accuracy"]),
        ("fig11_covariance_methods", ["Policy entropy", "Response length", "Validation accuracy"]),
        ("fig12_entropy_accuracy", ["Policy entropy", "Response length", "Validation accuracy"]),
        ("ctl01_random_reward", ["Policy entropy", "Training reward", "Validation accuracy"]),
    ],
)
def test_step_curves_panels(tmp_path, runs, drawn, name, titles):
    call(name, runs, tmp_path / name)
    fig = drawn[0]
    assert [ax.get_title() for ax in panels(fig)] == titles
    ax_acc = panels(fig)[-1]
    n_val = int(runs["grpo"]["val_acc"].notna().sum())
    assert [len(line.get_xdata()) for line in ax_acc.lines] == [n_val] * len(runs)  # validation steps only
    assert all(line.get_marker() == "o" for line in ax_acc.lines)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(LABELS.values())


def test_step_curves_draw_the_mean_over_seeds_in_a_band_of_one_standard_error(tmp_path, runs, drawn):
    seeds = {
        run: [frame, synthetic_metrics(seed=10 + i), synthetic_metrics(seed=20 + i)]
        for i, (run, frame) in enumerate(runs.items())
    }
    call("fig11_covariance_methods", runs, tmp_path / "f", replicates=seeds)
    fig = drawn[0]
    ax_entropy, ax_acc = panels(fig)[0], panels(fig)[-1]
    grpo = pd.concat([f[["step", "entropy"]] for f in seeds["grpo"]]).groupby("step")["entropy"]
    np.testing.assert_allclose(ax_entropy.lines[0].get_ydata(), grpo.mean().to_numpy())
    band = ax_entropy.collections[0].get_paths()[0].vertices[:, 1]  # the band's outline: lower edge, then upper
    assert band.min() == pytest.approx((grpo.mean() - grpo.sem()).min()) and band.max() == pytest.approx(
        (grpo.mean() + grpo.sem()).max()
    )
    assert len(ax_entropy.collections) == len(ax_acc.collections) == len(runs)
    acc = seed_curve(seeds["grpo"], "val_acc")
    # step 0: all clipped at 0
    assert len(acc) == int(runs["grpo"]["val_acc"].notna().sum()) and acc["se"].iloc[1:].gt(0).all()
    np.testing.assert_allclose(ax_acc.lines[0].get_ydata(), 100 * acc["mean"])
    assert "means over 3 seeds" in fig.texts[-1].get_text()
    call("fig11_covariance_methods", runs, tmp_path / "g", replicates={run: [frame] for run, frame in runs.items()})
    assert not panels(drawn[1])[0].collections and "seeds" not in drawn[1].texts[-1].get_text()  # one seed: no band


def test_the_random_reward_control_sets_true_and_random_reward_side_by_side_over_seeds(tmp_path, drawn):
    """Entropy, the reward each run was paid and validation accuracy against the step, each run its seeds' mean in a
    band; the random run's reward stays near 1/2 whatever its accuracy."""
    true = [synthetic_metrics(seed=k) for k in range(3)]
    coin = [synthetic_metrics(h_end=0.8, a=0.0, b=0.3, seed=10 + k).assign(reward_mean=0.5) for k in range(3)]
    specs = {"grpo": spec(), "random": spec(reward="random")}
    call(
        "ctl01_random_reward",
        {"grpo": true[0], "random": coin[0]},
        tmp_path / "c",
        replicates={"grpo": true, "random": coin},
        labels={"grpo": "GRPO", "random": "GRPO, random reward"},
        specs=specs,
    )
    fig = drawn[0]
    entropy, reward, accuracy = panels(fig)
    assert len(entropy.collections) == len(accuracy.collections) == 2  # a band per run: three seeds each
    np.testing.assert_allclose(reward.lines[1].get_ydata(), 0.5)
    assert accuracy.lines[1].get_ydata().std() < 1.0 < accuracy.lines[0].get_ydata().std()  # in %: flat against rising
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["GRPO", "GRPO, random reward"]
    assert "means over 3 seeds" in fig.texts[-1].get_text()


def test_step_curves_need_response_length(tmp_path, runs):
    broken = {**runs, "kl_cov": runs["kl_cov"].drop(columns="response_length")}
    with pytest.raises(ValueError, match="'kl_cov' lack column"):
        call("fig12_entropy_accuracy", broken, tmp_path / "f")


def test_fig13_sorts_runs_into_panels(tmp_path, runs, drawn):
    metrics = {**runs, "clip_cov_hi": runs["clip_cov"], "kl_cov_lo": runs["kl_cov"]}
    specs = {
        **SPECS,
        "clip_cov_hi": spec("clip_cov", clip_cov_ratio=0.001),
        "kl_cov_lo": spec("kl_cov", ppo_kl_coef=0.5),
    }
    call("fig13_entropy_control", metrics, tmp_path / "f", specs=specs)
    ax_clip, ax_kl = drawn[0].axes
    legend = {ax: [t.get_text() for t in ax.get_legend().get_texts()] for ax in (ax_clip, ax_kl)}
    assert legend[ax_clip] == ["GRPO", "clip ratio = 0.0002", "clip ratio = 0.001"]
    assert legend[ax_kl] == ["GRPO", "KL coef = 0.5", "KL coef = 1"]
    assert ax_clip.lines[0].get_color() == ax_kl.lines[0].get_color() == "0.55"  # the baseline, grey in both


def test_fig13_over_seeds_draws_bands_and_averages_roughness(tmp_path, runs, drawn):
    seeds = {run: [frame, synthetic_metrics(seed=70 + i)] for i, (run, frame) in enumerate(runs.items())}
    call("fig13_entropy_control", runs, tmp_path / "f", specs=SPECS, replicates=seeds)
    ax_clip = drawn[0].axes[0]
    assert len(ax_clip.collections) == len(ax_clip.lines) == 2  # GRPO and the Clip-Cov run, each in a band
    roughness = np.mean([analysis.entropy_stability(f) for f in seeds["clip_cov"]])
    assert f"{roughness:.2g}" in ax_clip.get_title() and "means over 2 seeds" in drawn[0].texts[-1].get_text()


def test_fig02_over_seeds_pools_every_seed_of_every_run(tmp_path, runs, drawn):
    seeds = {run: [frame, synthetic_metrics(seed=80 + i, tau=6.0)] for i, (run, frame) in enumerate(runs.items())}
    call("fig02_cumulative_shares", runs, tmp_path / "f", replicates=seeds)
    (ax,) = drawn[0].axes
    pooled = analysis.pooled_shares({f"{r}{k}": f for r, frames in seeds.items() for k, f in enumerate(frames)})
    thick = [line for line in ax.lines if line.get_linewidth() > 2]
    np.testing.assert_allclose(thick[0].get_ydata(), 100 * pooled["entropy_share"])
    assert len([line for line in ax.lines if line.get_linewidth() < 1]) == 2 * 2 * len(runs)  # a thin line a seed
    assert f"pooled over {len(runs)} runs × 2 seeds" in ax.get_legend().get_texts()[0].get_text()


def test_fig13_raises_without_clip_cov_or_kl_cov(tmp_path, runs):
    specs = {run: spec("vanilla") for run in runs}
    with pytest.raises(ValueError, match="no run uses loss_mode clip_cov or kl_cov"):
        call("fig13_entropy_control", runs, tmp_path / "f", specs=specs)


def test_fig13_needs_a_spec_per_run(tmp_path, runs):
    with pytest.raises(ValueError, match=r"no settings given for runs \['kl_cov'\]"):
        call("fig13_entropy_control", runs, tmp_path / "f", specs={r: SPECS[r] for r in ("grpo", "clip_cov")})


def test_save_closes_figure(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    plotting.save(fig, tmp_path / "x")
    assert not plt.fignum_exists(fig.number)
    assert (tmp_path / "x.pdf").exists() and (tmp_path / "x.png").exists()


def test_one_palette_gives_each_series_its_colour_in_order():
    """The paper's figures and the power-sampling study colour series the same way: tab10 in drawing order."""
    import seaborn as sns

    colours = plotting.palette(["grpo", "clip_cov", "kl_cov"])
    assert list(colours) == ["grpo", "clip_cov", "kl_cov"]
    assert list(colours.values()) == sns.color_palette("tab10", n_colors=3)
    assert plotting.palette({"base": 1, "power": 2}) == plotting.palette(["base", "power"])  # any iterable of keys
    assert list(plotting.palette(["a", "b"], "deep").values()) == sns.color_palette("deep", n_colors=2)
    assert plotting.palette([]) == {}
