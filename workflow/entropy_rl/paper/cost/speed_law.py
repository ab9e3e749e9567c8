"""The speed of the update and of the rollout by model size, fitted to the sizes the pilot measured.

The rule: on one GPU, the seconds a token costs are a part that grows with the parameters and a part that does not,

    t(N) = a·N + b        (a, b ≥ 0, least squares over the measured sizes)

``a·N`` is the weights' matmuls; ``b`` is what every size pays alike at one vocabulary and one sequence length: the
logits, log-softmax and entropy over the vocabulary, attention over the sequence, the kernels' launch and the
optimiser's fixed costs. The sizes the pilot measures share Qwen2.5's vocabulary and the budget's lengths, so ``b`` is
that vocabulary's and those lengths'; the law does not separate the two. The update's MFU at N is then its FLOPs per
token over the time: ``(2 + 6)·N / (t(N)·peak)`` (a log-prob pass and one PPO epoch, as measured), the rollout's
``2·N / (t(N)·peak)``. At a measured size the measured value is used (``measured``), between measured sizes the fit
(``fitted``), outside them the fit carried beyond the data (``extrapolated``), and every number says which.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# FLOPs a token costs per parameter in what each kind times (budget.train_gpu_hours charges the same).
FLOPS_PER_PARAM = {"update": 2 + 6, "rollout": 2}
# A size counts as measured when its N is within this fraction of a measured one (config params_b are rounded).
SAME_SIZE = 0.01


@dataclass(frozen=True)
class Law:
    kind: str  # "update" (log-prob pass + one PPO epoch) or "rollout" (decoding)
    per_param_s: float  # a: seconds a token per parameter, per GPU
    fixed_s: float  # b: seconds a token at any size, per GPU
    measured: dict  # params_b → measured seconds a token (the points fitted)

    def seconds_per_token(self, params_b: float) -> tuple[float, str]:
        """Seconds a token costs one GPU at ``params_b`` billion parameters, and the source: measured, fitted or
        extrapolated."""
        for size, seconds in self.measured.items():
            if abs(float(size) - params_b) <= SAME_SIZE * params_b:
                return float(seconds), "measured"
        sizes = [float(s) for s in self.measured]
        inside = min(sizes) <= params_b <= max(sizes)
        return self.per_param_s * params_b * 1e9 + self.fixed_s, "fitted" if inside else "extrapolated"

    def mfu(self, params_b: float, peak_tflops: float) -> tuple[float, str]:
        """The MFU that reproduces the law's time under the budget's FLOP count, on a GPU of ``peak_tflops``."""
        seconds, source = self.seconds_per_token(params_b)
        return FLOPS_PER_PARAM[self.kind] * params_b * 1e9 / (seconds * peak_tflops * 1e12), source

    def to_dict(self) -> dict:
        return {**asdict(self), "measured": {f"{float(k):g}": v for k, v in self.measured.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> Law:
        return cls(data["kind"], data["per_param_s"], data["fixed_s"], {float(k): v for k, v in data["measured"].items()})

    def describe(self) -> str:
        sizes = ", ".join(f"{float(s):.3g}B" for s in sorted(self.measured, key=float))
        return (f"{self.kind}: t(N) = {self.per_param_s * 1e15:.3g} µs a token per billion parameters × N +"
                f" {self.fixed_s * 1e6:.3g} µs a token, one GPU, fitted to {sizes}")  # fmt: skip


def fit(kind: str, points: dict[float, float]) -> Law:
    """The law through ``points`` (params_b → seconds a token, per GPU): non-negative least squares on ``a·N + b``. One
    size gives no slope: its MFU is held for every size (``b = 0``, time in proportion to N), which errs high above
    it, as small models use a GPU less well than large ones."""
    if kind not in FLOPS_PER_PARAM:
        raise ValueError(f"speed law: kind {kind!r}, not one of {sorted(FLOPS_PER_PARAM)}")
    if not points:
        raise ValueError(f"speed law ({kind}): no measured size to fit")
    sizes = sorted(points)
    if len(sizes) == 1:
        return Law(kind, float(points[sizes[0]]) / (sizes[0] * 1e9), 0.0, {sizes[0]: float(points[sizes[0]])})
    import numpy as np
    from scipy.optimize import nnls

    design = np.array([[s * 1e9, 1.0] for s in sizes])
    # each point weighed by 1/t, so the fit minimises relative error: a small size's time counts as much as a large one's
    target = np.array([points[s] for s in sizes])
    (a, b), _ = nnls(design / target[:, None], np.ones(len(sizes)))
    return Law(kind, float(a), float(b), {s: float(points[s]) for s in sizes})
