"""``make test-sandbox-user``: the sandbox's hostile-code tests as a throw-away unprivileged user.

As root: creates the system user ``envscaler-sbx-test`` if missing (``useradd``), copies the
tracked files of the checkout into a fresh folder it owns (a normal user's own checkout, where
the integrity tests plant their fake ``.env``), and runs the tests there under that uid. When the
interpreter lives where the user cannot enter (``/root/.pyenv``), a private mount namespace shows
it only the interpreter (the runtime's own :func:`~envscaler_core.runtime.jailed.mountns.hide`). As a
normal user: runs the same tests directly.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER = "envscaler-sbx-test"
TESTS = [
    "tests/test_core/test_runtime_hostile.py",
    "tests/test_core/test_runtime_integrity.py",
    "tests/test_core/test_runtime_landlock.py",
    "tests/test_core/test_runtime_checkers.py",
    "tests/test_core/test_runtime_template.py",
]


def _pytest(cwd: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS, *sys.argv[1:]]


def _copy_checkout(dest: str) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        if os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))


def main() -> int:
    if os.geteuid() != 0:
        return subprocess.call(_pytest(ROOT), cwd=ROOT)
    sys.path.insert(0, ROOT)
    from envscaler_core.runtime.jailed.mountns import hide, untraversable_ancestor

    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
    user = pwd.getpwnam(USER)
    work = tempfile.mkdtemp(prefix="envscaler-as-user-")
    try:
        _copy_checkout(work)
        for dirpath, _, names in os.walk(work):
            os.chown(dirpath, user.pw_uid, user.pw_gid)
            for name in names:
                os.chown(os.path.join(dirpath, name), user.pw_uid, user.pw_gid)
        os.chmod(work, 0o755)
        # the interpreter and the venv (inside the checkout, which may sit under /root) must be reachable
        python, venv = os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)
        blocked = {b for b in (untraversable_ancestor(p, user.pw_uid) for p in (python, venv)) if b}
        pid = os.fork()
        if pid == 0:
            if blocked:
                hide(sorted(blocked), [(python, False), (venv, False)])
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os.chdir(work)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LANG": "C.UTF-8"}
            print(f"running the sandbox tests as {USER} (uid {user.pw_uid}) in {work}", flush=True)
            os.execve(sys.executable, _pytest(work), env)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
