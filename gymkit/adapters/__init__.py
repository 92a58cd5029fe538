"""Trainer adapters: thin shapes over one scoring core (``env.score_group``) and one card.

Modules (each imports its trainer library only where it must):

* :mod:`.trl` — ``reward_funcs(env_id, num_generations=G)`` (gymkit's GDPO advantage; or
  ``mode="channels"``), ``grpo_config_kwargs(env_id)`` (TRL GRPO);
* :mod:`.verl` — ``compute_score`` / ``compute_score_batch`` (verl custom reward function; load
  with ``pkg://gymkit.adapters.verl`` or the file path);
* :mod:`.verifiers_env` — ``load_environment(env_id, split)`` (the ``verifiers`` library; 0.2.x
  legacy API, or :mod:`.verifiers_v1`'s Taskset on >= 0.3);
* :mod:`.gymnasium_env` — ``GymkitEnv``, registered as ``gymkit/us46-default-v0``
  (:mod:`.gym_registration`, the ``gymnasium.envs`` entry point);
* :mod:`.skyrl` — ``GymkitTextEnv`` (skyrl_gym ``BaseTextEnv``), ``skyrl_rows``;
* :mod:`.datasets` — brief datasets (JSONL chat rows, verl Parquet rows);
* :mod:`.common` — the per-process environment, score memo and fail-safe group scoring.

Reward functions never raise on an answer: an exception inside scoring becomes an
``InternalResult`` (error code ``'internal'``), distinct from an invalid answer.
"""
