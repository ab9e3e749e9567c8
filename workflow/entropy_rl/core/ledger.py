"""The claims ledger (claims.yaml) as a list of claims: the audit judges them, the workflow plans their runs."""

from __future__ import annotations


def expand_ledger(ledger: dict) -> list[dict]:
    """The ledger's claims, with Table 2 unfolded into one claim per cell."""
    claims = list(ledger["claims"])
    t2 = ledger["table2"]
    for model, rows in t2["rows"].items():
        for method_name, cells in rows.items():
            for column, value in zip(t2["columns"], cells):
                measure = {
                    "fn": "benchmark_average",
                    "artifact": t2["artifact"],
                    "model": model,
                    "method": method_name,
                }
                if column != "Avg.":
                    measure = {**measure, "fn": "benchmark_cell", "benchmark": column}
                claims.append(
                    {
                        "id": f"table2/{model}/{method_name}/{column}",
                        "claim": f"{model} {method_name}: {column} accuracy",
                        "source": "Table 2",
                        "kind": "number",
                        "paper": value,
                        "unit": "%",
                        "measure": measure,
                        "tolerance": t2["tolerance"],
                    }
                )
    return claims
