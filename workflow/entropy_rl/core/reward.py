"""The verifiable reward, shared by verl (paper scale) and the evaluator.

verl loads ``compute_score`` from this file (``reward.custom_reward_function``).
Math answers are graded by math-verify; code answers (``reward_model.style``
``code:<tests>``) run in the sandbox against their tests.
"""

from __future__ import annotations

import collections
import json
import re
import threading

from . import grading
from .confined import sandbox

CODE_BLOCK = re.compile(r"```(?:python|py)?[^\n]*\n(.*?)```", re.DOTALL)
TEST_TIMEOUT_S = 10.0
# Sandboxed programs run in this process, by how they ended (a Result's status: ok, error, killed, timeout).
# "killed" and "timeout" are the programs stopped for a limit. Read and reset with ``sandbox_tally``.
_TALLY: collections.Counter = collections.Counter()
_TALLY_LOCK = threading.Lock()


def _count(results) -> None:
    with _TALLY_LOCK:
        _TALLY.update(r.status for r in results)


def sandbox_tally(reset: bool = False) -> dict[str, int]:
    """How many sandboxed programs this process ran, by status; ``reset`` starts the count again."""
    with _TALLY_LOCK:
        counts = dict(_TALLY)
        if reset:
            _TALLY.clear()
    return counts


def sandbox_columns() -> dict[str, int]:
    """The programs run since the last reset and those stopped for a limit (killed or timed out), as the
    ``sandbox_programs`` and ``sandbox_limit_kills`` columns of a training step or a benchmark summary;
    starts the count again."""
    tally = sandbox_tally(reset=True)
    return {
        "sandbox_programs": sum(tally.values()),
        "sandbox_limit_kills": tally.get("killed", 0) + tally.get("timeout", 0),
    }


def extract_code(response: str) -> str:
    """The last fenced code block of a response ('' when none)."""
    blocks = CODE_BLOCK.findall(response)
    return blocks[-1] if blocks else ""


def code_correct(style: str, tests: str, response: str) -> bool:
    """Run the response's code against its tests in the sandbox: ``asserts`` (a JSON list of
    assert statements), ``pytest`` (a test module importing from ``solution``), or ``stdio``
    (JSON ``{"inputs": [...], "outputs": [...]}``, outputs compared token by token)."""
    solution = extract_code(response)
    if not solution:
        return False
    if style in ("asserts", "pytest"):
        result = sandbox.check_result(
            solution, "\n".join(json.loads(tests)) if style == "asserts" else tests, timeout_s=TEST_TIMEOUT_S
        )
        _count([result])
        return result.status == "ok"
    if style == "stdio":
        cases = json.loads(tests)
        for stdin, expected in zip(cases["inputs"], cases["outputs"]):
            result = sandbox.run(solution, stdin=stdin, timeout_s=TEST_TIMEOUT_S)
            _count([result])
            if not _passes(result.status, result.stdout, expected):
                return False
        return True
    raise ValueError(f"unknown code test style {style!r}")


def _passes(status: str, stdout: str, expected) -> bool:
    """A stdio case passes when the program exits 0 and prints the expected tokens."""
    return status == "ok" and stdout.split() == str(expected).split()


# (program, stdin) -> (status, stdout) of its run in this process, for outcomes that do not depend on the
# machine's load (a clean exit or an error; never a limit's kill): a training run's programs recur from
# step to step, and each distinct one is run once. A program that reads the clock or draws random numbers
# is graded on that one run, as a single test run grades it anyway.
_RAN: dict[tuple[str, str], tuple[str, str]] = {}
_RAN_MAX = 1 << 16


def stdio_verdicts(tests: list[str], responses: list[str]) -> list[bool]:
    """``code_correct("stdio", ...)`` of many responses at once: every distinct (program, input) among them
    that this process has not run yet runs once, all in one sandbox batch (``sandbox.run_many``: one
    process per program, each with the limits of ``run``). A policy repeats itself, so distinct programs
    are far fewer than answers."""
    solutions = [extract_code(r) for r in responses]
    cases = [json.loads(t) for t in tests]
    jobs = list(dict.fromkeys((s, stdin) for s, c in zip(solutions, cases) if s for stdin in c["inputs"]))
    new = [job for job in jobs if job not in _RAN]
    results = sandbox.run_many(new, timeout_s=TEST_TIMEOUT_S) if new else []
    _count(results)
    outcome = {job: (r.status, r.stdout) for job, r in zip(new, results)}
    if len(_RAN) + len(new) > _RAN_MAX:
        _RAN.clear()
    _RAN.update((job, o) for job, o in outcome.items() if o[0] in ("ok", "error"))
    outcome = {job: outcome.get(job) or _RAN[job] for job in jobs}
    return [
        bool(s) and all(_passes(*outcome[s, stdin], out) for stdin, out in zip(c["inputs"], c["outputs"]))
        for s, c in zip(solutions, cases)
    ]


def verdicts(styles: list[str], golds: list[str], responses: list[str]) -> list[bool]:
    """``is_correct`` of many responses, each by its style: stdio code in one sandbox batch
    (``stdio_verdicts``), the rest one by one."""
    out = [False] * len(responses)
    stdio = [i for i, s in enumerate(styles) if s == "code:stdio"]
    for i, ok in zip(stdio, stdio_verdicts([golds[i] for i in stdio], [responses[i] for i in stdio])):
        out[i] = ok
    for i in sorted(set(range(len(responses))) - set(stdio)):
        out[i] = is_correct(styles[i], golds[i], responses[i])
    return out


def is_correct(style: str, ground_truth: str, response: str) -> bool:
    if style.startswith("code:"):
        return code_correct(style.split(":", 1)[1], ground_truth, response)
    return grading.is_correct(ground_truth, response)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """verl's reward-function signature; the test style travels in ``extra_info`` for code rows."""
    style = (extra_info or {}).get("style", "rule")
    return 1.0 if is_correct(style, ground_truth, solution_str) else 0.0
