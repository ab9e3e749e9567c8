"""Replicates through Snakemake: a run repeated under its own seeds is one job per seed, each on its own
pre-trained base model, and another base seed (`--config seed=N`) makes every seed-bearing job stale.
An instruct model (Appendix D) is its base model tuned further, replicate by replicate."""

import json
import re
import subprocess
import sys

import pandas as pd
import pytest
import torch
import yaml
from support import ROOT
from transformers import AutoModelForCausalLM

pytestmark = pytest.mark.costly  # minutes of a core: scheduled first (tests/conftest.py)

SMOKE = ROOT / "tests" / "smoke" / "config.yaml"
RUN = "qwen2-xs-grpo"
INSTRUCT_RUN = "qwen2-xs-instruct-grpo"
ARTIFACTS = ("fig01_entropy_collapse", "fig09_entropy_loss", "table02_benchmarks", "appD_instruct_models")


def snakemake(workdir, *args):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    cfg = yaml.safe_load(SMOKE.read_text())
    mini = cfg["mini"]
    mini["runs"] = {RUN: mini["runs"][RUN]}
    model = mini["runs"][RUN]["model"]
    mini["models"] = {m: a for m, a in mini["models"].items() if m == model}
    mini["models"][f"{model}-instruct"] = {"instruct_of": model}
    mini["runs"][INSTRUCT_RUN] = {**mini["runs"][RUN], "model": f"{model}-instruct"}
    mini["data"]["instruct"] = {"from": mini["data"]["train"]["from"], "prompts": 64}
    mini["instruct"] = {"steps": 20, "batch_size": 16, "lr": 1.0e-3}
    mini["artifacts"] = {name: {"runs": [RUN]} for name in ARTIFACTS}
    mini["artifacts"]["appD_instruct_models"] = {"runs": [INSTRUCT_RUN]}
    mini.pop("power_sampling")
    mini["train"].update(steps=6, val_every=2)
    mini["replicates"] = 2
    workdir = tmp_path_factory.mktemp("replicates")
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(workdir, *ARTIFACTS)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return workdir, mini


def test_each_replicate_trains_its_own_base_model_under_its_own_seed(study):
    workdir, mini = study
    res = workdir / "results"
    model = mini["runs"][RUN]["model"]
    weights = [AutoModelForCausalLM.from_pretrained(res / "models" / m).state_dict() for m in (model, f"{model}@r1")]
    assert not torch.equal(weights[0]["model.embed_tokens.weight"], weights[1]["model.embed_tokens.weight"])
    meta = json.loads((res / "models" / f"{model}@r1" / "mini_model.json").read_text())
    assert meta["arch"]["replicate_of"] == model and meta["arch"]["pretrain_seed"] == mini["pretrain"]["seed"] + 1
    specs = {}
    for run in (RUN, f"{RUN}@r1"):
        line = next(x for x in (res / "logs" / "train" / f"{run}.log").read_text().splitlines() if "run spec" in x)
        specs[run] = json.loads(line.split("run spec ", 1)[1])
    assert specs[RUN]["seed"] == mini["train"]["seed"] and specs[f"{RUN}@r1"]["seed"] == mini["train"]["seed"] + 1
    assert specs[f"{RUN}@r1"]["model"] == f"{model}@r1" and specs[f"{RUN}@r1"]["replicate_of"] == RUN
    a, b = (pd.read_parquet(res / "runs" / r / "metrics.parquet") for r in (RUN, f"{RUN}@r1"))
    assert list(a.columns) == list(b.columns) and not a["entropy"].equals(b["entropy"])


def test_table2_gives_the_mean_over_replicates_and_its_standard_error(study):
    workdir, mini = study
    res = workdir / "results"
    table = pd.read_csv(res / "tables" / "table02_benchmarks.csv", index_col=0)
    math = [b for b, spec in mini["data"]["benchmarks"].items() if spec.get("domain", "math") == "math"]  # Table 2's
    summaries = [pd.read_parquet(res / "eval" / r / "summary.parquet") for r in (RUN, f"{RUN}@r1")]
    avg = [s.loc[s["benchmark"].isin(math), "avg_at_n"].mean() * 100 for s in summaries]
    assert len(table) == 1 and table["Avg."].iloc[0] == pytest.approx(sum(avg) / 2)
    assert table["Avg. s.e."].iloc[0] == pytest.approx(abs(avg[0] - avg[1]) / 2)
    assert (res / "figures" / "fig01_entropy_collapse.png").stat().st_size > 0


def test_another_base_seed_reruns_every_model_and_run(study):
    workdir, _ = study
    targets = [f"results/runs/{r}/metrics.parquet" for r in (RUN, f"{RUN}@r1")]
    assert "Nothing to be done" in snakemake(workdir, "-n", *targets).stdout
    out = snakemake(workdir, "-n", *targets, "--config", "seed=3").stdout  # (--config takes every word after it)
    jobs = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal", out, re.DOTALL).group(1)
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", jobs, re.MULTILINE)}
    assert counts == {"build_mini_model": 2, "train": 2}, counts
    out = snakemake(workdir, "-n", *ARTIFACTS, "--config", "seed=3").stdout  # and what reads them
    assert "rule evaluate:" in out and "rule table02_benchmarks:" in out and "rule fig01_entropy_collapse:" in out


def test_an_instruct_model_is_its_own_replicates_base_tuned_further(study):
    workdir, mini = study
    models = workdir / "results" / "models"
    base = mini["runs"][RUN]["model"]

    def weights(name):
        return AutoModelForCausalLM.from_pretrained(models / name).state_dict()["model.layers.0.mlp.up_proj.weight"]

    for k, rep in enumerate((f"{base}-instruct", f"{base}-instruct@r1")):
        meta = json.loads((models / rep / "mini_model.json").read_text())
        own, other = (base, f"{base}@r1")[k], (base, f"{base}@r1")[1 - k]
        assert meta["tuned_from"] == own
        tuned = weights(rep)
        assert not torch.equal(tuned, weights(own))  # tuned: moved from its base ...
        assert (tuned - weights(own)).norm() < (tuned - weights(other)).norm() / 2  # ... but still near it
    assert (workdir / "results" / "figures" / "appD_instruct_models.png").stat().st_size > 0


def test_more_replicates_add_only_the_new_seeds(study):
    workdir, _ = study
    out = snakemake(workdir, "-n", *ARTIFACTS, "--config", "replicates=3").stdout
    jobs = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal", out, re.DOTALL).group(1)
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", jobs, re.MULTILINE)}
    # replicate 2 of the base and the instruct model
    assert counts["build_mini_model"] == 2 and counts["train"] == 2, counts
    assert "model=qwen2-xs@r2" in out and "model=qwen2-xs-instruct@r2" in out and f"run={RUN}@r2" in out


def test_replicates_sharing_one_base_model_retrain_on_it_and_pretrain_nothing(study):
    """mini.replicate_base_models: false (core.spec.with_shared_base_models): replicate 1 of each run moves onto replicate 0's
    base model, so its RL job is stale and no base model is pre-trained again."""
    workdir, _ = study
    overlay = workdir / "shared-base.yaml"
    overlay.write_text(yaml.safe_dump({"mini": {"replicate_base_models": False}}))
    out = snakemake(workdir, "-n", *ARTIFACTS, "--configfile", str(workdir / "config.yaml"), str(overlay)).stdout
    jobs = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal", out, re.DOTALL).group(1)
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", jobs, re.MULTILINE)}
    assert "build_mini_model" not in counts and counts["train"] == 2, counts
    trained = re.findall(r"rule train:\n(?:    .*\n)*?    wildcards: run=(\S+)", out)
    assert sorted(trained) == sorted([f"{RUN}@r1", f"{INSTRUCT_RUN}@r1"]), trained
    assert "qwen2-xs@r1" not in " ".join(line for line in out.splitlines() if line.strip().startswith("input:"))
