"""The speed of the update and of the rollout, fitted to the architectures the pilot timed, as an efficiency against
each architecture's FLOPs a token (``architectures``), never against its parameter count alone.

Two forms, by how many architectures were timed:

- fewer than three: **one efficiency**, ``t = F / (e·peak)``: the seconds a token cost one GPU, ``t``, in proportion
  to its FLOPs ``F``; ``e`` fitted by least relative error over the timed points. Two points cannot tell a fixed cost
  from a change of efficiency, so none is assumed.
- three or more: **efficiency and a fixed cost**, ``t = a·F + b`` (``a, b ≥ 0``, least relative error): ``b`` is what
  every size pays alike (kernel launches, the optimiser's fixed work). The MFU at ``F`` is ``F / (t·peak)``.

Each point weighs by ``1/t``, so a small model's time counts as much as a large one's. At an architecture the pilot
timed (the same shape, not merely the same N) the measurement itself is used (``measured``); between the timed FLOPs
the fit (``fitted``); beyond them the fit carried past the data (``extrapolated``). No MFU leaves physics: one above
``MFU_CAP`` (a larger size timed faster than a smaller, say, which leaves ``a = 0``) is held at the cap (``capped``),
with a warning. The rollout's law is placed by each token's roofline FLOPs (``decode``: where memory binds, the FLOPs
its bytes' time is worth), so its "MFU" is the fraction of the roofline achieved; its cap is the best fraction the
probe measured (``cap``): the probe, a full wave of fixed-length answers, is a rollout's best case, and a fit never
leaves it. The MFUs are fractions of the peak of the GPU the pilot timed on (verl's table of peaks), which the law
names; ``efficiency`` converts them to the budget's GPU.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field

from .architectures import Architecture

KINDS = ("update", "rollout")
# Above every dense-model training MFU published at scale (MegaScale, Jiang et al., NSDI 2024: 55.2% on 12,288 GPUs);
# a fit beyond it is an artefact of the points, not a speed.
MFU_CAP = 0.6
# The fewest timed architectures for a fixed cost per token beside the efficiency.
FIXED_COST_FROM = 3
FORMS = {
    "efficiency": "t = F / (e·peak), one efficiency",
    "efficiency+fixed": "t = a·F + b, an efficiency and a fixed cost",
}


@dataclass(frozen=True)
class Point:
    model: str  # the paper model whose shape was timed
    arch: Architecture
    flops: float  # FLOPs a token of the kind, at the lengths timed
    seconds: float  # seconds a token cost one GPU

    def mfu(self, peak_tflops: float) -> float:
        return self.flops / (self.seconds * peak_tflops * 1e12)


@dataclass(frozen=True)
class Law:
    kind: str  # "update" (log-prob pass + one PPO epoch) or "rollout" (decoding)
    form: str  # a key of FORMS
    per_flop_s: float  # a: seconds a FLOP, one GPU (1 / (efficiency · peak))
    fixed_s: float  # b: seconds a token at any size, one GPU
    points: tuple[Point, ...]
    gpu: str  # the GPU timed on, as the device names itself
    peak_tflops: float  # its dense bf16 peak, from verl's table
    path: str = ""  # the kernels timed (attention, padding), in words
    lower_bound: bool = False  # timed on a slower path than the run's: every MFU here is at most the run's
    warned: list = field(default_factory=list, compare=False, repr=False)

    def _measured(self, arch: Architecture) -> Point | None:
        return next((p for p in self.points if p.arch == arch), None)

    def efficiency(self, arch: Architecture, flops: float) -> tuple[float, str]:
        """The MFU of the timed GPU for a token of ``flops`` in ``arch``, uncapped, and its source: at a timed
        architecture its measured MFU (a few percent's difference in FLOPs, from the timed batch's spread of lengths,
        takes its time in proportion), else the fit's."""
        point = self._measured(arch)
        if point is not None:
            return point.mfu(self.peak_tflops), "measured"
        timed = [p.flops for p in self.points]
        seconds = self.per_flop_s * flops + self.fixed_s
        value = flops / (seconds * self.peak_tflops * 1e12) if seconds > 0 else float("inf")
        return value, "fitted" if min(timed) <= flops <= max(timed) else "extrapolated"

    @property
    def cap(self) -> float:
        """The most the law gives: MFU_CAP for the update; for the rollout, the best fraction of its roofline the probe
        measured (its best case)."""
        if self.kind == "rollout":
            return max(p.mfu(self.peak_tflops) for p in self.points)
        return MFU_CAP

    def mfu(self, arch: Architecture, flops: float) -> tuple[float, str]:
        """The MFU of the timed GPU that the law gives ``arch``, at most its cap, and its source (measured, fitted,
        extrapolated, capped)."""
        value, source = self.efficiency(arch, flops)
        if value > self.cap * (1 + 1e-9):
            if flops not in self.warned and self.kind == "update":
                self.warned.append(flops)
                warnings.warn(
                    f"speed law ({self.kind}): MFU {value:.3g} at {flops:.3g} FLOPs a token is above "
                    f"{self.cap}; held at the cap ({self.describe()})",
                    stacklevel=2,
                )
            return self.cap, "capped"
        return value, source

    def other_forms(self) -> list[Law]:
        """The same points in the form(s) this law is not: one efficiency beside a fixed cost, and a fixed cost (from
        two points, through both) beside one efficiency. Their spread is what the points cannot decide."""
        if len(self.points) < 2:
            return []
        other = "efficiency" if self.form == "efficiency+fixed" else "efficiency+fixed"
        return [fit(self.kind, list(self.points), self.gpu, self.peak_tflops, self.path, self.lower_bound, form=other)]

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "warned"}
        out["points"] = [{**asdict(p), "arch": asdict(p.arch)} for p in self.points]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Law:
        points = tuple(Point(p["model"], Architecture(**p["arch"]), p["flops"], p["seconds"]) for p in data["points"])
        return cls(
            data["kind"],
            data["form"],
            data["per_flop_s"],
            data["fixed_s"],
            points,
            data["gpu"],
            data["peak_tflops"],
            data.get("path", ""),
            data.get("lower_bound", False),
        )

    def describe(self) -> str:
        timed = ", ".join(f"{p.model} ({p.mfu(self.peak_tflops):.3f})" for p in self.points)
        if self.form == "efficiency":
            body = f"one efficiency, MFU {1 / (self.per_flop_s * self.peak_tflops * 1e12):.3f}"
        else:
            body = (
                f"t = F / ({1 / (self.per_flop_s * self.peak_tflops * 1e12) if self.per_flop_s else float('inf'):.3f}"
                f" · peak) + {self.fixed_s * 1e6:.3g} µs a token"
            )
        bound = "; a lower bound on the run's speed" if self.lower_bound and "lower bound" not in self.path else ""
        return (
            f"{self.kind}: {body} ({FORMS[self.form]}), fitted to {timed} on {self.gpu} "
            f"({self.peak_tflops:g} TFLOPS){f', {self.path}' if self.path else ''}{bound}"
        )


def fit(
    kind: str,
    points: list[Point],
    gpu: str,
    peak_tflops: float,
    path: str = "",
    lower_bound: bool = False,
    form: str | None = None,
) -> Law:
    """The law through ``points`` (one per timed architecture), in the form their number allows (or ``form``: the
    fixed cost needs two points at least)."""
    if kind not in KINDS:
        raise ValueError(f"speed law: kind {kind!r}, not one of {list(KINDS)}")
    if not points:
        raise ValueError(f"speed law ({kind}): no measured size to fit")
    if len({p.arch for p in points}) != len(points):
        raise ValueError(f"speed law ({kind}): one point per architecture, got {[p.model for p in points]}")
    points = tuple(sorted(points, key=lambda p: p.flops))
    ratios = [p.flops / p.seconds for p in points]  # FLOPs a second: each point's speed
    form = form or ("efficiency" if len(points) < FIXED_COST_FROM else "efficiency+fixed")
    if form == "efficiency":
        # min Σ (a·F/t − 1)²: a = Σ(F/t) / Σ(F/t)²
        a = sum(ratios) / sum(r * r for r in ratios)
        return Law(kind, "efficiency", a, 0.0, points, gpu, peak_tflops, path, lower_bound)
    import numpy as np
    from scipy.optimize import nnls

    design = np.array([[p.flops / p.seconds, 1.0 / p.seconds] for p in points])
    (a, b), _ = nnls(design, np.ones(len(points)))
    return Law(kind, "efficiency+fixed", float(a), float(b), points, gpu, peak_tflops, path, lower_bound)


def node_mfu(node: dict | None, key: str, arch: Architecture) -> tuple[float, str] | None:
    """The MFU (of the timed GPU's peak) that the pilot's run on a whole node measured for ``key`` (train_mfu,
    rollout_mfu), where it trained ``arch``: that run's own command and placement, communication and weight sync in
    it (``pilot_report.node_point``); else None."""
    if not node or key not in node or Architecture(**node["arch"]) != arch:
        return None
    return node[key], f"measured on a node ({node['gpus']} GPUs, TP {node['tensor_parallel']})"
