"""GEM registration of the EnvScaler environments (what ROLL's ``roll/pipeline/agentic/env``
``__init__.py`` needs).

In a ROLL checkout, append to ``roll/pipeline/agentic/env/__init__.py``::

    from rl.register import register_envs
    register_envs()

(with this repository installed in ROLL's environment: ``pip install -e <repo> --no-deps``),
or copy the two ``gem.register`` lines of :data:`ENV_IDS`. ``custom_envs.<tag>.env_type`` in
the pipeline YAML names the id; ``env_config`` holds :class:`rl.episode_env.EnvOptions`.
"""

from __future__ import annotations

ENV_IDS = {
    "envscaler_task_env": "rl.gem_env:EnvScalerTaskEnv",
    "envscaler_user_env": "rl.gem_env:EnvScalerUserEnv",
    # the original's ids, so its YAML files work unchanged
    "envscaler_non_conv_env": "rl.gem_env:EnvScalerTaskEnv",
    "envscaler_conv_env": "rl.gem_env:EnvScalerUserEnv",
}


def register_envs() -> list[str]:
    """Register every id of :data:`ENV_IDS` with ``gem`` (idempotent); return the ids."""
    import gem
    from gem.envs.registration import ENV_REGISTRY

    for env_id, entry_point in ENV_IDS.items():
        if env_id not in ENV_REGISTRY:
            gem.register(env_id=env_id, entry_point=entry_point)
    return list(ENV_IDS)
