"""Run by the CPU vLLM's Python (tests/paper/test_vllm_engine.py): what the real engine does where the workflow
relies on it, printed as one JSON object for the test to hold against Hugging Face and the stand-in.

    python vllm_cpu_probe.py MODEL PREFIXES.json

MODEL is a model directory with a chat template, PREFIXES.json a list of token-id prefixes for power sampling's
proposal. Printed:

- ``refusals``: for each engine start or request the preflight (``prompt_format.engine_problems``) and the
  stand-in (tests/vllm_standin.py) model, the exception vLLM raised (type and message) or null;
- ``proposal``: ``paper.power_sampling.VllmProposer.extend`` on PREFIXES, the workflow's own proposal code on the
  real engine: each draft's tokens, its log q (the engine's processed logprobs, at temperature 1/α) and log p
  (prompt logprobs, from the raw logits);
- ``seeded``: the answers of seeded requests (as verl_plugin's agent loop sends a group's) drawn alone and again
  among other prompts' requests in another order, with each token's log-probability: what a rollout repeats.
"""

import json
import sys


def refusal(call):
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 (pydantic's ValidationError, ValueError, AssertionError, ...)
        return {"type": type(exc).__name__, "mro": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}
    return None


def main(model: str, prefixes_file: str) -> dict:
    import torch
    from entropy_rl.paper import power_sampling
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    out = {"refusals": {}}
    # Refused while the engine's configuration is built, before any process starts.
    out["refusals"]["tensor_parallel_3"] = refusal(lambda: LLM(model=model, tensor_parallel_size=3))
    out["refusals"]["max_model_len_over"] = refusal(lambda: LLM(model=model, max_model_len=257))
    # One engine (the power-sampling engine the workflow builds) for the rest.
    llm = power_sampling.vllm_engine(model, 1, 0, 40)
    conversation = [[{"role": "user", "content": "Calculate 1 + 2."}]]
    greedy = SamplingParams(temperature=0.0, max_tokens=4)
    out["refusals"]["prompt_over_context"] = refusal(
        lambda: llm.generate([TokensPrompt(prompt_token_ids=[5] * 41)], greedy, use_tqdm=False)
    )
    out["refusals"]["prompt_at_context"] = refusal(
        lambda: llm.generate([TokensPrompt(prompt_token_ids=[5] * 40)], greedy, use_tqdm=False)
    )
    # Not refused: prompt + max_tokens over the context; the answer is cut at the context.
    (cut,) = llm.generate(
        [TokensPrompt(prompt_token_ids=[5] * 30)],
        SamplingParams(temperature=1.0, max_tokens=50, ignore_eos=True, seed=0),
        use_tqdm=False,
    )
    out["cut_at_context"] = {"tokens": len(cut.outputs[0].token_ids), "finish_reason": cut.outputs[0].finish_reason}
    with open(prefixes_file) as fh:
        prefixes = [torch.tensor(p) for p in json.load(fh)]
    stop = power_sampling.stop_ids(model, llm.get_tokenizer())
    proposer = power_sampling.VllmProposer(llm, alpha=4.0, stop_ids=stop, seed=0)
    drafts = proposer.extend(prefixes, [8] * len(prefixes))
    out["proposal"] = [{"tokens": d.tolist(), "logp": lp.tolist(), "logq": lq.tolist()} for d, lp, lq in drafts]
    out["seeded"] = seeded_draws(llm, [p.tolist() for p in prefixes])
    # A tokenizer without a chat template (a base model's): vLLM's chat refuses, as the stand-in does. The same
    # engine, its tokenizer's template taken away (a second engine in this process is refused by vLLM).
    llm.get_tokenizer().chat_template = None
    out["refusals"]["chat_without_template"] = refusal(lambda: llm.chat(conversation, greedy, use_tqdm=False))
    llm.llm_engine.engine_core.shutdown()
    return out


def seeded_draws(llm, prefixes: list[list[int]], answers: int = 4) -> dict:
    """One group (``answers`` requests of the first prefix, seeds 100, 101, ...) alone, then inside a batch of every
    prefix's group sent in reverse order: the group's tokens and log-probabilities both times."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    def params(seed):
        return SamplingParams(temperature=1.0, max_tokens=8, seed=seed, logprobs=0)

    def answer(output):
        sample = output.outputs[0]
        return {
            "tokens": list(sample.token_ids),
            "logprobs": [lp[t].logprob for t, lp in zip(sample.token_ids, sample.logprobs)],
        }

    requests = [(p, 100 * (p + 1) + k) for p in range(len(prefixes)) for k in range(answers)][::-1]
    alone = llm.generate(
        [TokensPrompt(prompt_token_ids=prefixes[0])] * answers,
        [params(100 + k) for k in range(answers)],
        use_tqdm=False,
    )
    mixed = llm.generate(
        [TokensPrompt(prompt_token_ids=prefixes[p]) for p, _ in requests],
        [params(s) for _, s in requests],
        use_tqdm=False,
    )
    in_mixed = {seed: answer(o) for (p, seed), o in zip(requests, mixed) if p == 0}
    return {"alone": [answer(o) for o in alone], "mixed": [in_mixed[100 + k] for k in range(answers)]}


if __name__ == "__main__":  # vLLM's engine core is spawned: it imports this file again
    result = main(*sys.argv[1:3])
    print("PROBE " + json.dumps(result), flush=True)
