"""The three verdicts (issue 55): reproduced, contradicted or inconclusive, each claim of no difference held to a
margin the ledger states with its reason and date, what would settle an inconclusive claim, and two audits compared."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from entropy_rl.study import audit
from entropy_rl.study.audit import compare, family, relations, seeds
from entropy_rl.study.audit.registry import Measured, relation_of
from entropy_rl.study.audit.relations import Effect, decide
from test_audit import LEDGER, ledger_claim

R, C, I = audit.REPRODUCED, audit.CONTRADICTED, audit.INCONCLUSIVE


def over(*values) -> Effect:
    """An effect measured once per seed, as the audit combines it."""
    return seeds.combine([Measured("v", "h", effects={"d": v}) for v in values]).effects["d"]


@pytest.mark.parametrize(
    ("effect", "relation", "margin", "verdict"),
    [
        (over(2.0, 2.2, 1.8), "above", None, R),  # a clear effect
        (over(-2.0, -2.2, -1.8), "above", None, C),  # a clear opposite
        (over(2.0, -1.5, 3.0), "above", None, I),  # a wide interval
        (over(-2.0, -2.2, -1.8), "below", None, R),
        (over(0.10, -0.10, 0.05), "within", 0.5, R),  # equivalence inside its margin
        (over(1.00, 1.10, 0.90), "within", 0.5, C),  # outside it, surely
        (over(0.10, -0.90, 1.00), "within", 0.5, I),  # zero inside a wide interval is not a match
        (over(0.45, 0.55, 0.50), "within", 0.5, I),  # on the margin's edge
        (over(-0.2, -0.1, -0.3), "not_below", 0.5, R),  # a small deficit within the margin
        (over(-1.0, -1.1, -0.9), "not_below", 0.5, C),  # inferior by more than the margin
        (over(0.2, 0.1, 0.3), "not_above", 0.5, R),
        (over(1.0, 1.1, 0.9), "not_above", 0.5, C),
        (over(1.0, 1.1, 0.9), "differs", 0.5, R),
        (over(0.01, -0.01, 0.0), "differs", 0.5, C),  # every effect equivalent to zero
        (over(0.3, -0.4, 0.5), "differs", 0.5, I),
        (Effect(1.0), "above", None, I),  # one seed, read without noise of its own
        (Effect(math.nan, 1.0), "above", None, I),  # undefined
        (Effect(3.0, 1.0), "above", None, R),  # noise of its own (problems, binomial): normal quantiles
        (Effect(1.0, 1.0), "above", None, I),
    ],
)
def test_each_verdict_on_constructed_per_seed_values(effect, relation, margin, verdict):
    assert decide({"d": effect}, relation, margin).verdict == verdict


def test_a_test_of_several_effects_is_contradicted_by_any_and_reproduced_by_all():
    clear, wide, opposite = over(2.0, 2.2, 1.8), over(2.0, -1.5, 3.0), over(-2.0, -2.2, -1.8)
    assert decide({"a": clear, "b": clear}, "above").verdict == R
    assert decide({"a": clear, "b": wide}, "above").verdict == I
    assert decide({"a": wide, "b": opposite}, "above").verdict == C


def test_an_effect_without_spread_says_it_needs_seeds():
    d = decide({"d": 0.3}, "above")
    assert d.verdict == I and "at least 2 seeds" in d.needs()


def test_a_margined_relation_needs_its_margin_and_a_directional_one_takes_none():
    with pytest.raises(ValueError, match="needs margin"):
        decide({"d": 0.0}, "within")
    with pytest.raises(ValueError, match="takes no margin"):
        decide({"d": 0.0}, "above", 1.0)


def test_seeds_needed_give_the_claimed_power():
    """At the seeds planned at the observed spread the one-sided 5% t-test on the seed mean rejects 80% of the time,
    were the observed mean and spread the truth (a simulation of 4,000 studies), and at one seed fewer less often;
    the plan is a range up to the spread's upper confidence limit (issue 66, defect 6)."""
    effect = over(0.30, -0.10, 0.50)  # mean 0.23, sd 0.31: inconclusive at three seeds
    d = decide({"d": effect}, "above")
    assert d.verdict == I and d.seeds_to_contradict is None and d.seeds_to_reproduce > 3
    low, high = d.plan.reproduce
    assert low < high == d.seeds_to_reproduce and f"{low}–{high} seeds" in d.needs() and "new study" in d.needs()
    n, sd = low, effect.se * math.sqrt(3)
    rng = np.random.default_rng(0)

    def power(k):
        draws = rng.normal(effect.estimate, sd, size=(4000, k))
        means, ses = draws.mean(1), draws.std(1, ddof=1) / math.sqrt(k)
        rejects = means - scipy.stats.t.ppf(0.95, k - 1) * ses > 0
        for m, se, r in list(zip(means, ses, rejects))[:40]:  # the audit's own decision, on a sample of them
            assert (decide({"d": Effect(m, se, k - 1, k)}, "above").verdict == R) == r
        return rejects.mean()

    assert power(n) >= 0.78 and power(n - 1) < power(n)


def test_seeds_needed_for_an_equivalence_and_its_contradiction():
    near = over(0.02, -0.03, 0.04)  # a match, not yet shown inside ±0.05
    d = decide({"d": near}, "within", 0.05)
    assert d.verdict == I and d.seeds_to_reproduce > 3 and d.seeds_to_contradict is None
    far = over(-0.12, -0.20, -0.31)  # a fall beyond the margin, not yet shown
    d = decide({"d": far}, "within", 0.05)
    assert d.verdict == I and 3 < d.plan.contradict[0] < 10
    assert "contradicted at" in d.needs() and "reproduced at" in d.needs()  # equivalence planned at no difference


def test_every_claim_of_no_difference_in_the_ledger_states_its_margin_and_why():
    margined = [
        c for c in LEDGER["claims"] if c["kind"] == "qualitative" and relation_of(c["measure"]) in relations.MARGINED
    ]
    assert {c["id"] for c in margined} >= {
        "entropy-loss/no-gain",
        "control/random-reward/accuracy-flat",
        "power/matches-grpo",
        "power/pass-at-k-vs-grpo",
        "power/pass-at-k-matches-base",
        "power/sps/matches-mh",
        "power/sps/matches-grpo",
        "power/smc/matches-mh",
        "coefficients/algorithm-independent",
        "law/math",
    }
    for c in margined:
        assert c["margin"]["value"] > 0 and len(c["margin"]["why"]) > 10, c["id"]


def test_the_ledger_check_refuses_a_claim_without_its_margin_or_with_one_it_cannot_use():
    c = ledger_claim("power/matches-grpo")
    without = {**LEDGER, "claims": [{k: v for k, v in c.items() if k != "margin"}]}
    with pytest.raises(ValueError, match="needs a margin"):
        audit.check_ledger(without)
    directional = {**ledger_claim("power/accuracy-ordering"), "margin": {"value": 1, "why": "w", "set": "s"}}
    with pytest.raises(ValueError, match="takes no margin"):
        audit.check_ledger({**LEDGER, "claims": [directional]})
    number = {**ledger_claim("cov-methods/gain-7b"), "margin": {"value": 1, "why": "w", "set": "s"}}
    with pytest.raises(ValueError, match="tolerance.band"):
        audit.check_ledger({**LEDGER, "claims": [number]})
    no_band = {**ledger_claim("cov-methods/gain-7b"), "tolerance": {"why": "w"}}
    with pytest.raises(ValueError, match="needs tolerance.band"):
        audit.check_ledger({**LEDGER, "claims": [no_band]})
    contrast = {**ledger_claim("power/accuracy-ordering"), "contrast": {"value": 0, "why": "w"}}
    with pytest.raises(ValueError, match="contrast applies to number claims only"):
        audit.check_ledger({**LEDGER, "claims": [contrast]})


def test_a_number_is_judged_by_equivalence_to_the_papers_value_within_its_band():
    c = {**ledger_claim("cov-methods/gain-7b")}
    assert c["contrast"]["value"] == 0 and c["paper"] == 2.0 and c["tolerance"]["band"] == 1.0
    verdict = lambda est, se, band=1.0: audit.verdicts.number_verdict(c, Effect(est, se), band)["verdict"]
    assert verdict(2.1, 0.2) == R  # one-sided bounds [1.77, 2.43] inside [1, 3]
    assert verdict(4.5, 0.3) == C  # surely beyond 3
    assert verdict(2.0, 3.0) == I  # a noisy study: never reproduced (issue 66, defect 2)
    assert verdict(2.0, 1.3, band=3.0) == I  # inside the wide band, but so is the 0 it is set against
    assert verdict(math.nan, 0.2) == I and verdict(2.0, math.inf) == I  # no finite value or interval: no verdict
    assert audit.verdicts.number_verdict(c, Effect(2.0, 0.2, between_runs=True), 1.0)["verdict"] == I  # one seed


def test_table2_cells_of_a_method_are_contrasted_with_grpos():
    claims = {c["id"]: c for c in audit.ledger.with_contrasts(LEDGER, audit.expand_ledger(LEDGER))}
    cell = claims["table2/Qwen2.5-32B/KL-Cov/AIME24"]
    assert cell["paper"] == 36.8 and cell["contrast"]["value"] == 21.8
    assert claims["table2/Qwen2.5-7B/Clip-Cov/Avg."]["contrast"]["value"] == 38.6
    assert "contrast" not in claims["table2/Qwen2.5-7B/GRPO/AIME24"]


def audit_table(verdicts: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"id": list(verdicts), "verdict": list(verdicts.values()), "measured": "m", "why": "w"})


def test_compare_counts_decisive_flips_apart_from_moves_to_or_from_inconclusive(tmp_path, capsys):
    a = audit_table(
        {"x": R, "y": R, "z": I, "w": C, "v": audit.NOT_COMPARABLE, "u": R, "late": audit.NOT_RUN, "n": audit.NOT_RUN}
    )
    b = audit_table({"x": C, "y": I, "z": R, "w": C, "v": audit.NOT_COMPARABLE, "u": R, "late": R, "n": audit.NOT_RUN})
    table = compare.compare(a, b)
    assert compare.moves(table) == {compare.AGREE: 2, compare.FLIP: 1, compare.INCONCLUSIVE_MOVE: 2, compare.OTHER: 1}
    assert compare.agreement(table) == (2, 6)  # "not run" in both is not judged (issue 66, defect 10)
    (
        a.assign(ledger="abc").to_csv(tmp_path / "a.csv", index=False),
        b.assign(ledger="abc").to_csv(tmp_path / "b.csv", index=False),
    )
    compare.main([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")])
    out = capsys.readouterr().out
    assert "decisive flips (reproduced <-> contradicted): 1; moves to or from inconclusive: 2; other moves: 1" in out
    assert out.index("!! x") < out.index("~  y")  # flips listed first


def test_compare_refuses_audits_judged_against_different_ledgers(tmp_path, capsys):
    a, b = audit_table({"x": R}).assign(ledger="abc"), audit_table({"x": R}).assign(ledger="def")
    a.to_csv(tmp_path / "a.csv", index=False), b.to_csv(tmp_path / "b.csv", index=False)
    assert compare.main([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]) == 2
    assert "different ledgers (abc against def)" in capsys.readouterr().err
    assert compare.main([str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--different-ledgers"]) == 0
    assert "WARNING" in capsys.readouterr().out


def test_the_report_explains_the_verdicts_states_the_family_and_lists_what_would_settle(tmp_path):
    rows = [
        {"id": "a", "verdict": R, "p_reproduce": 0.001, "p_contradict": 0.999},
        {
            "id": "b",
            "verdict": I,
            "seeds_to_reproduce": 7,
            "seeds_to_contradict": None,
            "seeds_range_reproduce": "4–7",
            "needs": "reproduced at 4–7 seeds",
            "p_reproduce": 0.2,
            "p_contradict": 0.8,
        },
        {"id": "c", "verdict": audit.NOT_COMPARABLE},
    ]
    table = family.with_family(pd.DataFrame([{**dict.fromkeys(audit.verdicts.COLUMNS, ""), **r} for r in rows]))
    table = table.assign(ledger="0123456789ab")
    md = audit.to_markdown(table, "mini", 3, True)
    assert "**inconclusive**: neither" in md and "a wide interval is not evidence of no difference" in md
    assert "2 claims were judged" in md and "about 0.2 of them" in md and "(2 × 5% × 2)" in md  # 2α each (defect 3)
    assert "1 survive Holm's procedure" in md and "sha256 0123456789ab" in md
    assert "3 seeds per run, varying RL's randomness only" in md  # the population the intervals cover (defect 8)
    settle = md.split("## What would settle the inconclusive claims")[1].split("## Every claim")[0]
    assert "| b | 4–7 | – |" in settle and "| a |" not in settle and "spends the 5% again" in settle
    html = audit.to_html(table, "mini", 1, None)
    assert "<b>inconclusive</b>" in html and "<td>b</td><td>4–7</td>" in html and "One seed per run" in html
