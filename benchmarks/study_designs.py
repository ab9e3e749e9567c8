"""Study designs side by side: what each cost and what its audit decided (issue 59's trade table).

    python benchmarks/study_designs.py NAME=STUDY_DIR [NAME=STUDY_DIR ...] [--reference NAME] [--markdown]

Each STUDY_DIR is a finished mini study (a working directory holding .snakemake/log and results/audit/audit.csv).
For each design: its jobs, job-seconds as core-minutes (one job holds one core here), the measured wall time and the
cores it ran on, the schedule simulated on 2 and 8 cores (study_time.simulate), and its audit's verdicts: how many
claims were decided (reproduced or contradicted) and how many left inconclusive. Against the reference design (the
first unless --reference names another): the decisive flips (reproduced <-> contradicted), the moves to or from
inconclusive, and each claim one design leaves inconclusive that the reference decided, with the seeds its own power
calculation says it needs (the audit's seeds_to_reproduce / seeds_to_contradict columns, study.audit.seeds).

The run log read is the study's longest under .snakemake/log (the whole DAG, not a later rerun of one rule).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "workflow")]
import study_time  # noqa: E402
from entropy_rl.core import paths  # noqa: E402
from entropy_rl.study.audit import compare  # noqa: E402
from entropy_rl.study.audit.relations import CONTRADICTED, INCONCLUSIVE, REPRODUCED  # noqa: E402


def study_log(study: Path) -> Path:
    """The study's run log: the one under .snakemake/log that saw the most jobs finish."""
    logs = sorted((study / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        sys.exit(f"{study}: no Snakemake log under .snakemake/log")
    return max(logs, key=lambda p: len(study_time.parse(p.read_text().splitlines())))


def cost(study: Path) -> dict:
    """The design's jobs, core-minutes, measured wall and simulated walls on 2 and 8 cores."""
    lines = study_log(study).read_text().splitlines()
    jobs = study_time.parse(lines)
    wall = (max(j.finished for j in jobs.values()) - min(j.started for j in jobs.values())).total_seconds()
    cores = next((int(m.group(1)) for line in lines if (m := study_time.CORES.match(line))), None)
    return {
        "jobs": len(jobs),
        "core-min": sum(j.seconds * j.threads for j in jobs.values()) / 60,
        "wall min": wall / 60,
        "cores": cores,
        "sim 2 min": study_time.simulate(jobs, 2) / 60,
        "sim 8 min": study_time.simulate(jobs, 8) / 60,
    }


def verdicts(audit: pd.DataFrame) -> dict:
    counts = audit["verdict"].value_counts()
    n = {v: int(counts.get(v, 0)) for v in (REPRODUCED, CONTRADICTED, INCONCLUSIVE)}
    return {"decisive": n[REPRODUCED] + n[CONTRADICTED], **n}


def seeds_needed(row: pd.Series) -> str:
    """The seeds an inconclusive claim needs, by the audit's own power calculation, toward either verdict."""
    need = [
        f"{int(row[c])} to {c.split('_')[-1]}"
        for c in ("seeds_to_reproduce", "seeds_to_contradict")
        if c in row and not (isinstance(row[c], float) and math.isnan(row[c]))
    ]
    return ", ".join(need) or "no estimate"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("designs", nargs="+", metavar="NAME=STUDY_DIR")
    ap.add_argument("--reference", help="the design the others are compared with (default: the first)")
    args = ap.parse_args(argv)
    studies = dict(d.split("=", 1) for d in args.designs)
    ref = args.reference or next(iter(studies))
    audits = {name: pd.read_csv(Path(d) / paths.AUDIT_CSV) for name, d in studies.items()}
    rows, notes = [], []
    for name, d in studies.items():
        row = {"design": name, **cost(Path(d)), **verdicts(audits[name])}
        table = compare.compare(audits[ref], audits[name])
        moved = compare.moves(table)
        row["flips"], row["to/from inconclusive"] = moved[compare.FLIP], moved[compare.INCONCLUSIVE_MOVE]
        rows.append(row)
        if name == ref:
            continue
        own = audits[name].set_index("id")
        for _, t in table[table["move"] != compare.AGREE].iterrows():
            if t["judged"]:
                need = f" (needs {seeds_needed(own.loc[t['id']])})" if t["verdict_b"] == INCONCLUSIVE else ""
                notes.append(f"{name}: {t['id']}: {t['verdict_a']} -> {t['verdict_b']}{need}")
    out = pd.DataFrame(rows).set_index("design")
    counts = [c for c in out.columns if c not in ("core-min", "wall min", "sim 2 min", "sim 8 min")]
    out[counts] = out[counts].astype("Int64")
    print(f"reference: {ref}")
    print(out.to_markdown(floatfmt=".1f"))
    for line in notes:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
