"""The analysis image built for real without Apptainer, and the mini scale's fit and figure rules run in it.

1. containers/analysis.def's %files, %post and %test, unchanged, in a fresh Debian 12 root (mmdebstrap, from Debian's
   packages). The definition's base is python:3.11-slim-bookworm, Debian 12 with CPython 3.11; the root is Debian 12
   with Debian's CPython 3.11 (3.11.2, where the base image has 3.11.16 built from source), `python` pointing at it
   as in the base image. %environment goes to /.singularity.d/env as `apptainer build` puts it.
2. One smoke run's outputs made on the host (tests/smoke/config.yaml, up to but not including the rules below), then
   Snakemake's own container path (`--software-deployment-method apptainer`) runs that run's fit (fit_run) and the
   artifacts that need only that run (a figure each for the entropy collapse and the covariance, Table 1) with the
   root as the analysis image: `benchmarks/apptainer_chroot/apptainer` stands in for `apptainer exec` on a sandbox
   directory (chroot, with the binds Snakemake asks for).

What only Apptainer adds is not here: the SIF file, `--nv`, user namespaces, its own environment handling beyond
sourcing the image's scripts. The result goes to benchmarks/analysis_root.json, keyed by the image's digest
(core.images.digest: the definition and its lock) and this script's (tests/support/analysis_record.py):
tests/paper/images/test_analysis_root.py rebuilds when that key changes. Run as root from the repository root (about 5
minutes):

    python benchmarks/analysis_root.py [--root /tmp/analysis-root] [--keep] [--record PATH]
"""

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow"), str(ROOT / "tests")]
from entropy_rl.core import images, paths
from entropy_rl.study import artifacts
from support.analysis_record import RECORD, key  # the record's key, which its test reads too

STAND_IN = ROOT / "benchmarks" / "apptainer_chroot"
SMOKE = ROOT / "tests" / "smoke" / "config.yaml"
DEBIAN = "http://deb.debian.org/debian"
BASE = ["python3.11", "python3.11-dev", "python3.11-venv", "python-is-python3", "ca-certificates"]  # the base image's
RUN = "qwen2-xs-grpo"  # the smoke study's run; the rules below need no other
# In the image: the run's fit and the smoke study's figures and tables that draw that run alone.
IN_IMAGE = [
    "fit_run",
    *(name for name, entry in yaml.safe_load(SMOKE.read_text())["mini"]["artifacts"].items() if entry["runs"] == [RUN]),
]
TARGETS = [paths.RUN_FIT.format(run=RUN), *IN_IMAGE[1:]]
PROBED = ["pandas", "scipy", "seaborn", "matplotlib", "pyarrow", "numpy", "torch", "entropy_rl"]


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def remove(root: Path) -> None:
    """The root, unless something is still mounted inside it (a run killed before its clean-up): removing it then
    would reach into the host's /dev, /proc, /sys or wheel folder."""
    mounted = [
        line.split()[1]
        for line in Path("/proc/mounts").read_text().splitlines()
        if line.split()[1].startswith(str(root.resolve()) + "/")
    ]
    if mounted:
        sys.exit(f"{root} still has mounts inside it ({', '.join(mounted)}): umount them first")
    shutil.rmtree(root, ignore_errors=True)


def build(root: Path, recipe: dict[str, str], times: dict) -> str:
    """The Debian root, then %files, %post and %test; returns what %test printed."""
    started = time.perf_counter()
    run(["mmdebstrap", "--variant=minbase", f"--include={','.join(BASE)}", "bookworm", str(root), DEBIAN])
    times["Debian 12 root"] = time.perf_counter() - started
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    for line in recipe["%files"].splitlines():  # host path, image path
        if line.strip() and not line.strip().startswith("#"):
            src, dest = line.split()[:2]
            (root / dest.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / src, root / dest.lstrip("/"))
    # This machine reaches PyPI and Debian, not PyTorch's index: torch 2.13.0+cpu comes from the local wheel folder
    # pip is pointed at here (PIP_FIND_LINKS), the lock's hash deciding as it does on a build node.
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "PIP_RETRIES": "0",
        "ROOT": str(root),
        "POST": recipe["%post"],
    }
    binds = [f'mount --rbind /{d} "$ROOT/{d}"' for d in ("proc", "dev", "sys")]
    links = [p for p in os.environ.get("PIP_FIND_LINKS", "").split() if Path(p).is_dir()]
    for i, folder in enumerate(links):
        (root / "opt" / f"host-wheels-{i}").mkdir(parents=True, exist_ok=True)
        binds.append(f'mount --bind -o ro {folder} "$ROOT/opt/host-wheels-{i}"')
    if links:
        env["PIP_FIND_LINKS"] = " ".join(f"/opt/host-wheels-{i}" for i in range(len(links)))
    if os.environ.get("PIP_CERT"):  # the certificate authorities this machine's pip trusts (a proxy's, here)
        shutil.copy(os.environ["PIP_CERT"], root / "opt" / "host-ca.crt")
        env["PIP_CERT"] = "/opt/host-ca.crt"
    # %post as Apptainer runs it (/bin/sh -e), in a mount namespace of its own: its mounts end with it, however it
    # ends, and none is left inside the root.
    began = time.perf_counter()
    run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "/bin/sh",
            "-ec",
            "; ".join(binds) + '; exec chroot "$ROOT" /bin/sh -ec "$POST"',
        ],
        env=env,
    )
    times["%post"] = time.perf_counter() - began
    # As `apptainer build` stores it; the stand-in's exec sources it, as Apptainer's does.
    env_dir = root / ".singularity.d" / "env"
    env_dir.mkdir(parents=True, exist_ok=True)
    (env_dir / "90-environment.sh").write_text(recipe["%environment"])
    began = time.perf_counter()  # %test as `apptainer test` runs it: in the image, after its environment
    test = subprocess.run(
        [str(STAND_IN / "apptainer"), "exec", str(root), "/bin/sh", "-ec", recipe["%test"]],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    times["%test"] = time.perf_counter() - began
    print(test.stdout + test.stderr, flush=True)
    if test.returncode:
        sys.exit(f"%test failed (exit {test.returncode})")
    return test.stdout.strip()


def rules_in_image(root: Path, times: dict) -> tuple[list[dict], dict]:
    """One smoke run's upstream on the host, then its fit and figures by Snakemake in the image; each job's exec."""
    work = Path(tempfile.mkdtemp(prefix="analysis-root-rules-"))
    (work / "config.yaml").write_text(SMOKE.read_text())
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(work), *TARGETS]
    began = time.perf_counter()
    run([*snakemake, "--cores", "2", "--omit-from", *IN_IMAGE])
    times["smoke run upstream (host)"] = time.perf_counter() - began
    image = Path(images.image_ref("analysis", ROOT))  # where `paper.images.build` would put the image
    if image.exists() or image.is_symlink():
        sys.exit(f"{image} exists: this would run the rules in it, not in the root")
    image.parent.mkdir(parents=True, exist_ok=True)
    image.symlink_to(root)  # a sandbox directory is an image to Apptainer
    execs = work / "apptainer-execs.jsonl"
    env = {**os.environ, "PATH": f"{STAND_IN}:{os.environ['PATH']}", "APPTAINER_CHROOT_LOG": str(execs)}
    try:
        began = time.perf_counter()
        # The upstream ran outside any container: its jobs' recorded software environment differs, which must not
        # rerun them here (software-env is left out of the triggers); the jobs in IN_IMAGE have never run.
        run(
            [
                *snakemake,
                "--cores",
                "1",
                "--software-deployment-method",
                "apptainer",
                "--rerun-triggers",
                "mtime",
                "input",
                "params",
                "code",
            ],
            env=env,
        )
        times["fit and figure rules (image)"] = time.perf_counter() - began
        jobs = [json.loads(line) for line in execs.read_text().splitlines()]
        origin = provenance(jobs[-1], work, env)
    finally:
        image.unlink()
    wanted = [TARGETS[0], *(path for name in IN_IMAGE[1:] for path in artifacts.ARTIFACTS[name].outputs.values())]
    made = {path: (work / path).stat().st_size for path in wanted if (work / path).exists()}
    shutil.rmtree(work)
    jobs = [
        {
            "image": Path(j["image"]).name,
            "command": " ".join(j["command"])[-160:],
            "seconds": j["seconds"],
            "exit": j["exit"],
        }
        for j in jobs
    ]
    return jobs, {"wanted": len(wanted), "made": made, "imported_from": origin}


def provenance(job: dict, work: Path, env: dict) -> dict[str, str]:
    """Where a job's imports resolve, with the binds Snakemake gave it: Snakemake appends the host's own search path
    (mounted at /mnt/snakemake_searchpaths) after the image's, so a package the image lacked would come from the host
    and go unnoticed; this shows each comes from the image's /opt/venv, and only the project's code from the host."""
    mounts = [b.split(":")[1].strip("'") for b in job["binds"] if ":/mnt/snakemake_searchpaths/" in b]
    probe = (
        f"import sys; sys.path.extend({mounts!r}); import {', '.join(PROBED)}; "
        f"print({{m: sys.modules[m].__file__ for m in {PROBED!r}}} | {{'python': sys.executable}})"
    )
    cmd = [str(STAND_IN / "apptainer"), "exec", "--home", str(work)]
    for bind in job["binds"]:
        cmd += ["--bind", bind]
    out = subprocess.run(
        [*cmd, job["image"], "python", "-c", probe], capture_output=True, text=True, cwd=work, env=env, check=True
    )
    origin = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    outside = {m: f for m, f in origin.items() if not f.startswith("/opt/venv/") and m != "entropy_rl"}
    if outside or not origin["entropy_rl"].startswith("/mnt/snakemake_searchpaths/"):
        sys.exit(f"a job's imports do not resolve as the image intends: {origin}")
    return origin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/analysis-root"))
    parser.add_argument("--keep", action="store_true", help="keep the root afterwards")
    parser.add_argument("--record", type=Path, default=RECORD, help="where the result goes (JSON)")
    parser.add_argument("--rules-only", action="store_true", help="only step 2, in a root kept by --keep (no record)")
    args = parser.parse_args()
    recipe = {which: images.section("analysis", which, ROOT) for which in ("%files", "%post", "%environment", "%test")}
    times = {}
    if args.rules_only:
        print(rules_in_image(args.root, times))
        return
    remove(args.root)
    test_output = build(args.root, recipe, times)
    jobs, made = rules_in_image(args.root, times)
    for what, seconds in times.items():
        print(f"{what:30s} {seconds:7.1f} s")
    record = {
        "key": key(),
        "image": Path(images.image_ref("analysis", ROOT)).name,
        "date": time.strftime("%Y-%m-%d"),
        "seconds": {k: round(v, 1) for k, v in times.items()},
        "test_output": test_output,
        "jobs_in_image": jobs,
        "outputs_made_in_image": made,
    }
    args.record.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{len(jobs)} jobs ran in the image, {sum(j['exit'] != 0 for j in jobs)} failed; record: {args.record}")
    if not args.keep:
        remove(args.root)
    if any(j["exit"] for j in jobs) or len(made["made"]) != made["wanted"]:
        sys.exit("a job in the image failed or an output is missing")


if __name__ == "__main__":
    main()
