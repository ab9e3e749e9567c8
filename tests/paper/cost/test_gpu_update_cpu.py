"""`python benchmarks/gpu_update.py --cpu`, the pilot's speed job by hand, run here: three tiny shapes through verl's own
worker and vLLM's own engine on the CPU platform, and the law fitted to them. The numbers predict nothing of a GPU;
what is held is the mechanism: the kernels it timed and said it timed, the FLOPs and MFUs it derived, the law's form."""

import json
import subprocess
import sys

import pytest
import support
from entropy_rl.paper.cost import speed_law, speed_report
from support import ROOT

pytestmark = pytest.mark.costly  # about two minutes of one core


def test_the_benchmark_times_three_shapes_and_fits_an_efficiency_with_a_fixed_cost(tmp_path):
    support.vllm_python()  # the rollout's engine: skipped without the CPU vLLM, failed under CI
    out = tmp_path / "speed.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_update.py"), "--cpu", "--steps", "1", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    print(proc.stdout[-4000:])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    sizes = data["measured"]["sizes"]
    assert [s["model"] for s in sizes] == ["qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b"]
    for size in sizes:
        update, rollout = size["update"], size["rollout"]
        # no flash-attn here: sdpa over padded sequences, never the dense mask over a packed micro-batch; a lower bound
        assert update["attention"] == "sdpa" and update["lower_bound"] and update["path"].startswith("sdpa over padded")
        assert {o["override"] for o in update["overrides"]} >= {"actor_rollout_ref.model.use_remove_padding=false"}
        assert update["peak_tflops"] == rollout["peak_tflops"] == 0.448  # verl's table's CPU entry
        assert rollout["tokens_per_s"] > 0 and rollout["tensor_parallel"] == 1
    laws = {kind: speed_law.Law.from_dict(law) for kind, law in data["laws"].items()}
    assert set(laws) == {"update", "rollout"} and {law.form for law in laws.values()} == {"efficiency+fixed"}
    assert laws["update"].lower_bound and not laws["rollout"].lower_bound
    points = speed_report.points(data["measured"])
    assert [p.flops for p in points["update"]] == sorted(p.flops for p in points["update"])  # larger shapes, more FLOPs
    assert "≥ " in proc.stdout and "(measured)" in proc.stdout
