#!/usr/bin/env bash
# The PRIME check's verl (tests/paper/verl/test_prime_verl.py, python -m entropy_rl.paper.verl.prime_check): verl 0.4.1 and
# the setuptools whose pkg_resources it imports, pinned in envs/prime.txt, installed without their
# dependencies into a folder of their own (.venv/prime-site, or $ENTROPY_RL_PRIME_SITE). The check
# puts that folder first on the path of a child process and reuses the main environment's torch,
# Hydra, OmegaConf and Ray; the main environment keeps its verl 0.9.1. Run after the main install.
set -euo pipefail
cd "$(dirname "$0")/.."
site="${ENTROPY_RL_PRIME_SITE:-.venv/prime-site}"
python="${PYTHON:-.venv/bin/python}"
pins="$(mktemp)"
# Their entries of the lock: the name==version line and the hash lines under it.
awk '/^[^ #]/ { keep = /^(verl|setuptools)==/ } keep' envs/prime.txt >"$pins"
rm -rf "$site"
"$python" -m pip install --quiet --no-deps --require-hashes --target "$site" -r "$pins"
rm -f "$pins"
# verl's wheel also ships top-level `tests` and `scripts` packages, which would shadow others on the path.
rm -rf "$site/tests" "$site/scripts" "$site/bin"
"$python" -c "import sys; sys.path.insert(0, '$site'); import verl; assert verl.__version__ == '0.4.1', verl.__version__"
