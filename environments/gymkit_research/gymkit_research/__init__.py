"""gymkit's research gym as a verifiers 0.4 tool environment, under the name verifiers' loader
imports.

``--env.taskset.id gymkit-research`` (vf-eval, prime-rl) imports the top-level module
``gymkit_research`` and takes the one ``Taskset`` subclass (and the one ``Env`` subclass) in its
``__all__``: :class:`gymkit.adapters.research_verifiers_v1.GymkitResearchTaskset` and
:class:`~gymkit.adapters.research_verifiers_v1.GymkitResearchEnv`.  Options are the config's
fields: ``--env.taskset.env-id``, ``--env.taskset.split``, ``--env.taskset.budget``,
``--env.taskset.n-briefs``, ``--env.taskset.brief-seed`` and
``--env.taskset.task.resources-url`` (unset: the Env serves gymkit's resources server itself).
"""

from gymkit.adapters.research_verifiers_v1 import GymkitResearchEnv, GymkitResearchTaskset

__all__ = ["GymkitResearchEnv", "GymkitResearchTaskset"]
