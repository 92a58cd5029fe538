"""Gymnasium registration of gymkit's environments, light enough to run inside ``import gymnasium``.

:func:`register_envs` registers :data:`ENV_IDS` by entry-point string only (the environment
class, its briefs and scoring stack are imported by ``gymnasium.make``, not here).  It is the
``gymnasium.envs`` entry point in gymkit's packaging (``gymkit = "gymkit.adapters.
gym_registration:register_envs"``): gymnasium 0.26-0.29 call it on ``import gymnasium``, in the
plugin's ``gymkit`` namespace, so ``gymnasium.make("gymkit/us46-default-v0")`` works with no
gymkit import.  Gymnasium >= 1.0 dropped that plugin loader; there, use the module-qualified id
``gymnasium.make("gymkit.adapters.gymnasium_env:gymkit/us46-default-v0")`` (gymnasium imports
the module, whose import calls this function) or import the module first.
"""

from __future__ import annotations

__all__ = ["ENTRY_POINT", "ENV_IDS", "register_envs"]

#: Gymnasium id -> gymkit environment id.
ENV_IDS = {"gymkit/us46-default-v0": "us46-default"}
#: Where gymnasium finds the environment class.
ENTRY_POINT = "gymkit.adapters.gymnasium_env:GymkitEnv"


def register_envs() -> None:
    """Register :data:`ENV_IDS` with gymnasium (idempotent; namespace-aware for plugins)."""
    from gymnasium.envs import registration

    ns = getattr(registration, "current_namespace", None)  # set while a 0.x plugin loads
    for gym_id, env_id in ENV_IDS.items():
        if gym_id in registration.registry:
            continue
        rid = gym_id.split("/", 1)[1] if ns == gym_id.split("/", 1)[0] else gym_id
        registration.register(id=rid, entry_point=ENTRY_POINT, kwargs={"env_id": env_id})
