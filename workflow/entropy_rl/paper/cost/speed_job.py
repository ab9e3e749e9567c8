"""The pilot_speed rule's job: the update's and the rollout's speed at each size of paper.pilot.speed on one GPU
(``speed.measure``), each size's probes in processes of their own (verl's platform picked afresh, the device emptied
between sizes), their output on this job's stdout, which is its log."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ...core import atomic, logs, paths
from ...core.scale import build
from .. import launch
from . import speed


def main(snakemake) -> None:
    log = logs.setup(snakemake.log[0], engines=True)
    scale, out = build("paper", snakemake.params.scope), snakemake.output[0]
    work = Path(out).parent / "speed"
    sizes = ", ".join(scale.config["pilot"]["speed"]["sizes"])
    log.info("speed: %s, each size's update and rollout in processes of their own", sizes)
    root = str(Path(paths.RESULTS).resolve())
    env = launch.verl_env(dict(os.environ))
    result = speed.measure(scale, root, snakemake.input.tokenizer, work.resolve(), sys.executable, env)
    for row in speed.table(result):
        log.info("speed: %s", " | ".join(f"{h}: {v}" for h, v in zip(speed.HEADER, row)))
    atomic.write_text(out, json.dumps(result, indent=2) + "\n")
