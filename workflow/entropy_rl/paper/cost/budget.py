"""GPU-hours of the paper-scale jobs, estimated from FLOPs and bytes before anything is submitted.

A token's FLOPs are its model's architecture's (``architectures``: verl's own count of the matmuls, the embedding
and causal attention at the token's position), not 2·N. A training step (``step``) answers its prompts and, where its
trainer generates more than it trains on (PRIME's oversampling, the group filter's refills), those too; each generated
token costs its decoding roofline (``decode``: its FLOPs or the bytes it reads, by the engine's room) at the rollout's
efficiency. It then passes over every trained token as its trainer does (the old log-probabilities, the reference
where a KL loss needs it, each PPO epoch, PRIME's implicit PRM) at the update's MFU. An evaluation generates every
benchmark's samples once. The token counts are the mean lengths of the run's train set (``step.lengths``), not the
caps. The efficiencies (``efficiency``) are measured, fitted, or assumed, each with its range where the data cannot
say more; every estimate here is at one end of them (``end``: the charged value, "low" at the cheap end, "high" at the
costly one). The same estimate, times a margin, is the SLURM runtime each job asks for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ...core.run import Run
from ...core.scale import Benchmark, Placement, Scale
from .. import job_time, saves, verl_names
from . import architectures, decode, efficiency, step
from .architectures import Architecture

# Where in their ranges the efficiencies and the refills are taken: the value charged, the cheap end, the costly end,
# and the charged efficiencies with every step's refills at its max_num_gen_batches (the worst case).
ENDS = ("expected", "low", "high", "bound")


def _seconds(flops: float, gpus_: int, mfu_: float, budget: dict) -> float:
    return flops / (gpus_ * budget["gpu_peak_tflops"] * 1e12 * mfu_)


def _pick(eff: efficiency.Efficiency, end: str) -> float:
    """The efficiency at ``end`` of its range: the cheap end is the high efficiency."""
    return {"expected": eff.value, "bound": eff.value, "low": eff.high, "high": eff.low}[end]


def decode_s(
    arch: Architecture, prompt: float, response: float, budget: dict, engine: decode.Engine, end: str = "expected"
) -> float:
    """One GPU's seconds a generated token costs: its roofline on the budget's GPU over the rollout's efficiency."""
    roof = decode.roofline(arch, prompt, response, engine, budget["gpu"], budget["gpu_peak_tflops"])
    eff = efficiency.of(budget, "rollout_mfu", arch, prompt, response, engine)
    return roof.seconds / _pick(eff, end)


@dataclass(frozen=True)
class TrainTime:
    """One run's wall time by this estimate: a step's (its update, the rollout of what it trains on, the refills or
    oversampling beyond it), a validation's, how many of each, and its save interval."""

    gpus: int
    update_s: float
    rollout_s: float
    refill_s: float
    validation_s: float
    steps: int
    validations: int
    save_every: int
    val_every: int
    prime: bool  # PRIME's recipe is stopped after a save (job_time.StopBeforeEnd); verl's trainer saves before the end

    @property
    def step_s(self) -> float:
        return self.update_s + self.rollout_s + self.refill_s

    @property
    def wall_s(self) -> float:
        return self.steps * self.step_s + self.validations * self.validation_s

    def terms(self) -> dict[str, float]:
        """GPU-hours by what they pay for (the jobs' start-ups apart)."""
        hours = lambda seconds: seconds * self.gpus / 3600
        return {
            "update": hours(self.steps * self.update_s),
            "rollout": hours(self.steps * self.rollout_s),
            "refills": hours(self.steps * self.refill_s),
            "validation": hours(self.validations * self.validation_s),
        }

    @property
    def lost_s(self) -> float:
        """What a job may leave unused at its time limit: the two steps' time verl's trainer keeps free
        (verl_plugin.BoundedSaves); for PRIME, which near the end saves at each validation
        (prime_checkpoints.save_at_each_validation_near_end), two validation intervals."""
        if self.prime:
            return 2 * (min(self.val_every, self.save_every) * self.step_s + self.validation_s)
        return 2 * self.step_s + self.validation_s

    def jobs(self, max_job_minutes: float, startup_minutes: float) -> int | None:
        """The SLURM jobs the run needs when none may last longer than ``max_job_minutes`` (job_time.jobs_needed);
        None when one job cannot hold its start-up and the time it may leave unused."""
        start_h = startup_minutes / 60 + self.validation_s / 3600  # model load, vLLM and Ray; val_before_train
        return job_time.jobs_needed(self.wall_s / 3600, max_job_minutes / 60, start_h, self.lost_s / 3600)

    def launches_gpu_hours(self, max_job_minutes: float, startup_minutes: float) -> float:
        """GPU-hours the jobs add to the training itself: each one's start-up, and each relaunch's validation before
        training and the time the job before it left unused."""
        # where no job holds a save interval (the runs would not get far), at least one job per max_job_minutes
        jobs = self.jobs(max_job_minutes, startup_minutes) or math.ceil(self.wall_s / 60 / max_job_minutes)
        seconds = jobs * startup_minutes * 60 + (jobs - 1) * (self.validation_s + self.lost_s)
        return seconds * self.gpus / 3600


def train_time(
    run: Run, placement: Placement, arch: Architecture, budget: dict, val_questions: int, end: str = "expected"
) -> TrainTime:
    gpus_ = placement.gpus
    length = step.lengths(run, budget)
    sequence = length.prompt + length.response
    responses = run.prompts_per_step * run.rollout_n
    engine = decode.ROLLOUT_ENGINE.at(placement.tensor_parallel)
    token_s = decode_s(arch, length.prompt, length.response, budget, engine, end)
    rollout = token_s * responses * length.response / gpus_
    refill = (step.generation_factor(run, budget, end) - 1) * rollout
    train = _pick(efficiency.of(budget, "train_mfu", arch, length.prompt, length.response), end)
    update = _seconds(step.train_passes(run) * arch.forward(sequence) * responses * sequence, gpus_, train, budget)
    validations = run.steps // run.val_every + 1
    # validation answers the benchmarks: the budget's mean lengths, at most the run's cap
    val_response = min(budget["mean_response_tokens"], run.max_response_length)
    val_token_s = decode_s(arch, budget["mean_prompt_tokens"], val_response, budget, engine, end)
    validation = val_token_s * val_questions * run.val_protocol.n * val_response / gpus_
    return TrainTime(
        gpus_,
        update,
        rollout,
        refill,
        validation,
        run.steps,
        validations,
        run.save_every or run.steps,
        run.val_every,
        step.is_prime(run),
    )


def train_gpu_hours(run: Run, placement: Placement, arch: Architecture, budget: dict, val_questions: int) -> float:
    """The training's own GPU-hours: its steps and validations, in one job (``job_hours`` adds the jobs')."""
    time_ = train_time(run, placement, arch, budget, val_questions)
    return time_.wall_s * time_.gpus / 3600


def save_bytes(arch: Architecture, run: Run) -> float:
    """Bytes of one whole save: each trained model's fp32 weights and AdamW's two fp32 moments (12 bytes a parameter,
    verl's FSDP checkpoint manager's shards), the actor's and, for PRIME, its implicit PRM's."""
    return 12 * arch.parameters * (2 if step.is_prime(run) else 1)


def eval_gpu_hours(
    benchmarks: Mapping[str, Benchmark],
    placement: Placement,
    arch: Architecture,
    budget: dict,
    end: str = "expected",
    problems: int | None = None,
) -> float:
    """Every benchmark's samples (of its first ``problems`` where given: the pilot's), each token at its roofline in the
    evaluation's engine (vLLM's defaults)."""
    response = budget["mean_response_tokens"]
    generated = sum(min(b.size, problems or b.size) * b.protocol.n for b in benchmarks.values()) * response
    engine = decode.eval_engine(budget["gpu"]).at(placement.tensor_parallel)
    return decode_s(arch, budget["mean_prompt_tokens"], response, budget, engine, end) * generated / 3600


def power_sampling_tokens(length: int, block_size: int, n_mcmc: int, prompt: int) -> tuple[float, float]:
    """Expected tokens drawn and tokens scored (prefilled for log p) to make one answer of ``length``
    tokens by Algorithm 1 (``core.power.mcmc.sample_chains``): each block is drawn once, then each of
    its N_MCMC redraws starts at a cut uniform over the answer so far, so (k·B + 1)/2 tokens are drawn
    again on average in block k; every draw is scored with its prefix (prompt + answer so far)."""
    drawn, scored = float(length), 0.0
    for end in range(block_size, length + block_size, block_size):
        end = min(end, length)
        drawn += n_mcmc * (end + 1) / 2
        scored += (1 + n_mcmc) * (prompt + end)
    return drawn, scored


def smc_tokens(length: int, particles: int, resample_every: int, prompt: int) -> tuple[float, float]:
    """The same for Power-SMC (``core.power.smc``): every particle draws every token of the answer (the population
    runs as long as its longest particle; here all run to ``length``), in rounds of ``resample_every`` tokens, each
    round's draws scored with their prefix."""
    ends = [min(end, length) for end in range(resample_every, length + resample_every, resample_every)]
    return float(particles * length), float(particles * sum(prompt + end for end in ends))


def sps_tokens(
    length: int, block_size: int, candidates: int, rollouts: int, horizon: int, prompt: int
) -> tuple[float, float]:
    """The same for scalable power sampling (``core.power.sps``), at its most (every candidate distinct, none ending
    early): per block, L candidates of B tokens, then M rollouts of up to H tokens after each, every draw scored with
    its prefix."""
    drawn = scored = 0.0
    for start in range(0, length, block_size):
        end = min(start + block_size, length)
        ahead = min(horizon, length - end)
        drawn += candidates * (end - start) + candidates * rollouts * ahead
        scored += candidates * (prompt + end) + (candidates * rollouts * (prompt + end + ahead) if ahead else 0)
    return drawn, scored


def power_gpu_hours(
    method: dict, answers: int, placement: Placement, arch: Architecture, budget: dict, max_new_tokens: int
) -> float:
    """One power-sampling-study job on one node: ``answers`` answers by ``method`` (plain sampling, Algorithm 1,
    Power-SMC or scalable power sampling), then the base model's log-likelihood of each (one more prefill per answer).
    A drawn token is charged as decoding at the answer's mean position, a scored one as a pass over the whole answer."""
    gpus_ = placement.gpus_per_node
    length, prompt = min(budget["mean_response_tokens"], max_new_tokens), budget["mean_prompt_tokens"]
    drawn, scored = float(length), 0.0
    if method["kind"] == "power":
        drawn, scored = power_sampling_tokens(length, method["block_size"], method["n_mcmc"], prompt)
    elif method["kind"] == "smc":
        drawn, scored = smc_tokens(length, method["particles"], method["resample_every"], prompt)
    elif method["kind"] == "sps":
        drawn, scored = sps_tokens(
            length, method["block_size"], method["candidates"], method["rollouts"], method["horizon"], prompt
        )
    scored += prompt + length
    engine = decode.Engine(
        decode.SAMPLER_MEMORY, decode.eval_engine(budget["gpu"]).max_num_seqs, placement.tensor_parallel
    )
    seconds = decode_s(arch, prompt, length, budget, engine) * drawn * answers
    train = efficiency.mfu(budget, "train_mfu", arch)
    seconds += _seconds(arch.forward(prompt + length) * scored * answers, gpus_, train, budget) * gpus_
    return seconds / 3600


def runtime_minutes(gpu_hours: float, gpus: int, margin: float, floor: int = 60) -> int:
    """SLURM wall time for a job of ``gpu_hours`` spread over ``gpus``, with a margin and a floor."""
    return max(floor, math.ceil(gpu_hours / gpus * 60 * margin))


def estimate_message(runs: int, train: float, evaluation: float, methods: int, power: float, budget: dict) -> str:
    """The estimate printed before anything is submitted: ``runs`` still to train (their training and
    evaluation GPU-hours) and ``methods`` power-sampling jobs still to run (theirs)."""
    peak = f"{budget['gpu_peak_tflops']} TFLOPS per GPU"
    if budget.get("speed_laws"):
        how = (
            f"each architecture's FLOPs at its MFU by the pilot's speed laws, of {budget['gpu']}'s {peak}"
            " (results/pilot/report.md)"
        )
    else:
        how = (
            f"each architecture's update FLOPs at {budget['train_mfu']:.0%} of {budget['gpu']}'s {peak}, its decoding at "
            f"{budget['rollout_mfu']:.0%} of its roofline"
        )
    return (
        f"GPU-hours estimate for {runs} run(s) still to train: {train:,.0f} training + {evaluation:,.0f} evaluation"
        f" = {train + evaluation:,.0f}; {methods} power-sampling job(s): {power:,.0f}"
        f" ({how}; see config.yaml paper.budget)"
    )


def job_hours(scale: Scale, power_study=None, budget: dict | None = None, end: str = "expected") -> dict[str, float]:
    """Every GPU job of the paper scale with its estimated GPU-hours, by the names of pipeline.claim_plan:
    ``train:<run>`` (its steps and validations, and the start-up of each of the jobs it needs within the site's
    ``launch.max_job_minutes``: ``TrainTime.launches_gpu_hours``), ``eval:<run>`` (every benchmark, the paper's
    protocol) and ``power:<method>``; under ``budget`` (the config's, or one the pilot measured:
    ``measured_budget``) if given; at ``end`` of the efficiencies' and refills' ranges (``ENDS``)."""
    budget = budget or scale.config["budget"]
    questions = sum(b.size for b in scale.benchmarks.values())
    startup = scale.config.get("pilot", {}).get("startup_minutes", 0)  # the assumed start-up of a GPU job
    hours = {}
    for run_id, run in scale.runs.items():
        placement, arch = scale.placement(run_id), architectures.of_model(scale, run.model)
        time_ = train_time(run, placement, arch, budget, questions, end)
        launches = time_.launches_gpu_hours(job_time.max_job_minutes(scale.config.get("launch", {})), startup)
        hours[f"train:{run_id}"] = time_.wall_s * time_.gpus / 3600 + launches
        hours[f"eval:{run_id}"] = eval_gpu_hours(scale.benchmarks, placement, arch, budget, end)
    if power_study is not None:
        power = scale.config["power_sampling"]
        model, arch = scale.models[power["model"]], architectures.of_model(scale, power["model"])
        for name, method in power_study.methods.items():
            answers = power_study.answers(scale.config["data"]["benchmarks"], name)
            hours[f"power:{name}"] = power_gpu_hours(
                method, answers, model.placement, arch, budget, power["max_new_tokens"]
            )
    return hours


def peak_disk_bytes(scale: Scale, runs: list[str]) -> dict[str, float]:
    """Each run's largest hold on disk: the saves it keeps at most (``saves.peak_saves`` of the launch's
    ``KEEP_CHECKPOINTS``), each ``save_bytes`` by its model's architecture."""
    held = saves.peak_saves(verl_names.KEEP_CHECKPOINTS)
    out = {}
    for run_id in runs:
        run = scale.runs[run_id]
        out[run_id] = held * save_bytes(architectures.of_model(scale, run.model), run)
    return out


def disk_message(scale: Scale, runs: list[str]) -> str | None:
    """The disk the runs still to train hold at most, printed with the GPU-hours estimate (None without runs)."""
    if not runs:
        return None
    disk = peak_disk_bytes(scale, runs)
    largest = max(disk, key=disk.get)
    return (
        f"disk for checkpoints: at most {saves.peak_saves(verl_names.KEEP_CHECKPOINTS)} saves a run (the "
        f"{verl_names.KEEP_CHECKPOINTS} kept, one being written, one set aside), 12 bytes a trained parameter: "
        f"{disk[largest] / 1e12:.2f} TB for {largest}, the largest; {sum(disk.values()) / 1e12:.1f} TB if all "
        f"{len(runs)} train at once"
    )


def jobs_message(scale: Scale, runs: list[str], budget: dict | None = None) -> str | None:
    """How many jobs the runs still to train need within the site's longest job, and which cannot save within one."""
    if not runs:
        return None
    jobs = {run: n for run, n in train_jobs(scale, budget).items() if run in runs}
    longest = job_time.max_job_minutes(scale.config.get("launch", {}))
    fit = {run: n for run, n in jobs.items() if n is not None}
    text = f"training jobs of at most {longest / 60:g} h (paper.launch.max_job_minutes)"
    if fit:
        most = max(fit, key=fit.get)
        text += f": {sum(fit.values())} for {len(fit)} run(s), {fit[most]} for {most}, the most"
    unfit = sorted(set(jobs) - set(fit))
    if unfit:
        text += (
            f"; by this estimate one job cannot hold the start-up and a save interval of {len(unfit)} run(s) "
            f"({', '.join(unfit[:4])}{', ...' if len(unfit) > 4 else ''}): each job of theirs would end without "
            "a save; raise launch.max_job_minutes"
        )
    return text


def train_jobs(scale: Scale, budget: dict | None = None) -> dict[str, int | None]:
    """The SLURM jobs each run's training needs within the site's ``launch.max_job_minutes`` by this estimate (None:
    one job cannot hold its start-up and a save interval)."""
    budget = budget or scale.config["budget"]
    questions = sum(b.size for b in scale.benchmarks.values())
    startup, longest = (
        scale.config.get("pilot", {}).get("startup_minutes", 0),
        job_time.max_job_minutes(scale.config.get("launch", {})),
    )
    jobs = {}
    for run_id, run in scale.runs.items():
        arch = architectures.of_model(scale, run.model)
        jobs[run_id] = train_time(run, scale.placement(run_id), arch, budget, questions).jobs(longest, startup)
    return jobs


def pilot_hours(scale: Scale, budget: dict | None = None, node_runs: list[str] = ()) -> dict[str, float]:
    """The GPU pilot's jobs (config pilot) with their GPU-hours: the same FLOP estimate as the study's on the pilot's
    cut settings (its validation slice, its benchmark slices, its few answers), plus an assumed start-up per job
    (``pilot.startup_minutes``: container, model load, vLLM and Ray) on each of the job's GPUs, twice for the training
    run the pilot interrupts and relaunches; ``node_runs`` (pilot.speed.node) are trained, not evaluated."""
    budget = budget or scale.config["budget"]
    pilot = scale.config["pilot"]
    start = pilot["startup_minutes"] / 60
    hours = {}
    for run_id in [*pilot["runs"], *node_runs]:
        run, placement = scale.runs[run_id], scale.placement(run_id)
        arch = architectures.of_model(scale, run.model)
        launches = 2 if run.interrupt_at_step else 1
        val = run.val_max_samples or sum(b.size for b in scale.benchmarks.values())
        train = train_gpu_hours(run, placement, arch, budget, val)
        hours[f"train:{run_id}"] = train + launches * start * placement.gpus
        if run_id in node_runs:
            continue
        evaluation = eval_gpu_hours(scale.benchmarks, placement, arch, budget, problems=pilot["eval_problems"])
        hours[f"eval:{run_id}"] = evaluation + start * placement.tensor_parallel
    return hours


def pilot_power_hours(
    job: dict, placement: Placement, arch: Architecture, budget: dict, startup_minutes: float, benchmarks: int
) -> float:
    """One pilot sampling job (pipeline.power.pilot_methods) on its engines' ``placement``: its answers by the study's
    estimate, plus start-up."""
    answers = job["problems"] * benchmarks * job["n"]
    engines = 2 if "run" in job["settings"] else 1  # an RL checkpoint's answers are scored by the base model's engine
    hours = power_gpu_hours(job["settings"], answers, placement, arch, budget, job["max_new_tokens"])
    return hours + engines * startup_minutes / 60 * placement.tensor_parallel


def pilot_speed_hours(scale: Scale, budget: dict | None = None) -> float:
    """The pilot's speed job (pilot.speed, ``paper.cost.speed``) on its one GPU: for each size, a warm-up and the timed
    steps of log-prob and update and the rollout's answers with their warm-up, each at its architecture's FLOPs, by
    this estimate, plus the pilot's assumed start-up once a size (its random weights written, verl's worker built,
    vLLM's engine started: no Ray, no download)."""
    budget = budget or scale.config["budget"]
    pilot, speed = scale.config["pilot"], scale.config["pilot"]["speed"]
    prompt, response = budget["mean_prompt_tokens"], budget["mean_response_tokens"]
    n = scale.runs[speed["run"]].rollout_n
    tokens = (1 + speed["steps"]) * speed["prompts"] * n * (prompt + response)
    generated = (speed["rollout_sequences"] + max(1, speed["rollout_sequences"] // 8)) * response
    hours = 0.0
    for model in speed["sizes"]:
        arch = architectures.of_model(scale, model)
        update = architectures.update_flops(arch, prompt, response) * tokens
        seconds = _seconds(update, 1, efficiency.mfu(budget, "train_mfu", arch), budget)
        seconds += decode_s(arch, prompt, response, budget, decode.ROLLOUT_ENGINE) * generated
        hours += seconds / 3600 + pilot["startup_minutes"] / 60
    return hours
