"""``python -m tests.test_resilience.leaky_stage KIB RSS_LOG ARGS...``: interact_with_env, measured.

After every trajectory the stage appends, the stage itself writes a line ``EPISODES RSS_KIB`` to
RSS_LOG, so the memory probe reads the resident set size at each episode count exactly, however
fast the episodes run and however loaded the machine is. With KIB > 0 every appended trajectory
also keeps KIB KiB alive (a planted leak), so a memory check can prove it notices a leak of that
size per episode.
"""

import sys
from pathlib import Path

from envscaler_core.artifacts import ARTIFACT_FILES
from envscaler_core.store import JsonlStore
from interact_with_env.__main__ import main

TRAJECTORIES = ARTIFACT_FILES["trajectories"]


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


class Probe:
    """Counts the trajectories written (by ``append`` or ``extend``) and logs RSS after each write."""

    def __init__(self, leak_bytes: int, log):
        self.leak_bytes, self.log, self.episodes = leak_bytes, log, 0
        self.kept: list[bytes] = []

    def wrap(self, write):
        def wrapper(store, records):
            result = write(store, records)
            if store.path.name == TRAJECTORIES:
                count = len(records) if isinstance(records, list) else 1
                if self.leak_bytes:
                    # touched bytes: resident, unlike a calloc'ed buffer
                    self.kept.extend(b"x" * self.leak_bytes for _ in range(count))
                self.episodes += count
                self.log.write(f"{self.episodes} {_rss_kib()}\n")
            return result

        return wrapper


if __name__ == "__main__":
    with open(sys.argv[2], "w", buffering=1) as log:
        probe = Probe(int(sys.argv[1]) * 1024, log)
        JsonlStore.append = probe.wrap(JsonlStore.append)
        JsonlStore.extend = probe.wrap(JsonlStore.extend)
        sys.exit(main(sys.argv[3:]))
