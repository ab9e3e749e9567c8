"""Grading a batch of answers, the same at both scales and for every sampler.

Every response is graded by its problem's style: math-verify for math, the code sandbox for code
(``reward.is_correct``). ``pass_rates`` summarises the graded rows.
"""

from __future__ import annotations

from . import grading, reward


def graded_rows(texts: list[str], answers: list[str], n: int, first_problem: int = 0,
                styles: list[str] | None = None) -> list[dict]:  # fmt: skip
    """One row per response of a grouped batch (``n`` per problem, from problem ``first_problem``),
    graded by its problem's style (``styles``, by problem; math-verify when not given, as at mini
    scale, and the code sandbox for ``code:...``, as at paper scale)."""
    rows = []
    for j, text in enumerate(texts):
        pid = first_problem + j // n
        style = styles[pid] if styles is not None else "rule"
        rows.append({
            "problem_id": pid, "sample": j % n, "response": text,
            "extracted": reward.extract_code(text) if style.startswith("code:") else grading.extract_answer(text),
            "ground_truth": answers[pid], "correct": reward.is_correct(style, answers[pid], text),
        })  # fmt: skip
    return rows
