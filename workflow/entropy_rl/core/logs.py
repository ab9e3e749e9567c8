"""Job set-up shared by the rule scripts: logging into the rule's log file and CPU threads."""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings


def setup(log_path: str, threads: int = 1) -> logging.Logger:
    """Send logging, warnings and stray prints to ``log_path``; pin torch to the job's threads if the
    job loaded it (a job that has no use for torch, a download or a figure, never imports it)."""
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    stream = open(log_path, "a", buffering=1)
    sys.stdout = sys.stderr = stream
    logging.basicConfig(stream=stream, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", force=True)
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    for noisy in ("httpx", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(max(1, threads))
    return logging.getLogger("entropy_rl")


def log_throughput(log: logging.Logger, generated_tokens: int, seconds: float) -> None:
    """One line a job's log ends its generation with, which the GPU pilot's report reads (paper.pilot_report): the
    tokens generated, the seconds it took, and the GPU memory in use on this job's device then (the engines' too:
    torch's device-wide free/total count every process), when torch has a GPU."""
    used = total = None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        free, whole = torch.cuda.mem_get_info()
        used, total = round((whole - free) / 2**30, 2), round(whole / 2**30, 2)
    record = {"generated_tokens": int(generated_tokens), "seconds": round(float(seconds), 3), "gpu_memory_used_gb": used,
              "gpu_memory_total_gb": total}  # fmt: skip
    log.info("throughput: %s", json.dumps(record))
