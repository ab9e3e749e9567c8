"""Paper-scale data preparation on small snapshots laid out like the hub's (no hub here).

``HUB`` writes each source as its repository publishes it: the same paths (from the dataset
cards' ``configs`` and file trees) and the same fields, a few rows each, beside the README and
the hub client's ``.cache`` folder a real ``snapshot_download`` leaves.
"""

import json

import pandas as pd
import pytest
import yaml
from entropy_rl.paper import data as paper_data
from support import ROOT

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
PARTS = PAPER["data"]["parts"]
TEMPLATES = PAPER["data"]["prompt_templates"]


def verl_row(question, ability, truth, source="numina_olympiads"):
    return {
        "data_source": source,
        "prompt": [{"role": "system", "content": "sys"}, {"role": "user", "content": question}],
        "ability": ability,
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"index": 0},
    }


def kodcode_row(i, style):
    return {
        "version": "V1",
        "style": style,
        "subset": "Leetcode",
        "question_id": f"Leetcode_{i}_I",
        "question": f"Write f{i}().",
        "solution": f"def f{i}(): pass",
        "test": f"from solution import f{i}\n\ndef test_{i}():\n    f{i}()",
        "test_info": [{"function_name": f"f{i}", "parameter_list": "()"}],
        "gpt_difficulty": "easy",
        "trials": {"trial_gpt4o_0": {"test_code": "x" * 50}},
    }


HUB = {
    "eurus2-rl": {
        "train.parquet": [
            verl_row("1+1?", "math", "2"),
            verl_row("print 2", "code", json.dumps({"inputs": [""], "outputs": ["2"]}), "apps"),
        ],
        "validation.parquet": [
            verl_row("2+2?", "math", "4"),
            verl_row("print 4", "code", json.dumps({"inputs": [""], "outputs": ["4"]}), "taco"),
        ],
    },
    "gsm8k": {
        f"{config}/{split}-00000-of-00001.parquet": [
            {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3+4=<<3+4=7>>7\n#### 7"}
        ]
        for config in ("main", "socratic")
        for split in ("train", "test")
    },
    "dapo-math": {"data/dapo-math-17k.parquet": [verl_row("Find n.", "MATH", "34", "math_dapo")] * 3},
    "acecode": {
        "data/train-00000-of-00001.parquet": [
            {
                "id": "oss_0",
                "source": "oss",
                "question": "Write add(a, b).",
                "test_cases": ["assert add(1, 2) == 3"],
                "inferences": [
                    {
                        "completion": "def add(a, b): return a + b",
                        "completion_id": 0,
                        "model_name": "m",
                        "pass_rate": 1.0,
                    }
                ],
                "context_messages": [{"role": "user", "content": "Write add(a, b)."}],
            }
        ]
    },
    "kodcode": {
        "data/train-00000-of-00002.parquet": [kodcode_row(i, "instruct") for i in range(3)],
        "data/train-00001-of-00002.parquet": [kodcode_row(3, "complete"), kodcode_row(4, "online_judge")],
        "data/use_with_caution-00000-of-00001.parquet": [kodcode_row(5, "instruct")],
    },
    "math500": {
        "test.jsonl": [
            {
                "problem": "Compute 3+4.",
                "solution": "$\\boxed{7}$",
                "answer": "7",
                "subject": "Algebra",
                "level": 1,
                "unique_id": "test/algebra/1.json",
            }
        ]
    },
    "aime2024": {
        "data/train-00000-of-00001.parquet": [
            {"id": 60, "problem": "Find m+n.", "solution": "...", "answer": "204", "url": "u", "year": "2024"}
        ]
    },
    "aime2025": {
        "data/train-00000-of-00001.parquet": [
            {"problem_idx": 1, "problem": "Find the sum.", "answer": 70, "problem_type": ["Number Theory"]}
        ]
    },
    "amc": {"data/train-00000-of-00001.parquet": [{"id": 0, "problem": "What is x?", "answer": 142.0, "url": "u"}]},
    "olympiad": {
        f"OlympiadBench/{config}/{config}.parquet": [
            {
                "id": 1606,
                "question": "Find x.",
                "solution": ["..."],
                "final_answer": ["$3$"],
                "context": None,
                "is_multiple_answer": False,
                "unit": None,
                "answer_type": "Numerical",
                "subfield": "Algebra",
                "subject": "Math",
                "language": "English",
            }
        ]
        for config in ("OE_TO_maths_en_COMP", "OE_TO_maths_zh_COMP", "OE_TO_physics_en_COMP")
    },
    "omni-math": {
        "test.jsonl": [
            {
                "domain": ["Mathematics -> Algebra"],
                "difficulty": 6.5,
                "problem": "Find f.",
                "solution": "...",
                "answer": "f(x)=x",
                "source": "imo",
            }
        ]
    },
    "minerva": {"test.jsonl": [{"question": "What is the energy?", "answer": "1.2e-3"}]},
}


def write(tmp_path, name, files):
    """A source snapshot with ``files`` ({path: rows}), laid out as ``snapshot_download`` leaves it."""
    root = tmp_path / name
    for rel, rows in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".jsonl"):
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # as the hub's files: strings quoted
        else:
            pd.DataFrame(rows).to_parquet(path)
    (root / "README.md").write_text("---\nconfigs: []\n---\n")
    (root / ".cache/huggingface/download").mkdir(parents=True)
    (root / ".cache/huggingface/download/train.parquet.metadata").write_text("x")
    return root


def build(src, name, **kw):
    return paper_data.build_part(src, PARTS[name], name, TEMPLATES, 0, **kw)


def parts_of(source):
    return {name: part for name, part in PARTS.items() if part["source"] == source}


@pytest.mark.parametrize("source", sorted(HUB))
def test_every_part_fits_its_source_as_published(tmp_path, source):
    src = write(tmp_path, source, HUB[source])
    assert paper_data.check_source(src, parts_of(source)) == []
    for name in parts_of(source):
        if "holdout" not in PARTS[name]:  # KodCode's 500-problem holdout is tested below at size
            frame = build(src, name)
            assert len(frame) > 0 and list(frame.columns) == [
                "data_source",
                "prompt",
                "ability",
                "reward_model",
                "extra_info",
            ]
    assert set(PAPER["data"]["sources"]) == set(HUB)  # a new source needs its published layout here


def test_gsm8k_answers_keep_the_text_after_the_marker(tmp_path):
    src = write(tmp_path, "gsm8k", HUB["gsm8k"])
    frame = build(src, "gsm8k-train")
    assert len(frame) == 1  # main/train only: not socratic, not test
    row = frame.iloc[0]
    assert row["reward_model"] == {"style": "rule", "ground_truth": "7"}
    assert (
        row["prompt"][0]["content"].startswith("Tom has 3 apples")
        and "\\boxed{Your answer}" in row["prompt"][0]["content"]
    )
    assert row["ability"] == "math"


def test_verl_format_sources_keep_their_prompt_and_filter_by_ability(tmp_path):
    src = write(tmp_path, "eurus2-rl", HUB["eurus2-rl"])
    math, code = build(src, "eurus2-math-train"), build(src, "eurus2-code-train")
    assert len(math) == len(code) == 1
    assert [m["content"] for m in math.iloc[0]["prompt"]] == ["sys", "1+1?"]  # the authors' prompt, untouched
    assert code.iloc[0]["reward_model"]["style"] == "code:stdio" and code.iloc[0]["extra_info"]["style"] == "code:stdio"
    assert code.iloc[0]["extra_info"]["question"] == "print 2"  # train.parquet, not validation.parquet


def test_eurus2_code_validation_is_the_1024_code_problems_it_holds(tmp_path):
    # The card's statistics: validation.parquet holds 1024 math and 1024 coding problems.
    rows = [verl_row(f"m{i}", "math", "1") for i in range(1024)] + [
        verl_row(f"c{i}", "code", "{}", "apps") for i in range(1024)
    ]
    src = write(tmp_path, "eurus2-rl", {"train.parquet": rows[:1], "validation.parquet": rows})
    frame = build(src, "eurus2-code-test", data_source="eurus2-code")
    assert len(frame) == 1024 == PAPER["data"]["benchmarks"]["eurus2-code"]["size"]
    assert {e["question"][0] for e in frame["extra_info"]} == {"c"}


def test_olympiad_reads_its_config_folder_and_keeps_the_first_listed_answer(tmp_path):
    rows = [
        {
            **HUB["olympiad"]["OlympiadBench/OE_TO_maths_en_COMP/OE_TO_maths_en_COMP.parquet"][0],
            "question": f"Find x{i}.",
        }
        for i in range(674)
    ]
    rows[1]["final_answer"] = ["$1$", "$-1$"]
    src = write(
        tmp_path, "olympiad", {**HUB["olympiad"], "OlympiadBench/OE_TO_maths_en_COMP/OE_TO_maths_en_COMP.parquet": rows}
    )
    frame = build(src, "olympiad", data_source="olympiad")
    assert len(frame) == 674 == PAPER["data"]["benchmarks"]["olympiad"]["size"]  # not the zh or physics configs
    assert set(frame["data_source"]) == {"olympiad"}
    assert [g["ground_truth"] for g in frame["reward_model"][:2]] == ["$3$", "$1$"]


def test_kodcode_keeps_instruct_and_complete_of_the_train_split_and_holds_500_out(tmp_path):
    styles = ["instruct", "complete", "online_judge"]
    files = {
        f"data/train-0000{k}-of-00003.parquet": [kodcode_row(300 * k + i, styles[i % 3]) for i in range(300)]
        for k in range(3)
    }
    files["data/use_with_caution-00000-of-00001.parquet"] = [kodcode_row(1000 + i, "instruct") for i in range(50)]
    src = write(tmp_path, "kodcode", files)
    train, test = build(src, "kodcode-train"), build(src, "kodcode-test", data_source="kodcode")
    questions = lambda f: {e["question"] for e in f["extra_info"]}  # noqa: E731
    kept = {r["question"] for rows in files.values() for r in rows if r["style"] != "online_judge"} - {
        f"Write f{1000 + i}()." for i in range(50)
    }
    assert len(test) == 500 == PAPER["data"]["benchmarks"]["kodcode"]["size"] and len(train) == 100
    assert questions(train) | questions(test) == kept and not questions(train) & questions(test)
    assert (
        test.iloc[0]["reward_model"]["style"] == "code:pytest"
        and "def test_" in test.iloc[0]["reward_model"]["ground_truth"]
    )


def test_where_keeps_only_the_listed_values_and_names_what_is_there(tmp_path):
    part = {**PARTS["aime2024"], "where": {"year": ["2024"]}}
    rows = [
        {**HUB["aime2024"]["data/train-00000-of-00001.parquet"][0], "year": y, "problem": f"p{y}"}
        for y in ("2023", "2024")
    ]
    src = write(tmp_path, "aime2024", {"data/train-00000-of-00001.parquet": rows})
    frame = paper_data.build_part(src, part, "aime2024", TEMPLATES, 0)
    assert [e["question"] for e in frame["extra_info"]] == ["p2024"]
    with pytest.raises(
        paper_data.DataError, match=r"no row has year in \['2022'\]; values there include \['2023', '2024'\]"
    ):
        paper_data.build_part(src, {**part, "where": {"year": ["2022"]}}, "aime2024", TEMPLATES, 0)


def test_answers_stay_the_text_the_authors_wrote(tmp_path):
    # JSON answers that look like numbers stay text; AMC's float64 answers are whole numbers.
    math500 = write(
        tmp_path, "math500", {"test.jsonl": [{"problem": f"p{a}", "answer": a} for a in ("0123", "7", "2.50")]}
    )
    assert [g["ground_truth"] for g in build(math500, "math500")["reward_model"]] == ["0123", "7", "2.50"]
    amc = write(
        tmp_path,
        "amc",
        {
            "data/train-00000-of-00001.parquet": [
                {"id": i, "problem": f"p{i}", "answer": a, "url": "u"} for i, a in enumerate([142.0, 7.0, 2.5])
            ]
        },
    )
    assert [g["ground_truth"] for g in build(amc, "amc")["reward_model"]] == ["142", "7", "2.5"]


@pytest.mark.parametrize(
    "source, name, fields",
    [
        ("acecode", "acecode-train", ["question", "test_cases"]),
        ("kodcode", "kodcode-train", ["question", "test", "style"]),
        ("eurus2-rl", "eurus2-code-train", ["prompt", "reward_model", "ability"]),
    ],
)
def test_only_the_fields_a_part_uses_are_read(tmp_path, monkeypatch, source, name, fields):
    src = write(tmp_path, source, HUB[source])
    requested, read_parquet = [], pd.read_parquet

    def spy(path, *args, **kwargs):
        requested.append(kwargs.get("columns"))
        return read_parquet(path, *args, **kwargs)

    monkeypatch.setattr(pd, "read_parquet", spy)
    if "holdout" in PARTS[name]:
        paper_data.read_files(src, PARTS[name]["files"], paper_data.part_columns(PARTS[name]))
    else:
        build(src, name)
    assert requested and all(columns == fields for columns in requested)  # never AceCode's inferences, KodCode's trials


def test_check_source_names_every_mismatch_from_schemas_alone(tmp_path):
    # KodCode-V1 as an earlier revision published it (fields split and test_code), one shard
    # still a Git LFS pointer; no test.jsonl in the MATH-500 folder.
    old = [{"split": "instruct", "question": "q", "test_code": "def test(): pass"}]
    kod = write(tmp_path, "kodcode", {f"data/train-0000{k}-of-00003.parquet": old for k in range(2)})
    (kod / "data/train-00002-of-00003.parquet").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n"
    )
    problems = paper_data.check_source(kod, parts_of("kodcode"))
    fields = "(fields: ['split', 'question', 'test_code'])"
    assert (
        f"part kodcode-train: no field 'test' in {kod}/data/train-00000-of-00003.parquet and 1 more of its files {fields}"
        in problems
    )
    assert (
        f"part kodcode-test: no field 'style' in {kod}/data/train-00000-of-00003.parquet and 1 more of its files {fields}"
        in problems
    )
    assert any(
        p.startswith(f"part kodcode-train: {kod}/data/train-00002-of-00003.parquet: not a readable .parquet file")
        for p in problems
    )
    assert len(problems) == 6  # test and style missing, one unreadable shard; for each of the two parts

    math500 = write(tmp_path, "math500", {"data/test-00000-of-00001.parquet": [{"problem": "p", "answer": "1"}]})
    assert paper_data.check_source(math500, parts_of("math500")) == [
        f"part math500: no file under {math500} matches 'test.jsonl'; files there include ['README.md', 'data/test-00000-of-00001.parquet']"
    ]
    assert paper_data.check_source(tmp_path / "minerva", parts_of("minerva")) == [
        f"source {tmp_path / 'minerva'}: not downloaded (no such directory)"
    ]
    with pytest.raises(paper_data.DataError) as error:
        paper_data.verify_source(kod, parts_of("kodcode"))
    assert all(p in str(error.value) for p in problems)


def test_missing_files_and_fields_fail_the_build_with_what_is_there(tmp_path):
    src = write(tmp_path, "math500", {"test.jsonl": [{"problem": "1+1", "solution": "2"}]})
    with pytest.raises(
        paper_data.DataError,
        match=r"part math500: no field 'answer' in .*test\.jsonl \(fields: \['problem', 'solution'\]\)",
    ):
        build(src, "math500")
    with pytest.raises(
        paper_data.DataError, match=r"no file under .* matches .*; files there include \['README.md', 'test\.jsonl'\]"
    ):
        build(src, "aime2024")
