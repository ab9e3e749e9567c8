"""The audit: every claim of the ledger (``claims.yaml``) beside what this run measured, with a verdict.

A claim names a measurement (a function registered with ``@measurement``) and the artifact whose
runs it reads, so the audit measures exactly the runs a figure or table draws. The parts:

* ``data``: the ``Study`` the audit reads (runs, metrics, evaluations, the power study's answers);
* ``registry``: the measurements by name, one registry refusing a name registered twice;
* ``entropy_law``, ``covariance``, ``control``, ``accuracy``, ``power``: the measurements, by the
  part of the paper (or of the power-sampling study) they check; ``stats``: the statistics they share;
* ``effects``: an effect with its noise and one-sided p-values (Student's t, or the exact χ² of a variance
  ratio); ``relations``: what a claim says of its effects, and the three verdicts (reproduced, contradicted,
  inconclusive) with their p-values; ``planning``: the seeds a new study would need to settle an inconclusive
  claim, by the exact power of the test the audit runs; ``verdicts``: a claim judged by its relation and
  margin, or a number by equivalence to the paper's value within its band; ``family``: Holm's procedure over
  the claims and the ledger's fingerprint; ``ledger``: claims.yaml checked and unfolded, and the audit table;
  ``render``: that table as Markdown and HTML; ``compare``: two audits side by side; ``job``: the audit rule's job
  (``main``).

How often each verdict is wrong is measured, not argued: ``benchmarks/audit_calibration.py`` simulates studies
with a known truth through these functions (docs/audit.md).
"""

from .data import NotComparable, Study, method
from .job import main
from .ledger import POWER_ARTIFACTS, check_ledger, consistency_rows, expand_ledger, run_audit, table2_row_means
from .registry import MEASUREMENTS, Measured, measurement
from .relations import CONTRADICTED, INCONCLUSIVE, REPRODUCED, Effect, decide
from .render import to_html, to_markdown
from .verdicts import NOT_COMPARABLE, NOT_RUN, factor_interval, judge, verdict_counts

__all__ = [
    "CONTRADICTED",
    "INCONCLUSIVE",
    "MEASUREMENTS",
    "NOT_COMPARABLE",
    "NOT_RUN",
    "POWER_ARTIFACTS",
    "REPRODUCED",
    "Effect",
    "Measured",
    "NotComparable",
    "Study",
    "check_ledger",
    "consistency_rows",
    "decide",
    "expand_ledger",
    "factor_interval",
    "judge",
    "main",
    "measurement",
    "method",
    "run_audit",
    "table2_row_means",
    "to_html",
    "to_markdown",
    "verdict_counts",
]
