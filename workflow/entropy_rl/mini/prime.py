"""PRIME: policy optimisation with implicit process rewards (Cui et al., 2025, arXiv:2502.01456).

The implicit PRM π_φ starts as a copy of the base model. Its token reward is
r_t = β·(log π_φ(y_t) − log π_ref(y_t)); it is trained online on the outcome
labels with the cross-entropy loss on σ(Σ_t r_t). The advantage is RLOO on both
reward sources: the outcome reward with a leave-one-out baseline (verl's RLOO
estimator), plus the return of the process rewards, each token reward minus
the mean token reward of the group's other responses. The sum is whitened over
the batch, as the PRIME recipe does.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from verl.utils.torch_functional import masked_whiten

from ..core.run import Prime
from . import algorithms, generation, models


class ImplicitPRM:
    def __init__(self, model_dir, settings: Prime, reference):
        self.model = models.load(model_dir)[0]
        self.reference = reference
        self.beta = settings.beta
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=settings.lr, weight_decay=0.0)

    def token_rewards(self, batch, temperature: float, grad: bool = False) -> torch.Tensor:
        with torch.set_grad_enabled(grad):
            lp, _ = generation.forward_response(self.model, batch, temperature, with_entropy=False)
        with torch.no_grad():
            ref_lp, _ = generation.forward_response(self.reference, batch, temperature, with_entropy=False)
        return self.beta * (lp - ref_lp) * batch.response_mask

    def update(self, batch, rewards: torch.Tensor, temperature: float) -> float:
        """One cross-entropy step of the PRM on the outcome labels."""
        self.model.train()
        logits = self.token_rewards(batch, temperature, grad=True).sum(dim=1)
        loss = F.binary_cross_entropy_with_logits(logits, rewards.float())
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.model.eval()
        return float(loss.detach())

    def advantages(
        self, batch, rewards: torch.Tensor, group_index: np.ndarray, n: int, temperature: float
    ) -> torch.Tensor:
        self.update(batch, rewards, temperature)
        mask = batch.response_mask.float()
        process = self.token_rewards(batch, temperature)
        # Leave-one-out baseline: mean token reward of the other responses in the group.
        mean_reward = (process.sum(dim=1) / mask.sum(dim=1).clamp(min=1)).view(-1, n)
        baseline = (mean_reward.sum(dim=1, keepdim=True) - mean_reward) / (n - 1)
        shaped = (process - baseline.reshape(-1, 1)) * mask
        process_return = torch.flip(torch.cumsum(torch.flip(shaped, [1]), dim=1), [1]) * mask
        outcome = algorithms.compute_advantages("rloo", rewards, batch.response_mask, group_index)
        return masked_whiten(outcome + process_return, mask) * mask
