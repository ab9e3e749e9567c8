"""The Apptainer definitions, their pinned package sets, and the image references rules use."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from entropy_rl.core import images
from entropy_rl.paper import launch
from entropy_rl.paper.images import build, locks
from spython.main.parse.parsers import SingularityParser
from support import ROOT

NAMES = ["analysis", "eval", "prime", "train"]
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*$")


def versions(name):
    """A lock's pins by normalized name (its hashes are checked by tests/paper/images/test_image_locks.py)."""
    return locks.pins((ROOT / "envs" / f"{name}.txt").read_text())


@pytest.fixture
def tmp_root(tmp_path):
    """A copy of the definitions and package sets, to edit."""
    shutil.copytree(ROOT / "containers", tmp_path / "containers", ignore=shutil.ignore_patterns("images"))
    shutil.copytree(ROOT / "envs", tmp_path / "envs")
    return tmp_path


def test_the_four_definitions_are_there():
    assert images.names(ROOT) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_definition_parses_and_pins_its_base_by_digest_with_the_source_beside_it(name):
    path = ROOT / "containers" / f"{name}.def"
    (recipe,) = SingularityParser(str(path)).recipe.values()
    assert re.search(r"@sha256:[0-9a-f]{64}$", recipe.fromHeader), recipe.fromHeader
    lines = path.read_text().splitlines()
    assert lines[0] == "Bootstrap: docker"
    at = next(i for i, line in enumerate(lines) if line.startswith("From:"))
    comment = "\n".join(line for line in lines[1:at] if line.startswith("#"))
    assert "Digest source:" in comment and "github.com/" in comment


@pytest.mark.parametrize("name", NAMES)
def test_every_copied_file_exists_and_is_installed(name):
    deps = images.dependencies(name, ROOT)
    assert deps and all((ROOT / dep).is_file() for dep in deps), deps
    (recipe,) = images.parse(name, ROOT).values()
    post = "\n".join(recipe.install)
    for line in recipe.files:
        assert line.split()[1] in post, f"{name}.def copies {line} but %post never uses it"


@pytest.mark.parametrize("name", ["train", "eval", "prime"])
def test_package_sets_pin_every_package_once(name):
    text = (ROOT / "envs" / f"{name}.txt").read_text()
    lines = re.findall(r"^[^\s#]\S*", text, re.MULTILINE)
    assert lines and all(PIN.match(line) for line in lines), [line for line in lines if not PIN.match(line)]
    assert len(versions(name)) == len(lines)


def test_train_and_eval_share_the_vllm_torch_stack():
    train, evaluation = versions("train"), versions("eval")
    stack = {"vllm": "0.24.0", "torch": "2.11.0", "transformers": "5.9.0"}
    assert {k: train[k] for k in stack} == stack == {k: evaluation[k] for k in stack}
    assert train["verl"] == "0.9.1" and train["flash-attn"] == "2.8.3"
    shared = ["numpy", "math-verify", "tokenizers", "flashinfer-python"]
    assert {k: train[k] for k in shared} == {k: evaluation[k] for k in shared}


def test_prime_image_has_the_verl_and_recipe_commit_the_launcher_names():
    assert launch.PRIME_RECIPE_COMMIT in (ROOT / "containers" / "prime.def").read_text()
    assert versions("prime")["verl"] == launch.PRIME_VERL


def test_image_ref_changes_with_the_definition_and_the_files_it_copies(tmp_root):
    ref = images.image_ref("train", tmp_root)
    assert re.fullmatch(re.escape(str(tmp_root)) + r"/containers/images/train-[0-9a-f]{12}\.sif", ref)
    assert images.image_ref("train", tmp_root) == ref

    env = tmp_root / "envs" / "train.txt"
    original = env.read_text()
    env.write_text(original.replace("vllm==0.24.0", "vllm==0.24.1"))
    assert images.image_ref("train", tmp_root) != ref
    env.write_text(original)
    assert images.image_ref("train", tmp_root) == ref

    (tmp_root / "envs" / "mini.txt").write_text("not copied into the train image\n")
    assert images.image_ref("train", tmp_root) == ref

    # What checks or describes the image gives no new reference (no rule reruns); what shapes it does.
    definition = tmp_root / "containers" / "train.def"
    text = definition.read_text()
    definition.write_text(
        text.replace("%test\n", "%test\n    /opt/venv/bin/python -c 'import verl.utils'\n")
        .replace("%post\n", "%post\n    # a comment\n")
        .replace("%help\n", "%help\n    More help.\n")
    )
    assert definition.read_text() != text and images.image_ref("train", tmp_root) == ref
    definition.write_text(text.replace("MAX_JOBS:-8", "MAX_JOBS:-4"))
    assert images.image_ref("train", tmp_root) != ref
    definition.write_text(text.replace("%environment\n", "%environment\n    export TOKENIZERS_PARALLELISM=false\n"))
    assert images.image_ref("train", tmp_root) != ref


def test_a_missing_copied_file_is_named(tmp_root):
    (tmp_root / "envs" / "eval.txt").unlink()
    with pytest.raises(images.ContainerError, match="copies in envs/eval.txt, which does not exist"):
        images.image_ref("eval", tmp_root)


def test_build_without_apptainer_fails_with_a_clear_message(tmp_root, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_root / "no-bin"))
    with pytest.raises(images.ContainerError, match="apptainer is not on PATH"):
        build.build(["analysis"], tmp_root)
    assert build.main(["--root", str(tmp_root), "build"]) == 1
    err = capsys.readouterr().err
    assert "apptainer is not on PATH" in err and "containers/images/train-" in err
    assert not (tmp_root / "containers" / "images").exists()


def test_the_module_runs_as_a_command_without_apptainer(tmp_root):
    env = {**os.environ, "PATH": str(tmp_root / "no-bin"), "PYTHONPATH": str(ROOT / "workflow")}
    cmd = [sys.executable, "-m", "entropy_rl.paper.images.build", "--root", str(tmp_root), "build", "eval"]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "apptainer is not on PATH" in proc.stderr, proc.stderr


def test_build_skips_images_that_exist(tmp_root, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_root / "no-bin"))
    for name in NAMES:
        Path(images.image_ref(name, tmp_root)).parent.mkdir(parents=True, exist_ok=True)
        Path(images.image_ref(name, tmp_root)).touch()
    assert build.build(None, tmp_root) == []


def fake_apptainer(bin_dir, exit_code):
    """Stands in for apptainer, which this machine cannot install: records its arguments and
    working directory, and writes the image it was asked for."""
    bin_dir.mkdir()
    script = bin_dir / "apptainer"
    script.write_text(f'#!/bin/sh\necho "$PWD $*" >> "{bin_dir}/calls"\necho image > "$2"\nexit {exit_code}\n')
    script.chmod(0o755)


def test_build_runs_apptainer_build_and_keeps_only_complete_images(tmp_root, monkeypatch):
    fake_apptainer(tmp_root / "bin", 0)
    monkeypatch.setenv("PATH", str(tmp_root / "bin"))
    ref = images.image_ref("analysis", tmp_root)
    assert build.build(["analysis"], tmp_root) == [ref]
    assert (tmp_root / "bin" / "calls").read_text() == f"{tmp_root} build {ref}.part containers/analysis.def\n"
    assert Path(ref).read_text() == "image\n" and not Path(ref + ".part").exists()
    assert build.build(["analysis"], tmp_root) == []  # built once

    shutil.rmtree(tmp_root / "bin")
    fake_apptainer(tmp_root / "bin", 1)
    with pytest.raises(images.ContainerError, match="containers/eval.def failed"):
        build.build(["eval"], tmp_root)
    assert not list((tmp_root / "containers" / "images").glob("eval-*"))
