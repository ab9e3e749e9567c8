# The study's figures and tables: one rule per function registered in entropy_rl.study (study.registry), named as
# it is, and one rule block per kind; a table also gets its page for the report. A paper artifact asks only for the
# runs its config entry lists, so `snakemake <name>` trains only those; the power-sampling
# study's draw its methods' answers.

from entropy_rl.core import paths
from entropy_rl.pipeline import params as pipeline_params
from entropy_rl.study import artifacts


for _name in PLAN.scope.buildable_artifacts:
    _artifact = artifacts.ARTIFACTS[_name]
    if _artifact.kind != "figure":
        continue

    rule:
        name:
            _name
        input:
            **pipeline_params.artifact_inputs(PLAN, _name),
        output:
            pdf=_artifact.outputs["pdf"],
            png=report(_artifact.outputs["png"], caption="../report/artifact.rst", category=_artifact.category, labels=pipeline_params.report_labels(_name)),
        params:
            **pipeline_params.artifact_params(PLAN, _name),
        log:
            paths.ARTIFACT_LOG.format(name=_name),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/figure.py"


for _name in PLAN.scope.buildable_artifacts:
    _artifact = artifacts.ARTIFACTS[_name]
    if _artifact.kind != "table":
        continue
    _params = pipeline_params.artifact_params(PLAN, _name)  # the table's and its page's (the caption)

    rule:
        name:
            _name
        input:
            **pipeline_params.artifact_inputs(PLAN, _name),
        output:
            csv=_artifact.outputs["csv"],
            md=_artifact.outputs["md"],
        params:
            **_params,
        log:
            paths.ARTIFACT_LOG.format(name=_name),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/table.py"

    # Its page in `snakemake --report`, which offers a CSV only as a download: the caption, then the table.
    rule:
        name:
            f"{_name}_page"
        input:
            csv=_artifact.outputs["csv"],
            code=PLAN.code("table_page", "study.table_job"),
        output:
            html=report(
                paths.TABLE_PAGE.format(name=_name),
                caption="../report/artifact.rst",
                category=_artifact.category,
                labels=pipeline_params.report_labels(_name),
            ),
        params:
            title=f"{_artifact.source}: {_name}",
            caption=_params["caption"],
        log:
            paths.ARTIFACT_LOG.format(name=f"{_name}_page"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/table_page.py"
