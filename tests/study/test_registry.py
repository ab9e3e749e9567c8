"""The registry of the study's figures and tables (study.registry, loaded by study.artifacts): one entry per name,
holding its function, what it reads and what it writes; the rules, the config's schema and the audit read it."""

import copy
import subprocess
import sys

import pytest
import yaml
from entropy_rl.core import config as config_check
from entropy_rl.study import artifacts, registry
from support import ROOT


def test_the_loaded_order_is_the_sections_whatever_was_imported_first():
    code = "from entropy_rl.study import power_study, tables, registry; print(list(registry.load())[0], list(registry.load())[-1])"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT / "workflow"
    )
    assert out.stdout.split() == ["fig01_entropy_collapse", "power05_cost_accuracy"]


@pytest.fixture
def scratch(monkeypatch):
    """A copy of the loaded registry that a test may register into."""
    monkeypatch.setattr(registry, "ARTIFACTS", dict(registry.load()))
    return registry.ARTIFACTS


def test_a_name_registered_twice_is_refused_and_the_first_entry_kept(scratch):
    first = scratch["fig01_entropy_collapse"]
    with pytest.raises(ValueError, match="artifact 'fig01_entropy_collapse' is registered twice"):

        @registry.artifact("figure", "Figure 99", "Something else.")
        def fig01_entropy_collapse(d, stem): ...

    assert scratch["fig01_entropy_collapse"] is first


def test_a_new_function_is_registered_with_its_outputs_and_code(scratch):
    @registry.artifact("table", "Table 9", "A new table.", ("eval",))
    def table09_new(d): ...

    entry = scratch["table09_new"]
    assert entry.make is table09_new and entry.reads == ("eval",) and not entry.power and entry.module == __name__
    assert entry.outputs == {"csv": "results/tables/table09_new.csv", "md": "results/tables/table09_new.md"}
    assert entry.modules == (__name__, "entropy_rl.study.table_job")
    assert entry.category == "Tables"


@pytest.mark.parametrize(
    "kind, reads, methods",
    [
        ("plot", ("metrics",), None),
        ("figure", ("logs",), None),
        ("figure", ("samples",), None),
        ("figure", ("metrics",), "main"),
    ],
)
def test_an_artifact_the_rules_cannot_build_is_refused(scratch, kind, reads, methods):
    with pytest.raises(ValueError, match="is not one the rules build"):

        @registry.artifact(kind, "Figure 99", "x", reads, methods)
        def fig99(d, stem): ...

    assert "fig99" not in scratch


def test_the_declared_registry_is_the_loaded_one_read_without_importing_the_plotting_libraries():
    """The workflow declares its rules from the decorators' source (registry.declared); the scripts call the loaded
    functions (registry.load): the two hold the same entries in the same order, and declaring imports nothing."""
    assert list(registry.declared().values()) == list(registry.load().values())
    assert all(a.make is None for a in registry.declared().values())
    code = "import sys; from entropy_rl.study import artifacts; print(sorted({'matplotlib', 'seaborn', 'scipy', 'pandas'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT / "workflow"
    )
    assert out.stdout.strip() == "[]"


def test_the_registry_holds_the_papers_and_the_power_studys_artifacts():
    assert len(artifacts.PAPER) == 19 and artifacts.PAPER[0] == "fig01_entropy_collapse"
    # Section 4's module ends with this workflow's own control (issue 42), after the paper's Figure 13.
    assert artifacts.PAPER[artifacts.PAPER.index("fig13_entropy_control") + 1] == "ctl01_random_reward"
    assert artifacts.PAPER[-2:] == ["table01_covariance_distribution", "table02_benchmarks"]
    assert artifacts.POWER == [
        "power01_accuracy",
        "power02_pass_at_k",
        "power03_likelihoods",
        "power04_hyperparameters",
        "power05_cost_accuracy",
    ]
    assert set(artifacts.FIGURES) | set(artifacts.TABLES) == set(artifacts.ARTIFACTS)
    assert {artifacts.ARTIFACTS[n].methods for n in artifacts.POWER} == {"main", "sweep"}
    fig08 = artifacts.ARTIFACTS["fig08_covariance"]
    assert fig08.module == "entropy_rl.study.figures.covariance" and fig08.source == "Figure 8"
    assert artifacts.output_files("power02_pass_at_k") == [
        "results/figures/power02_pass_at_k.pdf",
        "results/figures/power02_pass_at_k.png",
    ]


def test_the_schema_validates_artifact_names_against_the_registry():
    """The schema holds no copy of the names: the workflow validates the config with the registry's."""
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert (
        "properties"
        not in yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())["$defs"]["artifacts"]
    )
    config_check.validate(copy.deepcopy(cfg), artifacts.PAPER)
    bad = copy.deepcopy(cfg)
    bad["mini"]["artifacts"]["fig99_new"] = cfg["mini"]["artifacts"]["fig01_entropy_collapse"]
    with pytest.raises(config_check.ConfigError, match="config key mini.artifacts: 'fig99_new' is not allowed"):
        config_check.validate(bad, artifacts.PAPER)
    bad["mini"]["artifacts"] = {
        "power02_pass_at_k": cfg["mini"]["artifacts"]["fig01_entropy_collapse"]
    }  # drawn from the power study's methods, not runs
    with pytest.raises(config_check.ConfigError, match="'power02_pass_at_k' is not allowed"):
        config_check.validate(bad, artifacts.PAPER)
