"""`snakemake fit_law --config fit_law_log=PATH`: the fit-law command as a target of the workflow, its log given by
config (checked by the schema), its outputs where core.paths puts them."""

import json
import shutil
import subprocess
import sys

import pandas as pd
from entropy_rl.study import fit_law
from support import ROOT


def snakemake(workdir, *args):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "--cores", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def test_the_target_writes_what_the_command_does(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    steps = pd.Series(range(0, 41, 2))
    entropy = 0.2 + 0.8 * (0.9**steps)
    log = tmp_path / "my-run.csv"
    pd.DataFrame(
        {
            "step": steps,
            "entropy": entropy,
            "accuracy": 0.8 - 0.25 * entropy.map(lambda h: 2.718281828**h) + 0.01 * (-1) ** (steps // 2),
        }
    ).to_csv(log, index=False)
    proc = snakemake(tmp_path, "fit_law", "--config", f"fit_law_log={log}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = json.loads((tmp_path / "results" / "fit_law" / "my-run.json").read_text())
    expected, text = fit_law.run(log, stem=tmp_path / "direct")
    assert written["fit"] == expected["fit"] and written["last_prediction"] == expected["last_prediction"]
    assert (tmp_path / "results" / "fit_law" / "my-run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert text.splitlines()[5] in (tmp_path / "results" / "logs" / "fit_law" / "my-run.log").read_text()


def test_the_target_without_a_log_or_with_a_bad_one_says_how_to_give_it(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    proc = snakemake(tmp_path, "fit_law")
    assert proc.returncode != 0 and "snakemake fit_law --config fit_law_log=PATH" in proc.stdout + proc.stderr
    proc = snakemake(tmp_path, "fit_law", "--config", "fit_law_log=run.txt")
    assert proc.returncode != 0 and "config key fit_law_log: 'run.txt' does not match" in proc.stdout + proc.stderr
