"""Job set-up shared by the rule scripts: logging into the rule's log file and CPU threads."""

from __future__ import annotations

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
