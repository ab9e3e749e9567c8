"""What the benchmarks take from the tests, in one module. They measure the tests' own platforms (verl's CPU platform,
the CPU vLLM, the pilot run here, the toy model of p^α) and plan the tests' complete result sets, so they import the
same code rather than a copy of it; a benchmark puts tests/ on its path for this module alone (tests/test_layout.py).
"""

import importlib

from support import VLLM_ENV, make_planned_outputs, one_run_config, vllm_env  # noqa: F401

# The platforms, imported when a benchmark first asks for one: verl_cpu and power_toy load torch, which a benchmark
# that only plans (rerun_cost, plan_time) should not pay for.
PLATFORMS = ("pilot_here", "power_toy", "verl_cpu")


def __getattr__(name: str):
    if name in PLATFORMS:
        return importlib.import_module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
