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
            png=report(_artifact.outputs["png"], caption="../report/artifact.rst", category=_artifact.category),
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
            csv=report(_artifact.outputs["csv"], caption="../report/artifact.rst", category=_artifact.category),
            md=_artifact.outputs["md"],
        params:
            **artifact_params(_name),
        log:
            ARTIFACT_LOG.format(name=_name),
        container:
            image("analysis")
        script:
            "../scripts/table.py"
