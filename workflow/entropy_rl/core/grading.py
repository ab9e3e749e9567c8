"""Answer grading with math-verify, shared by the RL reward and evaluation.

math-verify enforces its time limits with ``signal.alarm``, which only works in
a process's main thread; elsewhere it fails on every answer (and scores it 0
without a word). So in the main thread grading runs in place with math-verify's
own limits, and from any other thread (verl's reward workers, thread pools) it
runs in a helper process whose main thread applies those limits, behind a
wall-clock bound that kills the helper if even that stalls. A timed-out or
unparsable answer scores 0; one pathological answer never stalls a batch.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import logging
import multiprocessing
import re
import threading
from functools import lru_cache

from math_verify import parse, verify

TIMEOUT_S = 5  # math-verify's limit for parsing and for comparing one answer
WALL_S = 3 * TIMEOUT_S + 10  # the helper's bound: parse + verify + its start-up
log = logging.getLogger(__name__)
# math-verify logs each timed-out input whole (megabytes for a flood of LaTeX); we log a short line.
logging.getLogger("math_verify").setLevel(logging.ERROR)

# The common case, settled without math-verify: one \boxed{} holding a plain integer, and an integer gold
# answer. math-verify gives these the same answer string and verdict (checked on every graded response of
# a mini study in tests/core/test_grading.py) at a hundredth of the cost; anything else goes to it.
_ONE_BOXED_INTEGER = re.compile(r"[^\\$]*\\boxed\{(-?[0-9]+)\}[^\\$]*")
_INTEGER = re.compile(r"-?[0-9]+")

_worker: concurrent.futures.ProcessPoolExecutor | None = None
_worker_lock = threading.Lock()


@atexit.register
def _stop_worker() -> None:
    """Stop the helper before the interpreter tears down the modules its executor still needs."""
    global _worker
    with _worker_lock:
        if _worker is not None:
            _worker.shutdown(wait=True, cancel_futures=True)
            _worker = None


@lru_cache(maxsize=1 << 16)
def _parsed_gold(gold: str):
    return parse(gold, parsing_timeout=TIMEOUT_S)


def _grade_here(gold: str, response: str) -> bool:
    """Grade in the current (main) thread with math-verify's signal-based limits."""
    try:
        pred = parse(response, parsing_timeout=TIMEOUT_S)
        return bool(pred) and bool(verify(_parsed_gold(gold), pred, timeout_seconds=TIMEOUT_S))
    except BaseException as exc:  # math-verify's TimeoutException derives from BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        log.warning("grading failed (%s), scored 0: %.80r", type(exc).__name__, response)
        return False


def _in_worker(fn, *args, limit_s: float, default):
    """``fn(*args)`` in the helper process's main thread; the helper is killed if it overruns ``limit_s``."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn")
            )
        worker = _worker
    try:
        return worker.submit(fn, *args).result(timeout=limit_s)
    except concurrent.futures.TimeoutError:
        log.warning("grading overran %.0f s, helper killed, scored 0: %.80r", limit_s, args[-1])
        with _worker_lock:
            for proc in list(getattr(worker, "_processes", {}).values()):
                proc.kill()
            worker.shutdown(wait=False, cancel_futures=True)
            if _worker is worker:
                _worker = None
        return default


@lru_cache(maxsize=1 << 16)
def is_correct(gold: str, response: str) -> bool:
    """True when ``response`` states an answer math-verify finds equal to ``gold``.

    Order matters for math-verify: the gold answer comes first.
    """
    boxed = _boxed_integer(response)
    if boxed is not None and _INTEGER.fullmatch(gold.strip()):
        return int(boxed) == int(gold)
    if threading.current_thread() is threading.main_thread():
        return _grade_here(gold, response)
    return _in_worker(_grade_here, gold, response, limit_s=WALL_S, default=False)


def extract_answer(response: str) -> str:
    """The answer string math-verify extracts from a response ('' when none)."""
    boxed = _boxed_integer(response)
    if boxed is not None:
        return boxed
    if threading.current_thread() is not threading.main_thread():
        return _in_worker(extract_answer, response, limit_s=WALL_S, default="")
    try:
        pred = parse(response, parsing_timeout=TIMEOUT_S)
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return ""
    return str(pred[-1]) if pred else ""


def _boxed_integer(response: str) -> str | None:
    """The integer in the response's only ``\\boxed{}``, if that is all the LaTeX it has (else None)."""
    match = _ONE_BOXED_INTEGER.fullmatch(response)
    return match.group(1) if match else None


def score(golds: list[str], responses: list[str]) -> list[float]:
    return [1.0 if is_correct(g, r) else 0.0 for g, r in zip(golds, responses)]
