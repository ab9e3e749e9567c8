"""Each image's %test imports what its rules' code imports (entropy_rl.paper.images.imports), so a broken image fails
when it is built; and the eval and train images' %test lines import on verl 0.9.1 and vLLM as the CPU stand-in holds
them (tests/paper/test_vllm_engine.py's environment), less flash-attn, whose wheel is CUDA's."""

import re
import shutil
import subprocess
import sys

import pytest
import support
from entropy_rl.core import images
from entropy_rl.paper.images import imports as image_imports
from support import ROOT


@pytest.fixture(autouse=True)
def fresh():
    image_imports.image_code.cache_clear()
    image_imports._rule_blocks.cache_clear()
    yield
    image_imports.image_code.cache_clear()
    image_imports._rule_blocks.cache_clear()


@pytest.fixture
def tmp_root(tmp_path):
    """The rules, scripts and definitions, to edit."""
    for part in ("workflow/rules", "workflow/scripts", "containers", "envs"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("images", "__pycache__"))
    return tmp_path


@pytest.mark.parametrize("name", images.names(ROOT))
def test_each_image_tests_every_import_of_the_code_it_runs(name):
    assert image_imports.missing(name) == []


def test_the_images_run_the_rules_they_should():
    code = image_imports.image_code()
    assert set(code) == {"analysis", "eval", "train", "prime"}
    assert {"entropy_rl.paper.evaluate", "entropy_rl.paper.power_sampling", "entropy_rl.paper.hub"} <= code["eval"][
        "modules"
    ]
    assert (
        "entropy_rl.paper.verl_plugin" in code["train"]["modules"]
        and "entropy_rl.paper.verl_plugin" not in code["prime"]["modules"]
    )
    assert (
        "entropy_rl.paper.prime_main" in code["prime"]["modules"]
        and "entropy_rl.paper.prime_main" not in code["train"]["modules"]
    )
    assert {"entropy_rl.mini.trainer", "entropy_rl.study.analysis", "entropy_rl.study.audit"} <= code["analysis"][
        "modules"
    ]
    assert {"fit_run.py", "figure.py", "table.py"} <= code["analysis"]["scripts"]
    assert {"verl.trainer.main_ppo", "verl.model_merger", "transfer_queue"} <= image_imports.required("train")


def test_a_new_import_in_a_rule_script_is_missing_until_the_test_imports_it(tmp_root):
    script = tmp_root / "workflow" / "scripts" / "fit_run.py"
    script.write_text("import sklearn.linear_model\n" + script.read_text())
    assert image_imports.missing("analysis", str(tmp_root)) == ["sklearn.linear_model"]
    definition = tmp_root / "containers" / "analysis.def"
    definition.write_text(
        definition.read_text() + '    /opt/venv/bin/python -c "from sklearn.linear_model import Ridge"\n'
    )
    assert image_imports.missing("analysis", str(tmp_root)) == []


def test_an_import_dropped_from_the_test_is_named(tmp_root):
    definition = tmp_root / "containers" / "train.def"
    definition.write_text(definition.read_text().replace("verl.trainer.ppo.v1.trainer_sync, ", ""))
    assert image_imports.missing("train", str(tmp_root)) == ["verl.trainer.ppo.v1.trainer_sync"]


def test_an_exclusion_that_excludes_nothing_is_reported(tmp_root, monkeypatch):
    monkeypatch.setitem(image_imports.NOT_RUN_THERE, "analysis", {"vllm": "not imported by any analysis rule"})
    assert image_imports.missing("analysis", str(tmp_root)) == ["(stale exclusion vllm)"]


def test_a_code_input_it_cannot_read_is_an_error(tmp_root):
    rules = tmp_root / "workflow" / "rules" / "analysis.smk"
    rules.write_text(rules.read_text().replace('code=PLAN.code("fit_run", "study.fit_job")', "code=fit_code"))
    with pytest.raises(image_imports.ImageImportError, match="fit_code"):
        image_imports.image_code(str(tmp_root))


def test_the_command_names_each_image():
    proc = subprocess.run([sys.executable, "-m", "entropy_rl.paper.images.imports"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == images.names(ROOT)


def python_lines(name: str) -> list[str]:
    return re.findall(r'/opt/venv/bin/python -c "([^"]+)"', images.section(name, "%test"))


@pytest.mark.parametrize("name", ["eval", "train"])
def test_the_gpu_images_test_lines_import_on_the_cpu_stand_in(name):
    """The stand-in has the train image's verl 0.9.1 and a CPU vLLM (0.27.1, the eval image has 0.24.0): the paths
    %test names exist there. flash-attn is CUDA's only; its statements are left out here."""
    python = support.vllm_python()
    statements = []
    for line in python_lines(name):
        kept = [s for s in line.split(";") if "flash_attn" not in s]
        statements += [s.strip() for s in kept if s.strip()]
    assert len(statements) >= 4
    proc = subprocess.run(
        [python, "-c", "; ".join(statements)], capture_output=True, text=True, env=support.vllm_env(), timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
