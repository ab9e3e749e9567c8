"""``core.power.methods`` under the name the power-sampling rule's script imports (workflow/scripts/power_sample.py).

Snakemake dates a rule's script: an edit of that script, even of an import line, reruns every sampling job of the
rule, GPU jobs included. So the script keeps its import until a change that reruns those jobs anyway rewrites it;
nothing else imports this name (tests/test_layout.py)."""

from .power.methods import sampler_module  # noqa: F401
