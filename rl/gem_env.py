"""``gem.Env`` environments for ROLL's agentic pipeline (and any GEM-based trainer).

``EnvScalerTaskEnv`` (the task is the first user message; the episode ends when the model
answers without a tool call) and ``EnvScalerUserEnv`` (a simulated user; it ends on
``###STOP###``). Both take text actions, parse ``<tool_call>`` blocks (``tool_call_mode``
``first`` as ROLL's env managers expect, or ``all``) and return text observations; constructor
keywords are :class:`rl.episode_env.EnvOptions` (ROLL's ``env_config``). Register them with
:func:`rl.register.register_envs`.
"""

from __future__ import annotations

from typing import Any

try:
    import gem
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("rl.gem_env needs the `gem-llm` package (pip install gem-llm; ROLL installs it)") from exc

from envscaler_core.toolformat import render_call
from rl.episode_env import EpisodeEnv


class _EnvScalerGemEnv(gem.Env):
    """Shared body: delegates to :class:`~rl.episode_env.EpisodeEnv`."""

    MODE = "task"

    def __init__(self, **options: Any) -> None:
        super().__init__()
        options.setdefault("mode", self.MODE)
        if options["mode"] != self.MODE:
            raise ValueError(f"{type(self).__name__} runs mode {self.MODE!r}, not {options['mode']!r}")
        self.options = dict(options)
        self.core = EpisodeEnv(**options)

    def reset(self, seed: int | None = None, task_index: int | None = None):
        """``(first user message, info)``; the same ``seed`` gives the same scenario."""
        super().reset(seed)
        return self.core.reset(seed=seed, task_index=task_index)

    def step(self, action: str):
        """``(observation, reward, terminated, truncated, info)`` for one model output."""
        return self.core.step(action)

    def sample_random_action(self) -> str:
        """A random tool call (for ROLL's ``llm_proxy.proxy_type: random`` debugging)."""
        import random

        tool = random.choice(self.core.live.agent.tools)["function"]
        return render_call(tool["name"], {})

    def spawn(self, same_state: bool = False, **kwargs: Any) -> gem.Env:
        if same_state:
            raise NotImplementedError("sandbox sessions are not cloned; reset with the same seed")
        return type(self)(**{**self.options, **kwargs})

    def close(self) -> None:
        self.core.close()


class EnvScalerTaskEnv(_EnvScalerGemEnv):
    """Non-conversational EnvScaler episodes (the paper's ``envscaler_non_conv_env``)."""

    MODE = "task"


class EnvScalerUserEnv(_EnvScalerGemEnv):
    """Conversational EnvScaler episodes with a simulated user (``envscaler_conv_env``)."""

    MODE = "user"
