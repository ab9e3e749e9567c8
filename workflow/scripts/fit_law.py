from pathlib import Path

from entropy_rl.core import logs
from entropy_rl.study import fit_law

log = logs.setup(snakemake.log[0])
_, text = fit_law.run(snakemake.input.log, stem=Path(snakemake.output.json).with_suffix(""))
log.info("\n%s", text)
