"""The paper-scale runs carry the paper's settings: Section 2's as the paper states them, Section 4's as the
authors' released scripts launch them (tests/fixtures/released_scripts.yaml, read from the scripts by hand).

Each Section 4 run's command is built the way the workflow builds it (``reward_launch.verl_command``) and composed
against verl 0.9.1's own config, so a key the command leaves out is compared at verl's default: what verl
would run. Every key a script passes is either equal to ours, a listed deviation (asserted to differ), a
setting its run never reads, or a fork key verl 0.9.1 has no key for (asserted absent)."""

import math

import pytest
import yaml
from entropy_rl.core import run as resolved
from entropy_rl.core import spec
from entropy_rl.core.scale import build
from entropy_rl.paper import reward_launch
from entropy_rl.paper.verl import checks
from omegaconf import OmegaConf
from support import FIXTURES, ROOT

PAPER = build("paper", yaml.safe_load((ROOT / "config.yaml").read_text())["paper"])
FIXTURE = yaml.safe_load((FIXTURES / "released_scripts.yaml").read_text())
SCRIPTS = FIXTURE["scripts"]
LOSS_MODE = "actor_rollout_ref.actor.policy_loss.loss_mode"
COVARIANCE_SUFFIX = "+cov"  # verl_plugin's wrapper: the same loss, plus the covariance metrics
ABSENT = object()


def same(ours, theirs) -> bool:
    """Equal as verl reads them: booleans only equal booleans, numbers to rounding, lists item by item."""
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return type(ours) is type(theirs) and ours == theirs
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=0.0)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(same(a, b) for a, b in zip(ours, theirs))
    return ours == theirs


def our_command(run: str):
    """The run's command as the workflow records it, composed by verl 0.9.1's Hydra config, and a reader of its keys."""
    command = reward_launch.verl_command(PAPER, run)
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    cfg = checks.compose(command[3:])

    def value(key):
        v = OmegaConf.select(cfg, key, default=ABSENT)
        return OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v

    return cfg, value


@pytest.fixture(scope="module")
def compared():
    """Per script: (key, script's value, ours, kind) for every key the script passes."""
    out = {}
    for name, script in SCRIPTS.items():
        _cfg, value = our_command(script["run"])
        deviations = {**FIXTURE["deviations"], **script.get("deviations", {})}
        rows = []
        for key, theirs in script["values"].items():
            ours = value(key)
            assert ours is not ABSENT, f"{name}: verl 0.9.1's config has no key {key}"
            if key == LOSS_MODE:
                assert ours.endswith(COVARIANCE_SUFFIX), ours
                ours = ours[: -len(COVARIANCE_SUFFIX)]
            rows.append((key, theirs, ours, "deviation" if key in deviations else "same"))
        for key in script.get("not_read", {}):
            assert value(key) is not ABSENT, f"{name}: verl 0.9.1's config has no key {key}"
        out[name] = rows
    return out


def test_every_released_script_maps_to_a_run_with_its_recipe():
    assert sorted(SCRIPTS) == sorted(
        f"{size}_{method}" for size in ("7b", "32b") for method in ("baseline", "cliphigher", "clip_cov", "kl_cov")
    )
    for name, script in SCRIPTS.items():
        assert script["path"] == f"recipe/dapo/{name}.sh"
        size = name.split("_")[0]
        s = PAPER.runs[script["run"]]
        assert s.recipe == f"section4-{size}" and s.train_data == "dapo-math"
        assert s.model == f"qwen2.5-{size}"
    assert str(FIXTURE["source"]["commit"]) == "8850579"


def test_section4_runs_match_their_released_script_key_by_key(compared):
    mismatches, stale = [], []
    for name, rows in compared.items():
        script = SCRIPTS[name]
        n_same = sum(kind == "same" for *_, kind in rows)
        n_dev = sum(kind == "deviation" for *_, kind in rows)
        print(
            f"{name} -> {script['run']}: {len(rows)} keys compared, {n_same} equal, {n_dev} listed deviations "
            f"(all differ), {len(script.get('not_read', {}))} not read by the run"
        )
        for key, theirs, ours, kind in rows:
            if kind == "same" and not same(ours, theirs):
                mismatches.append(f"{name}: {key}: script {theirs!r}, ours {ours!r}")
            if kind == "deviation" and same(ours, theirs):
                stale.append(f"{name}: {key}: listed as a deviation but both are {ours!r}")
    assert mismatches == [] and stale == [], "\n".join(mismatches + stale)
    total = sum(len(rows) for rows in compared.values())
    print(f"{total} keys compared over {len(compared)} scripts, 0 mismatches")
    assert all(len(rows) >= 60 for rows in compared.values())


def test_every_deviation_has_a_reason_and_is_used():
    listed = set(FIXTURE["deviations"]) | {k for s in SCRIPTS.values() for k in s.get("deviations", {})}
    used = {k for s in SCRIPTS.values() for k in s["values"]}
    assert listed <= used, listed - used
    for script in SCRIPTS.values():
        for key, why in {**FIXTURE["deviations"], **script.get("deviations", {})}.items():
            assert isinstance(why, str) and len(why) > 10, key
        for key, entry in script.get("not_read", {}).items():
            assert key not in script["values"] and len(entry["reason"]) > 10, key


def test_settings_left_at_the_forks_default_differ_only_where_listed():
    """A setting no script passes ran at the fork's default; where ours differs, it is listed with why, and differs."""
    for script in SCRIPTS.values():
        _cfg, value = our_command(script["run"])
        for key, entry in FIXTURE["implicit_deviations"].items():
            assert key not in script["values"] and len(entry["reason"]) > 10, key
            assert value(key) not in (ABSENT, entry["fork_default"]), (script["run"], key, value(key))


def test_the_forks_keys_without_a_verl_091_key_really_have_none():
    _cfg, value = our_command(SCRIPTS["7b_baseline"]["run"])
    for key in FIXTURE["untranslated"]:
        assert value(key) is ABSENT, key


def test_kl_cov_takes_the_scripts_percent_as_a_fraction():
    for name, fraction in [("7b_kl_cov", 0.002), ("32b_kl_cov", 0.0002)]:
        s = PAPER.runs[SCRIPTS[name]["run"]]
        assert s.loss.kl_cov_ratio == fraction and s.loss.ppo_kl_coef == 1.0


def test_section2_runs_carry_the_papers_stated_values():
    """[v1 §2.2]: 512 prompts x 8 responses in updates of 256 (2 per rollout), lr 5e-7, reference KL 0,
    epsilon 0.2, all-right/all-wrong groups filtered, validation every 4 rollout steps; Figure 2: 2,400
    gradient steps."""
    for run in (
        "qwen2.5-7b-grpo",
        "qwen2.5-0.5b-grpo",
        "mistral-7b-grpo",
        "qwen2.5-7b-grpo-code",
        "qwen2.5-7b-instruct-grpo",
    ):
        s = PAPER.runs[run]
        assert s.recipe is None, run
        assert (s.prompts_per_step, s.rollout_n, s.ppo_mini_batch_size, s.ppo_epochs) == (512, 8, 256, 1), run
        assert s.lr == 5e-7 and s.loss.kl_loss_coef == 0.0 and s.loss.entropy_coeff == 0.0, run
        assert s.loss.clip_ratio_low == s.loss.clip_ratio_high == 0.2 and s.loss.loss_mode == "vanilla", run
        assert s.filter_groups is True and s.val_every == 4, run
        assert s.steps * s.prompts_per_step // s.ppo_mini_batch_size == 2400, run  # gradient steps
    assert PAPER.runs["qwen2.5-7b-prime"].prime.lr == 1e-6  # the implicit PRM's rate


def test_the_on_policy_run_updates_once_per_rollout():
    """Figure 8 and Table 1 [v1 §3.3]: plain policy gradient, fully on-policy."""
    s = PAPER.runs["qwen2.5-7b-pg"]
    assert s.ppo_mini_batch_size == s.prompts_per_step and s.ppo_epochs == 1
    mini = yaml.safe_load((ROOT / "config.yaml").read_text())["mini"]
    m = resolved.resolve(mini, "qwen2-m-pg")
    assert m.ppo_mini_batch_size == m.prompts_per_step and m.ppo_epochs == 1


def test_sweeps_hold_the_papers_legends():
    def values(artifact, key):
        return sorted({getattr(PAPER.runs[r].loss, key) for r in PAPER.config["artifacts"][artifact]["runs"]})

    assert values("fig09_entropy_loss", "entropy_coeff") == [0.0, 1e-4, 1e-3, 5e-3, 1e-2]
    assert values("fig10_reference_kl", "kl_loss_coef") == [0.0, 1e-3, 1e-2, 5e-2, 1e-1]
    fig13 = [PAPER.runs[r] for r in PAPER.config["artifacts"]["fig13_entropy_control"]["runs"]]
    assert sorted(s.loss.clip_cov_ratio for s in fig13 if s.loss.loss_mode == "clip_cov") == [
        2e-4,
        4e-4,
        5e-4,
        7e-4,
    ]
    assert sorted(s.loss.ppo_kl_coef for s in fig13 if s.loss.loss_mode == "kl_cov") == [
        0.0,
        0.05,
        0.1,
        0.5,
        1.0,
    ]
    assert all(s.recipe == "section4-7b" and s.model == "qwen2.5-7b" for s in fig13)


@pytest.mark.parametrize("scale", ["mini", "paper", "small"])
def test_a_runs_scope_resolves_to_its_whole_spec(scale):
    """What a per-run rule records (spec.run_scope, the preflight's params) holds all its settings: recipe included."""
    scfg = yaml.safe_load((ROOT / "config.yaml").read_text())[scale]
    for run in scfg["runs"]:
        assert resolved.resolve(spec.run_scope(scfg, run), run) == resolved.resolve(scfg, run), run
