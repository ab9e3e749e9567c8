"""Paper-scale data preparation on small snapshots laid out like the hub's (no hub here)."""

import json

import pandas as pd
import pytest
import yaml

from entropy_rl import paper_data
from test_config import ROOT

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
TEMPLATES = PAPER["data"]["prompt_templates"]


def snapshot(tmp_path, name, rel, rows):
    path = tmp_path / name / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows)
    if rel.endswith(".jsonl"):
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    return tmp_path / name


def test_gsm8k_answers_keep_the_text_after_the_marker(tmp_path):
    src = snapshot(tmp_path, "gsm8k", "main/train-00000-of-00001.parquet",
                   [{"question": "Tom has 3 apples and buys 4. How many?", "answer": "3+4=<<3+4=7>>7\n#### 7"}])  # fmt: skip
    frame = paper_data.build_part(src, PAPER["data"]["parts"]["gsm8k-train"], "gsm8k-train", TEMPLATES, 0)
    row = frame.iloc[0]
    assert row["reward_model"] == {"style": "rule", "ground_truth": "7"}
    assert row["prompt"][0]["content"].startswith("Tom has 3 apples") and "\\boxed{Your answer}" in row["prompt"][0]["content"]
    assert row["ability"] == "math" and list(frame.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]


def test_verl_format_sources_keep_their_prompt_and_filter_by_ability(tmp_path):
    rows = [
        {"data_source": "numina", "prompt": [{"role": "system", "content": "sys"}, {"role": "user", "content": "1+1?"}],
         "ability": "math", "reward_model": {"style": "rule", "ground_truth": "2"}},
        {"data_source": "apps", "prompt": [{"role": "user", "content": "print 2"}], "ability": "code",
         "reward_model": {"style": "rule", "ground_truth": json.dumps({"inputs": [""], "outputs": ["2"]})}},
    ]  # fmt: skip
    src = snapshot(tmp_path, "eurus2-rl", "train.parquet", rows)
    math = paper_data.build_part(src, PAPER["data"]["parts"]["eurus2-math-train"], "eurus2-math-train", TEMPLATES, 0)
    code = paper_data.build_part(src, PAPER["data"]["parts"]["eurus2-code-train"], "eurus2-code-train", TEMPLATES, 0)
    assert len(math) == len(code) == 1
    assert [m["content"] for m in math.iloc[0]["prompt"]] == ["sys", "1+1?"]  # the authors' prompt, untouched
    assert code.iloc[0]["reward_model"]["style"] == "code:stdio" and code.iloc[0]["extra_info"]["style"] == "code:stdio"


def test_benchmark_rows_are_named_for_the_benchmark_and_lists_of_answers_keep_the_first(tmp_path):
    src = snapshot(tmp_path, "olympiad", "OE_TO_maths_en_COMP/train-00000.parquet",
                   [{"question": "Find x.", "final_answer": ["$3$"]}, {"question": "Find y.", "final_answer": ["$1$", "$-1$"]}])  # fmt: skip
    frame = paper_data.build_part(src, PAPER["data"]["parts"]["olympiad"], "olympiad", TEMPLATES, 0, data_source="olympiad")
    assert list(frame["data_source"]) == ["olympiad", "olympiad"]
    assert [g["ground_truth"] for g in frame["reward_model"]] == ["$3$", "$1$"]


def test_code_asserts_stay_a_list_and_kodcode_holdout_is_disjoint(tmp_path):
    ace = snapshot(tmp_path, "acecode", "data/train-0.parquet", [{"question": "Write add(a, b).", "test_cases": ["assert add(1, 2) == 3"]}])
    frame = paper_data.build_part(ace, PAPER["data"]["parts"]["acecode-train"], "acecode-train", TEMPLATES, 0)
    assert json.loads(frame.iloc[0]["reward_model"]["ground_truth"]) == ["assert add(1, 2) == 3"]
    assert "```python" in frame.iloc[0]["prompt"][0]["content"]
    kod = snapshot(tmp_path, "kodcode", "data/train-0.parquet", [{"question": f"q{i}", "test": f"def test_{i}(): pass"} for i in range(600)])
    train = paper_data.build_part(kod, PAPER["data"]["parts"]["kodcode-train"], "kodcode-train", TEMPLATES, 0)
    test = paper_data.build_part(kod, PAPER["data"]["parts"]["kodcode-test"], "kodcode-test", TEMPLATES, 0)
    questions = lambda f: {e["question"] for e in f["extra_info"]}  # noqa: E731
    assert len(test) == 500 and len(train) == 100 and not questions(train) & questions(test)


def test_missing_files_and_fields_fail_with_what_is_there(tmp_path):
    src = snapshot(tmp_path, "math500", "test.jsonl", [{"problem": "1+1", "solution": "2"}])
    with pytest.raises(paper_data.DataError, match="no field 'answer'"):
        paper_data.build_part(src, PAPER["data"]["parts"]["math500"], "math500", TEMPLATES, 0)
    with pytest.raises(paper_data.DataError, match=r"no file under .* matches .*test\.jsonl"):
        paper_data.build_part(src, PAPER["data"]["parts"]["aime2024"], "aime2024", TEMPLATES, 0)
