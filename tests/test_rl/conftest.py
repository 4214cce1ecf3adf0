import pytest

from tests.test_rl import shop


@pytest.fixture(scope="session")
def shop_paths(tmp_path_factory):
    """env_config paths of the shop fixture (envs.jsonl, scenarios.jsonl)."""
    return shop.write_fixture(tmp_path_factory.mktemp("shop"))


@pytest.fixture(scope="session", autouse=True)
def _close_sandbox_pool():
    yield
    from envscaler_core.runtime import Sandbox

    Sandbox.close_shared()


@pytest.fixture(scope="session")
def tiny_model():
    """Path of the tiny model built from the embedded GGUF in the training venv."""
    from tests.test_sft.trainenv import tiny_model_dir

    return tiny_model_dir()
