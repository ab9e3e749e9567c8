"""Claims left out of a study (--config claims=... or budget_gpu_hours=...) are listed as not run, with their cost."""

import yaml
from entropy_rl.study import audit
from entropy_rl.study.audit import ledger as audit_ledger
from support import ROOT


def test_claims_left_out_are_not_measured_and_say_what_they_would_cost(monkeypatch):
    book = yaml.safe_load((ROOT / "claims.yaml").read_text())
    judged = []
    monkeypatch.setattr(
        audit_ledger,
        "judge",
        lambda claim, study: (
            judged.append(claim["id"])
            or {
                "id": claim["id"],
                "claim": claim["claim"],
                "source": claim["source"],
                "kind": claim["kind"],
                "paper": None,
                "unit": "",
                "measured": 1.0,
                "how": "",
                "tolerance": "",
                "verdict": audit.REPRODUCED,
                "why": "",
                "p_reproduce": 0.01,
                "p_contradict": 0.99,
            }
        ),
    )
    ids = [c["id"] for c in audit.expand_ledger(book)]
    left_out = {i: 1234.5 for i in ids if not i.startswith("law/")}
    study = type("S", (), {"scale": "paper"})()
    table = audit.run_audit(book, study, left_out)
    assert sorted(judged) == sorted(i for i in ids if i.startswith("law/"))  # only the chosen claims are measured
    rows = table.set_index("id").loc[list(left_out)]
    assert (rows["verdict"] == audit.NOT_RUN).all() and rows["why"].str.contains("1,234 GPU-hours").all()
    counts = audit.verdict_counts(table)
    assert counts[audit.NOT_RUN] == len(left_out)
    assert "not run" in audit.to_markdown(table, "paper") and "#f4f0dc" in audit.to_html(table, "paper")
