"""The analysis image built for real without Apptainer: containers/analysis.def's %files, %post and %test, unchanged,
in a fresh Debian 12 root (mmdebstrap, from Debian's packages).

The definition's base is python:3.11-slim-bookworm, Debian 12 with CPython 3.11; the root is Debian 12 with Debian's
CPython 3.11 (3.11.2, where the base image has 3.11.16 built from source), `python` pointing at it as in the base image.
What only Apptainer adds is not here: the SIF file, `--nv`, the bind mounts of `apptainer exec`, its environment
handling (%environment is sourced here by the same shell). Run as root from the repository root (minutes):

    python benchmarks/analysis_root.py [--root /tmp/analysis-root] [--keep]
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFINITION = ROOT / "containers" / "analysis.def"

DEBIAN = "http://deb.debian.org/debian"
BASE = ["python3.11", "python3.11-dev", "python3.11-venv", "python-is-python3", "ca-certificates"]  # the base image's


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def sections(text: str) -> dict[str, str]:
    """A definition's sections (%files, %post, ...) as their text, as Apptainer reads them."""
    found, name = {}, None
    for line in text.splitlines():
        if line.startswith("%"):
            name = line.split()[0]
            found[name] = ""
        elif name:
            found[name] += line + "\n"
    return found


def remove(root: Path) -> None:
    """The root, unless something is still mounted inside it (a run killed before its clean-up): removing it then
    would reach into the host's /dev, /proc, /sys or wheel folder."""
    mounted = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
               if line.split()[1].startswith(str(root.resolve()) + "/")]  # fmt: skip
    if mounted:
        sys.exit(f"{root} still has mounts inside it ({', '.join(mounted)}): umount them first")
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/analysis-root"))
    parser.add_argument("--keep", action="store_true", help="keep the root afterwards")
    args = parser.parse_args()
    recipe = sections(DEFINITION.read_text())
    root = args.root
    remove(root)
    times = {}
    started = time.perf_counter()
    run(["mmdebstrap", "--variant=minbase", f"--include={','.join(BASE)}", "bookworm", str(root), DEBIAN])
    times["Debian 12 root"] = time.perf_counter() - started
    mounts = []
    try:
        for host in ("/proc", "/dev", "/sys"):
            run(["mount", "--bind", host, str(root) + host])
            mounts.append(str(root) + host)
        shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
        for line in recipe["%files"].split("\n"):  # host path, image path
            if not line.strip():
                continue
            src, dest = line.split()[:2]
            (root / dest.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / src, root / dest.lstrip("/"))
        # This machine reaches PyPI and Debian, not PyTorch's index: torch 2.13.0+cpu comes from the local wheel
        # folder pip is pointed at here (PIP_FIND_LINKS), the lock's hash deciding as it does on a build node.
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "PIP_RETRIES": "0"}
        links = [p for p in os.environ.get("PIP_FIND_LINKS", "").split() if Path(p).is_dir()]
        for i, folder in enumerate(links):
            inside = root / "opt" / f"host-wheels-{i}"
            inside.mkdir(parents=True, exist_ok=True)
            run(["mount", "--bind", "-o", "ro", folder, str(inside)])
            mounts.append(str(inside))
        if links:
            env["PIP_FIND_LINKS"] = " ".join(f"/opt/host-wheels-{i}" for i in range(len(links)))
        if os.environ.get("PIP_CERT"):  # the certificate authorities this machine's pip trusts (a proxy's, here)
            shutil.copy(os.environ["PIP_CERT"], root / "opt" / "host-ca.crt")
            env["PIP_CERT"] = "/opt/host-ca.crt"
        # %post as Apptainer runs it (/bin/sh -e); %test after %environment, as `apptainer test` does.
        for name, body in (("%post", recipe["%post"]), ("%test", recipe["%environment"] + recipe["%test"])):
            began = time.perf_counter()
            run(["chroot", str(root), "/bin/sh", "-ec", body], env=env)
            times[name] = time.perf_counter() - began
    finally:
        for mount in reversed(mounts):
            subprocess.run(["umount", "-l", mount], check=False)
    for what, seconds in times.items():
        print(f"{what:20s} {seconds:7.1f} s")
    if not args.keep:
        remove(root)


if __name__ == "__main__":
    main()
