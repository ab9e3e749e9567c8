# One rule per paper figure; each asks only for the runs its config entry lists,
# so `snakemake results/figures/fig12_entropy_accuracy.pdf` trains only those.


def figure_rule_input(figure):
    return {"metrics": run_metrics(figure), "code": code("figures", "analysis")}


def figure_params(figure, what):
    runs = figure_runs(figure)
    return {
        "runs": runs,
        "labels": {r: run_label(r) for r in runs},
        "caption": f"Mini scale. {what} Runs: {', '.join(runs)}.",
    }


def run_label(run):
    r = S["runs"][run]
    treatment = "" if r["treatment"] == "none" else f" + {r['treatment']}"
    return f"{r['model']} {r['algorithm'].upper()}{treatment}"


rule fig02_cumulative_shares:
    input:
        **figure_rule_input("fig02_cumulative_shares"),
    output:
        pdf=report("results/figures/fig02_cumulative_shares.pdf", category="Figures"),
        png=report("results/figures/fig02_cumulative_shares.png", category="Figures"),
    params:
        **figure_params(
            "fig02_cumulative_shares",
            "Share of entropy consumed and of validation accuracy gained over training (paper Figure 2).",
        ),
    log:
        "results/logs/figures/fig02_cumulative_shares.log",
    script:
        "../scripts/figure.py"


rule fig03_fitted_curves:
    input:
        **figure_rule_input("fig03_fitted_curves"),
    output:
        pdf=report("results/figures/fig03_fitted_curves.pdf", category="Figures"),
        png=report("results/figures/fig03_fitted_curves.png", category="Figures"),
    params:
        **figure_params(
            "fig03_fitted_curves",
            "Validation accuracy against policy entropy with the fit R = -a exp(H) + b (paper Figure 3).",
        ),
    log:
        "results/logs/figures/fig03_fitted_curves.log",
    script:
        "../scripts/figure.py"


rule fig12_entropy_accuracy:
    input:
        **figure_rule_input("fig12_entropy_accuracy"),
    output:
        pdf=report("results/figures/fig12_entropy_accuracy.pdf", category="Figures"),
        png=report("results/figures/fig12_entropy_accuracy.png", category="Figures"),
    params:
        **figure_params(
            "fig12_entropy_accuracy",
            "Policy entropy and validation accuracy over training: GRPO, Clip-Cov and KL-Cov (paper Figure 12).",
        ),
    log:
        "results/logs/figures/fig12_entropy_accuracy.log",
    script:
        "../scripts/figure.py"
