"""The verifiable reward, shared by verl (paper scale) and the evaluator.

verl loads ``compute_score`` from this file (``reward.custom_reward_function``).
Math answers are graded by math-verify; code answers (``reward_model.style``
``code:<tests>``) run in the sandbox against their tests.
"""

from __future__ import annotations

import json
import re

from . import grading, sandbox

CODE_BLOCK = re.compile(r"```(?:python|py)?[^\n]*\n(.*?)```", re.DOTALL)
TEST_TIMEOUT_S = 10.0


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
    if style == "asserts":
        return sandbox.check(solution, "\n".join(json.loads(tests)), timeout_s=TEST_TIMEOUT_S)
    if style == "pytest":
        return sandbox.check(solution, tests, timeout_s=TEST_TIMEOUT_S)
    if style == "stdio":
        cases = json.loads(tests)
        for stdin, expected in zip(cases["inputs"], cases["outputs"]):
            result = sandbox.run(solution, stdin=stdin, timeout_s=TEST_TIMEOUT_S)
            if result.status != "ok" or result.stdout.split() != str(expected).split():
                return False
        return True
    raise ValueError(f"unknown code test style {style!r}")


def is_correct(style: str, ground_truth: str, response: str) -> bool:
    if style.startswith("code:"):
        return code_correct(style.split(":", 1)[1], ground_truth, response)
    return grading.is_correct(ground_truth, response)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """verl's reward-function signature; the test style travels in ``extra_info`` for code rows."""
    style = (extra_info or {}).get("style", "rule")
    return 1.0 if is_correct(style, ground_truth, solution_str) else 0.0
