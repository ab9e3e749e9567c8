"""fit-law: the paper's law fitted to any run's log (verl's file logger, TRL's trainer_state.json, a CSV) by the
study's own fit, equal to what the workflow's fit_run rule writes for the same run; and its clear failures."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import tomllib
from entropy_rl.core import metric_columns
from entropy_rl.study import analysis, fit_law, run_logs
from support import ROOT

BENCHMARKS = ["add1", "arith5"]
FIT_STEPS = 20  # the mini scale's analysis.early_fit_steps
PILOT_LOGS = ROOT / "tests" / "fixtures" / "pilot" / "runs" / "pilot-grpo" / "checkpoints"
A, B = 0.25, 0.8


def mini_metrics(steps: int = 60, val_every: int = 5) -> pd.DataFrame:
    """A metrics.parquet as the mini trainer writes one: every contract column, a validation column per benchmark
    every ``val_every`` steps, each step's entropy of the policy validated there, and two steps whose groups were
    all filtered out (no entropy), one of them a validation step."""
    rng = np.random.default_rng(3)
    rows = []
    for t in range(steps + 1):
        H = 0.15 + 0.9 * math.exp(-t / 18) + rng.normal(0, 0.01)
        row = {"step": t, "entropy": H, "reward_mean": rng.uniform(0.2, 0.6), "response_length": 12.0, "gen_batches": 1}
        if t % val_every == 0:
            row |= {
                f"val_acc/{b}": float(np.clip(analysis.entropy_law(H, A, B) + rng.normal(0, 0.02), 0, 1))
                for b in BENCHMARKS
            }
        rows.append(row)
    rows[13]["entropy"] = rows[35]["entropy"] = math.nan
    frame = metric_columns.complete_table(rows)
    cols = [f"val_acc/{b}" for b in BENCHMARKS]
    frame["val_acc"] = frame[cols].mean(axis=1, skipna=False)
    return frame


def rule_fit(metrics: pd.DataFrame, tmp_path) -> dict:
    """What the workflow's fit_run rule writes for this run: its own script, run as Snakemake runs it."""
    metrics.to_parquet(tmp_path / "metrics.parquet")
    code = (
        "import runpy, types\n"
        "snakemake = types.SimpleNamespace(input=types.SimpleNamespace(metrics='metrics.parquet'), output=['fit.json'],"
        f" params=types.SimpleNamespace(early_fit_steps={FIT_STEPS}), wildcards=types.SimpleNamespace(run='r'),"
        " log=['fit.log'])\n"
        f"runpy.run_path({str(ROOT / 'workflow' / 'scripts' / 'fit_run.py')!r}, init_globals={{'snakemake': snakemake}})"
    )
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)
    return json.loads((tmp_path / "fit.json").read_text())


def as_csv(metrics: pd.DataFrame, path) -> None:
    metrics.rename(columns={"val_acc": "accuracy"})[["step", "entropy", "accuracy"]].to_csv(path, index=False)


def verl_record(step: int, data: dict) -> str:
    """A line as verl's FileLogger writes it (orjson: compact, NaN as null)."""
    data = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in data.items()}
    return json.dumps({"step": step, "data": data}, separators=(",", ":"))


def as_verl(metrics: pd.DataFrame, path, token_mean_offset: float = 0.3) -> None:
    """The table as verl logs a run: the entropy of policy t on the training record t + 1 (rollout before update
    t + 1), beside verl's own token-mean actor/entropy and the pilot's other keys; validation of policy t on record t."""
    template = json.loads((PILOT_LOGS / "verl_log.1.jsonl").read_text().splitlines()[1])["data"]
    lines = []
    for t in range(int(metrics["step"].max()) + 2):
        data = {}
        if t >= 1:
            H = float(metrics.loc[t - 1, "entropy"])
            data = {
                **template,
                "paper/entropy": H,
                "actor/entropy": H * (1 + token_mean_offset),
                "training/global_step": t,
            }
        if t < len(metrics) and not math.isnan(metrics.loc[t, "val_acc"]):
            data |= {f"val-core/{b}/acc/mean@4": float(metrics.loc[t, f"val_acc/{b}"]) for b in BENCHMARKS}
            data |= {f"val-aux/{b}/acc/std@4": 0.1 for b in BENCHMARKS}
        lines.append(verl_record(t, data))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("fmt", ["csv", "verl"])
def test_a_rendering_of_a_run_gives_the_fit_run_rules_numbers(fmt, tmp_path):
    metrics = mini_metrics()
    expected = rule_fit(metrics, tmp_path)
    log = tmp_path / ("run.csv" if fmt == "csv" else "run.jsonl")
    (as_csv if fmt == "csv" else as_verl)(metrics, log)
    result, text = fit_law.run(log, stem=tmp_path / "out", fit_steps=FIT_STEPS)
    assert result["fit"]["n"] == expected["fit"]["n"] == 12  # 13 validations, one without entropy
    for key, value in expected["fit"].items():
        assert result["fit"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    for key, value in expected["early_prediction"].items():
        if key == "fit":
            assert result["early_prediction"]["fit"] == pytest.approx(value, rel=1e-9, abs=1e-12)
        else:
            assert result["early_prediction"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert f"a = {expected['fit']['a']:.4f}" in text and f"R² = {expected['fit']['r2']:.4f}" in text
    assert f"-a + b = {expected['fit']['ceiling']:.4f}" in text
    written = json.loads((tmp_path / "out.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert written["fit"] == pytest.approx(result["fit"])
    assert (tmp_path / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # verl's own null for a NaN is a value that was logged and is not finite: counted; the CSV's empty cell is absent
    assert result["dropped_non_finite"] == {"entropy": 2 if fmt == "verl" else 0, "accuracy": 0}  # steps 13 and 35


def test_verl_logs_read_eq5_first_and_say_which_entropy(tmp_path):
    metrics = mini_metrics(val_every=3)
    as_verl(metrics, tmp_path / "run.jsonl")
    eq5 = fit_law.fit_log(run_logs.read_log(tmp_path / "run.jsonl"))
    token = fit_law.fit_log(run_logs.read_log(tmp_path / "run.jsonl", entropy_key="actor/entropy"))
    assert eq5["entropy_key"] == "paper/entropy" and "Eq. 5" in eq5["entropy_kind"]
    assert token["entropy_key"] == "actor/entropy" and token["entropy_kind"].startswith("token-mean")
    assert eq5["accuracy_keys"] == [f"val-core/{b}/acc/mean@4" for b in BENCHMARKS]  # val-aux is not accuracy
    assert abs(token["fit"]["a"] - eq5["fit"]["a"]) > 0.01  # the two entropies give different coefficients
    # verl 0.4.0 named the same token-mean actor/entropy_loss
    text = (tmp_path / "run.jsonl").read_text().replace('"paper/entropy":', '"other":')
    (tmp_path / "v040.jsonl").write_text(text.replace('"actor/entropy":', '"actor/entropy_loss":'))
    v040 = fit_law.fit_log(run_logs.read_log(tmp_path / "v040.jsonl"))
    assert v040["entropy_key"] == "actor/entropy_loss" and v040["fit"] == pytest.approx(token["fit"], rel=1e-12)
    # The default window is 15% of the log's last step (61: the record after the last validation): steps <= 9.
    assert (
        eq5["early_prediction"]["fit_steps"] == 9 and eq5["early_prediction"]["n_fit"] == 4 and eq5["last_step"] == 61
    )
    assert eq5["last_prediction"]["step"] == 60 and eq5["last_prediction"]["held_out"]


def trainer_state(path, steps: int = 40, eval_every: int = 2) -> list[tuple[float, float]]:
    """A trainer_state.json as transformers' Trainer writes one for TRL's GRPOTrainer (logging_steps=1): a training
    entry per step, an evaluation entry every ``eval_every`` steps. Returns the (entropy, accuracy) pairs fit-law should
    make: each evaluation at step k beside the training entropy logged at step k + 1."""
    rng = np.random.default_rng(5)
    H = 0.2 + 0.8 * np.exp(-np.arange(steps + 2) / 12)  # H[k]: the policy after k updates
    history, pairs = [], []
    for k in range(1, steps + 1):
        history.append(
            {
                "loss": 0.01,
                "grad_norm": 0.3,
                "learning_rate": 1e-6,
                "num_tokens": 1000.0 * k,
                "completions/mean_length": 80.0,
                "rewards/accuracy_reward/mean": 0.4,
                "reward": 0.9,
                "reward_std": 0.3,
                "frac_reward_zero_std": 0.1,
                "entropy": float(H[k - 1]),
                "clip_ratio/region_mean": 0.0,
                "epoch": k / steps,
                "step": k,
            }
        )
        if k % eval_every == 0:
            acc = float(analysis.entropy_law(H[k], A, B) + rng.normal(0, 0.01))
            history.append(
                {
                    "eval_loss": 0.0,
                    "eval_rewards/accuracy_reward/mean": acc,
                    "eval_reward": acc + 0.5,
                    "eval_entropy": float(H[k]) + 0.05,
                    "eval_runtime": 3.2,
                    "epoch": k / steps,
                    "step": k,
                }
            )
            if k < steps:
                pairs.append((float(H[k]), acc))
    state = {
        "global_step": steps,
        "max_steps": steps,
        "log_history": history,
        "logging_steps": 1,
        "eval_steps": eval_every,
    }
    path.write_text(json.dumps(state, indent=2))
    return pairs


def test_a_trl_trainer_state_pairs_each_evaluation_with_the_next_training_entropy(tmp_path):
    pairs = trainer_state(tmp_path / "trainer_state.json")
    result = fit_law.fit_log(run_logs.read_log(tmp_path / "trainer_state.json"))
    H, R = map(np.array, zip(*pairs))
    assert result["accuracy_keys"] == ["eval_rewards/accuracy_reward/mean"]  # accuracy, not the summed eval_reward
    assert result["entropy_key"] == "entropy" and result["entropy_kind"].startswith("token-mean")
    assert result["fit"] == pytest.approx(analysis.fit_entropy_law(H, R), rel=1e-12)
    assert result["fit"]["a"] == pytest.approx(A, abs=0.05) and result["fit"]["b"] == pytest.approx(B, abs=0.05)
    # eval_entropy: the evaluated policy's own, from the same entry; the last evaluation is fitted too
    same = fit_law.fit_log(run_logs.read_log(tmp_path / "trainer_state.json", entropy_key="eval_entropy"))
    assert same["fit"]["n"] == len(pairs) + 1 and "same evaluation" in same["pairing"]


def test_the_prediction_interval_is_the_least_squares_one(tmp_path):
    """Against numpy's own covariance of the line's coefficients: var(prediction) = g'Σg + s² at g = (exp(H), 1)."""
    metrics = mini_metrics()
    as_csv(metrics, tmp_path / "run.csv")
    result = fit_law.fit_log(run_logs.read_log(tmp_path / "run.csv"), fit_steps=FIT_STEPS, level=0.9)
    used = [p for p in result["points"] if p["used_for_fit"]]
    x, R = np.exp([p["entropy"] for p in used]), np.array([p["R"] for p in used])
    coef, cov = np.polyfit(x, R, 1, cov=True)
    s2 = np.sum((R - np.polyval(coef, x)) ** 2) / (len(x) - 2)
    last = result["last_prediction"]
    g = np.array([math.exp(last["entropy"]), 1.0])
    half = scipy.stats.t.ppf(0.95, len(x) - 2) * math.sqrt(g @ cov @ g + s2)
    assert last["predicted"] == pytest.approx(np.polyval(coef, g[0]), rel=1e-9)
    assert (last["low"], last["high"]) == pytest.approx((last["predicted"] - half, last["predicted"] + half), rel=1e-9)
    assert last["inside"] == (abs(last["observed"] - last["predicted"]) <= half)


def fit_law_cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "entropy_rl.study.fit_law", *map(str, args)],
        cwd=cwd,
        check=False,
        capture_output=True,
        text=True,
    )


def test_the_command_prints_the_summary_and_writes_its_outputs(tmp_path):
    as_csv(mini_metrics(), tmp_path / "run.csv")
    proc = fit_law_cli("run.csv", "--fit-steps", FIT_STEPS, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "R = -a*exp(H) + b on 12 validation points" in proc.stdout and "prediction interval" in proc.stdout
    assert {p.name for p in tmp_path.iterdir()} >= {"run.fit_law.json", "run.fit_law.png", "run.fit_law.pdf"}


def test_the_console_script_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, func = scripts["fit-law"].split(":")
    assert module == fit_law.__name__ and getattr(fit_law, func) is fit_law.main


def csv_log(path, rows) -> None:
    path.write_text("step,entropy,accuracy\n" + "".join(f"{s},{h},{r}\n" for s, h, r in rows))


@pytest.mark.parametrize(
    "name, text, needle",
    [
        (
            "no_entropy.jsonl",
            verl_record(0, {"val-core/m/acc/mean@1": 0.3}) + "\n" + verl_record(1, {"actor/pg_loss": 0.1}),
            "no entropy: looked for ['paper/entropy', 'actor/entropy', 'actor/entropy_loss']",
        ),
        (
            "no_val.jsonl",
            verl_record(1, {"actor/entropy": 0.5}) + "\n" + verl_record(2, {"actor/entropy": 0.4}),
            "no validation accuracy: looked for ['val-core/<data source>/<acc or reward>/mean@<n>']",
        ),
        (
            "no_eval.json",
            json.dumps({"log_history": [{"entropy": 0.5, "reward": 0.2, "step": 1}]}),
            "no validation accuracy: looked for ['eval_rewards/accuracy_reward/mean', 'eval_rewards/accuracy_reward', 'eval_reward']",
        ),
        (
            "no_entropy.json",
            json.dumps({"log_history": [{"eval_reward": 0.5, "step": 1}]}),
            "no entropy: looked for ['entropy']",
        ),
        ("no_entropy.csv", "step,accuracy\n0,0.1\n", "no entropy: looked for ['entropy']"),
        ("few.csv", "step,entropy,accuracy\n0,1.0,0.1\n1,0.9,\n2,0.8,0.2\n", "2 validation point(s)"),
        ("percent.csv", "step,entropy,accuracy\n0,1.0,10\n1,0.9,20\n2,0.8,30\n", "--percent"),
        ("log.txt", "", "cannot tell the format"),
    ],
)
def test_a_log_that_cannot_be_fitted_says_what_is_missing(name, text, needle, tmp_path):
    (tmp_path / name).write_text(text)
    proc = fit_law_cli(name, cwd=tmp_path)
    assert proc.returncode == 1 and needle in proc.stderr, proc.stderr
    assert proc.stderr.startswith("fit-law: error:") and not list(tmp_path.glob("*.fit_law.*"))


def test_the_pilots_verl_log_has_too_few_points_and_names_its_keys(tmp_path):
    """The GPU pilot's real-format log (two launches, 4 steps): validations at 0 and 2 have an entropy, 4 none."""
    log = tmp_path / "pilot.jsonl"
    log.write_text("".join(p.read_text() for p in sorted(PILOT_LOGS.glob("verl_log.*.jsonl"))))
    proc = fit_law_cli(log, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "2 validation point(s)" in proc.stderr and "'paper/entropy'" in proc.stderr
    assert "val-core/math500/acc/mean@1" in proc.stderr


def test_non_finite_values_are_dropped_and_counted(tmp_path):
    rows = [(s, 1.0 - 0.1 * s, round(0.2 + 0.05 * s, 3)) for s in range(8)]
    rows[2] = (2, "inf", rows[2][2])
    rows[3] = (3, rows[3][1], "nan")
    rows[5] = (5, "oops", "")
    csv_log(tmp_path / "run.csv", rows)
    log = run_logs.read_log(tmp_path / "run.csv")
    assert log.dropped == {"entropy": 2, "accuracy": 1}
    result = fit_law.fit_log(log, fit_steps=4)
    assert result["fit"]["n"] == 5 and [p["step"] for p in result["points"]] == [0, 1, 4, 6, 7]
    assert "2 entropy and 1 accuracy value(s) that were not finite numbers" in fit_law.summary(result)


def test_an_early_window_with_too_few_points_is_refused(tmp_path):
    csv_log(tmp_path / "run.csv", [(s, 1.0 - 0.05 * s, 0.2 + 0.02 * s) for s in range(0, 20, 2)])
    with pytest.raises(run_logs.LogError, match=r"steps <= 2 \(11% of 18\) hold 2 validation point\(s\).*--fit-steps"):
        fit_law.fit_log(run_logs.read_log(tmp_path / "run.csv"))
    assert fit_law.fit_log(run_logs.read_log(tmp_path / "run.csv"), fraction=0.25)["early_prediction"]["n_fit"] == 3
