"""Published measurements of whole RL steps, each with its source and hardware, to hold the GPU-hours estimate against
what other runs of this kind actually took.

Each anchor is a GRPO step of a dense model whose step time, GPU count, batch and mean lengths are all published, so
its FLOPs can be counted the way ``budget.train_gpu_hours`` counts ours (2·N a generated token, 8·N a trained token:
one log-prob pass and one update) and divided by the GPU-seconds at the GPU's dense bf16 peak: a whole-step MFU. The
budget's own whole-step MFU at its configured lengths (``budget_step_mfu``) is then comparable with it. Runs whose
published numbers lack the mean response length (verl's DAPO on H20, SimpleRL-Zoo's wall-clock) cannot be counted so
and are not here.
"""

from __future__ import annotations

from dataclasses import dataclass

# Dense bf16 peaks from the vendors' datasheets (TFLOPS, without sparsity).
PEAK_TFLOPS = {"A100": 312, "H100": 989, "H200": 989}


@dataclass(frozen=True)
class Anchor:
    source: str  # where the numbers are published, and its version
    model: str
    params_b: float  # the model's parameters (its config's count)
    hardware: str  # a key of PEAK_TFLOPS
    gpus: int
    step_s: float  # seconds a step
    samples: int  # responses generated and trained on a step
    mean_response: float  # generated tokens a response
    tokens_per_s_per_gpu: float  # prompt + response tokens a second a GPU, as published
    quote: str  # the published row

    @property
    def mean_prompt(self) -> float:
        """The mean prompt length the published throughput implies (total tokens a step over samples, less the mean
        response)."""
        return self.tokens_per_s_per_gpu * self.step_s * self.gpus / self.samples - self.mean_response

    def step_mfu(self) -> float:
        """FLOPs a step by this workflow's count over the step's GPU-seconds at the hardware's peak."""
        flops = self.params_b * 1e9 * self.samples * (2 * self.mean_response + 8 * (self.mean_prompt + self.mean_response))
        return flops / (self.step_s * self.gpus * PEAK_TFLOPS[self.hardware] * 1e12)


ANCHORS = (
    Anchor(source="NVIDIA NeMo RL 0.5.0, docs/about/performance-summary.md (DGX-H100, BF16, Megatron, on policy)",
           model="Qwen3-32B", params_b=32.8, hardware="H100", gpus=32, step_s=376, samples=2048, mean_response=3251,
           tokens_per_s_per_gpu=571, quote="| GRPO |Qwen3-32B |On policy |4,096 |3,251 |32 |2,048|512 |...|571 | 376|"),
    Anchor(source="NVIDIA NeMo RL 0.5.0, docs/about/performance-summary.md (DGX-H100, BF16, Megatron, on policy)",
           model="Llama3.1-8B", params_b=8.03, hardware="H100", gpus=16, step_s=92.8, samples=2048, mean_response=1019,
           tokens_per_s_per_gpu=1581, quote="| GRPO |Llama3.1-8B |On policy |4,096 |1,019 |16 |2,048|512 |...|1,581 | 92.8|"),
)  # fmt: skip


def budget_step_mfu(budget: dict) -> float:
    """The whole-step MFU the budget assumes at its mean lengths (one PPO epoch): the same FLOPs over the time its
    rollout and train MFUs give them."""
    prompt, response = budget["mean_prompt_tokens"], budget["mean_response_tokens"]
    flops = 2 * response + 8 * (prompt + response)
    return flops / (2 * response / budget["rollout_mfu"] + 8 * (prompt + response) / budget["train_mfu"])


def lines(budget: dict) -> list[str]:
    """Each anchor's whole-step MFU beside the budget's, as Markdown list items."""
    own = budget_step_mfu(budget)
    out = [f"- this budget, as configured: {own:.3f} of its GPU's peak ({budget['gpu_peak_tflops']:g} TFLOPS), "
           f"from train MFU {budget['train_mfu']:g} and rollout MFU {budget['rollout_mfu']:g} at "
           f"{budget['mean_prompt_tokens']} + {budget['mean_response_tokens']} tokens"]  # fmt: skip
    for a in ANCHORS:
        out.append(f"- {a.model} on {a.gpus} {a.hardware}: {a.step_mfu():.3f} ({a.step_s:g} s a step, {a.samples} "
                   f"answers of {a.mean_response:,.0f} tokens, {a.tokens_per_s_per_gpu:,.0f} tokens/s/GPU; "
                   f"{a.source})")  # fmt: skip
    return out
