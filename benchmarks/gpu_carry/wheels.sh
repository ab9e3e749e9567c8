#!/usr/bin/env bash
# The wheels that carry verl's actor worker to a lent GPU machine whose Python (3.12, torch with CUDA) lacks them:
# the versions of envs/tests.txt, for CPython 3.12 on x86-64, into .whl/ (ignored by git). There, with
# benchmarks/gpu_carry on the path for Ray's stand-in (Ray's wheel is too large to carry; one worker never starts it):
#
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site:$PWD/benchmarks/gpu_carry python3 benchmarks/gpu_update.py --no-rollout ...
#
# tokenizers is carried because transformers 5.10.4 refuses the machine's newer one at import.
set -euo pipefail
cd "$(dirname "$0")/../.."
pin() { grep -i -m1 "^$1==" envs/tests.txt | cut -d' ' -f1; }
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_26_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64)
mkdir -p .whl
for name in verl tensordict hydra-core omegaconf codetiming datasets dill multiprocess orjson pyvers torchdata \
            transferqueue pyzmq pydantic pydantic-core annotated-types typing-inspection fastapi starlette uvicorn \
            msgspec cachetools sniffio pytz transformers tokenizers importlib-metadata; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d .whl "$(pin "$name")"
done
python3 -m pip wheel -q --no-deps -w .whl "$(pin antlr4-python3-runtime)"  # published as a source archive only
du -sh .whl
