"""The paper's figures, one module per section, each function registered with ``registry.artifact``.

Every figure function takes the ``registry.Inputs`` of its rule and the output stem, writes ``<stem>.pdf``
and ``<stem>.png`` and returns their paths. It sets ``plotting.style``, builds a matplotlib figure and ends
with ``plotting.caption`` and ``plotting.save`` (the kit in ``study.plotting``). Importing this package
registers them, in the paper's order.
"""

# The registry keeps the order of import: the paper's Sections 2, 3 and 4, then the appendices.
# isort: off
from . import law  # noqa: F401
from . import covariance  # noqa: F401
from . import control  # noqa: F401
from . import appendix  # noqa: F401
# isort: on
