"""Throughput of the code sandbox on tiny stdin/stdout programs, as a code reward grades them.

Times ``sandbox.run`` (a fresh sandboxed interpreter per program) and ``sandbox.run_many``
(one sandbox per batch, one forked child per program) on ``x=int(input())`` programs with
stdin "5\\n", checks every answer, and prints programs per second, milliseconds per program
and the layers in force. Run from the repository root:

    python benchmarks/sandbox_throughput.py [--run 50] [--many 1000] [--layers all|netns-only|landlock+audit-hook|audit-hook-only]
"""

import argparse
import time

from entropy_rl.core.confined import sandbox

LAYERS = {
    "all": {},
    "netns-only": {"landlock": False},
    "landlock+audit-hook": {"namespaces": False},
    "audit-hook-only": {"namespaces": False, "landlock": False},
}


def jobs(n: int) -> list[tuple[str, str]]:
    return [(f"x=int(input())\nprint(x+3-{i % 7})", "5\n") for i in range(n)]


def report(name: str, n: int, seconds: float, results: list[sandbox.Result], expected: list[int]) -> None:
    wrong = sum(r.status != "ok" or r.stdout != f"{e}\n" for r, e in zip(results, expected))
    assert not wrong, f"{name}: {wrong} of {n} programs gave a wrong answer"
    print(f"{name:<9} {n:6d} programs  {n / seconds:8.1f} programs/s  {1000 * seconds / n:7.2f} ms/program")
    print(f"          isolation: {results[0].isolation}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=int, default=50, help="programs for run, one at a time")
    ap.add_argument("--many", type=int, default=1000, help="programs for run_many, in one batch")
    ap.add_argument("--layers", choices=LAYERS, default="all")
    args = ap.parse_args()
    layers = LAYERS[args.layers]
    sandbox.run_many(jobs(2), **layers)  # warm up: find the launcher, probe Landlock

    batch = jobs(args.run)
    t0 = time.perf_counter()
    results = [sandbox.run(p, stdin, **layers) for p, stdin in batch]
    report("run", args.run, time.perf_counter() - t0, results, [8 - i % 7 for i in range(args.run)])

    batch = jobs(args.many)
    t0 = time.perf_counter()
    results = sandbox.run_many(batch, **layers)
    report("run_many", args.many, time.perf_counter() - t0, results, [8 - i % 7 for i in range(args.many)])


if __name__ == "__main__":
    main()
