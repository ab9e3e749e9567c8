"""Paper-scale data: hub dataset snapshots turned into verl parquet.

Each *part* of the config reads one source's files and becomes verl rows
(``data_source``, ``prompt``, ``ability``, ``reward_model``, ``extra_info``), the
format the mini data already uses. ``qa`` sources get the paper's prompt
template; sources already in verl's format keep their own prompt. Code rows
carry their tests in ``reward_model.ground_truth`` with the test style in
``reward_model.style`` (``code:stdio``, ``code:asserts``, ``code:pytest``), which
the grader dispatches on.

A part reads only the fields it uses (some sources carry gigabytes of model
outputs beside the questions), keeps only the rows its ``where`` allows, and
``check_source`` holds a downloaded snapshot against the parts' globs and fields
from file listings and schemas alone, before anything is built.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..core import atomic, logs
from ..core.formats import VERL_COLUMNS, DataError


def part_files(root: str | Path, pattern: str) -> list[Path]:
    """The files under ``root`` matching ``pattern``, without the hub client's own cache."""
    root = Path(root)
    return sorted(p for p in root.glob(pattern) if p.is_file() and ".cache" not in p.relative_to(root).parts)


def _no_match(root: Path, pattern: str) -> str:
    present = sorted(str(p.relative_to(root)) for p in part_files(root, "**/*"))[:20]
    return f"no file under {root} matches {pattern!r}; files there include {present}"


def part_columns(part: dict) -> list[str]:
    """The fields a part reads: a verl row's prompt and reward (and ability when it filters on
    it), or a question and an answer; and the fields its ``where`` filters on."""
    if part["format"] == "verl":
        used = ["prompt", "reward_model"] + (["ability"] if "ability" in part else [])
    else:
        used = [part["question"], part["answer"]]
    return list(dict.fromkeys(used + list(part.get("where", {}))))


def file_fields(path: Path) -> list[str]:
    """A file's field names from its parquet schema or its first JSON record, reading nothing more."""
    try:
        if path.suffix == ".parquet":
            return list(pq.read_schema(path).names)
        if path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as lines:
                first = next((line for line in lines if line.strip()), "{}")
            return list(json.loads(first))
        if path.suffix == ".json":
            records = json.loads(path.read_text(encoding="utf-8"))
            first = records[0] if isinstance(records, list) and records else records
            return list(first) if isinstance(first, dict) else []
    except Exception as exc:  # a truncated file, a Git LFS pointer, foreign bytes
        raise DataError(f"{path}: not a readable {path.suffix} file ({type(exc).__name__}: {exc})") from exc
    raise DataError(f"{path}: cannot read a {path.suffix!r} file (parquet, jsonl or json expected)")


def check_source(source_dir: str | Path, parts: dict) -> list[str]:
    """One message per mismatch between a downloaded source and the parts that read it (a glob
    matching nothing, an unreadable file, a field a part uses missing); empty when all is well.

    Only file listings, parquet schemas and first JSON records are read, so this runs in
    seconds as soon as a source is downloaded."""
    root = Path(source_dir)
    if not root.is_dir():
        return [f"source {root}: not downloaded (no such directory)"]
    problems = []
    for name, part in parts.items():
        files = part_files(root, part["files"])
        if not files:
            problems.append(f"part {name}: {_no_match(root, part['files'])}")
        lacking: dict[str, list[tuple[Path, list[str]]]] = {}
        for path in files:
            try:
                fields = file_fields(path)
            except DataError as exc:
                problems.append(f"part {name}: {exc}")
                continue
            for column in part_columns(part):
                if column not in fields:
                    lacking.setdefault(column, []).append((path, fields))
        # Shards of one split share a schema: one message per missing field, not per shard.
        for column, [(path, fields), *more] in lacking.items():
            also = f" and {len(more)} more of its files" if more else ""
            problems.append(f"part {name}: no field {column!r} in {path}{also} (fields: {fields})")
    return problems


def verify_source(source_dir: str | Path, parts: dict) -> None:
    """``check_source``, raising a ``DataError`` that lists every problem."""
    problems = check_source(source_dir, parts)
    if problems:
        listed = "\n".join(f"- {p}" for p in problems)
        raise DataError(f"{source_dir}: the configured parts do not fit this source:\n{listed}")


def read_files(root: str | Path, pattern: str, columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of the parquet / JSON-lines / JSON files under ``root`` matching ``pattern``;
    only ``columns`` when given (parquet reads no other column from disk)."""
    root = Path(root)
    files = part_files(root, pattern)
    if not files:
        raise DataError(_no_match(root, pattern))
    frames = []
    for path in files:
        if path.suffix == ".parquet":
            try:
                frame = pd.read_parquet(path, columns=columns)
            except Exception as exc:  # pyarrow's errors for a truncated, empty or foreign file
                raise DataError(f"{path}: not a readable parquet file ({type(exc).__name__}: {exc})") from exc
        elif path.suffix in (".jsonl", ".json"):
            # dtype=False: answers stay the text their authors wrote ("0123" is not 123.0).
            frame = pd.read_json(path, lines=path.suffix == ".jsonl", dtype=False)
            frame = frame if columns is None else frame[columns]
        else:
            raise DataError(f"{path}: cannot read a {path.suffix!r} file (parquet, jsonl or json expected)")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def keep_rows(frame: pd.DataFrame, part: dict, name: str) -> pd.DataFrame:
    """The rows a part keeps: those whose ``where`` fields hold an allowed value and, for verl
    sources, whose ability is the part's. Applied before any holdout, so held-out sizes count kept rows."""
    for column, allowed in part.get("where", {}).items():
        kept = frame[frame[column].isin(allowed)]
        if kept.empty:
            seen = sorted({str(v) for v in frame[column].head(10_000)})[:10]
            raise DataError(f"part {name}: no row has {column} in {allowed}; values there include {seen}")
        frame = kept
    if part["format"] == "verl" and "ability" in part:
        frame = frame[frame["ability"].astype(str).str.lower() == part["ability"].lower()]
    return frame.reset_index(drop=True)


def holdout(frame: pd.DataFrame, size: int, keep: str, seed: int) -> pd.DataFrame:
    """A fixed random split: the same ``size`` rows are the held-out part for ``holdout`` and ``rest``."""
    order = np.random.default_rng(seed).permutation(len(frame))
    chosen = order[:size] if keep == "holdout" else order[size:]
    return frame.iloc[np.sort(chosen)].reset_index(drop=True)


def _answer(value, after: str | None, tests: bool) -> str:
    """The ground truth as text: a list of tests stays whole (JSON); of a list of
    equivalent final answers (OlympiadBench) the first is the reference."""
    if isinstance(value, (list, tuple, np.ndarray)):
        value = list(value)
        if tests:
            return json.dumps(value)
        if not value:
            raise DataError("an empty answer list")
        value = value[0]
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)  # AMC's answers are stored as float64: 142.0 is the answer "142"
    text = str(value)
    if after is not None:
        if after not in text:
            raise DataError(f"answer {text[:80]!r} has no {after!r} marker")
        text = text.rsplit(after, 1)[1]
    return text.strip()


def _field(row, name: str, part_name: str):
    # A JSON-lines record without the key reads as NaN, a parquet null as None.
    if name not in row or row[name] is None or (isinstance(row[name], float) and np.isnan(row[name])):
        raise DataError(f"part {part_name}: a row has no field {name!r} (fields: {sorted(row.keys())})")
    return row[name]


def part_rows(
    frame: pd.DataFrame, part: dict, name: str, templates: dict, seed: int, data_source: str | None = None
) -> pd.DataFrame:
    """verl rows for one config part; ``data_source`` names the benchmark (or the part when training)."""
    frame = keep_rows(frame, part, name)
    if "holdout" in part:
        frame = holdout(frame, part["holdout"]["size"], part["holdout"]["keep"], seed)
    ability = "code" if "tests" in part else "math"
    style = f"code:{part['tests']}" if "tests" in part else "rule"
    source = data_source or name
    rows = []
    for i, row in enumerate(frame.to_dict("records")):
        if part["format"] == "verl":
            prompt = [dict(m) for m in _field(row, "prompt", name)]
            gold = _field(row, "reward_model", name)["ground_truth"]
            gold = gold if isinstance(gold, str) else json.dumps(gold.tolist() if hasattr(gold, "tolist") else gold)
            question = prompt[-1]["content"]
        else:
            question = str(_field(row, part["question"], name))
            gold = _answer(_field(row, part["answer"], name), part.get("answer_after"), ability == "code")
            prompt = [{"role": "user", "content": templates[ability].format(question=question)}]
        rows.append(
            {
                "data_source": source,
                "prompt": prompt,
                "ability": ability,
                "reward_model": {"style": style, "ground_truth": gold},
                "extra_info": {
                    "split": part.get("holdout", {}).get("keep", "all"),
                    "index": i,
                    "part": name,
                    "question": question,
                    "style": style,
                },
            }
        )
    if not rows:
        raise DataError(f"part {name}: no rows left (check its files, its ability and where filters)")
    return pd.DataFrame(rows, columns=VERL_COLUMNS)


def build_part(
    source_dir: str | Path, part: dict, name: str, templates: dict, seed: int, data_source: str | None = None
) -> pd.DataFrame:
    verify_source(source_dir, {name: part})  # a wrong glob or field fails here, naming what is there
    frame = read_files(source_dir, part["files"], part_columns(part))
    return part_rows(frame, part, name, templates, seed, data_source)


def shuffle(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


# ---- the data rules' jobs ---------------------------------------------------------------------------


def check_source_main(snakemake) -> None:
    """A downloaded dataset source against the parts that read it (rule check_source): every mismatch, one line
    each; the download is kept."""
    log = logs.setup(snakemake.log[0])
    parts, source = snakemake.params.parts, snakemake.wildcards.source
    problems = check_source(snakemake.input.source, parts)
    for p in problems:
        log.error("%s", p)
    if problems:
        sys.exit(
            f"source {source} does not match its parts in config.yaml (the download is kept):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    atomic.write_text(snakemake.output[0], f"{', '.join(sorted(parts))}: files and fields as configured\n")
    log.info("source %s matches parts %s", source, sorted(parts))


def prepare_benchmark_main(snakemake) -> None:
    """One benchmark as verl parquet, its data_source named for it (rule prepare_benchmark)."""
    log = logs.setup(snakemake.log[0])
    p, name = snakemake.params, snakemake.wildcards.benchmark
    frame = build_part(snakemake.input.source, p.part, p.part_name, p.templates, p.seed, data_source=name)
    atomic.to_parquet(frame, snakemake.output[0])
    log.info("%s: %d problems", name, len(frame))


def build_train_set(sources: dict[str, str], parts: dict, templates: dict, seed: int, log) -> pd.DataFrame:
    """An RL training set: each of ``parts`` built from its source's directory (``sources``, by source name),
    shuffled together."""
    frames = []
    for name, part in parts.items():
        frame = build_part(sources[part["source"]], part, name, templates, seed)
        log.info("%s: %d rows", name, len(frame))
        frames.append(frame)
    return shuffle(pd.concat(frames, ignore_index=True), seed)


def prepare_train_set_main(snakemake) -> None:
    """Rule prepare_train_set: the training set from its sources' directories, the rule's ``sources`` input (each a
    source's directory, named by the source)."""
    log = logs.setup(snakemake.log[0])
    p = snakemake.params
    sources = {Path(path).name: path for path in snakemake.input.sources}
    atomic.to_parquet(build_train_set(sources, p.parts, p.templates, p.seed, log), snakemake.output[0])


def validation_set_main(snakemake) -> None:
    """Every benchmark in one file (rule validation_set): verl validates on it every val_every steps."""
    log = logs.setup(snakemake.log[0])
    frame = pd.concat([pd.read_parquet(path) for path in snakemake.input.benchmarks], ignore_index=True)
    atomic.to_parquet(frame, snakemake.output[0])
    log.info("%d rows from %d files", len(frame), len(snakemake.input.benchmarks))
