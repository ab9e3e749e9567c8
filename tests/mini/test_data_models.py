"""Mini data in verl's format, held out from training; tiny models load like hub models."""

import json
import re

import numpy as np
import pandas as pd
import pytest
import torch
from entropy_rl.core import formats, grading, model_size, reward
from entropy_rl.mini import data, models
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, MistralConfig, Qwen2Config

BENCH = {
    "easy": {
        "task": "chain_sum",
        "size": 30,
        "params": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1},
        "protocol": {"temperature": 0.0, "n": 1},
    },
    "hard": {
        "task": "chain_sum",
        "size": 20,
        "params": {"min_terms": 3, "max_terms": 3, "min_digits": 2, "max_digits": 2},
        "protocol": {"temperature": 0.6, "n": 4},
    },
    "prog": {
        "domain": "code",
        "task": "chain_sum",
        "size": 10,
        "params": {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1},
        "protocol": {"temperature": 0.0, "n": 1},
    },
}
SPEC = {
    "seed": 3,
    "benchmarks": BENCH,
    "train": {"from": ["easy", "hard"], "size": 200},
    "pretrain": {
        "from": ["easy", "hard", "prog"],
        "prompts": 180,
        "repeats": 2,
        "worked_share": 0.5,
        "code_worked_share": 0.5,
        "wrong_share": 0.5,
        "wrong_offsets": [-1, 1],
    },
    "instruct": {"from": ["easy", "hard", "prog"], "prompts": 40},
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("data")
    return data.prepare_mini_data(SPEC, out)


def test_verl_format(written):
    for name, path in written.items():
        frame = formats.load_verl_parquet(path)
        # The pre-training corpus adds the SFT target, as verl's SFT data does.
        assert list(frame.columns) == formats.VERL_COLUMNS + (["response"] if name in ("pretrain", "instruct") else [])
        for row in frame.itertuples():
            assert row.prompt[0]["role"] == "user" and row.reward_model["ground_truth"] != ""
            content, style = row.prompt[0]["content"], row.reward_model["style"]
            if row.ability == "code":  # "Code: x+3-2", run against its stdio tests
                assert re.fullmatch(r"Code: x([+-]\d+)+", content) and style == "code:stdio"
            else:  # the bare chain, "4+3-2"
                assert re.fullmatch(r"\d+([+-]\d+)+", content) and style == "rule"
            assert row.extra_info["style"] == style
    assert len(pd.read_parquet(written["easy"])) == 30 and len(pd.read_parquet(written["train"])) == 200
    assert len(pd.read_parquet(written["pretrain"])) == 360  # 180 prompts, each twice


def test_sft_responses_mix_worked_right_and_direct_wrong(written):
    corpus = pd.read_parquet(written["pretrain"])
    corpus = corpus[corpus["ability"] == "math"]
    worked = corpus["response"].str.contains("=")
    assert 0.35 < worked.mean() < 0.65
    for row in corpus.itertuples():
        gold = row.reward_model["ground_truth"]
        if "=" in row.response:  # worked solutions are always right
            assert grading.is_correct(gold, row.response)
    direct = corpus[~worked]
    wrong = [not grading.is_correct(r.reward_model["ground_truth"], r.response) for r in direct.itertuples()]
    assert 0.3 < sum(wrong) / len(wrong) < 0.7


def test_worked_solution_steps_left_to_right():
    assert data.worked_solution("4 + 3 - 9", "-2") == " 4+3=7, 7-9=-2. \\boxed{-2}"
    with pytest.raises(ValueError, match="gives 7, not 8"):
        data.worked_solution("4 + 3", "8")


def test_code_corpus_runs_right_as_written_and_folded_programs_may_be_off(written):
    corpus = pd.read_parquet(written["pretrain"])
    corpus = corpus[corpus["ability"] == "code"]
    rows = list(corpus.itertuples())
    ok = reward.verdicts(
        [r.reward_model["style"] for r in rows],
        [r.reward_model["ground_truth"] for r in rows],
        [r.response for r in rows],
    )
    as_written = [r.extra_info["expression"] in r.response for r in rows]
    assert 0.35 < np.mean(as_written) < 0.65
    assert all(k for k, w in zip(ok, as_written) if w)  # the chain as written is always right
    folded = [k for k, w in zip(ok, as_written) if not w]
    assert 0.3 < 1 - np.mean(folded) < 0.7  # folded constants are off by wrong_share


def test_code_programs_fold_and_print():
    assert data.faithful_program("x+3-9") == " ```python\nx=int(input())\nprint(x+3-9)\n```"
    assert data.folded_program("x+3-9") == " ```python\nx=int(input())\nprint(x-6)\n```"
    assert data.folded_program("x+3-3") == " ```python\nx=int(input())\nprint(x)\n```"
    assert data.folded_program("x+3-9", offset=1) == " ```python\nx=int(input())\nprint(x-5)\n```"
    gold = data.task_problems(BENCH["prog"], 1, 0)[0]
    tests = json.loads(gold["gold"])
    assert len(tests["inputs"]) == data.CODE_TESTS == len(set(tests["inputs"]))
    assert reward.is_correct(gold["style"], gold["gold"], data.faithful_program(gold["expression"]))
    assert not reward.is_correct(gold["style"], gold["gold"], data.folded_program(gold["expression"], 1))


def test_benchmarks_are_held_out_by_the_problem_posed(written):
    for corpus in ("train", "instruct", "pretrain"):
        train_q = {data.prompt_text(p) for p in pd.read_parquet(written[corpus])["prompt"]}
        for name in BENCH:
            bench_q = {data.prompt_text(p) for p in pd.read_parquet(written[name])["prompt"]}
            assert not train_q & bench_q


def test_instruct_corpus_answers_every_prompt_step_by_step_and_right(written):
    corpus = pd.read_parquet(written["instruct"])
    assert len(corpus) == 40 and set(corpus["extra_info"].map(lambda e: e["split"])) == {"instruct"}
    math = corpus[corpus["ability"] == "math"]
    assert math["response"].str.contains("=").all()  # worked, never a bare answer
    code = corpus[corpus["ability"] == "code"]
    assert len(code) and all(e["expression"] in r for e, r in zip(code["extra_info"], code["response"]))  # as written
    rows = list(corpus.itertuples())
    assert all(
        reward.verdicts(
            [r.reward_model["style"] for r in rows],
            [r.reward_model["ground_truth"] for r in rows],
            [r.response for r in rows],
        )
    )


def test_further_train_set_draws_its_families_and_holds_out_benchmarks(written):
    frames = [pd.read_parquet(written[b]) for b in BENCH]
    families = ["easy"]
    train = data.build_train_set(BENCH, {"from": families, "size": 30}, SPEC["seed"], frames)
    assert len(train) == 30 and set(train["data_source"]) == {f"train/{families[0]}"}
    held_out = {data.prompt_text(p) for f in frames for p in f["prompt"]}
    assert not held_out & {data.prompt_text(p) for p in train["prompt"]}


def test_fixed_seeds_give_identical_data(written, tmp_path):
    again = data.prepare_mini_data(SPEC, tmp_path)
    for key in written:
        assert pd.read_parquet(written[key]).equals(pd.read_parquet(again[key]))


def test_missing_columns_are_named(tmp_path):
    pd.DataFrame({"prompt": [1]}).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="missing columns \\['data_source'"):
        formats.load_verl_parquet(tmp_path / "bad.parquet")


def test_tokenizer_splits_digits_and_has_chat_template(mini_tokenizer):
    tok = AutoTokenizer.from_pretrained(mini_tokenizer)
    assert [t.strip("Ġ") for t in tok.tokenize("1234")] == ["1", "2", "3", "4"]
    text = tok.apply_chat_template([{"role": "user", "content": "2 + 2 ="}], tokenize=False, add_generation_prompt=True)
    assert text == "Question: 2 + 2 =\nAnswer:"
    assert tok.decode(tok("Answer: \\boxed{17}")["input_ids"]) == "Answer: \\boxed{17}"


@pytest.mark.parametrize("family", ["qwen2", "llama", "mistral"])
def test_model_families_round_trip_through_from_pretrained(family, mini_tokenizer, tmp_path):
    arch = dict(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2, num_kv_heads=1)
    model, tok = models.build_mini_model(family, arch, mini_tokenizer, seed=0)
    assert model.config.model_type == family
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    ids = tok("Question: 1 + 1 =", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, loaded(ids).logits, atol=1e-6)
    # Non-embedding count: every parameter but the (tied) embedding matrix.
    emb = model.get_input_embeddings().weight.numel()
    assert model_size.non_embedding_params(model.config.to_dict()) == sum(p.numel() for p in model.parameters()) - emb
    # the study's count
    assert model_size.non_embedding_params(tmp_path) == model_size.non_embedding_params(model.config.to_dict())
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == family


def without_embeddings(model) -> int:
    """The real model's parameters less the token embedding and the output layer (a tied one counted once)."""
    embedding = {
        id(p) for p in (*model.get_input_embeddings().parameters(), *model.get_output_embeddings().parameters())
    }
    return sum(p.numel() for p in model.parameters() if id(p) not in embedding)


@pytest.mark.parametrize("family", ["qwen2", "llama", "mistral"])
@pytest.mark.parametrize("tied", [True, False])
def test_the_config_count_is_the_real_models_parameters_without_embeddings(family, tied, mini_tokenizer):
    """core.model_size counts from config.json without torch; here against the models transformers builds."""
    arch = dict(
        hidden_size=48, intermediate_size=80, num_layers=2, num_heads=4, num_kv_heads=2, tie_word_embeddings=tied
    )
    model, _ = models.build_mini_model(family, arch, mini_tokenizer, seed=0)
    assert model_size.non_embedding_params(model.config.to_dict()) == without_embeddings(model) > 0


@pytest.mark.parametrize(
    "config",
    [
        LlamaConfig(
            hidden_size=64,
            intermediate_size=96,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=24,
            attention_bias=True,
            mlp_bias=True,
        ),
        MistralConfig(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=24),
        Qwen2Config(
            hidden_size=64,
            intermediate_size=96,
            num_attention_heads=4,
            num_key_value_heads=4,
            tie_word_embeddings=False,
        ),
        # The paper's shapes (hub config.json): Qwen2.5-0.5B, Mistral-Nemo (head_dim 128 < 5120 / 32), DeepSeek-Math-7B (a llama).
        Qwen2Config(
            vocab_size=151936,
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
        ),
        MistralConfig(
            vocab_size=131072,
            hidden_size=5120,
            intermediate_size=14336,
            num_hidden_layers=40,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
        ),
        LlamaConfig(
            vocab_size=102400, hidden_size=4096, intermediate_size=11008, num_hidden_layers=30, num_attention_heads=32
        ),
    ],
    ids=[
        "llama-biases-head-dim",
        "mistral-head-dim",
        "qwen2-untied",
        "qwen2.5-0.5b",
        "mistral-nemo-12b",
        "deepseek-math-7b",
    ],
)
def test_the_config_count_matches_transformers_on_other_shapes(config, tmp_path):
    """Counted on the meta device (no memory), also from a saved config.json that leaves defaults out."""
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    config.save_pretrained(tmp_path)
    assert (
        model_size.non_embedding_params(config.to_dict())
        == model_size.non_embedding_params(tmp_path)
        == without_embeddings(model)
    )


def test_pretraining_reduces_loss(mini_tokenizer):
    arch = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1)
    model, tok = models.build_mini_model("qwen2", arch, mini_tokenizer, seed=0)
    prompts = [[{"role": "user", "content": f"Calculate {a} + {b}."}] for a in range(10) for b in range(10)]
    answers = [str(a + b) for a in range(10) for b in range(10)]
    responses = [f" \\boxed{{{a}}}" for a in answers]
    losses = models.pretrain(model, tok, prompts, responses, steps=60, batch_size=16, lr=3e-3, seed=0)
    assert sum(losses[-10:]) / 10 < 0.6 * sum(losses[:5]) / 5


def test_bf16_pretraining_learns_as_fp32_does_and_keeps_fp32_weights(mini_tokenizer):
    """Mixed precision: the forward and backward in bf16, the weights and the optimiser in fp32; the loss curve
    follows fp32's (same batches, same initialisation) within bf16's rounding."""
    arch = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1)
    prompts = [[{"role": "user", "content": f"Calculate {a} + {b}."}] for a in range(10) for b in range(10)]
    responses = [f" \\boxed{{{a + b}}}" for a in range(10) for b in range(10)]
    curves = {}
    for precision in ("fp32", "bf16"):
        model, tok = models.build_mini_model("qwen2", arch, mini_tokenizer, seed=0)
        curves[precision] = models.pretrain(
            model, tok, prompts, responses, steps=60, batch_size=16, lr=3e-3, seed=0, precision=precision
        )
        assert {p.dtype for p in model.parameters()} == {torch.float32}
    fp32, bf16 = (torch.tensor(curves[p]) for p in ("fp32", "bf16"))
    assert not torch.equal(fp32, bf16)  # bf16 did run
    assert bf16[-10:].mean() < 0.6 * bf16[:5].mean()
    assert (bf16[-10:].mean() - fp32[-10:].mean()).abs() < 0.1 * fp32[-10:].mean()


def test_auto_precision_is_bf16_only_where_the_cpu_has_it(monkeypatch):
    for native, expected in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(models, "native_bf16", lambda native=native: native)
        assert models.pretrain_precision("auto") == expected
        assert models.pretrain_precision("fp32") == "fp32" and models.pretrain_precision("bf16") == "bf16"


def test_families_differ_in_architecture_and_seed(mini_tokenizer):
    base = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1)
    llama, _ = models.build_mini_model(
        "llama", dict(base, tie_word_embeddings=False), mini_tokenizer, seed=models.model_seed("llama-m", 0)
    )
    mistral, _ = models.build_mini_model(
        "mistral", dict(base, sliding_window=48), mini_tokenizer, seed=models.model_seed("mistral-m", 0)
    )
    qwen, _ = models.build_mini_model("qwen2", base, mini_tokenizer, seed=0)
    assert mistral.config.sliding_window == 48
    assert llama.lm_head.weight.data_ptr() != llama.get_input_embeddings().weight.data_ptr()
    assert qwen.model.layers[0].self_attn.q_proj.bias is not None  # Qwen2's q/k/v biases
    assert models.model_seed("llama-m", 0) != models.model_seed("mistral-m", 0)
    assert not torch.equal(llama.get_input_embeddings().weight, mistral.get_input_embeddings().weight)
