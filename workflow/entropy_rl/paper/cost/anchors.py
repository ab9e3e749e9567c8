"""Published measurements of whole RL steps, each with its source and hardware, to hold the GPU-hours estimate against
what other runs of this kind actually took.

Each anchor is a GRPO step of a dense model whose step time, GPU count, batch and mean lengths are all published, so
its FLOPs can be counted the way ``budget.train_gpu_hours`` counts ours: its architecture's FLOPs (``architectures``)
for each pass the system really runs, over the GPU-seconds at the GPU's dense bf16 peak: a whole-step MFU. NeMo RL's
GRPO runs, every step and unconditionally, generation, the policy's log-probs, the reference policy's log-probs and
one training pass over each sample (``nemo_rl/algorithms/grpo.py`` at v0.5.0, lines 1336-1352: ``get_logprobs``,
``get_reference_policy_logprobs``, ``policy.train``; the recipes' ``reference_policy_kl_penalty: 0.01``,
``examples/configs/grpo_math_1B.yaml`` line 39): two forwards and a forward-and-backward a trained token. Against
each, the step time the budget's own MFUs would give it (``budget_step_s``). Runs whose published numbers lack the
mean response length (verl's DAPO on H20, SimpleRL-Zoo's wall-clock) cannot be counted so and are not here.

The step time the budget would give an anchor is counted like for like: its passes at the budget's update MFU of the
anchor's own GPU's peak, and its generation by its decoding roofline on that GPU (its peak and memory bandwidth, the
engine's room at the anchor's generation tensor-parallel size, ``decode``) at the budget's rollout efficiency. The
efficiencies, fractions, are carried to the anchor's GPU as they are; the roofline is that GPU's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import decode
from .architectures import Architecture
from .gpus import PEAK_TFLOPS

NEMO = "NVIDIA-NeMo/RL docs/about/performance-summary.md"
# Each published model's config.json (verbatim copies in citsjtu2020/LLM-Prof sglang/Model_Config.md @8434c8d).
QWEN3_32B = Architecture(
    hidden=5120, intermediate=25600, layers=64, heads=64, kv_heads=8, head_dim=128, vocab=151936, tied=False
)
LLAMA31_8B = Architecture(
    hidden=4096, intermediate=14336, layers=32, heads=32, kv_heads=8, head_dim=128, vocab=128256, tied=False
)


@dataclass(frozen=True)
class Anchor:
    source: str  # where the numbers are published: path, release and commit
    model: str
    params_b: float  # the model's parameters (its config's count)
    arch: Architecture
    hardware: str  # a key of PEAK_TFLOPS
    gpus: int
    step_s: float  # seconds a step
    samples: int  # responses generated and trained on a step
    mean_response: float  # generated tokens a response ("G-Average Seq len")
    tokens_per_s_per_gpu: float  # prompt + response tokens a second a GPU, as published
    quote: str  # the published row
    generation_tp: int  # the generation's tensor-parallel size (the row's "[TP,PP]" generation column)
    forwards: int = 5  # forward passes' worth a trained token: policy log-probs, reference log-probs, training (3)

    @property
    def mean_prompt(self) -> float:
        """The mean prompt length the published throughput implies (total tokens a step over samples, less the mean
        response)."""
        return self.tokens_per_s_per_gpu * self.step_s * self.gpus / self.samples - self.mean_response

    def step_flops(self) -> tuple[float, float]:
        """A step's FLOPs: generation (decoding each response token after the prompt and half the response), and the
        passes over every trained token."""
        sequence = self.mean_prompt + self.mean_response
        generation = self.samples * self.mean_response * self.arch.decode(self.mean_prompt + self.mean_response / 2)
        return generation, self.samples * sequence * self.forwards * self.arch.forward(sequence)

    def step_mfu(self) -> float:
        """FLOPs a step by this workflow's count over the step's GPU-seconds at the hardware's peak."""
        return sum(self.step_flops()) / (self.step_s * self.gpus * PEAK_TFLOPS[self.hardware] * 1e12)

    def budget_step_s(self, budget: dict) -> float:
        """The step's seconds by the budget's estimate on this anchor's GPU: its passes at the budget's update MFU of
        that GPU's peak, its generation at the budget's rollout efficiency of that GPU's decoding roofline."""
        _, trained = self.step_flops()
        peak = PEAK_TFLOPS[self.hardware] * 1e12
        engine = decode.ROLLOUT_ENGINE.at(self.generation_tp)
        roof = decode.roofline(
            self.arch, self.mean_prompt, self.mean_response, engine, self.hardware, PEAK_TFLOPS[self.hardware]
        )
        generation = self.samples * self.mean_response * roof.seconds / budget["rollout_mfu"]
        return (generation + trained / (peak * budget["train_mfu"])) / self.gpus

    def implied_rollout(self, budget: dict) -> float | None:
        """The fraction of its decoding roofline the anchor's generation reached if its passes ran at the budget's
        update MFU: the roofline's GPU-seconds over the step's GPU-seconds the update leaves (None if it leaves none)."""
        _, trained = self.step_flops()
        left = self.step_s * self.gpus - trained / (PEAK_TFLOPS[self.hardware] * 1e12 * budget["train_mfu"])
        roof = decode.roofline(
            self.arch,
            self.mean_prompt,
            self.mean_response,
            decode.ROLLOUT_ENGINE.at(self.generation_tp),
            self.hardware,
            PEAK_TFLOPS[self.hardware],
        )
        return self.samples * self.mean_response * roof.seconds / left if left > 0 else None


def _nemo(release: str, commit: str, **numbers) -> Anchor:
    return Anchor(source=f"{NEMO}, NeMo RL {release} @{commit[:12]} (DGX-H100, BF16, Megatron, on policy)", **numbers)


V05, V04 = "6c7089300fded94abfa49bb9cbf9eb357d862461", "cff17f83bf30c4f9c757b5fe707b2c32db606411"
ANCHORS = (
    _nemo(
        "v0.5.0",
        V05,
        model="Qwen3-32B",
        params_b=32.8,
        arch=QWEN3_32B,
        hardware="H100",
        gpus=32,
        step_s=376,
        samples=2048,
        mean_response=3251,
        tokens_per_s_per_gpu=571,
        generation_tp=4,
        quote="| GRPO      |Qwen3-32B  |On policy    |4,096                |3,251            |32    |2,048|512  |[4,1]"
        "             |[4,1,1,4,n/a]             |571               | 376|",
    ),
    _nemo(
        "v0.5.0",
        V05,
        model="Llama3.1-8B",
        params_b=8.03,
        arch=LLAMA31_8B,
        hardware="H100",
        gpus=16,
        step_s=92.8,
        samples=2048,
        mean_response=1019,
        tokens_per_s_per_gpu=1581,
        generation_tp=1,
        quote="| GRPO      |LLAMA3.1_8B|On policy    |4,096                |1,019            |16    |2,048|512  |[1,1]"
        "             |[1,1,1,1,1,2,n/a]         |1,581             | 92.8|",
    ),
    # the v0.4 section of the same summary, as first published (the v0.5.0 file replaced it)
    _nemo(
        "v0.4",
        V04,
        model="Qwen3-32B",
        params_b=32.8,
        arch=QWEN3_32B,
        hardware="H100",
        gpus=32,
        step_s=393,
        samples=2048,
        mean_response=3206,
        tokens_per_s_per_gpu=540,
        generation_tp=4,
        quote="|Qwen3-32B  |On policy    |4,096                |3,206            |32    |2,048|512  |[4,1]"
        "             |[4,1,1,4,n/a]             |540               | 393|",
    ),
    _nemo(
        "v0.4",
        V04,
        model="Llama3.1-8B",
        params_b=8.03,
        arch=LLAMA31_8B,
        hardware="H100",
        gpus=16,
        step_s=97.7,
        samples=2048,
        mean_response=1060,
        tokens_per_s_per_gpu=1562,
        generation_tp=1,
        quote="|LLAMA3.1_8B|On policy    |4,096                |1,060            |16    |2,048|512  |[1,1]"
        "             |[1,1,1,1,1,2,n/a]         |1,562             | 97.7|",
    ),
)


def lines(budget: dict) -> list[str]:
    """Each anchor's whole-step MFU, and the step time the budget's MFUs would give it, as Markdown list items."""
    out = [
        f"- this budget, as configured: train MFU {budget['train_mfu']:g} of its GPU's peak ({budget['gpu']}, "
        f"{budget['gpu_peak_tflops']:g} TFLOPS), rollout at {budget['rollout_mfu']:g} of its decoding roofline; on "
        "each anchor's GPU, the same fractions of that GPU's peak and roofline"
    ]

    def implied(a: Anchor) -> str:
        value = a.implied_rollout(budget)
        return (
            "at the budget's update MFU its passes alone would outlast the step"
            if value is None
            else f"with its passes at the budget's update MFU, its generation reached {value:.2f} of its roofline"
        )

    for a in ANCHORS:
        out.append(
            f"- {a.model} on {a.gpus} {a.hardware}: whole-step MFU {a.step_mfu():.3f} ({a.step_s:g} s a step, "
            f"{a.samples} answers of {a.mean_response:,.0f} tokens after {a.mean_prompt:,.0f}-token prompts, "
            f"{a.tokens_per_s_per_gpu:,.0f} tokens/s/GPU; {a.forwards} forwards a trained token); at this "
            f"budget's MFUs the step would take {a.budget_step_s(budget):,.0f} s; {implied(a)}; {a.source}"
        )
    return out
