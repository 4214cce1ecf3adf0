"""The private folders of the sandbox's processes: how both sides name them.

The parent creates one folder per worker (``WORKDIR_PREFIX``) and one per fork server
(``FORK_SERVER_PREFIX``); a jailed process may empty or remove only a folder named so.
"""

from __future__ import annotations

import os

__all__ = ["FORK_SERVER_PREFIX", "WORKDIR_PREFIX", "is_own_folder"]

WORKDIR_PREFIX = "envscaler-sbx-"
FORK_SERVER_PREFIX = "envscaler-fsv-"


def is_own_folder(directory: str) -> bool:
    """Whether ``directory`` is a sandbox's private folder, the only kind the sandbox may wipe.

    A process whose working folder is anything else (``/tmp``, the checkout) must never wipe it.
    """
    path = os.path.realpath(directory)
    return os.path.basename(path).startswith((WORKDIR_PREFIX, FORK_SERVER_PREFIX)) and os.path.dirname(path) != path
