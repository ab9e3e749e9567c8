"""The GPU scale. At the top, the modules the workflow's jobs run by name (a rule's script imports them, a recorded
training command or a GPU job's code stamp names them, so they keep their paths): data and hub downloads, a run's
command (run_command, reward_launch) and its launch, verl's plugin, metrics and checkpoints, PRIME's main, the preflight, vLLM evaluation and power sampling, prompt
formats. Below, by concern: ``verl`` (verl's own code driven outside its trainer: the worker, the checks of a command,
PRIME's verl, the settings verl ignores), ``cost`` (the GPU budget, the pilot's speed and report, the price of a rerun),
``images`` (building the Apptainer images, their package locks and the imports their tests must cover)."""
