import pandas as pd
from entropy_rl.core import atomic, logs
from entropy_rl.paper import data as paper_data

log = logs.setup(snakemake.log[0])
p = snakemake.params
frames = []
for name, part in p.parts.items():
    frame = paper_data.build_part(f"results/data/sources/{part['source']}", part, name, p.templates, p.seed)
    log.info("%s: %d rows", name, len(frame))
    frames.append(frame)
atomic.to_parquet(paper_data.shuffle(pd.concat(frames, ignore_index=True), p.seed), snakemake.output[0])
