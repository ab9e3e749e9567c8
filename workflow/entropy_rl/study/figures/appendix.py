"""Appendices B to D: more fits of R = -a exp(H) + b, on other runs, training sets and instruct models."""

from __future__ import annotations

from pathlib import Path

from ..inputs import Inputs
from ..registry import artifact
from .fit_grid import fit_grid


@artifact("figure", "Appendix B", "More fits of R = -a exp(H) + b.")
def appB_more_fits(d: Inputs, stem) -> tuple[Path, Path]:
    """Appendix B: further runs fitted with R = −a·exp(H) + b, drawn as Figure 3."""
    return fit_grid(d, stem, "appB", "More fits of R = −a·exp(H) + b")


@artifact(
    "figure", "Appendix C", "Fits of one base model trained on different data: the coefficients depend on the data."
)
def appC_training_data(d: Inputs, stem) -> tuple[Path, Path]:
    """Appendix C: fits of R = −a·exp(H) + b for runs trained on different data sets, drawn as Figure 3."""
    return fit_grid(d, stem, "appC", "Training on different data sets: fits of R = −a·exp(H) + b")


@artifact("figure", "Appendix D", "Fits of R = -a exp(H) + b on instruct models.")
def appD_instruct_models(d: Inputs, stem) -> tuple[Path, Path]:
    """Appendix D: fits of R = −a·exp(H) + b for instruct models, drawn as Figure 3."""
    return fit_grid(d, stem, "appD", "Instruct models: fits of R = −a·exp(H) + b")
