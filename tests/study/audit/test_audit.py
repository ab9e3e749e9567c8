"""The claims ledger, the artifact catalogue and the audit's measurements and verdicts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml
from entropy_rl.core import config
from entropy_rl.core.run import Run
from entropy_rl.study import artifacts, audit
from entropy_rl.study.audit import verdicts
from support import ROOT, a_run
from support.metrics_frames import run_metrics

LEDGER = yaml.safe_load((ROOT / "claims.yaml").read_text())
SCHEMA = ROOT / "workflow" / "schemas" / "claims.schema.yaml"


# ---- the ledger and the catalogue -------------------------------------------------------------


def test_ledger_is_valid_and_cross_references_hold():
    config.validate_against(LEDGER, SCHEMA, "claims.yaml")
    audit.check_ledger(LEDGER)


def test_ledger_errors_name_the_claim():
    bad = {
        **LEDGER,
        "claims": [{**LEDGER["claims"][0], "measure": {"fn": "nope", "artifact": "fig02_cumulative_shares"}}],
    }
    with pytest.raises(ValueError, match=r"claim 'shares/entropy-1-12': unknown measure.fn 'nope'"):
        audit.check_ledger(bad)
    missing = {**LEDGER, "claims": [{k: v for k, v in LEDGER["claims"][0].items() if k != "source"}]}
    with pytest.raises(config.ConfigError, match="claims.yaml key claims.0: 'source' is a required property"):
        config.validate_against(missing, SCHEMA, "claims.yaml")


def test_a_measurement_name_registered_twice_is_refused():
    """Claims name their measurement; a second function under a known name must fail, not replace the first."""
    first = audit.MEASUREMENTS["cumulative_share"]

    def cumulative_share(study, artifact):
        raise AssertionError("never called")

    with pytest.raises(
        ValueError,
        match=r"measurement 'cumulative_share' is registered twice: in entropy_rl\.study\.audit\.entropy_law and in ",
    ):
        audit.measurement(cumulative_share)
    assert audit.MEASUREMENTS["cumulative_share"] is first


def test_the_workflow_evaluates_exactly_the_runs_the_audit_reads_on_the_test_sets():
    """The workflow plans evaluations from study.artifacts (it does not load the audit): its list of the
    measurements that read them is the registry's, and the ledger names the artifacts those claims measure."""
    accuracy = {name for name, fn in audit.MEASUREMENTS.items() if fn.__module__ == "entropy_rl.study.audit.accuracy"}
    assert accuracy == artifacts.EVAL_MEASUREMENTS
    assert artifacts.evaluated(LEDGER["claims"]) == ["fig09_entropy_loss", "fig10_reference_kl", "table02_benchmarks"]
    claims = [{"measure": {"fn": "cumulative_share", "artifact": "fig01_entropy_collapse"}}]
    assert artifacts.evaluated(claims) == ["table02_benchmarks"]  # it shows them: needs "eval"


def test_a_run_without_an_evaluation_is_an_error_not_a_verdict():
    study = audit.Study("mini", {}, {}, {}, {}, {}, {}, {"add1": 10}, {}, {}, 20)
    with pytest.raises(KeyError, match="qwen2-m-grpo has no evaluation among the audit's inputs"):
        study.summary("qwen2-m-grpo")


def test_ledger_holds_the_papers_headline_numbers():
    paper = {c["id"]: c["paper"] for c in LEDGER["claims"]}
    assert (paper["shares/entropy-1-12"], paper["shares/performance-1-12"]) == (73, 76)
    assert (paper["shares/entropy-1-3"], paper["shares/performance-1-3"]) == (94, 93)
    assert (paper["prediction/rmse-math"], paper["prediction/rmse-code"]) == (0.9, 1.2)
    assert (paper["prediction/final-math"], paper["prediction/final-code"]) == (0.5, 1.9)
    assert (paper["cov-methods/gain-7b"], paper["cov-methods/gain-32b"]) == (2.0, 6.4)
    rows = LEDGER["table2"]["rows"]
    assert len(rows) == 2 and all(len(methods) == 4 for methods in rows.values())


def test_paper_gains_follow_from_its_table2():
    """The +2.0 / +6.4 of Section 4.3 are KL-Cov's Avg. minus GRPO's in the ledger's Table 2."""
    rows = LEDGER["table2"]["rows"]
    avg = LEDGER["table2"]["columns"].index("Avg.")
    for model, gain in (("Qwen2.5-7B", 2.0), ("Qwen2.5-32B", 6.4)):
        best = max(rows[model]["Clip-Cov"][avg], rows[model]["KL-Cov"][avg])
        assert best - rows[model]["GRPO"][avg] == pytest.approx(gain)


def test_caption_names_scale_runs_and_settings():
    base = a_run(steps=60, prompts_per_step=32, rollout_n=8, lr=3e-4, temperature=1.0, val_every=5)
    kl = base.but(loss={"loss_mode": "kl_cov", "kl_cov_ratio": 0.1, "ppo_kl_coef": 1.0})
    text = artifacts.caption("fig11_covariance_methods", "mini", {"g": base, "k": kl}, {"g": "GRPO run", "k": "KL run"})
    assert text.startswith("Mini scale. GRPO, Clip-higher")
    assert "60 steps of 32 prompts x 8 responses, lr 0.0003" in text
    assert "GRPO run: GRPO" in text and "KL run: GRPO, KL-Cov ratio 0.1, coefficient 1" in text
    wider = artifacts.caption(
        "fig07_coefficients_vs_size", "mini", {"g": base, "w": base.but(lr=2.4e-4)}, {"g": "m", "w": "l"}
    )
    assert "lr 0.00024-0.0003 (scaled with 1/width)" in wider


def spec(loss_mode="vanilla", low=0.2, high=0.2, ent=0.0, kl=0.0, algorithm="grpo", model="m", **loss) -> Run:
    settings = {
        "loss_mode": loss_mode,
        "clip_ratio_low": low,
        "clip_ratio_high": high,
        "entropy_coeff": ent,
        "kl_loss_coef": kl,
        **loss,
    }
    return a_run(algorithm=algorithm, model=model, loss=settings)


@pytest.mark.parametrize(
    ("run_spec", "name"),
    [
        (spec(), "GRPO"),
        (spec(algorithm="rloo"), "RLOO"),
        (spec(high=0.28), "Clip-higher"),
        (spec("clip_cov", 1.0, 1.0), "Clip-Cov"),
        (spec("kl_cov"), "KL-Cov"),
        (spec(ent=0.01), "Entropy loss"),
        (spec(kl=0.1), "Reference KL"),
        (spec(reward="random"), "Random reward"),  # the control is never a treatment's GRPO baseline
    ],
)
def test_method_names(run_spec, name):
    assert audit.method(run_spec) == name


# ---- measurements and verdicts on synthetic runs ----------------------------------------------


def make_study(
    tmp_path, runs: dict[str, tuple[dict, pd.DataFrame, dict]], artifact_runs: dict, scale="mini"
) -> audit.Study:
    """runs: id -> (spec, metrics, {benchmark: accuracy})."""
    metrics, summaries = {}, {}
    for run, (_, frame, accs) in runs.items():
        metrics[run] = tmp_path / f"{run}.metrics.parquet"
        frame.to_parquet(metrics[run])
        summaries[run] = tmp_path / f"{run}.summary.parquet"
        pd.DataFrame({"benchmark": list(accs), "avg_at_n": list(accs.values())}).to_parquet(summaries[run])
    return audit.Study(
        scale=scale,
        artifacts=artifact_runs,
        specs={r: v[0].but(id=r) for r, v in runs.items()},
        metrics_paths={r: str(p) for r, p in metrics.items()},
        summary_paths={r: str(p) for r, p in summaries.items()},
        model_paths={},
        val_samples={"x": 400, "y": 400},
        bench_sizes={"x": 500, "y": 500},
        bench_roles={"AIME24": "x", "MATH-500": "y"},
        model_roles={"Qwen2.5-7B": "m"},
        fit_steps=20,
    )


def claim(fn, kind="qualitative", paper="text", margin=None, **measure):
    c = {
        "id": fn,
        "claim": fn,
        "source": "test",
        "kind": kind,
        "paper": paper,
        "measure": {"fn": fn, **measure},
        "test": "t",
        "tolerance": {"why": "w"},
    }
    return c if margin is None else {**c, "margin": {"value": margin, "why": "w"}}


def point(c: dict, study) -> bool:
    """A test's reading at its point estimates on one seed (the measurement's ``holds``): what these tests of a
    measurement's logic check where the effect has no noise of its own, so that one seed leaves the verdict
    inconclusive (tests/study/audit/test_audit_verdicts.py)."""
    row = audit.judge(c, study)
    assert row["verdict"] in (audit.INCONCLUSIVE, audit.NOT_COMPARABLE) or c["kind"] == "number", row
    return verdicts.measure(c["measure"], study).holds


def test_shares_number_is_not_comparable_at_mini_and_judged_at_paper(tmp_path):
    runs = {f"r{i}": (spec(), run_metrics(seed=i, tau=8 + 2 * i), {"x": 0.5, "y": 0.5}) for i in range(4)}
    c = claim("cumulative_share", kind="number", paper=73, artifact="fig02", quantity="entropy", at=1 / 12)
    c["tolerance"] = {"band": 30, "why": "w"}
    mini = audit.judge(c, make_study(tmp_path, runs, {"fig02": list(runs)}))
    assert mini["verdict"] == audit.NOT_COMPARABLE and "paper scale" in mini["why"]
    measured = mini["measured"]
    assert 0 < measured < 100
    lo, hi = (float(v) for v in mini["tolerance"].split("interval [")[1].split("]")[0].split(", "))
    assert lo <= measured <= hi and "paper ± 30" in mini["tolerance"]
    paper_scale = make_study(tmp_path, runs, {"fig02": list(runs)}, scale="paper")
    # equivalence to the paper's value within the band: inside reproduces, beyond contradicts
    assert audit.judge({**c, "paper": round(measured)}, paper_scale)["verdict"] == audit.REPRODUCED
    assert audit.judge({**c, "paper": measured - 70}, paper_scale)["verdict"] == audit.CONTRADICTED
    narrow = {**c, "paper": round(measured), "tolerance": {"band": 0.01, "why": "w"}}  # a band no interval fits inside
    assert audit.judge(narrow, paper_scale)["verdict"] == audit.INCONCLUSIVE


def test_missing_artifact_and_missing_paper_value_are_not_comparable(tmp_path):
    runs = {"r": (spec(), run_metrics(), {"x": 0.5, "y": 0.5})}
    study = make_study(tmp_path, runs, {"fig08": ["r"]}, scale="paper")
    row = audit.judge(claim("law_fits_within_noise", artifact="fig04_code_fits"), study)
    assert row["verdict"] == audit.NOT_COMPARABLE and "no runs for fig04_code_fits" in row["why"]
    row = audit.judge(
        {
            **claim("covariance_group", kind="number", paper=None, artifact="fig08", group="cov_all"),
            "paper_note": "lost",
        },
        study,
    )
    assert row["verdict"] == audit.NOT_COMPARABLE and row["why"] == "lost"
    assert row["measured"] == pytest.approx(0.0012)


def test_covariance_claims_flip_with_the_data(tmp_path):
    good = make_study(tmp_path, {"r": (spec(), run_metrics(step_noise=True), {"x": 0.5})}, {"fig08": ["r"]})
    assert audit.judge(claim("covariance_tracks_entropy", artifact="fig08"), good)["verdict"] == audit.REPRODUCED
    assert audit.judge(claim("covariance_positive", artifact="fig08", share=0.9), good)["verdict"] == audit.REPRODUCED
    assert audit.judge(claim("covariance_by_difficulty", artifact="fig08"), good)["verdict"] == audit.REPRODUCED
    bad = make_study(
        tmp_path, {"r": (spec(), run_metrics(cov_sign=-1.0, step_noise=True), {"x": 0.5})}, {"fig08": ["r"]}
    )
    assert audit.judge(claim("covariance_tracks_entropy", artifact="fig08"), bad)["verdict"] == audit.CONTRADICTED
    # the same covariance along a smooth trend alone: its steps count as few, and the correlation is not shown
    smooth = make_study(tmp_path, {"r": (spec(), run_metrics(), {"x": 0.5})}, {"fig08": ["r"]})
    row = audit.judge(claim("covariance_tracks_entropy", artifact="fig08"), smooth)
    assert row["verdict"] == audit.INCONCLUSIVE and "independent pairs" in row["measured"]
    assert audit.judge(claim("covariance_tracks_entropy", artifact="fig08"), bad)["verdict"] == audit.CONTRADICTED
    assert audit.judge(claim("covariance_positive", artifact="fig08", share=0.9), bad)["verdict"] == audit.CONTRADICTED
    assert audit.judge(claim("covariance_by_difficulty", artifact="fig08"), bad)["verdict"] == audit.CONTRADICTED


def test_figure8_claims_measure_the_bandit_covariance(tmp_path):
    """The ledger's Figure 8 claims read bandit_cov: a token covariance of the opposite sign changes nothing."""
    frame = run_metrics(step_noise=True)
    frame["cov_all"] = -frame["cov_all"]
    study = make_study(tmp_path, {"r": (spec(), frame, {"x": 0.5})}, {"fig08_covariance": ["r"]})
    for i in ("covariance/tracks-entropy-change", "covariance/positive", "covariance/harder-smaller"):
        row = audit.judge(ledger_claim(i), study)
        assert row["verdict"] == audit.REPRODUCED, row
        assert "bandit" in row["how"] and "bandit" in ledger_claim(i)["claim"]
    frame = run_metrics(step_noise=True)
    frame["bandit_cov"] = -frame["bandit_cov"]
    frame[["bandit_cov_acc0.125", "bandit_cov_acc0.875"]] = frame[
        ["bandit_cov_acc0.875", "bandit_cov_acc0.125"]
    ].to_numpy()
    study = make_study(tmp_path, {"r": (spec(), frame, {"x": 0.5})}, {"fig08_covariance": ["r"]})
    for i in ("covariance/tracks-entropy-change", "covariance/positive", "covariance/harder-smaller"):
        assert audit.judge(ledger_claim(i), study)["verdict"] == audit.CONTRADICTED, i
    # hard prompts on 4 steps
    frame["bandit_cov_acc0.125"] = np.where(frame["step"] < 4, frame["bandit_cov_acc0.125"], np.nan)
    study = make_study(tmp_path, {"r": (spec(), frame, {"x": 0.5})}, {"fig08_covariance": ["r"]})
    row = audit.judge(ledger_claim("covariance/harder-smaller"), study)
    assert row["verdict"] == audit.NOT_COMPARABLE and "4 steps with prompts of both" in row["why"]


def ledger_claim(claim_id: str) -> dict:
    return next(c for c in LEDGER["claims"] if c["id"] == claim_id)


def table1_run(scale: float = 1.0, outlier: float = 1885.0, mean: float = 0.003) -> pd.DataFrame:
    """Training step 1 (row 0) carries Table 1's values times ``scale``, the top 0.02% at ``outlier`` times
    the all-token mean; later steps carry other values, which Table 1 must not read."""
    frame = run_metrics()
    paper = {"cov_top0.2": 3.112, "cov_top2": 1.385, "cov_top20": 0.351, "cov_top50": 0.152}
    for col, v in paper.items():
        frame[col] = 10.0
        frame.loc[0, col] = scale * v
    frame["cov_all"], frame["cov_top0.02"] = 10.0, 10.0
    frame.loc[0, "cov_all"] = scale * mean
    frame.loc[0, "cov_top0.02"] = scale * outlier * mean
    return frame


def test_table1_cells_are_judged_within_a_factor_of_2_at_step_1(tmp_path):
    cells = {c["id"]: c for c in LEDGER["claims"] if c["id"].startswith("table1/") and c["kind"] == "number"}
    assert {i: c["paper"] for i, c in cells.items()} == {
        "table1/top-0.02": 5.654,
        "table1/top-0.2": 3.112,
        "table1/top-2": 1.385,
        "table1/top-20": 0.351,
        "table1/top-50": 0.152,
        "table1/all": 0.003,
    }
    assert all(c["tolerance"]["factor"] == 2 and "paper_note" not in c for c in cells.values())
    artifact = {"table01_covariance_distribution": ["r"]}
    for scale, verdict in (
        (1.9, audit.REPRODUCED),
        (0.55, audit.REPRODUCED),
        (2.1, audit.CONTRADICTED),
        (0.45, audit.CONTRADICTED),
    ):
        study = make_study(tmp_path, {"r": (spec(), table1_run(scale), {"x": 0.5})}, artifact, scale="paper")
        for i, c in cells.items():
            row = audit.judge(c, study)
            assert row["verdict"] == verdict, (scale, row)
            assert row["measured"] == pytest.approx(scale * c["paper"], rel=1e-3)  # read at step 1, not later
            assert "training step 1" in row["how"] and "factor 2" in row["tolerance"]
    negative = make_study(tmp_path, {"r": (spec(), table1_run(-1.0), {"x": 0.5})}, artifact, scale="paper")
    assert audit.judge(cells["table1/all"], negative)["verdict"] == audit.CONTRADICTED  # same sign needed
    mini = audit.judge(cells["table1/all"], make_study(tmp_path, {"r": (spec(), table1_run(), {"x": 0.5})}, artifact))
    assert mini["verdict"] == audit.NOT_COMPARABLE and "paper scale" in mini["why"]


def test_factor_tolerance_is_symmetric_and_keeps_the_sign():
    assert audit.factor_interval(3.0, 2) == (1.5, 6.0)
    assert audit.factor_interval(-0.03, 2) == (-0.06, -0.015)
    lo, hi = audit.factor_interval(0.0, 2)
    assert lo == hi == 0.0


def test_factor_tolerance_is_for_numbers_only():
    bad = {**LEDGER, "claims": [{**ledger_claim("table1/outliers"), "tolerance": {"factor": 2, "why": "w"}}]}
    with pytest.raises(ValueError, match="tolerance.factor applies to number claims only"):
        audit.check_ledger(bad)
    with pytest.raises(config.ConfigError):
        config.validate_against(bad, SCHEMA, "claims.yaml")
    low = {**LEDGER, "claims": [{**ledger_claim("table1/all"), "tolerance": {"factor": 1, "why": "w"}}]}
    with pytest.raises(config.ConfigError, match="factor"):
        config.validate_against(low, SCHEMA, "claims.yaml")


def test_table1_outliers_compare_with_the_papers_ratio(tmp_path):
    c = ledger_claim("table1/outliers")
    artifact = {"table01_covariance_distribution": ["r"]}
    study = make_study(tmp_path, {"r": (spec(), table1_run(outlier=200), {"x": 0.5})}, artifact)
    holds = audit.judge(c, study)
    assert point(c, study) and holds["verdict"] == audit.INCONCLUSIVE and "at least 2 seeds" in holds["needs"]
    assert "= 200x" in holds["measured"] and "paper 1885x" in holds["measured"] and "188x" in holds["how"]
    study = make_study(tmp_path, {"r": (spec(), table1_run(outlier=150), {"x": 0.5})}, artifact)
    assert not point(c, study) and "= 150x" in audit.judge(c, study)["measured"]
    for mean in (0.0, -0.003):
        study = make_study(tmp_path, {"r": (spec(), table1_run(mean=mean), {"x": 0.5})}, artifact)
        assert not point(c, study) and audit.judge(c, study)["measured"].startswith("undefined")


def test_law_fit_test_rejects_a_run_that_does_not_follow_the_law(tmp_path):
    follows = make_study(tmp_path, {"r": (spec(), run_metrics(), {"x": 0.5})}, {"fig03": ["r"]})
    law = claim("law_fits_within_noise", artifact="fig03", margin=1)
    assert audit.judge(law, follows)["verdict"] == audit.REPRODUCED
    frame = run_metrics()
    val = frame["val_acc"].notna()
    for col in ("val_acc/x", "val_acc/y", "val_acc"):  # accuracy zig-zags regardless of entropy
        frame.loc[val, col] = np.tile([0.2, 0.6], val.sum())[: val.sum()]
    breaks = make_study(tmp_path, {"r": (spec(), frame, {"x": 0.5})}, {"fig03": ["r"]})
    assert audit.judge(law, breaks)["verdict"] == audit.CONTRADICTED


def test_treatment_claims_compare_with_the_same_models_grpo(tmp_path):
    runs = {
        "grpo": (spec(), run_metrics(h_end=0.1), {"x": 0.40, "y": 0.40}),
        "clip": (
            spec("clip_cov", 1.0, 1.0, clip_cov_ratio=0.01),
            run_metrics(h_end=0.3, seed=1),
            {"x": 0.50, "y": 0.50},
        ),
        "kl": (spec("kl_cov", ppo_kl_coef=1.0), run_metrics(h_end=0.4, seed=2), {"x": 0.45, "y": 0.45}),
        "ent": (spec(ent=0.01), run_metrics(h_end=0.6, seed=3), {"x": 0.41, "y": 0.40}),
    }
    study = make_study(tmp_path, runs, {"t": list(runs)})
    assert point(claim("treatment_entropy_above_baseline", artifact="t", methods=["Clip-Cov", "KL-Cov"]), study)
    # Differences between trained runs on one seed: shown with their binomial noise, not judged (issue 66, defect 7)
    higher = claim("accuracy_vs_baseline", artifact="t", methods=["Clip-Cov", "KL-Cov"], relation="above")
    row = audit.judge(higher, study)
    assert row["verdict"] == audit.INCONCLUSIVE and "one seed" in row["why"] and "at least 2 seeds" in row["needs"]
    assert verdicts.measure(higher["measure"], study).holds  # 10 and 5 points at the point estimates
    no_gain = claim("accuracy_vs_baseline", artifact="t", methods=["Entropy loss"], relation="not_above", margin=20.0)
    assert audit.judge(no_gain, study)["verdict"] == audit.INCONCLUSIVE
    lower = claim("accuracy_vs_baseline", artifact="t", methods=["Clip-Cov"], relation="below")
    assert audit.judge(lower, study)["verdict"] == audit.INCONCLUSIVE
    assert point(
        claim("entropy_rises_with", artifact="t", parameter="entropy_coeff", method_name="Entropy loss"), study
    )
    gain = audit.judge(claim("best_gain_over_grpo", kind="number", paper=10.0, artifact="t", model="Qwen2.5-7B"), study)
    assert gain["measured"] == pytest.approx(10.0)


@pytest.mark.parametrize("coefficients", [(0.001, 0.01, 0.03), (0.0001, 0.001, 0.005, 0.01)])  # mini, paper
def test_entropy_loss_sensitivity_by_rank_of_the_coefficient(tmp_path, coefficients):
    """The smallest coefficient ends near GRPO (within a quarter of GRPO's entropy drop), the largest explodes."""
    c = ledger_claim("entropy-loss/sensitive")

    def study(small_end, large_end):
        ends = [small_end, *np.linspace(0.3, 0.5, len(coefficients) - 2), large_end]
        runs = {"grpo": (spec(), run_metrics(h_end=0.1), {"x": 0.4})}
        for i, (coef, end) in enumerate(zip(coefficients, ends)):
            runs[f"ent{coef}"] = (spec(ent=coef), run_metrics(h_end=end, seed=i + 1), {"x": 0.4})
        return make_study(tmp_path, runs, {"fig09_entropy_loss": list(runs)})

    row = audit.judge(c, study(small_end=0.2, large_end=3.0))
    assert point(c, study(small_end=0.2, large_end=3.0)), row
    assert (
        f"smallest entropy_coeff {coefficients[0]:g}" in row["measured"]
        and f"largest {coefficients[-1]:g}" in row["measured"]
    )
    assert not point(c, study(small_end=0.6, large_end=3.0))  # the smallest moves entropy
    assert not point(c, study(small_end=0.2, large_end=0.5))  # the largest does not explode
    assert not point(c, study(small_end=0.2, large_end=0.9))  # above 2x GRPO but below its start


def test_entropy_loss_sensitivity_needs_two_coefficients(tmp_path):
    runs = {"grpo": (spec(), run_metrics(), {"x": 0.4}), "ent": (spec(ent=0.01), run_metrics(h_end=3.0), {"x": 0.4})}
    row = audit.judge(
        ledger_claim("entropy-loss/sensitive"), make_study(tmp_path, runs, {"fig09_entropy_loss": list(runs)})
    )
    assert row["verdict"] == audit.NOT_COMPARABLE and "fewer than 2 Entropy loss coefficients" in row["why"]


def test_kl_cov_entropy_10x_over_the_last_third(tmp_path):
    c = ledger_claim("cov-methods/kl-cov-entropy-10x")
    assert c["measure"]["artifact"] == "fig12_entropy_accuracy"

    def study(kl_end):
        runs = {
            "grpo": (spec(model="l"), run_metrics(h_end=0.01), {"x": 0.4}),
            "kl": (spec("kl_cov", model="l", ppo_kl_coef=1.0), run_metrics(h_end=kl_end, seed=1), {"x": 0.4}),
            "clip": (spec("clip_cov", 1.0, 1.0, model="l"), run_metrics(h_end=0.02, seed=2), {"x": 0.4}),
        }
        return make_study(tmp_path, runs, {"fig12_entropy_accuracy": list(runs)})

    row = audit.judge(c, study(0.3))
    assert point(c, study(0.3)) and row["measured"].startswith("kl ") and "vs grpo" in row["measured"]
    assert not point(c, study(0.1))


def cov_method_runs(clip_cov_scale=1.0, touched=(2e-4, 5e-4), cliphigher=(-0.025, -0.035)) -> dict:
    """Figures 11 (model m) and 12 (model l): GRPO, Clip-higher, Clip-Cov and KL-Cov each."""
    runs = {}
    for model, ch in zip(("m", "l"), cliphigher):
        runs[f"{model}-grpo"] = (spec(model=model), run_metrics(), {"x": 0.4})
        runs[f"{model}-ch"] = (spec(high=0.28, model=model), run_metrics(cliphigher=ch, seed=1), {"x": 0.4})
        clip = run_metrics(touched=touched[0], seed=2)
        clip["cov_all"] *= clip_cov_scale
        runs[f"{model}-clip"] = (
            spec("clip_cov", 1.0, 1.0, model=model, clip_cov_lb=1.0, clip_cov_ub=5.0),
            clip,
            {"x": 0.4},
        )
        runs[f"{model}-kl"] = (
            spec("kl_cov", model=model, ppo_kl_coef=1.0),
            run_metrics(touched=touched[1], seed=3),
            {"x": 0.4},
        )
    return runs


def cov_method_study(tmp_path, runs, scale="mini"):
    return make_study(
        tmp_path,
        runs,
        {
            "fig11_covariance_methods": [r for r in runs if r.startswith("m-")],
            "fig12_entropy_accuracy": [r for r in runs if r.startswith("l-")],
        },
        scale,
    )


def test_clip_cov_bounds_over_the_mean_token_covariance(tmp_path):
    c = ledger_claim("control/clip-cov-bounds")
    study = cov_method_study(tmp_path, cov_method_runs())  # mean cov_all ~3.7e-4: 1 / 3.7e-4 ~ 2,700x
    row = audit.judge(c, study)
    assert point(c, study) and "m-clip" in row["measured"] and "l-clip" in row["measured"]
    assert not point(c, cov_method_study(tmp_path, cov_method_runs(clip_cov_scale=10)))
    study = cov_method_study(tmp_path, cov_method_runs(clip_cov_scale=-1))
    assert not point(c, study) and "undefined" in audit.judge(c, study)["measured"]


def test_clip_higher_covariance_is_a_number_judged_within_a_factor_of_2(tmp_path):
    c = ledger_claim("control/clip-higher-covariance")
    assert c["paper"] == -0.03 and c["kind"] == "number" and c["tolerance"]["factor"] == 2
    row = audit.judge(c, cov_method_study(tmp_path, cov_method_runs(), scale="paper"))
    assert row["measured"] == pytest.approx(-0.03) and row["verdict"] == audit.REPRODUCED  # pooled over m-ch and l-ch
    assert "m-ch" in row["how"] and "l-ch" in row["how"]
    for values in ((-0.1, -0.1), (0.03, 0.03), (-0.01, -0.01)):
        row = audit.judge(c, cov_method_study(tmp_path, cov_method_runs(cliphigher=values), scale="paper"))
        assert row["verdict"] == audit.CONTRADICTED, (values, row)
    mini = audit.judge(c, cov_method_study(tmp_path, cov_method_runs()))
    assert mini["verdict"] == audit.NOT_COMPARABLE and "paper scale" in mini["why"]
    none = audit.judge(c, cov_method_study(tmp_path, cov_method_runs(cliphigher=(np.nan, np.nan)), scale="paper"))
    assert none["verdict"] == audit.NOT_COMPARABLE and "no step" in none["why"]


def test_clip_higher_covariance_pools_what_the_scale_has(tmp_path):
    """Without Figure 12's runs the measure pools Figure 11's alone."""
    runs = {r: v for r, v in cov_method_runs().items() if r.startswith("m-")}
    study = make_study(tmp_path, runs, {"fig11_covariance_methods": list(runs)}, "paper")
    row = audit.judge(ledger_claim("control/clip-higher-covariance"), study)
    assert row["measured"] == pytest.approx(-0.025)
    row = audit.judge(ledger_claim("control/clip-higher-covariance"), make_study(tmp_path, runs, {}, "paper"))
    assert row["verdict"] == audit.NOT_COMPARABLE and "fig11_covariance_methods, fig12_entropy_accuracy" in row["why"]


def test_touched_fraction_between_1e4_and_1e3(tmp_path):
    c = ledger_claim("control/touched-fraction")
    study = cov_method_study(tmp_path, cov_method_runs())
    row = audit.judge(c, study)
    assert point(c, study) and row["measured"].count("Clip-Cov") == 2 and row["measured"].count("KL-Cov") == 2
    assert not point(c, cov_method_study(tmp_path, cov_method_runs(touched=(2e-4, 2e-3))))
    assert not point(c, cov_method_study(tmp_path, cov_method_runs(touched=(5e-5, 5e-4))))


def test_also_names_known_artifacts():
    bad = {
        **LEDGER,
        "claims": [
            {
                **ledger_claim("control/touched-fraction"),
                "measure": {**ledger_claim("control/touched-fraction")["measure"], "also": ["fig99_nope"]},
            }
        ],
    }
    with pytest.raises(ValueError, match="unknown artifact 'fig99_nope'"):
        audit.check_ledger(bad)


def test_paper_note_of_a_judged_claim_is_shown(tmp_path):
    c = ledger_claim("coefficients/data-dependent")
    assert "Eurus-RL-Data-Difficult" in c["paper_note"] and "not public" in c["paper_note"]
    runs = {"a": (spec(), run_metrics(), {"x": 0.5}), "b": (spec(), run_metrics(a=0.5, b=1.2, seed=1), {"x": 0.5})}
    row = audit.judge(c, make_study(tmp_path, runs, {"appC_training_data": list(runs)}))
    assert "Eurus-RL-Data-Difficult" in row["why"]


def test_benchmark_tolerances_say_they_cover_evaluation_noise_only():
    whys = [LEDGER["table2"]["tolerance"]["why"]] + [
        ledger_claim(i)["tolerance"]["why"]
        for i in ("cov-methods/gain-7b", "cov-methods/gain-32b", "cov-methods/aime24-32b", "cov-methods/aime25-32b")
    ]
    assert all("on one seed" in w and "not judged" in w for w in whys)
    assert LEDGER["table2"]["tolerance"]["band"] == 2.0


def test_paper_table2_average_is_not_the_plain_mean_of_its_cells():
    row = audit.consistency_rows(LEDGER)[0]
    assert row["verdict"] == audit.CONTRADICTED
    means = {name: (reported, mean) for name, reported, mean in audit.table2_row_means(LEDGER["table2"])}
    reported, mean = means["Qwen2.5-7B GRPO"]
    assert reported == 38.6 and mean == pytest.approx(273.6 / 7)


def test_reports_render_every_row(tmp_path):
    runs = {"r": (spec(), run_metrics(), {"x": 0.5})}
    study = make_study(tmp_path, runs, {"fig08_covariance": ["r"], "table01_covariance_distribution": ["r"]})
    table = audit.run_audit(LEDGER, study)
    assert len(table) == len(audit.expand_ledger(LEDGER)) + 1
    counts = audit.verdict_counts(table)
    assert sum(counts.values()) == len(table) and counts[audit.REPRODUCED] >= 1
    assert {"p_reproduce", "p_contradict", "p_two_way", "family_verdict", "ledger"} <= set(table.columns)
    md = audit.to_markdown(table, "mini")
    assert md.split("## Every claim")[1].count("\n| ") == len(table) + 1
    html = audit.to_html(table, "mini")
    assert html.count("<tr style=") == len(table)


# ---- the power-sampling study (Karan & Du, 2025) ------------------------------------------------

POWER_IDS = [c["id"] for c in LEDGER["claims"] if c["id"].startswith("power/")]
MAIN = {"kind": "power", "alpha": 4.0, "block_size": 8, "n_mcmc": 5}
SWEEP = {"power-mcmc0": 0, "power-mcmc1": 1, "power-mcmc2": 2, "power": 5, "power-mcmc10": 10}


def answers(right, problems=80, n=8, drawn=10, loglik=-0.5, benches=("y", "x"), seconds=0.01):
    """n answers to each problem; ``right[i]`` of problem i's answers are correct (an int for all): the answer "1",
    the wrong ones all "2"."""
    right = np.broadcast_to(right, problems)
    rows = [
        {
            "benchmark": b,
            "problem_id": i,
            "sample": s,
            "correct": s < right[i],
            "extracted": "1" if s < right[i] else "2",
            "response_tokens": 5,
            "drawn_tokens": drawn,
            "acceptance": 1.0,
            "base_loglik_per_token": loglik + 0.01 * (i % 7),
            "seconds": seconds,
        }
        for b in benches
        for i in range(problems)
        for s in range(n)
    ]
    return pd.DataFrame(rows)


def make_power_study(tmp_path, frames: dict[str, pd.DataFrame], scale="mini", model="m") -> audit.Study:
    """A study of the power-sampling methods in ``frames``; "grpo" samples a GRPO run, "kl" a KL-Cov run."""
    methods = {
        "base": {"kind": "sample", "temperature": 1.0},
        "low-temp": {"kind": "sample", "temperature": 0.25},
        "grpo": {"kind": "sample", "temperature": 1.0, "run": "g"},
        "kl": {"kind": "sample", "temperature": 1.0, "run": "k"},
        "smc": {"kind": "smc", "alpha": 4.0, "particles": 8, "resample_every": 4, "ess_threshold": 0.5},
        "sps": {"kind": "sps", "alpha": 4.0, "block_size": 8, "candidates": 4, "rollouts": 2, "horizon": 8},
        **{m: dict(MAIN, n_mcmc=v) for m, v in SWEEP.items()},
    }
    paths = {}
    for method, frame in frames.items():
        paths[method] = str(tmp_path / f"{method}.samples.parquet")
        frame.to_parquet(paths[method])
    main = [m for m in ("base", "low-temp", "power", "smc", "sps", "grpo", "kl") if m in frames]
    power = {
        "model": model,
        "methods": methods,
        "runs": {"grpo": "g", "kl": "k"},
        "problems": {"y": 80, "x": 80},
        "n": 8,
        "artifacts": {
            "power01_accuracy": main,
            "power02_pass_at_k": main,
            "power03_likelihoods": main,
            "power04_hyperparameters": list(SWEEP),
            "power05_cost_accuracy": main,
        },
    }
    study = make_study(
        tmp_path,
        {"g": (spec(), run_metrics(), {"x": 0.5}), "k": (spec("kl_cov"), run_metrics(), {"x": 0.5})},
        {},
        scale,
    )
    study.power, study.power_paths = power, paths
    return study


def power_frames(holds: bool) -> dict[str, pd.DataFrame]:
    """Answers where every power claim holds (power close to GRPO, above low temperature and base,
    as diverse as base at large k, likelihoods GRPO > power > base, accuracy rising with N_MCMC, more
    tokens drawn), or where every one fails."""
    solvable = np.arange(80) < 72  # 8 problems nobody solves
    grpo = np.where(np.arange(80) < 48, 8, 0)  # all-or-nothing: 60% single-shot, pass@8 flat at 60%
    if holds:
        frames = {
            "base": answers(3 * solvable, loglik=-0.9),
            "low-temp": answers(4 * solvable, drawn=10),
            "power": answers(5 * solvable, drawn=40, loglik=-0.6),
            "grpo": answers(grpo, loglik=-0.3),
            "smc": answers(5 * solvable, drawn=60),
            "sps": answers(6 * solvable, drawn=50),
            **{m: answers(np.minimum(v, 5) * solvable, drawn=10 + 6 * v) for m, v in SWEEP.items() if m != "power"},
        }
    else:
        frames = {
            "base": answers(5 * solvable, loglik=-0.3),
            "low-temp": answers(4 * solvable),
            "power": answers(np.where(np.arange(80) < 24, 8, 0), loglik=-0.6),
            "grpo": answers(grpo, loglik=-0.9),
            "smc": answers(1 * solvable),
            "sps": answers(1 * solvable),
            **{m: answers(np.maximum(5 - v, 0) * solvable) for m, v in SWEEP.items() if m != "power"},
        }
    return {**frames, "kl": answers(grpo)}


@pytest.mark.parametrize("holds", [True, False])
def test_ledger_power_claims_flip_with_the_answers(tmp_path, holds):
    study = make_power_study(tmp_path, power_frames(holds))
    rows = {c["id"]: audit.judge(c, study) for c in audit.expand_ledger(LEDGER) if c["id"] in POWER_IDS}
    kinds = {c["id"]: c["kind"] for c in LEDGER["claims"] if c["id"] in POWER_IDS}
    qualitative = [i for i in POWER_IDS if kinds[i] == "qualitative"]
    assert len(qualitative) == 11 and {
        "power/sps/matches-mh",
        "power/smc/matches-mh",
        "power/beats-majority-vote",
    } <= set(qualitative)
    # Where the answers sit on a claim's line the data decide nothing: power 3.75 points below GRPO, ± 8 over 80
    # problems, against a 3.4-point margin; and power drawing exactly base's tokens when every claim fails.
    on_the_line = "power/matches-grpo" if holds else "power/inference-cost"
    # A comparison with an RL checkpoint (GRPO) on one seed is not judged: its RL seed's variation is unknown
    trained = {c["id"] for c in LEDGER["claims"] if "GRPO" in c["measure"].get("order", ())}
    assert {"power/matches-grpo", "power/pass-at-k-vs-grpo", "power/likelihood-ordering"} <= trained
    # ... though the likelihood ordering's other effect, power over the base model, samples no checkpoint and can
    # contradict the claim by itself
    judged_alone = set() if holds else {"power/likelihood-ordering"}
    for i in qualitative:
        on_line_or_trained = i == on_the_line or (i in trained and i not in judged_alone)
        expected = audit.INCONCLUSIVE if on_line_or_trained else audit.REPRODUCED if holds else audit.CONTRADICTED
        assert rows[i]["verdict"] == expected, (i, rows[i])
    assert rows[on_the_line]["needs"], rows[on_the_line]
    for i in POWER_IDS:
        if kinds[i] == "number":  # Table 1's cells and the later samplers' latencies
            assert rows[i]["verdict"] == audit.NOT_COMPARABLE and "paper scale" in rows[i]["why"], rows[i]


def test_power_measurements_report_their_numbers(tmp_path):
    study = make_power_study(tmp_path, power_frames(True))
    cost = audit.MEASUREMENTS["power_cost"](study, "power01_accuracy")
    assert cost.value.startswith("4×") and cost.holds
    pass_k = audit.MEASUREMENTS["power_compare"](
        study, "power02_pass_at_k", "pass_at_n", ["power", "GRPO"], "not_below", "MATH-500"
    )
    assert "power 90, GRPO 60; power − GRPO +30" in pass_k.value  # pass@8 on the solvable 90% against GRPO's flat 60%
    acc = audit.MEASUREMENTS["power_compare"](
        study, "power01_accuracy", "accuracy", ["power", "GRPO"], "not_below", "MATH-500"
    )
    assert "if answers were independent" in acc.value and "80 problems" in acc.how
    trend = audit.MEASUREMENTS["power_rises_with"](study, "power04_hyperparameters", "n_mcmc", "MATH-500")
    assert trend.value.startswith("0: 0.0%, 1: 11.2%, 2: 22.5%, 5: 56.2%, 10: 56.2%")


def test_a_sweep_that_answers_only_the_claims_benchmark_gives_the_same_trend(tmp_path):
    """The sweep points may answer only the benchmark the claim reads (config sweeps.benchmarks) while the main
    setting answers all: the trend is read on that benchmark's problems, the same as when every point answers all."""
    frames = power_frames(True)
    (tmp_path / "all").mkdir(), (tmp_path / "one").mkdir()
    read = make_power_study(tmp_path / "all", frames).bench_roles["MATH-500"]
    only = {m: f[f["benchmark"] == read] for m, f in frames.items() if m in SWEEP and m != "power"}
    assert all(len(f) < len(frames[m]) for m, f in only.items())
    study = make_power_study(tmp_path / "one", {**frames, **only})
    trend = audit.MEASUREMENTS["power_rises_with"](study, "power04_hyperparameters", "n_mcmc", "MATH-500")
    assert trend.value.startswith("0: 0.0%, 1: 11.2%, 2: 22.5%, 5: 56.2%, 10: 56.2%") and trend.holds


def test_majority_vote_claim_is_ours_and_judged_at_power_samplings_tokens(tmp_path):
    """Power (5 of 8 right on 72 problems, 40 tokens drawn) against a vote of 4 base answers (10 tokens each; 3 of 8
    right, every wrong answer "2"): the first group of 4 holds 3 right answers, the second none, so the vote is
    right half the time, 45% against power's 56.25%."""
    c = next(c for c in LEDGER["claims"] if c["id"] == "power/beats-majority-vote")
    assert c["source"].startswith("this workflow's own claim") and c["paper"] is None  # no paper's claim
    study = make_power_study(tmp_path, power_frames(True))
    m = audit.MEASUREMENTS["power_vs_majority"](study, "power01_accuracy")
    assert m.value.startswith("power 56.2, base majority of 4 45; power − base majority +11.2 ± 0.58 ")
    assert "(k 4: 4 × 10 = 40 tokens drawn against 40)" in m.value and m.holds
    assert m.effects["power − base majority"].estimate == pytest.approx(11.25)
    row = audit.judge(c, study)
    # both benchmarks: the claim names none
    assert row["verdict"] == audit.REPRODUCED and "paired over 160 problems" in row["how"]
    # Base still 3 of 8 right (37.5% single-shot, below power), at samples 0, 4 and 5, every wrong answer its own:
    # [1 w w w] a four-way tie won by the first given, [1 1 w w] a plurality of two; both groups vote right.
    frames = power_frames(True)
    right = frames["base"]["sample"].isin([0, 4, 5]) & (frames["base"]["problem_id"] < 72)
    frames["base"] = frames["base"].assign(
        correct=right, extracted=np.where(right, "1", frames["base"]["sample"].astype(str) + "0")
    )
    flipped = audit.judge(c, make_power_study(tmp_path, frames))
    assert flipped["verdict"] == audit.CONTRADICTED and "base majority of 4 90" in flipped["measured"]
    frames["base"] = frames["base"].assign(drawn_tokens=1)  # 40 answers would be needed, 8 are drawn
    assert "capped at the 8 answers per problem" in audit.judge(c, make_power_study(tmp_path, frames))["measured"]


def test_latency_claims_read_the_wall_time_and_are_judged_at_paper_scale(tmp_path):
    frames = power_frames(True)
    frames["power"] = frames["power"].assign(seconds=0.2)
    frames["sps"] = frames["sps"].assign(seconds=0.02)
    frames["smc"] = frames["smc"].assign(seconds=0.05)  # base: 0.01 s per answer
    claims = {c["id"]: c for c in LEDGER["claims"]}
    paper = make_power_study(tmp_path, frames, scale="paper")
    rows = {
        i: audit.judge(claims[i], paper)
        for i in ("power/sps/latency-vs-mh", "power/smc/latency-vs-plain", "power/smc/mh-latency-vs-plain")
    }
    assert rows["power/sps/latency-vs-mh"]["measured"] == pytest.approx(10.0)
    assert rows["power/sps/latency-vs-mh"]["verdict"] == audit.REPRODUCED  # 10 inside [5, 20]
    assert rows["power/smc/latency-vs-plain"]["measured"] == pytest.approx(5.0)
    assert rows["power/smc/latency-vs-plain"]["verdict"] == audit.CONTRADICTED  # 5x is outside 1.4-3.3x
    assert rows["power/smc/mh-latency-vs-plain"]["measured"] == pytest.approx(20.0)
    assert rows["power/smc/mh-latency-vs-plain"]["verdict"] == audit.REPRODUCED  # 20x is inside 16-28x
    frames["power"] = frames["power"].drop(columns="seconds")  # answers sampled before samplers timed themselves
    row = audit.judge(claims["power/sps/latency-vs-mh"], make_power_study(tmp_path, frames, scale="paper"))
    assert row["verdict"] == audit.NOT_COMPARABLE and "record no wall time" in row["why"]


def test_power_match_uses_the_standard_error_over_problems(tmp_path):
    """Power 10 points below GRPO, each solving its own problems all-or-nothing: within the noise of 80 problems
    (± 20), though 640 independent answers per method would call it a loss (± 5.4 points). Against a 3.4-point
    margin that is no match either: the data do not decide, where the old reading (zero inside the interval)
    called it one."""
    frames = power_frames(True)
    frames["power"] = answers(np.where((np.arange(80) >= 36) & (np.arange(80) < 76), 8, 0))  # GRPO solves 0-47
    c = next(c for c in LEDGER["claims"] if c["id"] == "power/matches-grpo")
    row = audit.judge(c, make_power_study(tmp_path, frames))
    assert row["measured"].startswith("power 50, GRPO 60; power − GRPO -10 ± 20 (± 5.4 if answers were independent)")
    # one seed of a GRPO checkpoint: not judged (its RL seed's variation is unknown); judged on the problems' noise
    # alone, as a study of several seeds judges each seed's share of it, it would not decide either
    assert row["verdict"] == audit.INCONCLUSIVE and "RL seed" in row["needs"]

    def on_problems(frames):
        m = audit.verdicts.measure(c["measure"], make_power_study(tmp_path, frames))
        effects = {k: replace(e, between_runs=False) for k, e in m.effects.items()}
        return audit.decide(effects, "not_below", c["margin"]["value"]).verdict

    assert on_problems(frames) == audit.INCONCLUSIVE
    frames["power"] = answers(np.where(np.arange(80) < 48, 4, 0))  # 20 points below on every problem GRPO solves
    assert on_problems(frames) == audit.CONTRADICTED
    frames["power"] = answers(np.where(np.arange(80) < 48, 8, 0))  # GRPO's own answers: a match to the point
    assert on_problems(frames) == audit.REPRODUCED


def test_table1_cells_judged_at_paper_scale_only_for_the_right_model(tmp_path):
    cells = {c["measure"]["method"]: c for c in LEDGER["claims"] if c["id"].startswith("power/table1/")}
    assert {m: c["paper"] for m, c in cells.items()} == {"base": 49.8, "low-temp": 62.8, "power": 70.6, "GRPO": 74.0}
    frames = power_frames(True)
    paper = make_power_study(tmp_path, frames, scale="paper")
    row = audit.judge(cells["power"], paper)
    half = 1.96 * np.sqrt(2) * 100 * np.sqrt(0.5625 * 0.4375 / 80)  # 56.25% on 80 problems: ± 15.4 points
    assert row["measured"] == pytest.approx(56.25) and row["tolerance"].startswith(
        f"measured 95% interval [{56.25 - half:.3g}, {56.25 + half:.3g}]; paper ± 3.4 points"
    )
    # 80 problems give an interval far wider than the ±3.4-point band: neither inside nor surely beyond it
    assert row["verdict"] == audit.INCONCLUSIVE
    wide = {**cells["power"], "paper": 56.0, "tolerance": {"band": 40.0, "why": "w"}}
    # inside a band of 40, and so is the base model's 49.8 that the cell is set against: the data cannot tell them apart
    assert audit.judge(wide, paper)["verdict"] == audit.INCONCLUSIVE and "49.8" in audit.judge(wide, paper)["needs"]
    narrower = {**wide, "contrast": {"value": 30.0, "why": "w"}}
    assert audit.judge(narrower, paper)["verdict"] == audit.REPRODUCED
    assert audit.judge({**cells["power"], "paper": 95.0}, paper)["verdict"] == audit.CONTRADICTED
    grpo = audit.judge(cells["GRPO"], paper)  # an RL checkpoint beside the paper's: one seed does not judge it
    assert grpo["measured"] == pytest.approx(60.0) and grpo["verdict"] == audit.INCONCLUSIVE
    other = audit.judge(cells["power"], make_power_study(tmp_path, frames, scale="paper", model="other"))
    assert other["verdict"] == audit.NOT_COMPARABLE and "samples other, not Qwen2.5-7B's role m" in other["why"]


def test_power_claims_not_comparable_without_the_study_or_its_benchmark(tmp_path):
    none = make_study(tmp_path, {"r": (spec(), run_metrics(), {"x": 0.5})}, {})
    for c in (c for c in LEDGER["claims"] if c["id"] in POWER_IDS):
        row = audit.judge(c, none)
        assert row["verdict"] == audit.NOT_COMPARABLE and "no power-sampling study" in row["why"], row
    study = make_power_study(tmp_path, power_frames(True))
    study.bench_roles = {"AIME24": "x"}
    row = audit.judge(next(c for c in LEDGER["claims"] if c["id"] == "power/mcmc-steps"), study)
    assert row["verdict"] == audit.NOT_COMPARABLE and "plays MATH-500" in row["why"]


def test_power_artifacts_are_the_power_rules():
    """The ledger may name the study's artifacts: those the registry holds as drawn from its answers."""
    assert audit.POWER_ARTIFACTS == artifacts.POWER
    assert {c["measure"]["artifact"] for c in LEDGER["claims"] if c["id"] in POWER_IDS} == set(audit.POWER_ARTIFACTS)
    bad = {**LEDGER, "claims": [{**LEDGER["claims"][0], "measure": {"fn": "power_cost", "artifact": "power09_nope"}}]}
    with pytest.raises(ValueError, match="unknown artifact 'power09_nope'"):
        audit.check_ledger(bad)
