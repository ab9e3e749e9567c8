"""How often each verdict of the audit is wrong, measured: studies simulated with a known truth, judged by the
audit's own code (issue 66). The simulation is tests/support/audit_calibration.py, which the suite's fast run
(tests/study/audit/test_audit_calibration.py) shares; its docstring (``--help``) says what each column is.

    python benchmarks/audit_calibration.py                       # every case, 4,000 studies each, a table
    python benchmarks/audit_calibration.py --draws 400 --csv calibration.csv
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support, shared with the tests
from support.audit_calibration import main

if __name__ == "__main__":
    sys.exit(main())
