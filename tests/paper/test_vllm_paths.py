"""The paper-scale vLLM paths (evaluation, power sampling) up to the engine, against a stand-in that
refuses what vLLM 0.24 refuses (tests/vllm_standin.py): the model's own tensor-parallel size, its
prompt format (base tokenizers without a chat template), the context cap, per-request seeds, the
settings that make seeded reruns repeat, and the preflight ``prompt_format.engine_problems``."""

import json
import re
import shutil
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
import vllm_standin
import yaml
from entropy_rl.core.evaluation import Protocol
from entropy_rl.core.power.mcmc import context_needed
from entropy_rl.core.power.methods import Power, Sample
from entropy_rl.paper import evaluate, power_sampling, prompt_format
from support import ROOT

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
CONV = [[{"role": "user", "content": f"Calculate {a} + 3. Put the final answer in \\boxed{{}}."}] for a in range(3)]


@pytest.fixture
def vllm(monkeypatch):
    vllm_standin.install(monkeypatch)
    # vllm_engine sets vLLM's reproducibility variables in os.environ: give them back afterwards.
    for k in ("VLLM_BATCH_INVARIANT", "VLLM_ENABLE_V1_MULTIPROCESSING"):
        monkeypatch.setenv(k, "unset-by-test")
    return vllm_standin


@pytest.fixture
def model_dir(tiny_policy, tmp_path):
    """The tiny Qwen2 (2 attention heads, 1 KV head, 256 positions) saved as a hub model."""
    model, tok = tiny_policy
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    return tmp_path / "m"


def without_template(directory, suffix="bare"):
    """A copy of a model directory whose tokenizer has no chat template (a base model's, as Mistral's)."""
    bare = directory.parent / f"{directory.name}-{suffix}"
    shutil.copytree(directory, bare)
    (bare / "chat_template.jinja").unlink(missing_ok=True)
    cfg = json.loads((bare / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(cfg))
    return bare


def config_dir(tmp_path, name, **config):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    return d


# ---- the stand-in refuses what vLLM 0.24 refuses ------------------------------------------------


def test_the_standin_refuses_a_tensor_parallel_size_that_does_not_divide_the_heads(tmp_path):
    qwen05 = config_dir(tmp_path, "q", num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768)
    with pytest.raises(
        ValueError,
        match=re.escape("Total number of attention heads (14) must be divisible by tensor parallel size (8)."),
    ):
        vllm_standin.check_engine_start(qwen05, 8)
    assert vllm_standin.check_engine_start(qwen05, 1) == 32768  # config.json's max_position_embeddings
    assert vllm_standin.check_engine_start(qwen05, 2) == 32768
    odd_kv = config_dir(tmp_path, "kv", num_attention_heads=12, num_key_value_heads=3, max_position_embeddings=4096)
    with pytest.raises(AssertionError, match="3 is not divisible by 2"):
        vllm_standin.check_engine_start(odd_kv, 2)


def test_the_standin_refuses_a_context_over_the_models_and_cuts_answers_at_it(vllm, model_dir):
    with pytest.raises(
        ValueError, match=re.escape("User-specified max_model_len (300) is greater than the derived max_model_len")
    ):
        vllm.LLM(str(model_dir), max_model_len=300)  # the tiny model has 256 positions
    llm = vllm.LLM(str(model_dir), max_model_len=20)
    assert llm.model_config.max_model_len == 20 and vllm.LLM(str(model_dir)).model_config.max_model_len == 256
    params = vllm.SamplingParams(temperature=1.0, max_tokens=50, seed=0, ignore_eos=True)
    with pytest.raises(ValueError, match="maximum context length is 20 tokens"):
        llm.generate([vllm.TokensPrompt(list(range(5, 26)))], params)
    with pytest.raises(
        ValueError, match=re.escape("The decoder prompt (length 20) plus the number of requested output tokens")
    ):
        llm.generate([vllm.TokensPrompt(list(range(5, 25)))], params)
    # Not refused: prompt + max_tokens over the context; vLLM stops the answer at the context instead.
    (out,) = llm.generate([vllm.TokensPrompt(list(range(5, 17)))], params)
    assert len(out.outputs[0].token_ids) == 8 and out.outputs[0].finish_reason == "length"


def test_the_standin_refuses_chat_without_a_template(vllm, model_dir):
    llm = vllm.LLM(str(without_template(model_dir)))
    params = vllm.SamplingParams(temperature=0.0, max_tokens=4)
    with pytest.raises(vllm.ChatTemplateResolutionError, match=re.escape("default chat template is no longer allowed")):
        llm.chat(CONV, params)
    plain = prompt_format.chat_template("plain", llm.get_tokenizer())
    outputs = llm.chat(CONV, params, chat_template=plain)
    tok = llm.get_tokenizer()
    assert tok.decode(outputs[0].prompt_token_ids) == "Question: " + CONV[0][0]["content"] + "\nAnswer:"


def test_the_standin_draws_the_ith_of_n_answers_with_seed_plus_i(vllm, model_dir):
    """vLLM 0.24 fans a request out into n children, the i-th seeded seed + i (v1/engine/parallel_sampling.py)."""
    llm = vllm.LLM(str(model_dir))
    prompt = [vllm.TokensPrompt(llm.get_tokenizer()("Question: 1 + 2\nAnswer:")["input_ids"])]
    sp = lambda n, seed: vllm.SamplingParams(n=n, temperature=1.0, max_tokens=6, seed=seed, ignore_eos=True)
    (three,) = llm.generate(prompt, sp(3, 5))
    for i in range(3):
        (one,) = llm.generate(prompt, sp(1, 5 + i))
        assert one.outputs[0].token_ids == three.outputs[i].token_ids
    assert llm.seeds == [5, 6, 7, 5, 6, 7]


# ---- 1. the model's own tensor-parallel size ------------------------------------------------------

# Attention and KV heads of the models the brief names (their hub config.json): 8, the node's GPU
# count, divides none of them.
HEADS = {"qwen2.5-0.5b": (14, 2), "qwen2.5-1.5b": (12, 2), "qwen2.5-7b": (28, 4)}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_each_model_starts_with_its_own_tensor_parallel_size(name):
    heads, kv = HEADS[name]
    config = {"num_attention_heads": heads, "num_key_value_heads": kv, "max_position_embeddings": 32768}
    model = PAPER["models"][name]
    assert prompt_format.engine_problems(config, model["tensor_parallel"], 10240, "tokenizer", None) == []
    assert (
        "must be divisible by tensor parallel size (8)"
        in prompt_format.engine_problems(config, model["gpus_per_node"], 10240, "tokenizer", None)[0]
    )


def test_vllm_jobs_ask_for_the_engines_gpus(tmp_path):
    """The paper-scale plan: evaluation and power sampling take their model's tensor_parallel GPUs."""
    from support import job_resources, plan

    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    targets = [
        "results/eval/qwen2.5-0.5b-grpo/summary.parquet",
        "results/eval/qwen2.5-32b-grpo/summary.parquet",
        "results/power/samples/power.parquet",
    ]
    proc, _ = plan(tmp_path, *targets, "--verbose", env_extra={"HF_TOKEN": "x"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = re.findall(r"rule (evaluate_vllm|power_sample_vllm):(.*?)(?=\n\n)", proc.stdout, re.DOTALL)
    assert len(jobs) == 3
    gpus = {}
    for rule, block in jobs:
        key = re.search(r"wildcards: \w+=(\S+)", block).group(1)
        gpus[key] = job_resources(block)["gpu"]
    tp = {name: m["tensor_parallel"] for name, m in PAPER["models"].items()}
    assert gpus == {
        "qwen2.5-0.5b-grpo": tp["qwen2.5-0.5b"],
        "qwen2.5-32b-grpo": tp["qwen2.5-32b"],
        "power": tp[PAPER["power_sampling"]["model"]],
    }


# ---- 2. prompt formats ----------------------------------------------------------------------------


def test_the_registry_refuses_a_second_format_of_the_same_name():
    with pytest.raises(ValueError, match="already registered"):
        prompt_format.register(prompt_format.PromptFormat("plain", "{{ messages }}", "again", "here"))
    with pytest.raises(ValueError, match="unknown prompt format 'chatml'"):
        prompt_format.get("chatml")


def test_every_paper_model_names_a_registered_format_and_the_schema_lists_them():
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert sorted(schema["$defs"]["paper_model"]["properties"]["chat_template"]["enum"]) == sorted(
        prompt_format.FORMATS
    )
    formats = {name: m["chat_template"] for name, m in PAPER["models"].items()}
    assert {n for n, f in formats.items() if f == "tokenizer"} == {
        n for n, m in PAPER["models"].items() if m["family"] == "qwen2"
    }
    assert set(formats.values()) <= set(prompt_format.FORMATS)


def test_the_plain_format_renders_question_and_answer_text(mini_tokenizer, tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(mini_tokenizer)
    conv = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "1 + 2?"},
        {"role": "assistant", "content": "3"},
        {"role": "user", "content": "2 + 2?"},
    ]
    text = tok.apply_chat_template(
        conv, chat_template=prompt_format.template_text("plain"), tokenize=False, add_generation_prompt=True
    )
    assert text == "Be brief.\n\nQuestion: 1 + 2?\nAnswer: 3<|endoftext|>\nQuestion: 2 + 2?\nAnswer:"
    tok.bos_token = "<|pad|>"  # a base model with a BOS (Llama, Mistral) reads it first
    assert prompt_format.render(tok, [conv[1:2]], prompt_format.template_text("plain"))[0][0] == tok.bos_token_id
    path = prompt_format.template_file("plain", tmp_path)
    assert path.read_text() == prompt_format.PLAIN and prompt_format.template_file("tokenizer", tmp_path) is None


def test_check_reads_the_tokenizer_files(model_dir):
    from transformers import AutoTokenizer

    bare = without_template(model_dir)
    assert prompt_format.check("tokenizer", model_dir) == []  # transformers 5 saves chat_template.jinja
    assert prompt_format.check("plain", bare) == []
    (problem,) = prompt_format.check("tokenizer", bare)
    assert "ChatTemplateResolutionError" in problem and "vllm/renderers/hf.py" in problem
    hub_style = json.loads((bare / "tokenizer_config.json").read_text())
    hub_style["chat_template"] = (model_dir / "chat_template.jinja").read_text()  # as Qwen2.5's hub files carry it
    (bare / "tokenizer_config.json").write_text(json.dumps(hub_style))
    assert prompt_format.check("tokenizer", bare) == []
    assert prompt_format.check("chatml", bare)[0].startswith("unknown prompt format")
    with pytest.raises(ValueError, match="has none"):
        prompt_format.chat_template("tokenizer", AutoTokenizer.from_pretrained(without_template(model_dir, "bare2")))


def test_verl_takes_the_format_through_its_model_config(model_dir):
    """The override for verl 0.9.1 survives Hydra's parser and verl's HFModelConfig puts the template
    on the tokenizer its trainer, dataset and rollout use."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from verl.workers.config.model import HFModelConfig

    assert prompt_format.verl_override("tokenizer") is None
    (override,) = OverridesParser.create().parse_overrides([prompt_format.verl_override("plain")])
    assert (
        override.key_or_group == "actor_rollout_ref.model.custom_chat_template"
        and override.value() == prompt_format.PLAIN
    )
    config = HFModelConfig(path=str(without_template(model_dir)), custom_chat_template=override.value())
    text = config.tokenizer.apply_chat_template(CONV[0], tokenize=False, add_generation_prompt=True)
    assert text == f"Question: {CONV[0][0]['content']}\nAnswer:"


def test_evaluation_uses_the_models_prompt_format(vllm, model_dir):
    """A base model whose tokenizer has no template is evaluated with its format's, as verl trains it."""
    llm = evaluate.vllm_engine(str(without_template(model_dir)), 1, 0, 64)
    frame = pd.DataFrame(
        {"prompt": CONV, "reward_model": [{"style": "rule", "ground_truth": str(a + 3)} for a in range(3)]}
    )
    proto = Protocol(temperature=0.6, n=2)
    with pytest.raises(vllm.ChatTemplateResolutionError):
        evaluate.vllm_samples(llm, frame, proto, 8, 0)
    template = prompt_format.chat_template("plain", llm.get_tokenizer())
    samples = evaluate.vllm_samples(llm, frame, proto, 8, 0, template)
    assert len(samples) == 6 and samples["response_tokens"].between(1, 8).all()
    assert llm.chat_templates[-1] == template
    tok = llm.get_tokenizer()
    assert [tok.decode(p) for p in llm.prompts[-3:]] == [f"Question: {c[0]['content']}\nAnswer:" for c in CONV]
    # Every answer of the benchmark has its own seed: problem k's i-th answer is seeded 0 + k*n + i.
    assert llm.seeds[-6:] == list(range(6))


def test_power_sampling_renders_prompts_with_the_models_format(vllm, model_dir):
    llm = power_sampling.vllm_engine(str(without_template(model_dir)), 1, 0, 64)
    tok = llm.get_tokenizer()
    assert tok.chat_template is None
    template = prompt_format.chat_template("plain", tok)
    method = Power(alpha=4.0, block_size=4, n_mcmc=1)
    f = power_sampling.sample_method(
        llm, llm, tok, CONV, ["3", "4", "5"], ["rule"] * 3, method, 2, 8, 0, (tok.eos_token_id,), template
    )
    assert len(f) == 6
    first = tok.decode(llm.prompts[0])
    assert first.startswith("Question: ") and "\nAnswer:" in first


# ---- the context and the seeds of the power study ---------------------------------------------------


def test_power_sampling_stops_before_drawing_when_a_prompt_does_not_fit(vllm, model_dir):
    llm = vllm.LLM(str(model_dir), max_model_len=20)
    tok = llm.get_tokenizer()
    ids = prompt_format.render(tok, CONV, None)
    assert context_needed(ids, 8) == max(map(len, ids)) + 9 > 20
    with pytest.raises(ValueError, match="over the engine's max_model_len 20"):
        power_sampling.sample_method(
            llm,
            llm,
            tok,
            CONV,
            ["3", "4", "5"],
            ["rule"] * 3,
            Sample(temperature=1.0),
            2,
            8,
            0,
            (tok.eos_token_id,),
        )
    assert llm.calls == []


def test_plain_sampling_gives_every_problem_its_own_random_stream(vllm, model_dir):
    """vLLM seeds the i-th of a request's n answers seed + i: one seed for every problem would draw
    problem after problem with the same random numbers."""
    llm = vllm.LLM(str(model_dir))
    tok = llm.get_tokenizer()
    n = 4
    power_sampling.sample_method(
        llm,
        llm,
        tok,
        CONV,
        ["3", "4", "5"],
        ["rule"] * 3,
        Sample(temperature=1.0),
        n,
        6,
        7,
        (tok.eos_token_id,),
    )
    assert llm.seeds[: n * len(CONV)] == list(range(7, 7 + n * len(CONV)))  # then the unseeded greedy scoring


# ---- 3. settings that make seeded reruns repeat ------------------------------------------------------


def test_engines_are_built_with_vllms_reproducibility_settings(vllm, model_dir):
    power = power_sampling.vllm_engine(str(model_dir), 1, 0, 64)
    assert power.env["VLLM_BATCH_INVARIANT"] == "1" and power.mode == "processed_logprobs"
    evaluation = evaluate.vllm_engine(str(model_dir), 1, 0, 64)
    assert evaluation.env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"


# ---- 5. the preflight checks exactly what the stand-in refuses ----------------------------------------


@pytest.mark.parametrize(
    "heads,kv,tp", [(14, 2, 1), (14, 2, 2), (14, 2, 8), (12, 2, 4), (12, 3, 2), (28, 4, 8), (40, 8, 8), (32, 32, 2)]
)
@pytest.mark.parametrize("max_model_len", [4096, 4097])
def test_engine_problems_agree_with_the_standin(tmp_path, heads, kv, tp, max_model_len):
    config = {"num_attention_heads": heads, "num_key_value_heads": kv, "max_position_embeddings": 4096}
    d = config_dir(tmp_path, "m", **config)
    try:
        vllm_standin.check_engine_start(d, tp, max_model_len)
        refused = False
    except (ValueError, AssertionError):
        refused = True
    problems = prompt_format.engine_problems(d, tp, max_model_len, "plain", None)
    assert bool(problems) == refused, problems
    assert prompt_format.engine_problems(config, tp, max_model_len, "plain", None) == problems


def test_engine_problems_read_the_context_as_vllm_derives_it(tmp_path, model_dir):
    llama = {
        "num_attention_heads": 24,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "original_max_position_embeddings": 8192},
    }
    assert prompt_format.max_context(llama) == (131072, "max_position_embeddings")  # llama3 RoPE is not scaled again
    yarn = {
        "max_position_embeddings": 32768,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    }
    assert prompt_format.max_context(yarn)[0] == 131072
    assert prompt_format.max_context({"max_position_embeddings": 32768}, {"model_max_length": 16384})[0] == 16384
    deepseek_math = {"num_attention_heads": 32, "num_key_value_heads": 32, "max_position_embeddings": 4096}
    (problem,) = prompt_format.engine_problems(deepseek_math, 2, 2048 + 8192, "plain", None)
    assert "max_model_len 10240" in problem and "User-specified max_model_len" in problem
    # From the files: the tiny model (256 positions) and a tokenizer without a template.
    bare = without_template(model_dir)
    assert prompt_format.engine_problems(model_dir, 1, 256, "tokenizer", model_dir) == []
    problems = prompt_format.engine_problems(bare, 2, 257, "tokenizer", bare)
    assert len(problems) == 2  # 2 heads over tp 2 and 1 KV head replicated are fine; 257 > 256; no template
    assert prompt_format.engine_problems(tmp_path / "missing", 1, 1, "plain", None)[0].endswith("not found")


# ---- the rules' scripts, run as Snakemake runs them, against the stand-in -----------------------------

DRIVER = textwrap.dedent("""
    import runpy, sys, types
    sys.path[:0] = [{tests!r}, {workflow!r}]
    import vllm_standin
    sys.modules.update(vllm_standin.modules())

    class IO(list):
        def __init__(self, items=(), **named):
            super().__init__(items); self.__dict__.update(named)

    snakemake = types.SimpleNamespace(threads=1, log=[{log!r}], **{job})
    runpy.run_path({script!r}, init_globals={{"snakemake": snakemake}}, run_name="__main__")  # as `python script`
    import os
    print("ENV", os.environ.get("VLLM_BATCH_INVARIANT"), os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING"))
""")


def run_script(tmp_path, script, job: str):
    driver = DRIVER.format(
        tests=str(ROOT / "tests"),
        workflow=str(ROOT / "workflow"),
        log=str(tmp_path / "job.log"),
        job=job,
        script=str(ROOT / "workflow" / "scripts" / script),
    )
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("VLLM_")}
    proc = subprocess.run(
        [sys.executable, "-c", driver], check=False, capture_output=True, text=True, env=env, cwd=tmp_path
    )
    log = (tmp_path / "job.log").read_text() if (tmp_path / "job.log").exists() else ""
    return proc, log


@pytest.fixture
def benchmark(tmp_path):
    from entropy_rl.mini import data

    problems = [
        {
            "prompt": f"{a}+3",
            "gold": str(a + 3),
            "style": "rule",
            "question": f"Calculate {a} + 3.",
            "expression": f"{a}+3",
        }
        for a in range(3)
    ]
    rows = data.verl_rows(problems, "addsub", "test", "basic_arithmetic")
    path = tmp_path / "addsub.parquet"
    pd.DataFrame(rows).to_parquet(path)
    return path


def test_the_evaluation_script_runs_a_base_model_with_its_format(tmp_path, model_dir, benchmark):
    bare = without_template(model_dir)
    job = f"""dict(
        input=IO(model={str(bare)!r}, benchmarks=[{str(benchmark)!r}]),
        output=IO(samples=[{str(tmp_path / "out.parquet")!r}], summary={str(tmp_path / "summary.parquet")!r}),
        params=types.SimpleNamespace(backend="paper", protocols={{"addsub": {{"temperature": 0.6, "n": 2}}}}, max_new_tokens=6,
                                     pass_k=[1, 2], seed=0, tensor_parallel=1, chat_template="plain"))"""
    proc, log = run_script(tmp_path, "evaluate.py", job)
    assert proc.returncode == 0, proc.stderr[-3000:] + log[-3000:]
    assert "ENV None 0" in proc.stdout + log and "prompt format plain" in log
    assert len(pd.read_parquet(tmp_path / "out.parquet")) == 6
    # The same job with the tokenizer's own (missing) template stops before any engine starts, saying why.
    proc, log = run_script(tmp_path, "evaluate.py", job.replace('"plain"', '"tokenizer"'))
    assert proc.returncode != 0 and "has none" in proc.stderr + log


def test_the_power_sampling_script_runs_each_kind_of_method(tmp_path, model_dir, benchmark):
    for name, method in {
        "low-temp": {"kind": "sample", "temperature": 0.25},
        "power": {"kind": "power", "alpha": 4.0, "block_size": 4, "n_mcmc": 1},
    }.items():
        job = f"""dict(
            input=IO(base={str(model_dir)!r}, policy={str(model_dir)!r}, benchmarks=[{str(benchmark)!r}]),
            output=IO([{str(tmp_path / f"{name}.parquet")!r}]), wildcards=types.SimpleNamespace(method={name!r}),
            params=types.SimpleNamespace(backend="paper", method={method!r}, problems=2, n=2, max_new_tokens=6, seed=0,
                                         tensor_parallel=1, chat_template="tokenizer"))"""
        proc, log = run_script(tmp_path, "power_sample.py", job)
        assert proc.returncode == 0, proc.stderr[-3000:] + log[-3000:]
        assert "ENV 1 None" in proc.stdout + log
        assert len(pd.read_parquet(tmp_path / f"{name}.parquet")) == 4


def test_the_prompt_format_module_loads_neither_torch_nor_vllm():
    code = "import sys; import entropy_rl.paper.prompt_format; print(sorted({'torch', 'vllm', 'transformers'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT / "workflow"
    )
    assert out.stdout.strip() == "[]", out.stderr
