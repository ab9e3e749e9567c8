"""Majority voting at power sampling's tokens (study.majority): the matched k, the vote, and that the power study's
table and cost figure show it."""

import math

import numpy as np
import pandas as pd
import pytest
from entropy_rl.study import majority, power_study
from entropy_rl.study.inputs import Inputs


def test_k_is_the_answers_nearest_one_power_answers_tokens():
    assert majority.matched_k(14, 114, 16) == (8, False)  # the mini scale's plain and Algorithm 1 answers: 8.1
    assert majority.matched_k(14, 120, 16) == (9, False)  # 8.57: nine answers come nearer
    assert majority.matched_k(10, 25, 16) == (3, False)  # a half rounds up: the vote is not the one short of tokens
    assert majority.matched_k(114, 114, 16) == (1, False)  # power sampling against itself: its one answer
    assert majority.matched_k(142, 114, 16) == (1, False)  # a sampler dearer than Algorithm 1 still answers once
    assert majority.matched_k(5, 114, 16) == (16, True)  # 23 would be needed: capped at the answers drawn, and said
    for bad in ((0, 114, 16), (14, 114, 0), (math.nan, 114, 16)):
        with pytest.raises(ValueError, match="positive token counts"):
            majority.matched_k(*bad)


def test_answers_are_compared_as_the_grader_read_them():
    assert majority.answer_key("07") == majority.answer_key("7") == majority.answer_key("+7") == 7
    assert majority.answer_key(" -3 ") == -3 and majority.answer_key("\\frac{1}{2}") == "\\frac{1}{2}"
    assert majority.answer_key("") is None and majority.answer_key("  ") is None and majority.answer_key(None) is None
    assert majority.answer_key(float("nan")) is None  # a missing value in a parquet column


def test_the_vote_takes_the_most_frequent_answer_and_breaks_ties_by_order():
    assert majority.vote(["3", "5", "5", "3", "5"]) == 1  # 5 wins three to two: its first answer
    assert majority.vote(["3", "05", "5"]) == 1  # "05" and "5" are one answer, the grader's 5
    assert majority.vote(["3", "5", "5", "3"]) == 0  # two each: the answer given first
    assert majority.vote(["5", "3", "3", "5"]) == 0
    assert majority.vote(["4", "3", "5"]) == 0  # all different: the first


def test_an_unread_answer_never_wins():
    assert majority.vote(["", "", "", "8"]) == 3  # three answers the grader read nothing in do not outvote one
    assert majority.vote([None, "", "8", "9"]) == 2
    assert majority.vote(["", None, "  "]) is None  # nothing to vote for


def answers(extracted: list[list[str]], correct: list[list[bool]], bench="b", drawn=10) -> pd.DataFrame:
    rows = [
        {"benchmark": bench, "problem_id": p, "sample": s, "extracted": e, "correct": c, "drawn_tokens": drawn}
        for p, (es, cs) in enumerate(zip(extracted, correct))
        for s, (e, c) in enumerate(zip(es, cs))
    ]
    return pd.DataFrame(rows)


def test_majority_accuracy_votes_in_disjoint_groups_and_reads_the_winners_grade():
    frame = answers(
        [["7", "7", "2", "", "", "", "3", "9", "1"], ["", "", "", "", "4", "4", "4", "1", "0"]],
        [[True, True, False, False, False, False, False, False, True], [False] * 4 + [True, True, True, False, False]],
    )
    frame = frame.sample(frac=1, random_state=0)  # rows in any order: the groups follow the sample index
    acc = majority.majority_accuracy(frame, 4)
    # Problem 0: [7 7 2 -] right, [- - 3 9] the first read (3) wrong; the ninth answer is left out.
    # Problem 1: [- - - -] no answer read, wrong; [4 4 4 1] right.
    assert acc.loc[("b", 0)] == 0.5 and acc.loc[("b", 1)] == 0.5
    assert majority.majority_accuracy(frame, 1).loc[("b", 0)] == pytest.approx(3 / 9)  # k = 1: single-shot accuracy
    assert majority.majority_accuracy(frame, 9).loc[("b", 1)] == 1.0  # 4 three times out of 5 read answers
    with pytest.raises(ValueError, match="fewer than the k = 10"):
        majority.majority_accuracy(frame, 10)


def test_the_table_matches_k_to_power_samplings_tokens_per_method():
    base = answers([["1", "1", "2", "2", "1", "3"]], [[True, True, False, False, True, False]], drawn=10)
    power = answers([["2"] * 6], [[False] * 6], drawn=31)
    table = majority.majority_table({"base": base, "power": power, "long": base.assign(drawn_tokens=100)})
    assert table.loc["base", "k"] == 3 and table.loc["base", "tokens drawn"] == 30  # 3.1 answers' worth
    assert table.loc["base", "b"] == 0.5  # [1 1 2]: 1, right; [2 1 3]: a three-way tie, 2 (given first), wrong
    assert table.loc["power", "k"] == 1 and table.loc["power", "b"] == 0.0
    assert table.loc["long", "k"] == 1 and not table["capped"].any()
    capped = majority.majority_table({"base": base.assign(drawn_tokens=1), "power": power})
    assert capped.loc["base", "k"] == 6 and capped.loc["base", "capped"] and capped.loc["base", "tokens drawn"] == 6
    with pytest.raises(ValueError, match="matched to 'power'"):
        majority.majority_table({"base": base})


def study_answers(right: np.ndarray, drawn: float, seconds: float = 0.01) -> pd.DataFrame:
    """8 answers to each of 10 problems of two benchmarks: problem i's first ``right[i]`` right (answer "1"),
    the others wrong, each with its own answer (so one right answer is outvoted by none)."""
    rows = [
        {
            "benchmark": b,
            "problem_id": i,
            "sample": s,
            "extracted": "1" if s < right[i] else str(10 + s),
            "correct": bool(s < right[i]),
            "response_tokens": 5,
            "drawn_tokens": drawn,
            "acceptance": math.nan,
            "base_loglik_per_token": -1.0,
            "seconds": seconds,
        }
        for b in ("x", "y")
        for i in range(10)
        for s in range(8)
    ]
    return pd.DataFrame(rows)


def power_study_samples(seeds: int = 1) -> dict[str, list[pd.DataFrame]]:
    """Base: 2 of 8 answers right on every problem (25% single-shot), the wrong ones scattered, so a vote of 4 finds
    the right answer when a group holds one; power: 4 of 8 right on half the problems (25%), drawing 4 times the
    tokens."""
    base = study_answers(np.full(10, 2), drawn=10)
    power = study_answers(np.where(np.arange(10) < 5, 4, 0), drawn=40)
    return {"base": [base] * seeds, "power": [power.assign(acceptance=0.5)] * seeds}


def test_the_power_table_shows_majority_voting_at_power_samplings_tokens():
    table = power_study.power01_accuracy(Inputs(samples=power_study_samples()))
    assert table.loc["base", "Avg."] == 25 and table.loc["power", "Avg."] == 25
    # Base at k = 4: the first group of each problem holds its two right answers (samples 0 and 1), the second none.
    assert table.loc["base", "maj@k k"] == 4 and table.loc["base", "maj@k Avg."] == 50
    assert table.loc["base", "maj@k tokens drawn"] == 40 == table.loc["power", "tokens drawn per answer"]
    assert table.loc["power", "maj@k k"] == 1 and table.loc["power", "maj@k Avg."] == table.loc["power", "Avg."]
    columns = list(table.columns)
    assert columns.index("maj@k Avg.") == columns.index("pass@8") + 1
    over_seeds = power_study.power01_accuracy(Inputs(samples=power_study_samples(seeds=2)))
    assert over_seeds.loc["base", "maj@k Avg. s.e."] == 0  # the same answers twice: no spread


def test_the_cost_figure_draws_each_cheaper_methods_vote_at_k_times_its_cost(tmp_path, monkeypatch):
    drawn = {}

    def keep(fig, stem):
        drawn["axes"] = fig.axes
        return []

    monkeypatch.setattr(power_study.plotting, "save", keep)
    power_study.power05_cost_accuracy(Inputs(samples=power_study_samples(), caption="c"), tmp_path / "cost")
    tokens = drawn["axes"][0]
    hollow = [line for line in tokens.lines if line.get_markerfacecolor() == "white"]
    assert [(list(h.get_xdata()), list(h.get_ydata())) for h in hollow] == [([4.0], [50.0])]  # base's vote only
