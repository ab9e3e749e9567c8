"""Grading a batch of answers, the same at both scales and for every sampler.

Every response is graded by its problem's style: math-verify for math, the code sandbox for code
(``reward.verdicts``: stdio programs in one sandbox batch). ``pass_rates`` summarises the graded rows.
"""

from __future__ import annotations

from . import grading, reward


def graded_rows(
    texts: list[str], answers: list[str], n: int, first_problem: int = 0, styles: list[str] | None = None
) -> list[dict]:
    """One row per response of a grouped batch (``n`` per problem, from problem ``first_problem``),
    graded by its problem's style (``styles``, by problem; math-verify when not given, as at mini
    scale, and the code sandbox for ``code:...``, as at paper scale)."""
    pids = [first_problem + j // n for j in range(len(texts))]
    row_styles = [styles[pid] if styles is not None else "rule" for pid in pids]
    correct = reward.verdicts(row_styles, [answers[pid] for pid in pids], texts)
    return [
        {
            "problem_id": pid,
            "sample": j % n,
            "response": text,
            "extracted": reward.extract_code(text) if style.startswith("code:") else grading.extract_answer(text),
            "ground_truth": answers[pid],
            "correct": ok,
        }
        for j, (pid, style, text, ok) in enumerate(zip(pids, row_styles, texts, correct))
    ]
