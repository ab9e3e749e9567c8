"""The names verl's plugin, the training job and the run's command share, and nothing else: this module imports
nothing, so a verl run's resume fingerprint (the closure of ``launch.TRAINER_MODULES``) holds the code that shapes
its trajectory and not the launcher or the command builder that name these too."""

# What verl imports by name in its workers: the covariance loss plugin and the reward function.
PLUGIN_MODULE = "entropy_rl.paper.verl_plugin"
REWARD_MODULE = "entropy_rl.core.reward"
# PRIME's entry, run with -m: verl 0.4.1's PRIME recipe given the reward (it imports REWARD_MODULE).
PRIME_MAIN_MODULE = "entropy_rl.paper.prime_main"
# The trainer the plugin registers with verl (verl's synchronous V1 trainer plus the paper's measures).
TRAINER_MODE = "entropy_paper"
# The released scripts' bound on generation batches per step, where that trainer reads it (verl_plugin.GenerationBound):
# verl 0.9.1 reads its own algorithm.filter_groups.max_num_gen_batches only to warn that it ignores it.
GEN_BATCHES_KEY = f"trainer.v1.{TRAINER_MODE}.max_num_gen_batches"
# The plugin's agent loop: verl's single-turn loop with a sampling seed per request (verl_plugin.request_seed).
AGENT_LOOP = "seeded_single_turn"
# Checkpoints with optimiser state kept per run (the last two: one to resume from, one spare): the command's
# trainer.max_actor_ckpt_to_keep, and what the job keeps across launches.
KEEP_CHECKPOINTS = 2
# The results directory in a command as the workflow records it (rule params): bound to an absolute path, and the
# interpreter to the job's own, only where the job runs (``launch.bind``), so the recorded command does not change
# with the checkout's location or the submitting host's Python.
RESULTS_PLACEHOLDER = "@RESULTS@"
