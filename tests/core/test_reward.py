"""The shared reward: math through math-verify, code through the sandbox, for every test style;
and the paper-scale evaluator's grading of vLLM outputs."""

import json
import sys
import types
from dataclasses import dataclass

import pandas as pd
from entropy_rl.core import pass_rates, reward
from entropy_rl.core.evaluation import Protocol
from entropy_rl.paper import evaluate

ADD = "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```"
WRONG_ADD = "```python\ndef add(a, b):\n    return a - b\n```"


def test_math_rows_are_graded_by_math_verify():
    assert reward.compute_score("math500", "so the answer is \\boxed{\\frac{1}{2}}", "0.5", {"style": "rule"}) == 1.0
    assert reward.compute_score("math500", "\\boxed{3}", "0.5", None) == 0.0


def test_code_styles_run_against_their_tests():
    asserts = json.dumps(["assert add(1, 2) == 3", "assert add(-1, 1) == 0"])
    assert reward.is_correct("code:asserts", asserts, ADD) and not reward.is_correct("code:asserts", asserts, WRONG_ADD)
    module = "from solution import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    assert reward.is_correct("code:pytest", module, ADD) and not reward.is_correct("code:pytest", module, WRONG_ADD)
    stdio = json.dumps({"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]})
    program = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    assert reward.is_correct("code:stdio", stdio, program)
    assert not reward.is_correct("code:stdio", stdio, program.replace("a + b", "a * b"))
    assert not reward.is_correct("code:asserts", asserts, "no code block here")
    assert reward.compute_score("kodcode", ADD, module, {"style": "code:pytest"}) == 1.0


def test_batch_verdicts_agree_with_one_by_one_and_run_each_distinct_program_once():
    stdio = json.dumps({"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]})
    right = "```python\na, b = map(int, input().split())  # the batch test's\nprint(a + b)\n```"
    wrong, crash = right.replace("a + b", "a * b"), right.replace("print(a + b)", "raise SystemExit(3)")
    asserts = json.dumps(["assert add(1, 2) == 3"])
    styles = ["code:stdio"] * 5 + ["code:asserts", "rule"]
    golds = [stdio] * 5 + [asserts, "4"]
    responses = [right, wrong, right, crash, "no code", ADD, "\\boxed{4}"]
    reward.sandbox_tally(reset=True)
    got = reward.verdicts(styles, golds, responses)
    assert got == [reward.is_correct(s, g, r) for s, g, r in zip(styles, golds, responses)]
    assert got == [True, False, True, False, False, True, True]
    # verdicts: 3 distinct stdio programs x 2 inputs (right and wrong exit 0, crash does not), and the asserts
    # program; then is_correct one by one: right 2, wrong 1 (it stops at the first failed case), right 2,
    # crash 1, the asserts program 1
    assert reward.sandbox_tally(reset=True) == {"ok": 4 + 1 + 2 + 1 + 2 + 1, "error": 2 + 1}
    # a program already run in this process is not run again: only the asserts program runs
    assert reward.verdicts(styles, golds, responses) == got and reward.sandbox_tally(reset=True) == {"ok": 1}


def test_batch_verdicts_count_programs_stopped_for_a_limit(monkeypatch):
    monkeypatch.setattr(reward, "TEST_TIMEOUT_S", 0.5)
    stdio = json.dumps({"inputs": ["\n"], "outputs": ["1"]})
    reward.sandbox_tally(reset=True)
    responses = ["```python\nwhile True: pass  # the limit test's\n```", "```python\nprint(1)  # the limit test's\n```"]
    assert reward.verdicts(["code:stdio"] * 2, [stdio] * 2, responses) == [False, True]
    assert reward.sandbox_tally(reset=True) == {"timeout": 1, "ok": 1}
    # an outcome that depends on the machine's load is never taken from an earlier run
    assert reward.verdicts(["code:stdio"] * 2, [stdio] * 2, responses) == [False, True]
    assert reward.sandbox_columns() == {"sandbox_programs": 1, "sandbox_limit_kills": 1}
    assert reward.sandbox_tally() == {}


@dataclass
class Completion:
    text: str
    token_ids: list


def test_vllm_outputs_are_graded_row_by_row(monkeypatch):
    # vLLM needs a GPU and is not installed here: a stand-in with vLLM's call shape
    # (LLM.chat -> [RequestOutput(outputs=[CompletionOutput(text, token_ids)])]).
    fake = types.ModuleType("vllm")
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)

    class Engine:
        def chat(self, messages, params, use_tqdm):
            # one request per problem, each answer with a seed of its own (vLLM: request seed + i)
            assert params == [{"n": 2, "temperature": 0.6, "max_tokens": 64, "seed": seed} for seed in (0, 2)]
            assert messages[0] == [{"role": "user", "content": "1+1?"}]
            return [
                types.SimpleNamespace(outputs=[Completion("\\boxed{2}", [1, 2]), Completion("\\boxed{3}", [1])]),
                types.SimpleNamespace(outputs=[Completion(ADD, [1] * 9), Completion(WRONG_ADD, [1] * 9)]),
            ]

    frame = pd.DataFrame(
        {
            "prompt": [[{"role": "user", "content": "1+1?"}], [{"role": "user", "content": "write add"}]],
            "reward_model": [
                {"style": "rule", "ground_truth": "2"},
                {"style": "code:asserts", "ground_truth": json.dumps(["assert add(1, 2) == 3"])},
            ],
        }
    )
    samples = evaluate.vllm_samples(Engine(), frame, Protocol(temperature=0.6, n=2), 64, 0)
    assert list(samples["correct"]) == [True, False, True, False]
    assert list(samples["sample"]) == [0, 1, 0, 1] and list(samples["response_tokens"]) == [2, 1, 9, 9]
    assert pass_rates.summarize(samples, [1, 2])["pass_at_2"] == 1.0
