"""gymkit: a deterministic verifier and RL gym for formulaic-alpha research tasks."""

__version__ = "0.1.0"
