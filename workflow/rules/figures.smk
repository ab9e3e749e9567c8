# The study's figures and tables: one rule per function registered in entropy_rl.study (study.registry), named as
# it is, and one rule block per kind. A paper artifact asks only for the runs its config entry lists, so
# `snakemake fig07_coefficients_vs_size` trains only those; the power-sampling study's draw its methods' answers.

from entropy_rl.study import artifacts


for _name in BUILDABLE_ARTIFACTS:
    _artifact = artifacts.ARTIFACTS[_name]
    if _artifact.kind != "figure":
        continue

    rule:
        name:
            _name
        input:
            **artifact_inputs(_name),
        output:
            pdf=_artifact.outputs["pdf"],
            png=report(_artifact.outputs["png"], caption="../report/artifact.rst", category=_artifact.category, labels=report_labels(_name)),
        params:
            **artifact_params(_name),
        log:
            ARTIFACT_LOG.format(name=_name),
        container:
            image("analysis")
        script:
            "../scripts/figure.py"


for _name in BUILDABLE_ARTIFACTS:
    _artifact = artifacts.ARTIFACTS[_name]
    if _artifact.kind != "table":
        continue

    rule:
        name:
            _name
        input:
            **artifact_inputs(_name),
        output:
            csv=_artifact.outputs["csv"],
            md=_artifact.outputs["md"],
        params:
            **artifact_params(_name),
        log:
            ARTIFACT_LOG.format(name=_name),
        container:
            image("analysis")
        script:
            "../scripts/table.py"


# Each table's page in `snakemake --report`, which offers a CSV only as a download: its caption and the table.
for _name in BUILDABLE_ARTIFACTS:
    _artifact = artifacts.ARTIFACTS[_name]
    if _artifact.kind != "table":
        continue

    rule:
        name:
            f"{_name}_page"
        input:
            csv=_artifact.outputs["csv"],
            code=code("table_page", "study.pages"),
        output:
            html=report(
                TABLE_PAGE.format(name=_name),
                caption="../report/artifact.rst",
                category=_artifact.category,
                labels=report_labels(_name),
            ),
        params:
            title=f"{_artifact.source}: {_name}",
            caption=artifact_params(_name)["caption"],
        log:
            ARTIFACT_LOG.format(name=f"{_name}_page"),
        container:
            image("analysis")
        script:
            "../scripts/table_page.py"
