"""What each claim costs to judge, what a budget buys, and a ledger whose claims and runs cover each other."""

import pytest
import yaml
from entropy_rl.core import ledger
from entropy_rl.core import spec as run_spec
from entropy_rl.core.power import methods as power_methods
from entropy_rl.core.scale import build
from entropy_rl.paper.cost import budget
from entropy_rl.pipeline import claim_plan
from entropy_rl.study import artifacts
from support import ROOT

HOURS = {"train:a": 100.0, "train:b": 40.0, "eval:a": 5.0, "power:p": 30.0, "train:c": 1000.0}
JOBS = {
    "one/a": frozenset({"train:a"}),
    "one/a-test": frozenset({"train:a", "eval:a"}),
    "two/b": frozenset({"train:b"}),
    "three/pb": frozenset({"power:p", "train:b"}),
    "four/c": frozenset({"train:c"}),
}


def test_shared_jobs_are_paid_once_and_a_pattern_selects_by_id():
    sel = claim_plan.select(JOBS, HOURS, patterns=["one/*"])
    assert sel.claims == ["one/a", "one/a-test"] and sel.gpu_hours == 105.0
    assert claim_plan.not_run(JOBS, sel, HOURS) == {"two/b": 40.0, "three/pb": 70.0, "four/c": 1000.0}
    with pytest.raises(ValueError, match="match no claim"):
        claim_plan.select(JOBS, HOURS, patterns=["law/*"])


def test_a_budget_takes_the_cheapest_next_claim_while_it_fits():
    # two/b (40), then three/pb (+30: its run is already paid), then one/a (+100), one/a-test (+5); four/c never fits
    sel = claim_plan.select(JOBS, HOURS, budget=200)
    assert sel.claims == ["one/a", "one/a-test", "two/b", "three/pb"] and sel.gpu_hours == 175.0
    assert claim_plan.select(JOBS, HOURS, budget=60).claims == ["two/b"]
    assert claim_plan.select(JOBS, HOURS, budget=10).claims == []
    assert claim_plan.select(JOBS, HOURS).gpu_hours == sum(HOURS.values())


def study(scale):
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    S = run_spec.with_replicates(run_spec.with_instruct_models(cfg[scale]), 0, cfg[scale].get("replicates", 1))
    typed = build(scale, S)
    power = S.get("power_sampling")
    P = (
        power_methods.build(power, {r: r for r in power["runs"].values()}, cfg[scale].get("replicates", 1), 0)
        if power
        else None
    )
    claims = ledger.expand_ledger(yaml.safe_load((ROOT / "claims.yaml").read_text()))

    drawn = {name: P.drawn(artifacts.ARTIFACTS[name].methods) for name in artifacts.POWER} if P else {}
    return typed, P, claims, claim_plan.study_jobs(typed, claims, artifacts.reads_tests, P, drawn)


@pytest.mark.parametrize("scale", ["paper", "mini"])
def test_every_claim_has_runs_in_the_config_and_every_run_serves_a_claim_or_an_artifact(scale):
    scale_, P, claims, jobs = study(scale)
    S = scale_.config
    runs = set(S["runs"])
    for claim in claims:
        name = claim["measure"]["artifact"]
        assert name in S["artifacts"] or (P and name in artifacts.POWER), (
            f"{claim['id']}: artifact {name} is not built at {scale} scale"
        )
        assert jobs[claim["id"]], f"{claim['id']}: no runs"
        assert set(claim_plan.runs_of(jobs[claim["id"]])) <= runs
    needed = set().union(*(claim_plan.runs_of(js) for js in jobs.values()))
    by_artifacts = {rep for a in S["artifacts"].values() for run in a["runs"] for rep in scale_.replicates(run)}
    assert runs - needed - by_artifacts == set(), "runs that no claim and no artifact needs"


def test_the_paper_ledger_costs_what_the_estimate_says():
    scale, P, _, jobs = study("paper")
    S = scale.config
    hours = budget.job_hours(scale, P)
    every = claim_plan.select(jobs, hours)
    trained = sum(h for j, h in hours.items() if j.startswith("train:"))
    powered = sum(h for j, h in hours.items() if j.startswith("power:"))
    assert set(claim_plan.runs_of(every.jobs)) == set(S["runs"])  # every run is needed by some claim at paper scale
    evaluated = sum(hours[f"eval:{r}"] for r in claim_plan.evaluations_of(every.jobs))
    assert every.gpu_hours == pytest.approx(trained + powered + evaluated)


def test_the_claims_page_sorts_by_cost_and_adds_the_ranges_when_it_has_them(tmp_path):
    """pipeline.claims_budget, the claims_budget rule's job: its table through core.pages, cheapest claim first."""
    from types import SimpleNamespace

    from entropy_rl.pipeline import claims_budget

    spread = {j: {"value": h, "low": h / 2, "high": 2 * h, "worst": 3 * h, "terms": {"u": h}} for j, h in HOURS.items()}
    artifacts_ = {c: "fig" for c in JOBS}
    for ranges_, anchors in (({}, []), (spread, ["- an anchor"])):
        jobs = {c: sorted(js) for c, js in JOBS.items()}
        params = SimpleNamespace(scale="mini", jobs=jobs, hours=HOURS, spread=ranges_, artifacts=artifacts_)
        params.budgets, params.how, params.anchors = [50], "as configured", anchors
        out = SimpleNamespace(md=tmp_path / "claims.md", csv=tmp_path / "claims.csv")
        claims_budget.main(SimpleNamespace(params=params, output=out, log=[str(tmp_path / "log.txt")]))
        page = out.md.read_text()
        assert page.startswith("# What each claim costs to judge (mini scale)")
        assert "All 5 claims together: 1,175 GPU-hours" in page
        assert ("The estimate as a range: all claims 588 to 2,350" in page) == bool(ranges_)
        assert ("## The assumed MFUs beside published runs" in page) == bool(anchors)
        rows = [line.split("|")[1].strip() for line in page.splitlines() if line.startswith("| ")][1:]
        assert rows == ["two/b", "three/pb", "one/a", "one/a-test", "four/c"]
        columns = out.csv.read_text().splitlines()[0].split(",")
        assert columns[-1] == ("largest_term" if ranges_ else "shares_jobs_with")
