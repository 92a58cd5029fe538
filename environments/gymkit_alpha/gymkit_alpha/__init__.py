"""gymkit's briefs as a verifiers 0.4 environment, under the name verifiers' loader imports.

``vf-eval gymkit-alpha`` (and prime-rl, which loads environments the same way) imports the
top-level module ``gymkit_alpha`` and takes the one ``Taskset`` subclass in its ``__all__``.
The taskset is :class:`gymkit.adapters.verifiers_v1.GymkitTaskset`; options are its config
fields: ``--env.taskset.env-id``, ``--env.taskset.split``, ``--env.taskset.n-briefs``,
``--env.taskset.brief-seed``.
"""

from gymkit.adapters.verifiers_v1 import GymkitTaskset

__all__ = ["GymkitTaskset"]
