"""The adapter (pipeline.snakemake_api.Plan) reads what the pipeline needs from Snakemake's workflow object."""

from types import SimpleNamespace

from entropy_rl.pipeline import snakemake_api as api
from fakes import Job


def workflow():
    dag = SimpleNamespace(needrun_jobs=lambda: ["j"], reason=lambda job: f"reason {job}", needrun=lambda job: job == "j",
                          dependencies={"j": {"d": {"f"}}})  # fmt: skip
    persistence = SimpleNamespace(input_checksums=lambda job, f: ["sha256:x"], params=lambda out: ["1"],
                                  _serialize_param=repr)  # fmt: skip
    return SimpleNamespace(dag=dag, persistence=persistence, dag_settings=SimpleNamespace(targets=set()), touch=False,
                           is_main_process=True, local_exec=False, basedir="/repo")  # fmt: skip


def test_the_plan_reads_the_dag_the_persistence_and_the_command_line():
    plan = api.Plan(workflow())
    assert plan.targets() is None and not plan.touch and plan.is_main_process and not plan.local_exec
    assert plan.needrun_jobs() == ["j"] and plan.reason("j") == "reason j" and plan.needrun("j") and not plan.needrun("d")
    assert plan.dependencies("j") == {"d": {"f"}}
    assert plan.input_checksums("j", "f") == {"sha256:x"} and plan.recorded_params("out") == ["1"]
    assert plan.serialize_param({"a": 1}) == "{'a': 1}" and plan.basedir == "/repo"


def test_a_jobs_parts():
    job = Job("train_verl", params={"spec": 1}, script="../scripts/train.py", basedir="/repo/rules", run="r")
    assert api.rule_name(job) == "train_verl" and api.job_wildcard(job, "run", "method") == "r"
    assert api.job_wildcard(Job("x", method="m"), "run", "method") == "m" and api.job_wildcard(Job("x"), "run") is None
    assert api.job_script(job) == "/repo/rules/../scripts/train.py" and api.job_script(Job("x")) is None
    assert api.job_params(job) == ({"spec": 1}, [1])
