"""Bad input fails early, with a message naming the problem, and deletes nothing already computed.

Each case runs the real `snakemake` on a study directory that already holds computed data (the
smoke configuration's prepared datasets), breaks one thing, and checks the message and that every
file computed before is still there, byte for byte, with its modification time.
"""

import copy
import re
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from entropy_rl.core import formats
from support import ROOT

SMOKE = yaml.safe_load((ROOT / "tests" / "smoke" / "config.yaml").read_text())


def snakemake(workdir, *args):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "--cores", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def snapshot(root) -> dict:
    """Every computed file (job logs aside: a failing job writes its own) with its bytes and mtime."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] != "logs")
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("bad-input")
    (workdir / "config.yaml").write_text(yaml.safe_dump(SMOKE))
    proc = snakemake(workdir, "results/data/train.parquet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return workdir


def with_config(workdir, edit) -> None:
    cfg = copy.deepcopy(SMOKE)
    edit(cfg)
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg))


CONFIG_CASES = {
    "misspelt key": (
        lambda c: c["mini"]["train"].update(learning_rate=c["mini"]["train"].pop("lr")),
        r"config key mini.train: unknown key\(s\) \['learning_rate'\]; allowed keys are \[.*'lr'",
    ),
    "missing key": (
        lambda c: c["mini"]["train"].pop("rollout_n"),
        r"config key mini.train: 'rollout_n' is a required property",
    ),
    "unknown algorithm": (
        lambda c: c["mini"]["runs"]["qwen2-xs-grpo"].update(algorithm="ppo"),
        r"config key mini.runs.qwen2-xs-grpo.algorithm: 'ppo' is not allowed; allowed values are \['grpo', 'rloo', 'reinforce_plus_plus', 'prime'\]",
    ),
    "unknown model": (
        lambda c: c["mini"]["runs"]["qwen2-xs-grpo"].update(model="qwen3-xs"),
        r"config key mini.runs.qwen2-xs-grpo.model: unknown model 'qwen3-xs'; models are \['llama-xs', 'qwen2-xs'\]",
    ),
    "negative learning rate": (
        lambda c: c["mini"]["train"].update(lr=-3e-4),
        r"config key mini.train.lr: -0.0003 is less than or equal to the minimum of 0",
    ),
    "clip ratio out of range": (
        lambda c: c["mini"]["treatments"]["clip_higher"].update(clip_ratio_high=28),
        r"config key mini.treatments.clip_higher.clip_ratio_high: 28 is greater than the maximum of 10",
    ),
    "Clip-Cov bounds crossed": (
        lambda c: c["mini"]["runs"]["llama-xs-grpo"].update(overrides={"loss": {"clip_cov_lb": 6.0}}),
        r"config key mini.runs.llama-xs-grpo: clip_cov_lb \(6.0\) must be below clip_cov_ub \(5.0\)",
    ),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_a_bad_config_stops_before_any_job(study, case):
    edit, message = CONFIG_CASES[case]
    before = snapshot(study / "results")
    with_config(study, edit)
    try:
        proc = snakemake(study)
    finally:
        with_config(study, lambda c: None)
    assert proc.returncode != 0
    assert re.search(message, proc.stderr), proc.stderr[-2000:]
    assert snapshot(study / "results") == before


def rewrite_rows(path, edit) -> None:
    frame = pd.read_parquet(path)
    edit(frame)
    frame.to_parquet(path)


DATA_CASES = {
    "corrupt parquet": (
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
        r"results/data/pretrain.parquet: not a readable parquet file \(.*\)\. Delete it and run snakemake again",
    ),
    "row without ground truth": (
        lambda p: rewrite_rows(p, lambda f: f.at[3, "reward_model"].update(ground_truth="")),
        r"results/data/pretrain.parquet: 1 of \d+ rows are unusable; the first, row 3: reward_model has no ground_truth",
    ),
    "message without role": (
        lambda p: rewrite_rows(p, lambda f: f.at[5, "prompt"][0].pop("role")),
        r"results/data/pretrain.parquet: 1 of \d+ rows are unusable; the first, row 5: a prompt message has no role",
    ),
    "missing column": (
        lambda p: rewrite_rows(p, lambda f: f.drop(columns="reward_model", inplace=True)),
        r"results/data/pretrain.parquet: not a verl dataset, missing columns \['reward_model'\]",
    ),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_a_bad_dataset_fails_its_reader_naming_file_row_and_field(study, tmp_path, case):
    """The tokenizer job reads the pre-training corpus: it fails with the dataset's own problem,
    and neither the damaged file nor any other computed file is removed."""
    damage, message = DATA_CASES[case]
    corpus = study / "results" / "data" / "pretrain.parquet"
    good = corpus.read_bytes()
    try:
        damage(corpus)
        before = snapshot(study / "results")
        proc = snakemake(study, "results/models/tokenizer")
        log = (study / "results" / "logs" / "build_tokenizer.log").read_text()
        after = snapshot(study / "results")
    finally:
        corpus.write_bytes(good)
    assert proc.returncode != 0
    assert re.search(message, log), log[-2000:]
    assert after == before  # the damaged file too: it is the user's to inspect


def test_reading_a_corrupt_file_names_it(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(formats.DataError, match=r"x.parquet: not a readable parquet file"):
        formats.load_verl_parquet(path)
