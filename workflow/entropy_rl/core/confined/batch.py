"""``run_many``'s batches: the jobs of one sandbox written for its harness (core/confined/harness.py), the harness
started, and its records read back as each program's ``Result`` (the sandbox module's docstring says how)."""

from __future__ import annotations

import functools
import json
import subprocess
import tempfile

from . import confine as confine_code
from . import harness as harness_code
from . import processes as processes_code
from .box import Result, _confined_text, _kill, _sandbox, _status, isolation


def _batch(
    jobs: list[tuple[str, str]], limits: dict, namespaces: bool, landlock: bool
) -> tuple[list[Result], bool, str]:
    """Run `jobs` in one sandbox under the harness.

    Returns (the results it reported, which are the first ones of `jobs`; whether it had begun
    the next job when it stopped; its own stderr, for diagnosis).
    """
    policy = {k: v for k, v in limits.items() if k != "max_output_bytes"}
    with (
        _sandbox(namespaces, landlock) as box,
        tempfile.TemporaryFile() as spec,  # unlinked files: only their descriptors reach them
        tempfile.TemporaryFile() as results,
        tempfile.TemporaryFile() as log,
    ):
        index = []
        for program, stdin in jobs:
            index.append([[spec.tell(), spec.write(program.encode())], [spec.tell(), spec.write(stdin.encode())]])
        at = spec.tell()
        size = spec.write(json.dumps(index).encode())
        spec.flush()
        cfg = {
            "program": "main.py",
            **box.policy(**policy),
            "jobs": [spec.fileno(), at, size],
            "results": results.fileno(),
            "timeout": limits["timeout_s"],
            "cap": limits["max_output_bytes"],
        }
        fds = (spec.fileno(), results.fileno())
        proc = box.spawn(_harness_code(), cfg, subprocess.DEVNULL, subprocess.DEVNULL, log, pass_fds=fds)
        budget = 10 + len(jobs) * (limits["timeout_s"] + 3)  # start-up, then each program's time and clean-up bound
        try:
            proc.wait(budget)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _kill(proc)
        results.seek(0)
        log.seek(0)
        records, log_text = results.read(), log.read().decode("utf-8", "replace")
    iso = isolation(namespaces, landlock, batch=True)
    done, begun, streams = [], set(), {}
    for kind, job, payload in _records(records):
        if kind == b"B":
            begun.add(job)
        elif kind == b"R":
            r, (out, err) = json.loads(payload), streams.pop(job, (b"", b""))
            out, err = (bytes(b).decode("utf-8", "replace") for b in (out, err))
            done.append(Result(_status(r["rc"]), r["rc"], out, err, r["wall"], r["truncated"], iso, proc.pid))
        else:
            streams.setdefault(job, (bytearray(), bytearray()))[kind == b"E"].extend(payload)  # O: stdout, E: stderr
    return done, len(done) in begun, log_text


def _records(data: bytes):
    """The harness's records (kind, job, payload). One cut short (the harness died writing it) ends them."""
    pos = 0
    while (eol := data.find(b"\n", pos)) >= 0:
        kind, job, size = data[pos:eol].split()
        start, pos = eol + 1, eol + 1 + int(size)
        if pos > len(data):
            return
        yield kind, int(job), data[start:pos]


@functools.cache
def _harness_code() -> str:
    """The harness's source: the shared confinement, the host helpers it reuses, then its own loop and exit."""
    return _confined_text(confine_code, processes_code, harness_code)
