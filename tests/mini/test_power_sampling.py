"""Power sampling (Algorithm 1 of Karan & Du, 2025): its chains reach p^α, not low-temperature sampling.

The exactness check runs the sampler on the slides' Example 1, a two-token distribution small
enough to enumerate; the model-backed proposal is then checked on a real tiny Hugging Face model.
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from entropy_rl.core.power import mcmc as power_mcmc
from entropy_rl.core.power.methods import SMC, SPS, Power, Sample
from entropy_rl.mini import power_sampling as mini_power
from entropy_rl.paper import power_sampling as paper_power

A, B, EOS = 0, 1, 2
# Example 1: p(aa) = 0, p(ab) = 0.40, p(ba) = p(bb) = 0.25, and the remaining 0.10 ends at once.
FIRST = {A: 0.40, B: 0.50, EOS: 0.10}
SECOND = {A: {A: 1e-12, B: 1.0 - 1e-12, EOS: 0.0}, B: {A: 0.5, B: 0.5, EOS: 0.0}}


def next_token(prefix: list[int]) -> dict:
    return FIRST if not prefix else SECOND[prefix[0]]


class TableProposer:
    """Example 1's p as an autoregressive table; q is its per-step softmax at temperature 1/α."""

    stop_ids = (EOS,)

    def __init__(self, alpha: float, rng: np.random.Generator):
        self.alpha, self.rng, self.steps = alpha, rng, {}

    def step(self, response: list[int]):
        """The tokens that may follow ``response``, their log p and log q, and q's cumulative sums."""
        key = tuple(response[:1])  # p depends on the first response token only
        if key not in self.steps:
            dist = next_token(list(key))
            tokens = [t for t, pr in dist.items() if pr > 0]
            p = np.array([dist[t] for t in tokens])
            q = p**self.alpha / (p**self.alpha).sum()
            self.steps[key] = (tokens, np.log(p), np.log(q), np.cumsum(q))
        return self.steps[key]

    def extend(self, prefixes, budgets):
        out = []
        for prefix, budget in zip(prefixes, budgets):
            response, new, lps, lqs = prefix.tolist()[1:], [], [], []  # after the one-token prompt
            for _ in range(budget):
                tokens, logp, logq, cdf = self.step(response + new)
                j = min(int(np.searchsorted(cdf, self.rng.random(), side="right")), len(tokens) - 1)
                new.append(tokens[j])
                lps.append(logp[j])
                lqs.append(logq[j])
                if tokens[j] == EOS:
                    break
            out.append((torch.tensor(new, dtype=torch.long), torch.tensor(lps), torch.tensor(lqs)))
        return out


def exact_power(alpha: float) -> dict[tuple, float]:
    seqs = {(EOS,): FIRST[EOS], (A, B): 0.40, (B, A): 0.25, (B, B): 0.25}
    weights = {s: p**alpha for s, p in seqs.items()}
    return {s: w / sum(weights.values()) for s, w in weights.items()}


def frequencies(chains) -> dict[tuple, float]:
    seqs = [tuple(int(t) for t in c.tokens) for c in chains]
    return {s: seqs.count(s) / len(seqs) for s in set(seqs)}


def low_temperature(alpha: float) -> dict[tuple, float]:
    def sharpen(dist):
        z = sum(p**alpha for p in dist.values())
        return {t: p**alpha / z for t, p in dist.items()}

    first = sharpen(FIRST)
    return {(EOS,): first[EOS], **{(x, y): first[x] * sharpen(SECOND[x])[y] for x in (A, B) for y in (A, B)}}


def total_variation(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(s, 0.0) - q.get(s, 0.0)) for s in set(p) | set(q))


def test_one_block_over_the_whole_response_reaches_p_to_the_alpha():
    alpha, n = 2.0, 4000
    rng = np.random.default_rng(0)
    chains = power_mcmc.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * n, alpha, 2, 30, 2, rng)
    got, want = frequencies(chains), exact_power(alpha)
    # p^α puts 0.54 on "ab"; low-temperature sampling puts 0.38 on it.
    assert want[(A, B)] == pytest.approx(0.5424, abs=1e-3) and low_temperature(alpha)[(A, B)] == pytest.approx(
        0.381, abs=1e-3
    )
    for seq, p in want.items():
        assert abs(got.get(seq, 0.0) - p) < 4 * math.sqrt(p * (1 - p) / n), (seq, got, want)


def test_blocks_shorter_than_the_response_approach_p_to_the_alpha():
    """With B < T the chain freezes each block's answer when the response ends there (Algorithm 1
    stops after that block), so it is near p^α rather than on it; still far nearer than low temperature."""
    alpha, n = 2.0, 4000
    rng = np.random.default_rng(3)
    chains = power_mcmc.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * n, alpha, 1, 30, 2, rng)
    got, want, low = frequencies(chains), exact_power(alpha), low_temperature(alpha)
    print(f"TV to p^α: block 1 {total_variation(got, want):.3f}, low temperature {total_variation(low, want):.3f}")
    assert total_variation(got, want) < 0.05 and total_variation(low, want) > 0.15


def test_without_mcmc_steps_it_is_low_temperature_sampling():
    alpha, n = 2.0, 4000
    rng = np.random.default_rng(1)
    chains = power_mcmc.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * n, alpha, 2, 0, 2, rng)
    first_a = np.mean([int(c.tokens[0]) == A for c in chains])
    low_temp = 0.40**2 / (0.40**2 + 0.50**2 + 0.10**2)  # 0.381, against p^α's 0.542
    assert abs(first_a - low_temp) < 4 * math.sqrt(low_temp * (1 - low_temp) / n)
    assert all(c.drawn == len(c.tokens) and c.proposals == 0 for c in chains)  # one draw per token


def test_cost_counts_every_drawn_token():
    alpha = 2.0
    rng = np.random.default_rng(2)
    chains = power_mcmc.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * 200, alpha, 1, 5, 2, rng)
    for c in chains:
        assert c.proposals in (5, 10)  # five redraws in each block the chain ran (block size 1, two blocks)
        assert c.proposals == 5 * len(c.tokens) or c.tokens.tolist() == [EOS]  # an answer may end early in block 2
        assert len(c.tokens) <= c.drawn <= len(c.tokens) + c.proposals * 2
        assert 0 <= c.accepted <= c.proposals


def test_the_model_backed_proposal(tiny_policy):
    model, tok = tiny_policy
    prompts = mini_power.prompt_ids(tok, [[{"role": "user", "content": f"Calculate {a} + 3."}] for a in range(4)])

    def run(alpha, n_mcmc, seed):
        torch.manual_seed(seed)
        proposer = mini_power.HFProposer(model, tok, alpha)
        return power_mcmc.sample_chains(proposer, prompts, alpha, 4, n_mcmc, 10, np.random.default_rng(seed))

    chains = run(4.0, 3, 0)
    again = run(4.0, 3, 0)
    assert [c.tokens.tolist() for c in chains] == [c.tokens.tolist() for c in again]  # seeds fix every draw
    for c in chains:
        assert 1 <= len(c.tokens) <= 10 and len(c.logp) == len(c.logq) == len(c.tokens)
        assert c.drawn > len(c.tokens) and c.proposals == 3 * math.ceil(len(c.tokens) / 4)
    # The stored log p of each response is the base model's own, recomputed by a forward pass.
    rollout = mini_power.to_rollout(tok, chains)
    from entropy_rl.mini import generation

    logp, _ = generation.forward_response(model, rollout, 1.0, with_entropy=False)
    for i, c in enumerate(chains):
        assert torch.allclose(logp[i, : len(c.tokens)], c.logp, atol=1e-4)
    # At α = 1 the proposal is the target: a redraw of the same length (none ends early here) is always accepted.
    assert all(c.accepted == c.proposals for c in run(1.0, 3, 1))


def test_every_method_samples_grades_and_costs_the_same_problems(tiny_policy):
    model, tok = tiny_policy
    prompts = [
        [{"role": "user", "content": f"Calculate {a} + 3. Put the final answer in \\boxed{{}}."}] for a in range(3)
    ]
    answers = [str(a + 3) for a in range(3)]
    methods = {
        "base": Sample(temperature=1.0),
        "low-temp": Sample(temperature=0.25),
        "power": Power(alpha=4.0, block_size=4, n_mcmc=2),
        "smc": SMC(alpha=4.0, particles=4, resample_every=2, ess_threshold=0.5),
        "sps": SPS(alpha=4.0, block_size=4, candidates=3, rollouts=2, horizon=4),
    }
    frames = {
        name: mini_power.sample_method(model, tok, model, prompts, answers, m, 4, 8, seed=0)
        for name, m in methods.items()
    }
    for name, f in frames.items():
        assert len(f) == 12 and sorted(set(f["problem_id"])) == [0, 1, 2] and f["sample"].max() == 3
        assert (f["base_loglik"] <= 0).all() and (f["response_tokens"] >= 1).all() and (f["seconds"] > 0).all()
        assert f["ground_truth"].tolist() == [a for a in answers for _ in range(4)]
    assert (frames["base"]["drawn_tokens"] == frames["base"]["response_tokens"]).all()  # one draw per token
    for name in ("power", "smc", "sps"):
        assert (frames[name]["drawn_tokens"] > frames[name]["response_tokens"]).all()
    assert frames["power"]["acceptance"].between(0, 1).all() and frames["base"]["acceptance"].isna().all()
    assert frames["smc"]["acceptance"].isna().all() and frames["sps"]["acceptance"].isna().all()
    for name in ("power", "smc", "sps"):  # the seed fixes every draw; the wall time is the clock's
        again = mini_power.sample_method(model, tok, model, prompts, answers, methods[name], 4, 8, seed=0)
        pd.testing.assert_frame_equal(again.drop(columns="seconds"), frames[name].drop(columns="seconds"))


def test_the_sampling_job_runs_a_method_from_its_rules_params(tiny_policy, tmp_path):
    """The mini rule's params, read once as a Sampler, through the registry's sampler: the first ``problems`` of
    each benchmark, ``n`` answers each."""
    import logging
    from types import SimpleNamespace

    from entropy_rl.core.power import sample_job
    from entropy_rl.core.power.methods import Sampler
    from entropy_rl.mini import data

    model_dir = tiny_policy[0].name_or_path
    problems = [
        {"prompt": f"{a}+3", "gold": str(a + 3), "style": "rule", "question": f"Calculate {a} + 3.", "expression": ""}
        for a in range(4)
    ]
    pd.DataFrame(data.verl_rows(problems, "addsub", "test", "basic_arithmetic")).to_parquet(tmp_path / "addsub.parquet")
    method = {"kind": "power", "alpha": 4.0, "block_size": 4, "n_mcmc": 1, "benchmarks": ["addsub"]}
    params = SimpleNamespace(backend="mini", method=method, problems=3, n=2, max_new_tokens=6, seed=0)
    sampler = Sampler.from_params(params)
    assert sampler.method == Power(alpha=4.0, block_size=4, n_mcmc=1) and sampler.engines is None
    out = tmp_path / "power.parquet"
    benchmarks = [str(tmp_path / "addsub.parquet")]
    sample_job.sample("mini", sampler, "power", model_dir, model_dir, benchmarks, str(out), logging.getLogger())
    rows = pd.read_parquet(out)
    assert len(rows) == 6 and set(rows["benchmark"]) == {"addsub"} and (rows["drawn_tokens"] > 0).all()
    with pytest.raises(ValueError, match="no sampler for a 'power' method at scale 'huge'"):
        sample_job.sample("huge", sampler, "power", model_dir, model_dir, benchmarks, str(out), logging.getLogger())


def frame(correct: list[list[bool]], drawn_per_token: int, bench: str = "addsub") -> pd.DataFrame:
    rows = [
        {
            "benchmark": bench,
            "problem_id": p,
            "sample": s,
            "correct": c,
            "extracted": "1" if c else "2",
            "response_tokens": 10,
            "drawn_tokens": 10 * drawn_per_token,
            "base_loglik_per_token": -1.0 - p,
        }
        for p, row in enumerate(correct)
        for s, c in enumerate(row)
    ]
    return pd.DataFrame(rows)


def test_the_comparison_measures_accuracy_cost_and_pass_at_k():
    from entropy_rl.study import power_study

    samples = {
        "base": frame([[True, False, False, False], [False, False, False, True]], 1),
        "power": frame([[True, True, True, False], [False, False, False, False]], 7),
    }
    table = power_study.accuracy_table(samples)
    assert table.loc["base", "addsub"] == 0.25 and table.loc["power", "addsub"] == 0.375
    assert table.loc["power", "cost vs base"] == 7.0 and table.loc["base", "cost vs base"] == 1.0
    curves = power_study.pass_at_k_curves(samples, [1, 2, 4, 8]).set_index(["method", "k"])["pass_at_k"]
    assert 8 not in curves.index.get_level_values("k")  # four samples a problem: pass@8 has no unbiased estimate
    # Base solves both problems once in four, power one problem often: pass@4 is 1.0 against 0.5.
    assert curves["base", 1] == 0.25 and curves["base", 4] == 1.0
    assert curves["power", 1] == 0.375 and curves["power", 4] == 0.5
    assert curves["base", 2] == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2) on each problem
    assert set(power_study.likelihoods(samples)["method"]) == {"base", "power"}


def test_the_study_table_and_figures_are_drawn(tmp_path):
    from entropy_rl.study import power_study
    from entropy_rl.study.inputs import Inputs

    rng = np.random.default_rng(0)

    def fake(p_right, drawn, acceptance=math.nan):
        f = pd.concat(
            [frame(rng.random((5, 8)) < p_right, drawn, bench) for bench in ("addsub", "add4")], ignore_index=True
        )
        return f.assign(acceptance=acceptance, base_loglik_per_token=rng.normal(-1, 0.3, len(f)))

    main = {"alpha": 4.0, "block_size": 8, "n_mcmc": 5}
    samples = {"base": [fake(0.3, 1)], "low-temp": [fake(0.5, 1)], "power": [fake(0.6, 9, 0.4)], "grpo": [fake(0.7, 1)]}
    labels = {"base": "Base", "power": "Power sampling"}
    table = power_study.power01_accuracy(Inputs(samples=samples, labels=labels))
    assert list(table.index) == ["Base", "low-temp", "Power sampling", "grpo"] and "Avg. s.e." not in table
    assert table.loc["Base", "Avg."] == pytest.approx(table.loc["Base", ["addsub", "add4"]].mean())
    assert table.loc["Power sampling", "cost vs base"] == 9 and table.loc[
        "Power sampling", "MH acceptance"
    ] == pytest.approx(0.4)
    power_study.power02_pass_at_k(
        Inputs(samples=samples, labels=labels, pass_k=(1, 2, 4, 8), caption="c"), tmp_path / "passk"
    )
    power_study.power03_likelihoods(Inputs(samples=samples, labels=labels), tmp_path / "lik")
    sweep = {"power": [fake(0.6, 9)], "power-alpha1": [fake(0.3, 6)], "power-mcmc0": [fake(0.5, 1)]}
    settings = {"power": main, "power-alpha1": dict(main, alpha=1.0), "power-mcmc0": dict(main, n_mcmc=0)}
    power_study.power04_hyperparameters(Inputs(samples=sweep, settings=settings), tmp_path / "hyper")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{s}.{e}" for s in ("passk", "lik", "hyper") for e in ("pdf", "png")
    )


def test_the_study_over_seeds_shows_the_mean_and_its_standard_error(tmp_path):
    from entropy_rl.study import power_study
    from entropy_rl.study.inputs import Inputs

    base = [frame([[True, False], [False, False]], 1), frame([[True, True], [True, False]], 1)]  # 25% and 75%
    power = [frame([[True, True], [False, False]], 3), frame([[True, True], [True, True]], 5)]  # 50% and 100%
    base = [f.assign(acceptance=math.nan, seconds=s) for f, s in zip(base, (0.01, 0.03))]
    power = [f.assign(acceptance=0.5, seconds=s) for f, s in zip(power, (0.04, 0.06))]
    table = power_study.power01_accuracy(Inputs(samples={"base": base, "power": power}))
    assert table.loc["base", "addsub"] == 50 and table.loc["power", "addsub"] == 75
    # pass@2 (both answers a problem has): base solves 1 of 2 problems, then 2 of 2; power 1, then 2
    assert table.loc["base", "pass@2"] == 75 and table.loc["power", "pass@2"] == 75
    assert table.loc["power", "time vs base"] == pytest.approx((4 + 2) / 2)  # 0.04/0.01 and 0.06/0.03, then the mean
    assert table.loc["power", "time vs base s.e."] == pytest.approx(2 / math.sqrt(2) / math.sqrt(2))
    assert table.loc["power", "seconds per answer"] == pytest.approx(0.05)
    # 50 and 100: s.d. 35.4, over root 2
    assert table.loc["power", "Avg. s.e."] == pytest.approx(50 / math.sqrt(2) / math.sqrt(2))
    assert (
        table.loc["power", "cost vs base"] == 4
        and list(table.columns).index("Avg. s.e.") == list(table.columns).index("Avg.") + 1
    )
    with pytest.raises(ValueError, match="same number of seeds"):
        power_study.power01_accuracy(Inputs(samples={"base": base, "power": power[:1]}))
    power_study.power02_pass_at_k(Inputs(samples={"base": base, "power": power}, pass_k=(1, 2)), tmp_path / "passk")
    assert (tmp_path / "passk.png").stat().st_size > 0
    power_study.power05_cost_accuracy(Inputs(samples={"base": base, "power": power}, caption="c"), tmp_path / "cost")
    assert (tmp_path / "cost.png").stat().st_size > 0


# ---- paper scale: the vLLM-backed proposal, up to the engine (vLLM needs a GPU) -------------------


@pytest.fixture
def engine(tiny_policy, monkeypatch):
    import vllm_standin

    vllm_standin.install(monkeypatch)
    model, tok = tiny_policy
    return vllm_standin.Engine(model, tok.eos_token_id)


def test_the_vllm_proposal_draws_from_q_and_scores_with_p(tiny_policy, engine):
    """log q is the engine's processed logprob, log p its raw prompt logprob: both checked against a
    forward pass of the model; one generate call drafts every chain, one more scores them."""
    model, tok = tiny_policy
    prefixes = mini_power.prompt_ids(tok, [[{"role": "user", "content": f"Calculate {a} + 3."}] for a in range(3)])
    alpha = 4.0
    proposer = paper_power.VllmProposer(engine, alpha, (tok.eos_token_id,), seed=0)
    drafts = proposer.extend(prefixes, [5, 3, 6])
    assert engine.calls == [3, 3]
    for prefix, budget, (tokens, logp, logq) in zip(prefixes, [5, 3, 6], drafts):
        assert 1 <= len(tokens) <= budget and len(logp) == len(logq) == len(tokens)
        assert tok.eos_token_id not in tokens[:-1].tolist()  # a draft ends at its first stop token
        with torch.no_grad():
            logits = model(input_ids=torch.cat([prefix, tokens])[None]).logits[0, len(prefix) - 1 : -1].float()
        at = tokens[:, None]
        assert torch.allclose(logp, torch.log_softmax(logits, -1).gather(-1, at).squeeze(-1), atol=1e-4)
        assert torch.allclose(logq, torch.log_softmax(alpha * logits, -1).gather(-1, at).squeeze(-1), atol=1e-4)
    again = paper_power.VllmProposer(engine, alpha, (tok.eos_token_id,), seed=0).extend(prefixes, [5, 3, 6])
    assert [d[0].tolist() for d in again] == [d[0].tolist() for d in drafts]  # request seeds fix the draws


def test_vllm_and_hugging_face_proposals_drive_the_same_chains(tiny_policy, engine):
    """The same chains, block by block, with either proposal: the MH bookkeeping (log p, log q,
    drawn tokens, acceptance) agrees, so the paper-scale sampler is the mini one."""
    model, tok = tiny_policy
    prompts = mini_power.prompt_ids(tok, [[{"role": "user", "content": f"Calculate {a} + 3."}] for a in range(4)])
    proposer = paper_power.VllmProposer(engine, 4.0, (tok.eos_token_id,), seed=1)
    chains = power_mcmc.sample_chains(proposer, prompts, 4.0, 4, 3, 10, np.random.default_rng(1))
    rollout = mini_power.to_rollout(tok, chains)
    from entropy_rl.mini import generation

    logp, _ = generation.forward_response(model, rollout, 1.0, with_entropy=False)
    for i, c in enumerate(chains):
        assert 1 <= len(c.tokens) <= 10 and c.proposals == 3 * math.ceil(len(c.tokens) / 4)
        assert torch.allclose(logp[i, : len(c.tokens)], c.logp, atol=1e-4)
        assert c.drawn > len(c.tokens) and 0 <= c.accepted <= c.proposals
    # one draft call and one scoring call per block extension and per MCMC step, all chains together
    assert max(engine.calls) == len(prompts) and len(engine.calls) % 2 == 0


def test_the_paper_scale_method_sampler_gives_the_mini_rows(tiny_policy, engine, tmp_path):
    model, tok = tiny_policy
    prompts = [
        [{"role": "user", "content": f"Calculate {a} + 3. Put the final answer in \\boxed{{}}."}] for a in range(3)
    ]
    answers, styles = [str(a + 3) for a in range(3)], ["rule"] * 3
    stop = paper_power.stop_ids(str(tmp_path), tok)  # no generation config there: the tokenizer's EOS
    assert stop == (tok.eos_token_id,)
    methods = {"base": Sample(temperature=1.0), "power": Power(alpha=4.0, block_size=4, n_mcmc=2)}
    frames = {
        name: paper_power.sample_method(engine, engine, tok, prompts, answers, styles, m, 4, 8, 0, stop)
        for name, m in methods.items()
    }
    mini = mini_power.sample_method(model, tok, model, prompts, answers, methods["power"], 4, 8, seed=0)
    for f in frames.values():  # the first paper-scale sampler does not time its answers (its code stamp is kept)
        assert list(f.columns) == [c for c in mini.columns if c != "seconds"] and len(f) == 12
        assert f["ground_truth"].tolist() == [a for a in answers for _ in range(4)]
        assert (f["response_tokens"].between(1, 8)).all() and (f["base_loglik"] < 0).all()
    assert (frames["base"]["drawn_tokens"] == frames["base"]["response_tokens"]).all()
    assert (frames["power"]["drawn_tokens"] > frames["power"]["response_tokens"]).all()
    # The base log-likelihood column is the model's own: the plain-sampling answers drawn again with the
    # same requests (problem k seeded 0 + 4k), scored by a forward pass, row by row.
    import vllm_standin

    ids = [x.tolist() for x in mini_power.prompt_ids(tok, prompts)]
    params = [
        vllm_standin.SamplingParams(
            n=4, temperature=1.0, max_tokens=8, seed=4 * k, ignore_eos=True, stop_token_ids=list(stop)
        )
        for k in range(len(ids))
    ]
    redrawn = [
        c.token_ids for out in engine.generate([{"prompt_token_ids": x} for x in ids], params) for c in out.outputs
    ]
    for j, response in enumerate(redrawn):
        prefix = torch.tensor(ids[j // 4])
        with torch.no_grad():
            logits = model(input_ids=torch.cat([prefix, torch.tensor(response)])[None]).logits[0, len(prefix) - 1 : -1]
        want = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(response)[:, None]).sum()
        assert frames["base"]["response_tokens"][j] == len(response)
        assert frames["base"]["base_loglik"][j] == pytest.approx(float(want), abs=1e-3)
    again = paper_power.sample_method(engine, engine, tok, prompts, answers, styles, methods["power"], 4, 8, 0, stop)
    pd.testing.assert_frame_equal(again, frames["power"])


@pytest.mark.parametrize(
    "method",
    [
        SMC(alpha=4.0, particles=4, resample_every=3, ess_threshold=0.5),
        SPS(alpha=4.0, block_size=4, candidates=3, rollouts=2, horizon=4),
    ],
)
def test_the_later_samplers_at_paper_scale_give_the_mini_rows(tiny_policy, engine, tmp_path, method):
    """paper.power_samplers over the vLLM proposal: the mini rows (wall time included), every answer advanced
    together, repeatable by its seed."""
    from entropy_rl.paper import power_samplers

    model, tok = tiny_policy
    prompts = [[{"role": "user", "content": f"Calculate {a} + 3."}] for a in range(3)]
    answers, styles = [str(a + 3) for a in range(3)], ["rule"] * 3
    stop = paper_power.stop_ids(str(tmp_path), tok)
    rows = power_samplers.sample_method(engine, engine, tok, prompts, answers, styles, method, 4, 8, 0, stop)
    mini = mini_power.sample_method(model, tok, model, prompts, answers, method, 4, 8, seed=0)
    assert list(rows.columns) == list(mini.columns) and len(rows) == 12 and (rows["seconds"] > 0).all()
    assert (rows["drawn_tokens"] > rows["response_tokens"]).all() and rows["acceptance"].isna().all()
    assert rows["response_tokens"].between(1, 8).all() and (rows["base_loglik"] < 0).all()
    # draws of every answer share a call: the largest batch holds more prefixes than there are answers' prompts
    assert max(engine.calls) > len(prompts)
    again = power_samplers.sample_method(engine, engine, tok, prompts, answers, styles, method, 4, 8, 0, stop)
    pd.testing.assert_frame_equal(again.drop(columns="seconds"), rows.drop(columns="seconds"))


class EndlessProposer:
    """Uniform draws that never end an answer: Algorithm 1's token count with no early stops."""

    stop_ids = (-1,)

    def __init__(self, rng):
        self.rng = rng

    def extend(self, prefixes, budgets):
        return [(torch.ones(b, dtype=torch.long), torch.full((b,), -1.0), torch.full((b,), -1.0)) for b in budgets]


def test_the_gpu_hours_token_model_is_what_the_sampler_draws():
    """budget.power_sampling_tokens (the paper-scale time estimate) against sample_chains' own count."""
    from entropy_rl.paper.cost import budget

    length, block, n_mcmc = 40, 8, 5
    chains = power_mcmc.sample_chains(
        EndlessProposer(None), [torch.tensor([7])] * 3000, 1.0, block, n_mcmc, length, np.random.default_rng(0)
    )
    drawn = np.mean([c.drawn for c in chains])
    want, _ = budget.power_sampling_tokens(length, block, n_mcmc, prompt=0)
    se = np.std([c.drawn for c in chains]) / math.sqrt(len(chains))
    print(f"tokens drawn per answer: sampler {drawn:.1f} ± {se:.1f}, estimate {want:.1f}, plain sampling {length}")
    assert abs(drawn - want) < 4 * se


class DistinctProposer(EndlessProposer):
    """Random draws that never end an answer: every candidate block distinct, as the estimate's upper count."""

    def extend(self, prefixes, budgets):
        return [
            (torch.as_tensor(self.rng.integers(0, 10**6, b)), torch.full((b,), -1.0), torch.full((b,), -1.0))
            for b in budgets
        ]


def test_the_gpu_hours_token_model_of_the_later_samplers_is_what_they_draw():
    """budget.smc_tokens and budget.sps_tokens against the samplers' own counts, on answers that never end early."""
    from entropy_rl.core.power import smc as power_smc
    from entropy_rl.core.power import sps as power_sps
    from entropy_rl.paper.cost import budget

    length, rng = 21, np.random.default_rng(0)
    smc = SMC(alpha=1.0, particles=5, resample_every=4, ess_threshold=0.5)
    chains = power_smc.method_chains(DistinctProposer(rng), [torch.tensor([7])] * 3, smc, 1, length, rng)
    assert {c.drawn for c in chains} == {budget.smc_tokens(length, 5, 4, prompt=0)[0]}
    sps = SPS(alpha=1.0, block_size=8, candidates=3, rollouts=2, horizon=5)
    chains = power_sps.method_chains(DistinctProposer(rng), [torch.tensor([7])] * 3, sps, 1, length, rng)
    assert {c.drawn for c in chains} == {budget.sps_tokens(length, 8, 3, 2, 5, prompt=0)[0]}
