"""The environment instance a cell hosts: load, call, snapshot, restore (runs confined).

Every op returns a plain-JSON response. Tool-call errors are observations
(``{"success": False, "error_type": ..., "error": ...}``); on any error the
instance state is rolled back to the last good snapshot, so an error
observation always comes with an empty state diff.
"""

from __future__ import annotations

import copy
import inspect
import json
import linecache
import random
import signal
import sys
import traceback
import types
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from ..wire.errors import ErrorType, error_observation, unknown_tool
from ..wire.schema import ToolSpec, build_tools, format_validation_error
from ..wire.state import UnserializableError, diff_jsonable, hash_jsonable, to_jsonable

ENV_FILE, CHECK_FILE, MODULE_NAME = "<env>", "<checker>", "envscaler_env"


class SoftTimeout(BaseException):
    """Raised by SIGALRM inside the sandbox when an op overruns."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise SoftTimeout()


@contextmanager
def deadline(seconds: float):
    """Raises :class:`SoftTimeout` in the running code after ``seconds``."""
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def short_traceback(exc: BaseException, filename: str, frames: int = 3) -> str:
    """Last few frames of the generated code plus the exception line."""
    tb = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename][-frames:]
    head = "Traceback (generated code, most recent call last):\n" if tb else ""
    return head + "".join(traceback.format_list(tb)) + "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _fail(error_type: str, error: str) -> dict:
    return {"ok": False, "error_type": error_type, "error": error}


def exec_source(code: str, filename: str, namespace: dict, compiler: Any = compile) -> dict | None:
    """Compiles (with ``compiler``) and runs ``code`` in ``namespace``; returns an error dict or None."""
    try:
        compiled = compiler(code, filename, "exec")
    except (SyntaxError, ValueError) as exc:
        return _fail("syntax_error", "".join(traceback.format_exception_only(type(exc), exc)).strip())
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        exec(compiled, namespace)  # noqa: S102 - this is the sandbox
    except SoftTimeout:
        raise
    except BaseException as exc:  # noqa: BLE001 - includes SystemExit
        return _fail("import_error", f"module raised during import: {short_traceback(exc, filename)}")
    return None


def load_class(code: str, class_name: str) -> tuple[type | None, dict | None]:
    """Executes the env module and returns (class, None) or (None, error)."""
    module = types.ModuleType(MODULE_NAME)
    sys.modules[MODULE_NAME] = module
    error = exec_source(code, ENV_FILE, module.__dict__)
    if error:
        return None, error
    cls = module.__dict__.get(class_name)
    if not isinstance(cls, type):
        found = [k for k, v in module.__dict__.items() if isinstance(v, type) and v.__module__ == MODULE_NAME]
        return None, _fail("class_not_found", f"class {class_name!r} not found in the source; classes defined: {found}")
    return cls, None


def takes_config(cls: type) -> bool:
    """Whether ``cls`` is constructed as ``cls(init_config)`` (its signature accepts one argument, or
    cannot be read) rather than ``cls()``."""
    try:
        inspect.signature(cls).bind(None)
    except TypeError:
        return False
    except ValueError:
        pass
    return True


def construct(cls: type, init_config: Any, with_config: bool | None = None) -> Any:
    """``cls(init_config)`` when the signature accepts it, else ``cls()`` (``with_config``: that
    answer, known already)."""
    if with_config is None:
        with_config = takes_config(cls)
    return cls(init_config) if with_config else cls()


def snapshot_of(instance: Any) -> dict:
    """Public instance attributes (minus ``init_config``) as canonical JSON."""
    attrs = {k: v for k, v in vars(instance).items() if not k.startswith("_") and k != "init_config"}
    return to_jsonable(attrs)


def inject(instance: Any, state: dict, replace: bool = True) -> None:
    """Sets ``state`` as attributes; ``replace`` also drops other public ones."""
    for key in [k for k in vars(instance) if replace and not k.startswith("_") and k != "init_config"]:
        if key not in state:
            delattr(instance, key)
    for key, value in state.items():
        setattr(instance, key, copy.deepcopy(value))


class Executor:
    """Hosts at most one environment instance for the life of this process.

    Args:
        limits: The :class:`SandboxLimits` fields as a dict.
    """

    def __init__(self, limits: dict) -> None:
        self.limits = limits
        self.cls: type | None = None  # set by :meth:`prepare` in a template
        self.with_config: bool | None = None  # its constructor's signature, read once there too
        self.instance: Any = None
        self.tools: dict[str, ToolSpec] = {}
        self.last: dict = {}
        self.last_hash = ""

    def _commit(self, state: dict) -> None:
        self.last, self.last_hash = state, hash_jsonable(state)

    def load(self, req: dict) -> dict:
        """Executes the module, builds tools, constructs and seeds the instance."""
        try:
            with deadline(self.limits["load_timeout_s"]):
                return self._load(req)
        except SoftTimeout:
            return _fail("timeout", f"loading the environment took longer than {self.limits['load_timeout_s']}s")

    def prepare(self, req: dict) -> dict | None:
        """Executes the module and builds the tools once, for every cell forked afterwards (a
        template, :mod:`.templates`); returns an error response or None."""
        try:
            with deadline(self.limits["load_timeout_s"]):
                cls, error = load_class(req["code"], req["class_name"])
                if cls is not None:
                    self.tools, self.cls, self.with_config = build_tools(cls), cls, takes_config(cls)
                return error
        except SoftTimeout:
            return _fail("timeout", f"loading the environment took longer than {self.limits['load_timeout_s']}s")

    def _load(self, req: dict) -> dict:
        if req.get("seed") is not None:
            random.seed(req["seed"])
        cls = self.cls
        if cls is None:
            cls, error = load_class(req["code"], req["class_name"])
            if cls is None:
                return error or _fail("class_not_found", f"class {req['class_name']!r} not found")
            self.tools = build_tools(cls)
        tools = (
            {}
            if req.get("tools") is False
            else {  # False: the parent has them already
                "tools": [t.schema for t in self.tools.values()],
                "warnings": [w for t in self.tools.values() for w in t.warnings],
            }
        )
        if req.get("schemas_only"):
            return {"ok": True, **tools}
        try:
            self.instance = construct(cls, req.get("init_config") or {}, self.with_config)
        except SoftTimeout:
            raise
        except BaseException as exc:  # noqa: BLE001 - a constructor's failure, whatever it raised, is a load error
            return _fail("constructor_error", f"{req['class_name']}() failed: {short_traceback(exc, ENV_FILE)}")
        return self._seed(req.get("initial_state") or {}, tools)

    def _seed(self, state: dict, extra: dict, replace: bool = False) -> dict:
        bad = [k for k in state if not (isinstance(k, str) and k.isidentifier() and not k.startswith("_"))]
        if bad:
            return _fail("invalid_state", f"initial state keys must be public attribute names: {bad}")
        try:
            inject(self.instance, state, replace)
            self._commit(snapshot_of(self.instance))
        except UnserializableError as exc:
            return _fail("invalid_state", f"environment state is not JSON serializable: {exc}")
        return {"ok": True, "state": self.last, "state_hash": self.last_hash, **extra}

    def snapshot(self) -> dict:
        """Current state (recomputed from the instance)."""
        self._commit(snapshot_of(self.instance))
        return {"ok": True, "state": self.last, "state_hash": self.last_hash}

    def restore(self, req: dict) -> dict:
        """Replaces the instance state with ``req['state']``."""
        return self._seed(req["state"], {}, replace=True)

    def _observe(self, error_type: ErrorType, error: str) -> dict:
        return self._refused(error_observation(error_type, error))

    def _refused(self, obs: dict) -> dict:
        """The answer of a failed call whose observation is ``obs``; the state stays as it was."""
        inject(self.instance, self.last)  # roll back partial mutations
        return {
            "ok": True,
            "observation": obs,
            "error_type": obs["error_type"],
            "state_diff": [],
            "state_hash": self.last_hash,
        }

    def call(self, req: dict) -> dict:
        """Validates arguments, runs the tool, returns observation + diff."""
        name, args = req["tool"], req.get("arguments")
        spec = self.tools.get(name)
        if spec is None:
            return self._refused(unknown_tool(name, self.tools))
        try:
            kwargs = spec.to_kwargs(spec.model.model_validate(args))
        except ValidationError as exc:
            return self._observe(ErrorType.INVALID_ARGUMENTS, format_validation_error(spec, exc))
        timeout = self.limits["call_timeout_s"]
        try:
            with deadline(timeout):
                result = getattr(self.instance, name)(**kwargs)
        except SoftTimeout:
            return self._observe(
                ErrorType.TIMEOUT, f"Tool {name!r} did not finish within {timeout}s and was interrupted."
            )
        except SystemExit as exc:
            return self._observe(ErrorType.TOOL_EXCEPTION, f"Tool {name!r} called sys.exit({exc.code!r}).")
        except BaseException as exc:  # noqa: BLE001 - a tool's exception is the agent's observation
            return self._observe(
                ErrorType.TOOL_EXCEPTION, f"Tool {name!r} raised an exception: {short_traceback(exc, ENV_FILE)}"
            )
        return self._finish(name, result)

    def _finish(self, name: str, result: Any) -> dict:
        try:
            value = to_jsonable(result)
        except UnserializableError as exc:
            return self._observe(
                ErrorType.UNSERIALIZABLE_RESULT, f"Tool {name!r} returned a value that is not JSON serializable: {exc}"
            )
        obs = value if isinstance(value, dict) else {"success": True, "data": value}
        cap = self.limits["max_result_bytes"]
        if _rough_size(obs, cap) > cap or len(json.dumps(obs, ensure_ascii=False)) > cap:
            return self._observe(
                ErrorType.RESULT_TOO_LARGE,
                f"Tool {name!r} returned more than {cap} bytes of JSON (the limit); "
                "return less data, e.g. filter or paginate.",
            )
        try:
            after = snapshot_of(self.instance)
        except UnserializableError as exc:
            return self._observe(
                ErrorType.UNSERIALIZABLE_RESULT, f"Tool {name!r} left the state not JSON serializable: {exc}"
            )
        before, before_hash = self.last, self.last_hash
        self._commit(after)
        diff = [] if self.last_hash == before_hash else diff_jsonable(before, after)
        if diff and _rough_size(diff, self.limits["max_frame_bytes"] // 4) > self.limits["max_frame_bytes"] // 4:
            self.last, self.last_hash = before, before_hash
            return self._observe(
                ErrorType.RESULT_TOO_LARGE, f"Tool {name!r} changed the state by too much data at once."
            )
        return {"ok": True, "observation": obs, "error_type": None, "state_diff": diff, "state_hash": self.last_hash}


def _rough_size(value: Any, cap: int) -> int:
    """Lower-bound estimate of the JSON size, stopping once above ``cap``."""
    total, stack = 0, [value]
    while stack and total <= cap:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + sum(len(k) + 4 for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 4
    return total
