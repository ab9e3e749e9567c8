import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def mini_tokenizer(tmp_path_factory):
    from entropy_rl.mini import tokenizer

    texts = [f"Calculate {a} + {b}. Put the final answer in \\boxed{{{a + b}}}." for a in range(10) for b in range(10)]
    tok = tokenizer.build_tokenizer(texts + ["Question: Answer:"], 300)
    path = tmp_path_factory.mktemp("tok")
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_policy(mini_tokenizer, tmp_path_factory):
    """A freshly initialised tiny Qwen2, saved and loaded back as a hub model would be."""
    from entropy_rl.mini import models

    arch = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1)
    model, tok = models.build_mini_model("qwen2", arch, mini_tokenizer, seed=0)
    path = tmp_path_factory.mktemp("policy")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return models.load(path)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the mark into the test's group
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``--dist loadgroup``, see pyproject.toml) a module's tests run on one worker,
    so its module-scoped fixtures (a smoke study, a trained policy) are built once; the tests on the
    SLURM cluster share one worker, so one session-wide cluster serves them all.

    The workers take the groups in this order (``--no-loadscope-reorder``; xdist would otherwise put the
    groups with the most tests first): the modules marked ``costly`` (a study, an engine or a cluster:
    minutes each) go first, so that the many short modules fill in at the end and both workers finish
    together, not one waiting minutes for the other's last study."""
    items.sort(key=lambda item: item.get_closest_marker("costly") is None)  # stable: collection order otherwise
    for item in items:
        group = item.module.__name__
        if "slurm_cluster" in item.fixturenames:
            group = "slurm"
        elif "pilot_here" in item.fixturenames:
            group = "pilot_here"  # the CPU pilot, run once for the modules that read it (tests/pilot_here.py)
        item.add_marker(pytest.mark.xdist_group(group))


class GroupsTakeEffect:
    """pytest-xdist carries a test's group in its node id; when that stops working (pytest 9.2 made the
    id read-only to it: pytest-dev/pytest-xdist#1386) the tests are silently spread one by one and
    every module's costly fixture is built on both workers. Stop instead."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if not getattr(config.option, "loadgroup", False):  # set on xdist's workers under --dist loadgroup
            return
        lost = [item.nodeid for item in items if "@" not in item.nodeid]
        if lost:
            raise pytest.UsageError(f"--dist loadgroup lost the test groups (e.g. {lost[0]}); see tests/conftest.py")


@pytest.fixture(scope="session")
def pilot_here(tmp_path_factory):
    """The GPU pilot run here (tests/pilot_here.py): its working directory, once per session for the modules that
    read it (one worker: see the grouping above). Skipped, or under CI failed, without the CPU stand-in.
    ENTROPY_RL_PILOT_HERE names the directory of an earlier run to read instead (to work on these tests)."""

    import pilot_here
    import support

    python = support.vllm_python()
    if os.environ.get("ENTROPY_RL_PILOT_HERE"):
        return Path(os.environ["ENTROPY_RL_PILOT_HERE"])
    return pilot_here.pilot(python, tmp_path_factory)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "costly: the module runs a study, an engine or a cluster (minutes); scheduled first"
    )
    config.pluginmanager.register(GroupsTakeEffect())
