# A downloaded dataset source against the parts that read it: every mismatch, one line each.
import sys

from entropy_rl.core import atomic, logs
from entropy_rl.paper import data as paper_data

log = logs.setup(snakemake.log[0])
problems = paper_data.check_source(snakemake.input.source, snakemake.params.parts)
for p in problems:
    log.error("%s", p)
if problems:
    sys.exit(f"source {snakemake.wildcards.source} does not match its parts in config.yaml (the download is kept):\n"
             + "\n".join(f"  - {p}" for p in problems))  # fmt: skip
atomic.write_text(snakemake.output[0], f"{', '.join(sorted(snakemake.params.parts))}: files and fields as configured\n")
log.info("source %s matches parts %s", snakemake.wildcards.source, sorted(snakemake.params.parts))
