"""What the pilot's speed by model size (``speed``) says of the study's cost: the speed laws fitted to it
(``speed_law``), the FLOPs a token and the MFU they give every model of the study with its source, and the report's
section. Read by the pilot's report (the analysis image); the measurement itself runs in the training image without it.
"""

from __future__ import annotations

from ...core.scale import Scale
from . import architectures, decode, efficiency, gpus, speed, speed_law

RULE = (
    "The MFU of each model comes from the speed laws fitted to the architectures the pilot timed (paper.cost.speed_law): "
    "an efficiency against each architecture's FLOPs a token, counted as verl counts them (its matmuls, the embedding, "
    "causal attention at the budget's lengths), with a fixed cost per token beside it once three sizes are timed. At an "
    "architecture the pilot timed (the same shape, not only the same N) it is measured, between the timed FLOPs fitted, "
    "beyond them extrapolated, and never above the cap (capped). The rollout's is an efficiency against each token's "
    "decoding roofline (paper.cost.decode: its FLOPs at the peak or its bytes at the memory bandwidth, by the "
    "engine's room at the run's own tensor-parallel size), never above the best the probe measured; the probe is "
    f"{speed.BEST_CASE}. The communication between a run's GPUs is in none of these points."
)


def points(result: dict) -> dict[str, list[speed_law.Point]]:
    """Each timed architecture's FLOPs a token and the seconds a token cost one GPU, by kind (update, rollout)."""
    out = {"update": [], "rollout": []}
    for size in result["sizes"]:
        arch = architectures.recorded(size["arch"])
        for kind, rate in (
            ("update", speed.update_rate(size["update"], arch)),
            ("rollout", speed.rollout_rate(size.get("rollout", {}), arch)),
        ):
            if rate:
                out[kind].append(speed_law.Point(size["model"], arch, rate["flops"], rate["seconds_per_token"]))
    return out


def laws(result: dict) -> dict[str, speed_law.Law]:
    """The laws fitted to the pilot's speed by size, for each kind with a timed size on a GPU whose peak is known."""
    out = {}
    for kind, pts in points(result).items():
        gpu = speed.timed_on(result, kind)
        if pts and gpu and gpu["peak_tflops"]:
            out[kind] = speed_law.fit(kind, pts, gpu["gpu"], gpu["peak_tflops"], gpu["path"], gpu["lower_bound"])
    return out


def _flops(kind: str, arch, prompt: float, response: float, engine: decode.Engine, law) -> float:
    """A token's FLOPs as ``kind``'s law places it: for the rollout, its roofline on the law's GPU; without a law, its
    own FLOPs."""
    if law is None:
        return (
            architectures.update_flops(arch, prompt, response)
            if kind == "update"
            else architectures.rollout_flops(arch, prompt, response)
        )
    return efficiency.kind_flops(
        kind, arch, prompt, response, engine, gpus.gpu_type(law.gpu) or law.gpu, law.peak_tflops
    )


def mfu_by_size(scale: Scale, laws: dict[str, speed_law.Law], node: dict | None = None) -> dict[str, dict]:
    """Every study model's FLOPs a token (update, rollout) and its MFUs under the laws (or the pilot's run on a node,
    ``node``, for its architecture), as fractions of the timed GPU's peak, each with its source (measured, fitted,
    extrapolated, capped, measured on a node); its KV cache a token; its rollout's TP."""
    budget = scale.config["budget"]
    prompt, response = budget["mean_prompt_tokens"], budget["mean_response_tokens"]
    models = sorted(
        {run.model for r, run in scale.runs.items() if not r.startswith("pilot-")},
        key=lambda m: (scale.models[m].params_b, m),
    )
    timed_kv = [p.arch.kv_cache_bytes() for law in laws.values() for p in law.points]
    out = {}
    for model in models:
        arch, placement = architectures.of_model(scale, model), scale.models[model].placement
        entry = {
            "params_b": scale.models[model].params_b,
            "tensor_parallel": placement.tensor_parallel,
            "kv_cache_kib": arch.kv_cache_bytes() / 1024,
        }
        engine = decode.ROLLOUT_ENGINE.at(placement.tensor_parallel)
        for kind, key in (("update", "train_mfu"), ("rollout", "rollout_mfu")):
            flops = _flops(kind, arch, prompt, response, engine, laws.get(kind))
            entry[f"{kind}_gflops"] = flops / 1e9
            on_node = speed_law.node_mfu(node, key, arch)
            if on_node is not None:
                entry[key] = dict(zip(("value", "source"), on_node))
            elif kind in laws:
                entry[key] = dict(zip(("value", "source"), laws[kind].mfu(arch, flops)))
        if timed_kv and arch.kv_cache_bytes() > 2 * max(timed_kv):
            entry["note"] = f"KV cache {arch.kv_cache_bytes() / max(timed_kv):.1f}× the largest timed"
        out[model] = entry
    return out


def report_blocks(result: dict, laws: dict, by_size: dict) -> list[tuple]:
    blocks = [
        ("h2", "Speed by model size"),
        (
            "p",
            (
                f"verl's worker built from {result['run']}'s command and vLLM's engine, on random weights of each shape, "
                f"one GPU; {result['prompt_tokens']} + {result['response_tokens']} tokens a sequence (paper.cost.speed). "
                "MFUs are of the timed GPU's own peak; ≥ marks a speed timed on a slower path than the run's."
            ),
        ),
        ("table", (speed.HEADER, speed.table(result))),
        *[("p", law.describe()) for law in laws.values()],
    ]
    if by_size:
        head = [
            "study model",
            "params (B)",
            "update GFLOPs a token",
            "rollout GFLOPs a token",
            "KV cache (KiB a token)",
            "rollout TP",
            "train MFU, source",
            "rollout efficiency (of its roofline), source",
            "note",
        ]
        cell = lambda v, k: f"{v[k]['value']:.3f}, {v[k]['source']}" if k in v else "as configured"  # noqa: E731
        rows = [
            [
                m,
                f"{v['params_b']:g}",
                f"{v['update_gflops']:.3g}",
                f"{v['rollout_gflops']:.3g}",
                f"{v['kv_cache_kib']:.0f}",
                f"{v['tensor_parallel']} (its room priced; timed at 1)" if v["tensor_parallel"] > 1 else "1",
                cell(v, "train_mfu"),
                cell(v, "rollout_mfu"),
                v.get("note", ""),
            ]
            for m, v in by_size.items()
        ]
        blocks += [
            ("p", "Each model of the study, the FLOPs it is charged and the MFU it gets in the estimate below:"),
            ("table", (head, rows)),
        ]
    return blocks


def node_blocks(scale: Scale, node: dict, laws: dict[str, speed_law.Law]) -> list[tuple]:
    """The report's lines on the pilot's run on a node: its MFUs beside what the one-GPU laws give the same
    architecture (their ratio: what one GPU's points miss at that placement)."""
    arch = architectures.Architecture(**node["arch"])
    budget = scale.config["budget"]
    lines = []
    for kind, key in (("update", "train_mfu"), ("rollout", "rollout_mfu")):
        if key not in node:
            continue
        text = (
            f"{kind}: MFU {node[key]:.3f} on {node['gpus']} GPUs (TP {node['tensor_parallel']}), {node['steps']} steps"
        )
        if kind in laws:
            engine = decode.ROLLOUT_ENGINE.at(node["tensor_parallel"])
            flops = _flops(kind, arch, budget["mean_prompt_tokens"], budget["mean_response_tokens"], engine, laws[kind])
            law, source = laws[kind].mfu(arch, flops)
            text += f"; the one-GPU law gives {law:.3f} ({source}), {node[key] / law:.2f}× it"
        lines.append(text)
    return [
        ("h2", f"{node['model']} on a node"),
        (
            "p",
            "The speed run, with its own command and placement, for a few steps (paper.pilot.speed.node): "
            + "; ".join(lines)
            + ". The estimate prices this architecture by these.",
        ),
    ]
