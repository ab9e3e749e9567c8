"""The GPU an MFU is a fraction of: each type's dense bf16 peak, and the conversion of a speed timed on one type to
the budget's type (config.yaml ``paper.budget``: ``gpu``, ``gpu_peak_tflops``, ``gpu_conversion``).

An MFU is the FLOPs a second achieved over one GPU's peak. Timed on the pilot's GPU it is a fraction of that GPU's
peak; the budget's hours are for its own GPU type. On the same type the fraction carries over. On another type it
does not (memory bandwidth, the interconnect and the kernels differ by more than the peaks' ratio), so the estimate
refuses it unless the budget states ``gpu_conversion``: for the timed type, the seconds its own GPU takes for one
second of the timed one, and where that number comes from.
"""

from __future__ import annotations

# TFLOPS, dense bf16: verl 0.9.1's own table (verl/utils/flops_counter.py, _DEVICE_FLOPS), which its logged MFU
# divides by, for the types a study runs on. tests/paper/cost/test_speed_guards.py holds them equal to verl's.
PEAK_TFLOPS = {
    "A100": 312.0,
    "A800": 312.0,
    "H100": 989.0,
    "H800": 989.0,
    "H200": 989.0,
    "H20": 148.0,
    "L40S": 362.05,
    "B200": 2250.0,
    "GB200": 2500.0,
    "MI300X": 1307.0,
    "CPU": 0.448,
}

# Memory a GPU holds (GB) and reads a second (TB/s), which bound decoding (paper.cost.decode): each vendor's data sheet
# for the SXM part at its largest memory (NVIDIA A100 80GB, H100 and H200 SXM, H20, L40S, B200 and GB200 NVL72 per GPU
# data sheets; A800 and H800 are the A100's and H100's export variants, their memory unchanged; AMD Instinct MI300X).
# No entry for the CPU: the tests' CPU stand-in has no memory bound to price.
MEMORY = {
    "A100": (80, 2.039),
    "A800": (80, 2.039),
    "H100": (80, 3.35),
    "H800": (80, 3.35),
    "H200": (141, 4.8),
    "H20": (96, 4.0),
    "L40S": (48, 0.864),
    "B200": (180, 7.7),
    "GB200": (186, 8.0),
    "MI300X": (192, 5.3),
}


def gpu_type(device_name: str) -> str | None:
    """The table's type a device name (``torch.cuda.get_device_name()``: "NVIDIA H200") is, matched as verl matches
    it (the longest key first, so GB200 is not B200), or None."""
    for key in sorted(PEAK_TFLOPS, key=lambda k: (-len(k), k)):
        if key in device_name:
            return key
    return None


class GpuMismatch(ValueError):
    """A speed timed on one GPU type priced on another, with no stated conversion."""


def convert(mfu: float, timed_on: str, timed_peak: float, budget: dict) -> float:
    """``mfu`` (a fraction of ``timed_peak``, on ``timed_on``) as a fraction of the budget's GPU peak: the same time
    on the same type; on another type, the time the budget's ``gpu_conversion`` states for it."""
    timed, own = gpu_type(timed_on) or timed_on, budget["gpu"]
    if timed == own:
        factor = 1.0
    else:
        stated = budget.get("gpu_conversion", {}).get(timed)
        if stated is None:
            raise GpuMismatch(
                f"the speeds were timed on {timed_on} ({timed}) and the budget prices {own} (config.yaml paper.budget.gpu):"
                f" set paper.budget.gpu to the type the study runs on (with its gpu_peak_tflops), or state"
                f" paper.budget.gpu_conversion.{timed}: {{factor: <{own} seconds per {timed} second>, source: <where from>}}"
            )
        factor = stated["factor"]
    return mfu * timed_peak / (budget["gpu_peak_tflops"] * factor)
