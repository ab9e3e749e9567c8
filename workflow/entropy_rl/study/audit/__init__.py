"""The audit: every claim of the ledger (``claims.yaml``) beside what this run measured, with a verdict.

A claim names a measurement (a function registered with ``@measurement``) and the artifact whose
runs it reads, so the audit measures exactly the runs a figure or table draws. The parts:

* ``data``: the ``Study`` the audit reads (runs, metrics, evaluations, the power study's answers);
* ``registry``: the measurements by name, one registry refusing a name registered twice;
* ``entropy_law``, ``covariance``, ``control``, ``accuracy``, ``power``: the measurements, by the
  part of the paper (or of the power-sampling study) they check; ``stats``: the statistics they share;
* ``verdicts``: a claim judged against its tolerance; ``ledger``: claims.yaml checked and unfolded,
  and the audit table; ``render``: that table as Markdown and HTML.
"""

from .data import NotComparable, Study, method
from .ledger import POWER_ARTIFACTS, check_ledger, consistency_rows, expand_ledger, run_audit, table2_row_means
from .registry import MEASUREMENTS, Measured, measurement
from .render import to_html, to_markdown
from .verdicts import NOT_COMPARABLE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, factor_interval, judge, verdict_counts

__all__ = [
    "MEASUREMENTS", "NOT_COMPARABLE", "NOT_REPRODUCED", "NOT_RUN", "POWER_ARTIFACTS", "REPRODUCED", "Measured", "NotComparable",
    "Study", "check_ledger", "consistency_rows", "expand_ledger", "factor_interval", "judge", "measurement", "method",
    "run_audit", "table2_row_means", "to_html", "to_markdown", "verdict_counts",
]  # fmt: skip
