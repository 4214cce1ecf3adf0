import pytest

from tests.test_sft.trainenv import tiny_model_dir


@pytest.fixture(scope="session")
def tiny_model():
    """Path of the tiny model (built once per session in the training venv)."""
    return tiny_model_dir()
