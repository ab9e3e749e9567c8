"""What the pilot's speed by model size (``speed``) says of the study's cost: the speed laws fitted to it
(``speed_law``), the MFU they give every model size of the study with its source, and the report's section. Read by
the pilot's report (the analysis image); the measurement itself runs in the training image without it.
"""

from __future__ import annotations

from . import budget, speed, speed_law

RULE = (
    "The MFU of each size comes from the speed laws fitted to the sizes the pilot timed (paper.cost.speed_law: seconds a "
    "token on one GPU = a·N + b, a part that grows with the parameters and one that does not). At a timed size it is "
    "measured, between timed sizes fitted, beyond them extrapolated: a straight line carried past the data, which "
    "neither the vocabulary's share nor a larger model's better use of the GPU bends. Communication between GPUs, "
    "which one GPU does not exercise, is in neither."
)


def laws(result: dict) -> dict[str, speed_law.Law]:
    """The laws fitted to the pilot's speed by size (``paper.cost.speed``), for each kind it has a timed size of."""
    return {kind: speed_law.fit(kind, pts) for kind, pts in speed.points(result).items() if pts}


def mfu_by_size(S: dict, laws: dict[str, speed_law.Law], peak_tflops: float) -> dict[str, dict]:
    """Every study model's MFUs under the laws, each with its source (measured, fitted, extrapolated)."""
    keys = {kind: key for key, kind in budget.LAWS.items()}
    models = sorted({S["runs"][r]["model"] for r in S["runs"] if not r.startswith("pilot-")},
                    key=lambda m: (S["models"][m]["params_b"], m))  # fmt: skip
    out = {}
    for model in models:
        n = S["models"][model]["params_b"]
        out[model] = {"params_b": n, **{keys[k]: dict(zip(("value", "source"), law.mfu(n, peak_tflops)))
                                        for k, law in laws.items()}}  # fmt: skip
    return out


def report_blocks(result: dict, laws: dict, by_size: dict) -> list[tuple]:
    blocks = [
        ("h2", "Speed by model size"),
        ("p", (f"verl's worker built from {result['run']}'s command and vLLM's engine, on random weights of each shape, "
               f"one GPU; {result['prompt_tokens']} + {result['response_tokens']} tokens a sequence (paper.cost.speed).")),
        ("table", (speed.HEADER, speed.table(result))),
        *[("p", law.describe()) for law in laws.values()],
    ]  # fmt: skip
    if by_size:
        head = ["study model", "params (B)", *[f"{k}, source" for k in ("train MFU", "rollout MFU")]]
        rows = [[m, f"{v['params_b']:g}", *[f"{v[k]['value']:.3f}, {v[k]['source']}" if k in v else "as configured"
                                             for k in ("train_mfu", "rollout_mfu")]] for m, v in by_size.items()]  # fmt: skip
        blocks += [("p", "The MFU each model size gets in the estimate below:"), ("table", (head, rows))]
    return blocks
