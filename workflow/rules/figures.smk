# One rule per paper figure; each asks only for the runs its config entry lists,
# so `snakemake results/figures/fig12_entropy_accuracy.pdf` trains only those.


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
    container:
        image("analysis")
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
    container:
        image("analysis")
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
    container:
        image("analysis")
    script:
        "../scripts/figure.py"
