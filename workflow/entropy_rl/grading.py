"""Answer grading with math-verify, shared by the RL reward and evaluation.

math-verify enforces its time limits with ``signal.alarm``, which only works in
a process's main thread, so grading runs synchronously in the caller's main
thread; a timed-out or unparsable answer scores 0.
"""

from __future__ import annotations

from functools import lru_cache

from math_verify import parse, verify


@lru_cache(maxsize=1 << 16)
def _parsed_gold(gold: str):
    return parse(gold)


@lru_cache(maxsize=1 << 16)
def is_correct(gold: str, response: str) -> bool:
    """True when ``response`` states an answer math-verify finds equal to ``gold``.

    Order matters for math-verify: the gold answer comes first.
    """
    try:
        pred = parse(response)
        return bool(pred) and bool(verify(_parsed_gold(gold), pred))
    except BaseException as exc:  # math-verify's TimeoutException derives from BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return False


def extract_answer(response: str) -> str:
    """The answer string math-verify extracts from a response ('' when none)."""
    try:
        pred = parse(response)
    except Exception:
        return ""
    return str(pred[-1]) if pred else ""


def score(golds: list[str], responses: list[str]) -> list[float]:
    return [1.0 if is_correct(g, r) else 0.0 for g, r in zip(golds, responses)]
