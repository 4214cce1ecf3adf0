"""``python -m tests.test_resilience.leaky_stage KIB ARGS...``: interact_with_env with a planted leak.

Every appended record also keeps KIB KiB alive, so a memory check can prove it would notice a
leak of that size per episode.
"""
import sys

from envscaler_core.store import JsonlStore
from interact_with_env.__main__ import main

_KEPT: list[bytes] = []


def _leaky(append, size: int):
    def wrapper(self, record):
        _KEPT.append(b"x" * size)  # touched bytes: resident, unlike a calloc'ed buffer
        return append(self, record)
    return wrapper


if __name__ == "__main__":
    JsonlStore.append = _leaky(JsonlStore.append, int(sys.argv[1]) * 1024)
    sys.exit(main(sys.argv[2:]))
