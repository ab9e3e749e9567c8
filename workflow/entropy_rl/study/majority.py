"""Majority voting at Algorithm 1's tokens: what the tokens of one power-sampling answer buy otherwise.

Algorithm 1 draws several times the tokens of a plain answer (mini scale: about 114 against 14). Spent on plain
sampling instead, those tokens buy k answers and a vote among them (self-consistency, Wang et al., 2023). For each
method, k is the number of its answers whose tokens drawn come nearest to one Algorithm 1 answer's (``matched_k``),
and its majority-vote accuracy is read from the answers the study already drew (``majority_accuracy``).

Answers are compared as the grader normalised them: ``extracted`` holds math-verify's reading of each answer
(``core.grading.extract_answer``: a lone boxed integer as that integer, anything else as math-verify's normalised
LaTeX), and an integer compares by its value ("07" is 7). Full math-verify equivalence of two different readings
("\\frac{2}{4}" and "\\frac{1}{2}") is not applied: the study may not load the grader (pyproject.toml's import
contract), so such answers split their vote. At mini scale nearly every answer read is an integer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import pandas as pd

_INTEGER = re.compile(r"[+-]?[0-9]+")


def matched_k(drawn: float, target: float, n: int) -> tuple[int, bool]:
    """The number k of answers, each drawing ``drawn`` tokens on average, whose tokens come nearest ``target`` (one
    Algorithm 1 answer's tokens drawn; a half rounds up, so the vote is not the one short-changed), at least 1 (a
    method that draws as much as Algorithm 1 has one answer); capped at ``n``, the answers drawn per problem, and
    whether it was (the k answers then draw fewer tokens than Algorithm 1's one, and say so)."""
    if not (drawn > 0 and target > 0 and n >= 1):
        raise ValueError(f"matching k needs positive token counts and answers, got {drawn}, {target}, {n}")
    k = max(1, math.floor(target / drawn + 0.5))
    return min(k, n), k > n


def answer_key(extracted) -> int | str | None:
    """What a vote compares of an answer: the grader's normalised answer, an integer by its value; None for an answer
    the grader could not read (empty), which never wins."""
    if not isinstance(extracted, str) or not extracted.strip():
        return None
    text = extracted.strip()
    return int(text) if _INTEGER.fullmatch(text) else text


def vote(answers: Sequence) -> int | None:
    """The position among ``answers`` (one problem's k answers, as the grader extracted them, in sample order) of
    the answer a majority vote picks: the most frequent by ``answer_key``; a tie goes to the answer given first
    (the answers are independent draws, so their order is a random tie-break that is the same on every run).
    Unreadable answers never win; None when every answer is unreadable."""
    keys = [answer_key(answer) for answer in answers]
    counts = Counter(key for key in keys if key is not None)  # in order of first appearance
    if not counts:
        return None
    return keys.index(counts.most_common(1)[0][0])  # most_common is stable: of tied counts, the first seen


def majority_accuracy(frame: pd.DataFrame, k: int) -> pd.Series:
    """Per (benchmark, problem): the share of its answers' n // k disjoint groups of k (in sample order, the rest
    left out) whose majority answer (``vote``) is graded correct; a group with no readable answer is wrong. Every
    group, not only the first, so the estimate uses the answers drawn."""
    keys, values = [], []
    for key, group in frame.sort_values("sample").groupby(["benchmark", "problem_id"], sort=True):
        answers, correct = group["extracted"].tolist(), group["correct"].tolist()
        groups = len(answers) // k
        if groups == 0:
            raise ValueError(f"problem {key} has {len(answers)} answers, fewer than the k = {k} a vote needs")
        wins = 0
        for start in range(0, groups * k, k):
            won = vote(answers[start : start + k])
            wins += won is not None and bool(correct[start + won])
        keys.append(key)
        values.append(wins / groups)
    return pd.Series(values, index=pd.MultiIndex.from_tuples(keys, names=["benchmark", "problem_id"]), dtype=float)


def answers_per_problem(frame: pd.DataFrame) -> int:
    """The fewest answers any problem has: the most a vote can take."""
    return int(frame.groupby(["benchmark", "problem_id"]).size().min())


def majority_table(samples: dict[str, pd.DataFrame], target: str = "power") -> pd.DataFrame:
    """One row per method of one seed: k matched to one ``target`` answer's tokens drawn (``matched_k``, tokens
    drawn per answer over every benchmark, as the cost columns), whether k was capped, the tokens k answers draw,
    and the majority-vote accuracy (fraction) per benchmark, the mean over its problems."""
    if target not in samples:
        raise ValueError(f"majority voting is matched to {target!r}'s tokens; the methods are {list(samples)}")
    goal = samples[target]["drawn_tokens"].mean()
    rows = {}
    for method, frame in samples.items():
        drawn = frame["drawn_tokens"].mean()
        k, capped = matched_k(drawn, goal, answers_per_problem(frame))
        accuracy = majority_accuracy(frame, k).groupby(level="benchmark").mean()
        rows[method] = {**accuracy.to_dict(), "k": k, "capped": capped, "tokens drawn": k * drawn}
    return pd.DataFrame.from_dict(rows, orient="index")
