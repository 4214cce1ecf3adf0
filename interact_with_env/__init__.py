"""interact_with_env stage: agent rollouts in synthesized environments (engine in ``envscaler_core.rollout``),
rewards and reports, SFT filtering, the Gradio play demo and serving environments over MCP."""
