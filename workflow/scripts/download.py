from entropy_rl.core import logs
from entropy_rl.paper import hub

log = logs.setup(snakemake.log[0])
p = snakemake.params
entry = hub.fetch(p.repo, p.repo_type, snakemake.output[0], p.lock, revision=p.revision, mirror=p.mirror)
log.info("%s %s at %s: %d files verified", p.repo_type, p.repo, entry["commit"], len(entry["files"]))
