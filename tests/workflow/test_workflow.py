"""End to end: the smoke configuration through Snakemake, its outputs against the data contracts,
its report, nothing to redo on a second run, and a one-run edit rerunning exactly that run's chain.
The study and its report run with a hub token set, which neither may hold."""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml
from contracts import check_eval, check_metrics
from entropy_rl.core import formats, spec
from support import ROOT
from transformers import AutoModelForCausalLM

pytestmark = pytest.mark.costly  # minutes of a core: scheduled first (tests/conftest.py)

SMOKE = ROOT / "tests" / "smoke" / "config.yaml"
SECRET = "hf_SENTINELsmokeDoNotLeak0123"  # a hub token the user has set in their shell
# The study as `snakemake --cores all` runs it: jobs in forks of a warm interpreter (core.warm_start).
TOKEN_ENV = {**os.environ, "HF_TOKEN": SECRET, "HUGGING_FACE_HUB_TOKEN": SECRET}


def snakemake(workdir, *args, env=None):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def files_holding(root, text: str) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


def base64_forms(text: str) -> list[str]:
    """What `text` looks like inside base64 data (the report embeds files so), at each of the three
    alignments: the encoding of filler + text, less the characters the filler or padding touch."""
    return [base64.b64encode(b"x" * shift + text.encode()).decode()[4:-4] for shift in range(3)]


def report_results(html: str) -> dict:
    """The results a Snakemake report lists, by path, as its page holds them (`<script id="results">`)."""
    script = re.search(r'<script id="results">\s*var results = (.*?);\s*</script>', html, re.S)
    return json.loads(script.group(1))


def planned_jobs(workdir) -> set[tuple[str, str]]:
    """(rule, wildcards) of every job a dry run plans."""
    out = snakemake(workdir, "-n").stdout
    jobs, rule = set(), None
    for line in out.splitlines():
        if m := re.match(r"^rule (\w+):", line):
            rule = m.group(1)
            jobs.add((rule, ""))
        elif rule and (m := re.match(r"^\s+wildcards: (.+)", line)):
            jobs.discard((rule, ""))
            jobs.add((rule, m.group(1).strip()))
    return jobs


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("smoke")
    (workdir / "config.yaml").write_text(SMOKE.read_text())
    started = time.time()
    proc = snakemake(workdir, env=TOKEN_ENV)
    elapsed = time.time() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert SECRET not in proc.stdout + proc.stderr
    print(f"smoke study: {elapsed:.1f} s")
    return workdir, yaml.safe_load(SMOKE.read_text())["mini"]


def test_outputs_honour_their_contracts(study):
    workdir, cfg = study
    res = workdir / "results"
    benches = sorted(cfg["data"]["benchmarks"])
    for b in benches:
        assert (
            len(formats.load_verl_parquet(res / "data" / "benchmarks" / f"{b}.parquet"))
            == cfg["data"]["benchmarks"][b]["size"]
        )
    for model in cfg["models"]:
        assert (
            AutoModelForCausalLM.from_pretrained(res / "models" / model).config.model_type
            == cfg["models"][model]["family"]
        )
    train = cfg["train"]
    for run in cfg["runs"]:
        validated = spec.domain_benchmarks(cfg, spec.train_domain(cfg, run))  # its training domain's
        metrics = pd.read_parquet(res / "runs" / run / "metrics.parquet")
        check_metrics(metrics, validated, train["steps"], train["val_every"])
        if spec.train_domain(cfg, run) == "code":  # its rewards came from the sandbox, which counted its programs
            assert metrics["sandbox_programs"].notna().all() and metrics["sandbox_programs"].sum() > 0
        AutoModelForCausalLM.from_pretrained(res / "runs" / run / "final")
        # Evaluated on the test sets only when a table or a claim reads it: here Table 2's runs.
        if run not in cfg["artifacts"]["table02_benchmarks"]["runs"]:
            assert not (res / "eval" / run).exists(), run
            continue
        summary = pd.read_parquet(res / "eval" / run / "summary.parquet").set_index("benchmark")
        assert sorted(summary.index) == benches
        for b in benches:
            bench = cfg["data"]["benchmarks"][b]
            check_eval(
                pd.read_parquet(res / "eval" / run / f"{b}.parquet"), summary.loc[b], bench["protocol"], bench["size"]
            )
    fits = pd.read_csv(res / "analysis" / "fits.csv", index_col="run")
    assert sorted(fits.index) == sorted(cfg["runs"])
    assert {"a", "b", "r2", "rmse", "early_rmse_pct"} <= set(fits.columns)
    for name in cfg["artifacts"]:
        if name.startswith("table"):
            table = pd.read_csv(res / "tables" / f"{name}.csv", index_col=0)
            assert table.notna().all().all() and len(table) > 0, name
            assert (res / "tables" / f"{name}.md").read_text().startswith("Mini scale.")
            page = (res / "tables" / f"{name}.html").read_text()  # its page in the report
            assert "<p>Mini scale." in page and page.count("<tr") == len(table) + 1, name
        else:
            assert (res / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
            assert (res / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    power = cfg["power_sampling"]
    methods = ["base", "low-temp", "power", "smc", "sps", *power["runs"], "power-alpha1", "power-mcmc0"]
    assert sorted(p.stem for p in (res / "power" / "samples").iterdir()) == sorted(methods)
    for method in methods:
        samples = pd.read_parquet(res / "power" / "samples" / f"{method}.parquet")
        answered = power["sweeps"]["benchmarks"] if method in ("power-alpha1", "power-mcmc0") else power["benchmarks"]
        assert sorted(samples["benchmark"].unique()) == sorted(answered)
        assert len(samples) == len(answered) * power["problems"] * power["n"]
        assert (samples["drawn_tokens"] >= samples["response_tokens"]).all() and (samples["base_loglik"] <= 0).all()
    accuracy = pd.read_csv(res / "tables" / "power01_accuracy.csv", index_col=0)
    assert len(accuracy) == 7 and (accuracy["cost vs base"].iloc[2:5] > 1).all()  # the samplers of p^alpha draw more
    assert accuracy["seconds per answer"].gt(0).all()
    for name in ("power02_pass_at_k", "power03_likelihoods", "power04_hyperparameters", "power05_cost_accuracy"):
        assert (res / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    audit = pd.read_csv(res / "audit" / "audit.csv")
    assert set(audit["verdict"]) <= {"reproduced", "contradicted", "inconclusive", "not comparable at this scale"}
    assert (audit["verdict"] != "not comparable at this scale").any()  # qualitative claims get verdicts at mini scale
    assert (res / "audit" / "audit.md").read_text().startswith("# Audit of the paper's claims (mini scale)")
    assert "<table>" in (res / "audit" / "audit.html").read_text()
    for log in (res / "logs").rglob("*.log"):
        assert "Traceback" not in log.read_text(), log


def test_report_holds_every_artifact_and_the_audit(study, tmp_path):
    workdir, cfg = study
    report = tmp_path / "report.html"
    proc = snakemake(workdir, "--report", str(report), env=TOKEN_ENV)
    assert proc.returncode == 0, proc.stderr[-4000:]
    text = report.read_text()
    power = [
        "power01_accuracy",
        "power02_pass_at_k",
        "power03_likelihoods",
        "power04_hyperparameters",
        "power05_cost_accuracy",
    ]
    tables = [name for name in [*cfg["artifacts"], *power] if name.startswith(("table", "power01"))]
    results = report_results(text)
    # Each figure and table is a row labelled by its rule and where in the paper; a table opens as its page (the
    # report offers a CSV only as a download), and the audit as its table.
    labels = {path: next(iter(entry["labels"].values())) for path, entry in results.items()}  # one label a row
    assert all(len(entry["labels"]) == 1 for entry in results.values())
    shown = {label.split(" · ")[0]: path for path, label in labels.items()}
    assert set(shown) == {*cfg["artifacts"], *power, "audit"}
    for name in tables:
        assert shown[name] == f"results/tables/{name}.html", name
    assert shown["audit"] == "results/audit/audit.html"
    assert labels[shown["fig01_entropy_collapse"]] == "fig01_entropy_collapse · Figure 1"
    assert labels[shown["table02_benchmarks"]] == "table02_benchmarks · Table 2"
    # The study and its report ran with a hub token set: no log, output, record or report holds it.
    assert SECRET not in proc.stdout + proc.stderr
    assert not [form for form in [SECRET, *base64_forms(SECRET)] if form in text]
    assert files_holding(workdir, SECRET) == []


def test_a_warm_job_computes_what_a_fresh_process_does(study, tmp_path):
    workdir, _ = study
    logs = sorted((workdir / "results" / "logs").rglob("*.log"))
    warm = [p for p in logs if "job started in a fork of a warm interpreter" in p.read_text()]
    assert len(warm) >= len(logs) - 2, [str(p) for p in set(logs) - set(warm)]  # all but the first jobs, at most
    # One run trained and evaluated again, each in a process of its own (warm start off), in a copy of the study.
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy)
    run = "llama-xs-grpo"
    for target in (f"results/runs/{run}/metrics.parquet", f"results/eval/{run}/summary.parquet"):
        proc = snakemake(copy, "-f", target, env={**os.environ, "ENTROPY_RL_WARM_START": "0"})
        assert proc.returncode == 0, proc.stderr[-4000:]
    started = [
        line
        for line in (copy / "results" / "logs" / "train" / f"{run}.log").read_text().splitlines()
        if "job started" in line
    ]
    assert started[-1].endswith("job started")  # the rerun: a process of its own
    for path in [
        f"results/runs/{run}/metrics.parquet",
        *(p.relative_to(workdir) for p in (workdir / "results" / "eval" / run).glob("*.parquet")),
    ]:
        pd.testing.assert_frame_equal(pd.read_parquet(copy / path), pd.read_parquet(workdir / path), check_exact=True)


def test_second_run_has_nothing_to_do(study):
    workdir, _ = study
    proc = snakemake(workdir, "-n")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_one_hyperparameter_reruns_exactly_that_runs_chain(study):
    workdir, cfg = study
    run = "qwen2-xs-grpo"
    # Edit the config as a user would: one line under the run.
    text = (workdir / "config.yaml").read_text()
    old = next(line for line in text.splitlines() if line.strip() == f"{run}:")
    body = text.replace(
        old + "\n", old + "\n" + " " * (len(old) - len(old.lstrip()) + 2) + "overrides: {lr: 0.0005}\n", 1
    )
    (workdir / "config.yaml").write_text(body)
    assert yaml.safe_load(body)["mini"]["runs"][run]["overrides"] == {"lr": 0.0005}

    figures_with_run = {f for f, spec in cfg["artifacts"].items() if run in spec["runs"]}
    expected = {
        ("train", f"run={run}"),
        ("evaluate", f"run={run}"),
        ("fit_run", f"run={run}"),
        ("fit_table", ""),
        ("audit", ""),
        ("all", ""),
    }
    expected |= {(f, "") for f in figures_with_run}
    # It is also the power-sampling study's GRPO checkpoint: that method and what shows it.
    expected |= {
        ("power_sample", "method=grpo"),
        ("power01_accuracy", ""),
        ("power02_pass_at_k", ""),
        ("power03_likelihoods", ""),
        ("power05_cost_accuracy", ""),
    }
    expected |= {
        (f"{name}_page", "") for name, _ in set(expected) if name.startswith(("table", "power01"))
    }  # their report pages
    assert planned_jobs(workdir) == expected

    untouched = workdir / "results" / "runs" / "llama-xs-grpo" / "metrics.parquet"
    before = untouched.stat().st_mtime
    proc = snakemake(workdir)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert untouched.stat().st_mtime == before
    assert "Nothing to be done" in snakemake(workdir, "-n").stdout
