"""gymkit: a deterministic verifier and RL gym for formulaic-alpha research tasks."""

__version__ = "0.1.0"

from gymkit.advantages import gdpo_advantages, grpo_advantages
from gymkit.card import ScoreCard
from gymkit.config import EnvConfig
from gymkit.env import Environment
from gymkit.registry import list_envs, make

__all__ = [
    "EnvConfig",
    "Environment",
    "ScoreCard",
    "__version__",
    "gdpo_advantages",
    "grpo_advantages",
    "list_envs",
    "make",
]
