"""Pinned, verified downloads, exercised through a local mirror (this machine has no hub).

The hub side (resolving a branch to a commit, snapshot_download at that commit)
is huggingface_hub's own code and runs only where the hub is reachable.
"""

import os

import pytest
import yaml
from entropy_rl.paper import hub


@pytest.fixture
def mirror(tmp_path):
    repo = tmp_path / "mirror" / "Qwen" / "Qwen2.5-0.5B"
    repo.mkdir(parents=True)
    (repo / "config.json").write_text('{"model_type": "qwen2"}')
    (repo / "model.safetensors").write_bytes(b"\x00weights" * 100)
    return tmp_path / "mirror"


def test_first_fetch_locks_then_later_fetches_verify(tmp_path, mirror):
    lock = tmp_path / "hub.lock.yaml"
    entry = hub.fetch("Qwen/Qwen2.5-0.5B", "model", tmp_path / "models" / "a", lock, revision="abc123", mirror=mirror)
    assert entry["commit"] == "abc123" and set(entry["files"]) == {"config.json", "model.safetensors"}
    assert yaml.safe_load(lock.read_text())["Qwen/Qwen2.5-0.5B"] == entry
    again = hub.fetch("Qwen/Qwen2.5-0.5B", "model", tmp_path / "models" / "b", lock, mirror=mirror)
    assert again == entry
    assert (tmp_path / "models" / "b" / "config.json").read_text() == '{"model_type": "qwen2"}'


def test_checksum_mismatch_fails_and_keeps_the_lock(tmp_path, mirror):
    lock = tmp_path / "hub.lock.yaml"
    hub.fetch("Qwen/Qwen2.5-0.5B", "model", tmp_path / "m", lock, revision="abc123", mirror=mirror)
    before = lock.read_text()
    (mirror / "Qwen" / "Qwen2.5-0.5B" / "model.safetensors").write_bytes(b"tampered")
    with pytest.raises(hub.HubError, match=r"checksum mismatch \['model.safetensors'\]"):
        hub.fetch("Qwen/Qwen2.5-0.5B", "model", tmp_path / "m", lock, mirror=mirror)
    assert lock.read_text() == before
    # The verified copy from before stays whole; the mismatching one is kept aside for inspection.
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == b"\x00weights" * 100
    assert (tmp_path / ".m.partial" / "model.safetensors").read_bytes() == b"tampered"


def test_gated_repository_needs_a_token_that_is_never_written(tmp_path, mirror, monkeypatch):
    for var in hub.TOKEN_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(hub.HubError, match="meta-llama/Llama-3.1-8B is gated.*set HF_TOKEN"):
        hub.require_token("meta-llama/Llama-3.1-8B", gated=True)
    hub.require_token("Qwen/Qwen2.5-0.5B", gated=False)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value_123")
    hub.require_token("meta-llama/Llama-3.1-8B", gated=True)
    lock = tmp_path / "hub.lock.yaml"
    hub.fetch("Qwen/Qwen2.5-0.5B", "model", tmp_path / "m", lock, revision="abc123", mirror=mirror)
    assert "hf_secret_value_123" not in lock.read_text()


def test_slurm_jobs_environment_is_ours_less_the_token(tmp_path, monkeypatch):
    for var in hub.TOKEN_VARIABLES:
        monkeypatch.setenv(var, "hf_secret_value_123")
    monkeypatch.setenv("MULTILINE_VALUE", "one\ntwo=2")
    path = tmp_path / ".snakemake" / "slurm_job_environment"
    hub.write_environment_without_token(path)
    data = path.read_bytes()
    assert b"hf_secret_value_123" not in data and data.endswith(b"\0")
    entries = dict(entry.split(b"=", 1) for entry in data[:-1].split(b"\0"))  # sbatch --export-file's format
    expected = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    assert entries == {k: v for k, v in expected.items() if k not in {b"HF_TOKEN", b"HUGGING_FACE_HUB_TOKEN"}}
    assert entries[b"MULTILINE_VALUE"] == b"one\ntwo=2"
    assert path.stat().st_mode & 0o777 == 0o600 and [p.name for p in path.parent.iterdir()] == [path.name]
