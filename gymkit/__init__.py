"""gymkit: a deterministic verifier and RL gym for formulaic-alpha research tasks."""

from gymkit.advantages import gdpo_advantages, grpo_advantages

__version__ = "0.1.0"

__all__ = ["__version__", "gdpo_advantages", "grpo_advantages"]
