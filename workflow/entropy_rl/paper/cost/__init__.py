"""What the GPU work costs: the GPU-hours budget and the published anchors it is held against, the pilot's speed by
model size (the update, the rollout, the laws fitted to them), the pilot's report, and the price of rerunning paid
work."""
