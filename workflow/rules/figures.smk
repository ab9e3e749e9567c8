# One rule per paper figure and table, named as in workflow/entropy_rl/study/artifacts.py. Each asks only
# for the runs its config entry lists, so `snakemake fig07_coefficients_vs_size` trains only those.

from entropy_rl.study import artifacts


for _name in ARTIFACT_NAMES:
    if artifacts.ARTIFACTS[_name].kind != "figure":
        continue

    rule:
        name:
            _name
        input:
            **artifact_inputs(_name),
        output:
            pdf=f"results/figures/{_name}.pdf",
            png=report(f"results/figures/{_name}.png", caption="../report/artifact.rst", category="Figures"),
        params:
            **artifact_params(_name),
        log:
            f"results/logs/figures/{_name}.log",
        container:
            image("analysis")
        script:
            "../scripts/figure.py"


for _name in ARTIFACT_NAMES:
    if artifacts.ARTIFACTS[_name].kind != "table":
        continue

    rule:
        name:
            _name
        input:
            **artifact_inputs(_name),
        output:
            csv=report(f"results/tables/{_name}.csv", caption="../report/artifact.rst", category="Tables"),
            md=f"results/tables/{_name}.md",
        params:
            **artifact_params(_name),
        log:
            f"results/logs/tables/{_name}.log",
        container:
            image("analysis")
        script:
            "../scripts/table.py"
