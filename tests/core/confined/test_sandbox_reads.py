"""Landlock handles reads too: a program reads its own directory and what its interpreter needs, not a world-readable
file elsewhere (a canary in /tmp, the benchmark answers under results/ on a shared filesystem)."""

import os
import shutil
import tempfile

import pytest
from entropy_rl.core.confined import sandbox

LANDLOCK = "landlock" in sandbox.isolation()
READER = (
    "import json, math, decimal, fractions, statistics  # the standard library, after the confinement\n"
    "open('mine.txt', 'w').write('own directory')\n"
    "print(open('mine.txt').read())\n"
    "for path in {paths!r}:\n"
    "    try:\n"
    "        print('READ', path, open(path).read())\n"
    "    except OSError as e:\n"
    "        print('refused', path, type(e).__name__)\n"
)


@pytest.fixture
def canaries():
    """World-readable files in world-readable directories: only Landlock keeps a program from them."""
    top = tempfile.mkdtemp(prefix="canary-", dir="/tmp")
    os.chmod(top, 0o755)
    answers = os.path.join(top, "results", "data", "benchmarks")
    os.makedirs(answers, mode=0o755)
    for d in (os.path.join(top, "results"), os.path.join(top, "results", "data"), answers):
        os.chmod(d, 0o755)
    paths = [os.path.join(top, "canary.txt"), os.path.join(answers, "answers.txt")]
    for path in paths:
        with open(path, "w") as fh:
            fh.write("SECRET")
        os.chmod(path, 0o644)
    yield paths
    shutil.rmtree(top)


@pytest.mark.skipif(not LANDLOCK, reason="no Landlock on this kernel")
@pytest.mark.parametrize("batch", [False, True], ids=["run", "run_many"])
def test_a_program_reads_its_directory_and_the_stdlib_but_no_canary(canaries, batch):
    program = READER.format(paths=canaries)
    r = sandbox.run_many([(program, "")])[0] if batch else sandbox.run(program)
    assert r.status == "ok", r.stderr
    assert "own directory" in r.stdout and "SECRET" not in r.stdout, r.stdout
    assert r.stdout.count("refused") == len(canaries)


@pytest.mark.skipif(not LANDLOCK, reason="no Landlock on this kernel")
def test_without_landlock_the_canary_is_readable(canaries):
    """The test above can fail: with Landlock off, the same program reads the canaries."""
    r = sandbox.run(READER.format(paths=canaries), landlock=False)
    assert r.status == "ok" and r.stdout.count("SECRET") == len(canaries), r.stdout + r.stderr
