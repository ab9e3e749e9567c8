"""verl 0.9.1 on the host CPU: a platform for verl and the shims verl and vLLM need there, for the small scale (verl's
whole ``main_ppo`` on a CPU, a real small LM, no GPU) and for the tests' CPU runs of the paper path (the CPU pilot,
verl's worker driven one operation at a time).

verl imports this module in every one of its processes (``VERL_USE_EXTERNAL_MODULES``, verl's own hook, read in
verl/__init__.py: the driver, Ray's actors, the vLLM server and its engine processes), which registers ``CPUPlatform``
with verl's extension point ``verl.plugin.platform.PlatformRegistry``. ``paper.platforms.ENV["cpu"]`` is what a verl
process needs for it (each setting with its reason there). The
platform is never auto-detected, and the shims at the end of the file are applied only where ``VERL_PLATFORM=cpu``:
importing this module anywhere else changes nothing (B3: the gloo backend string; B6: vLLM's CPU engine keeping the
weights verl syncs into; B7: the reference model's host memory unpinned).

It imports torch and verl (a platform is registered at import); the environment that selects it is
``paper.platforms``', which imports neither.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import types

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

from .. import platforms

PLATFORM = platforms.CPU
MODULE = platforms.CPU_PLATFORM_MODULE  # this module, as VERL_USE_EXTERNAL_MODULES names it (paper.platforms.ENV)


def _noop(*args, **kwargs):
    return None


def _zero(*args, **kwargs):
    return 0


def _device_module() -> types.ModuleType:
    """``torch.cpu`` with the memory, seeding and RNG calls verl makes of ``torch.cuda``: no-ops, or the
    host's (seeding the host generator is what seeding "the device" means on a CPU)."""
    module = types.ModuleType(f"{MODULE}.device")
    for name in ("synchronize", "current_stream", "stream", "Stream", "Event", "StreamContext"):
        if hasattr(torch.cpu, name):
            setattr(module, name, getattr(torch.cpu, name))
    module.is_available = lambda: True
    module.device_count = lambda: 1
    module.current_device = lambda: 0
    module.set_device = _noop
    module.empty_cache = _noop
    module.ipc_collect = _noop
    module.reset_peak_memory_stats = _noop
    module.set_per_process_memory_fraction = _noop
    for name in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
        setattr(module, name, _zero)
    module.mem_get_info = lambda *a, **k: (0, 0)
    module.get_device_name = lambda *a, **k: "cpu"
    module.manual_seed = torch.manual_seed
    module.manual_seed_all = torch.manual_seed
    module.get_rng_state = torch.get_rng_state
    module.set_rng_state = torch.set_rng_state
    return module


@PlatformRegistry.register(platform=PLATFORM)
class CPUPlatform(PlatformBase):
    """The host CPU as verl's accelerator: device "cpu", collectives over gloo."""

    _module = _device_module()

    device_name = property(lambda self: "cpu")
    vendor_name = property(lambda self: "cpu")
    device_module = property(lambda self: self._module)

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check=False) -> bool:
        return False  # never auto-detected: only VERL_PLATFORM=cpu selects it (importing this module changes nothing)

    def current_device(self):
        return "cpu"  # verl passes it as a device (FSDP's device_id, tensor.to(...)), so a name, not an index

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index) -> None:
        pass

    def synchronize(self, device_index=None) -> None:
        pass

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        pass

    def empty_cache(self) -> None:
        pass

    def get_device_capability(self, device_index: int = 0):
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        pass

    def profiler_stop(self) -> None:
        pass

    def ray_resource_name(self) -> str:
        return "GPU"  # main_ppo's resource pool asks Ray for GPUs; logical ones on a CPU host

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self):
        return None


# ---- the shims: what verl and vLLM need on a CPU that neither has an extension point for ---------------------------


def _gloo_backend_shim() -> None:
    """Shim B3: verl starts its process groups with the backend "cpu:gloo,<device>:<backend>"
    (verl/utils/distributed.py, ``initialize_global_process_group_ray``), which on this platform is
    "cpu:gloo,cpu:gloo", a device named twice, and torch refuses it ("Duplicate device type cpu in backend string");
    verl has no extension point for the string. Its one device is given once."""
    import torch.distributed as dist

    original = dist.init_process_group
    if getattr(original, "cpu_platform_shim", False):
        return

    @functools.wraps(original)
    def init_process_group(backend=None, *args, **kwargs):
        if backend == f"cpu:gloo,{PLATFORM}:gloo":
            backend = "cpu:gloo"
        return original(backend, *args, **kwargs)

    init_process_group.cpu_platform_shim = True
    dist.init_process_group = init_process_group


def _vllm_keeps_linear_weights() -> None:
    """Shim B6, in vLLM's processes only: vLLM's CPU engine repacks each linear layer's weight for oneDNN once it is
    loaded and drops the parameter (vllm/model_executor/layers/utils.py, ``dispatch_cpu_unquantized_gemm``,
    ``remove_weight=True``); verl's weight sync then has nothing to write the actor's weights into
    (verl/workers/rollout/vllm_rollout/utils.py, ``_update_weights`` -> ``model.load_weights``: "'Parameter' object
    has no attribute 'weight_loader'"). On a GPU the parameter stays. With oneDNN's matmul declared absent, vLLM takes
    its own plain path (``torch.nn.functional.linear`` on the kept parameter), which reads the synced weights."""
    import vllm._custom_ops as ops

    ops._supports_onednn = False


def _reference_offload_unpinned() -> None:
    """Shim B7: verl offloads the reference model's parameters to host memory with a fixed
    ``CPUOffloadPolicy(pin_memory=True)`` (verl/workers/engine/fsdp/transformer_impl.py, ``_build_fsdp_module``, every
    forward-only engine), and pinning host memory needs an accelerator ("Cannot access accelerator device when none is
    available"). On a CPU the parameters already live in host memory: the policy is kept, unpinned."""
    from torch.distributed.fsdp import CPUOffloadPolicy

    original = CPUOffloadPolicy.__init__
    if getattr(original, "cpu_platform_shim", False):
        return

    def __init__(self, pin_memory: bool = True):
        original(self, pin_memory=False)

    __init__.cpu_platform_shim = True
    CPUOffloadPolicy.__init__ = __init__


# Imported by every verl process of a CPU run (VERL_USE_EXTERNAL_MODULES: the driver, Ray's actors, the vLLM server and
# its engine processes), this module registers the platform above; the shims go with it there, and only there.
if os.environ.get("VERL_PLATFORM") == PLATFORM:
    _gloo_backend_shim()
    _reference_offload_unpinned()
    if "vllm" in sys.modules:  # a vLLM process: its engine's worker imports verl's weight-sync extension
        _vllm_keeps_linear_weights()
