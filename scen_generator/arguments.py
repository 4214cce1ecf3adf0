"""Arguments for a tool call, taken from a state: what :mod:`scen_generator.compose` walks with.

No model is asked. A parameter named like a table's id field gets a key of that table (an
existing record, one an earlier call created, or a new key for a creating tool); a parameter named
like a record field gets another value of that field (a different status, another author), a
nearby number, the other boolean, or, for a field whose values are unique (names, titles), a new
value made from the existing ones; an ``enum`` gets one of its values. The sandbox then says
whether the call works: a rejected call is simply replaced by another proposal.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from envscaler_core.artifacts import ToolCall

_CREATE_VERBS = ("create", "add", "new", "register", "insert", "open", "make", "post", "book", "enroll", "issue")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _is_table(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, dict) for v in value.values())


def _singular(word: str) -> str:
    for suffix, repl in (("ies", "y"), ("ses", "s"), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[: -len(suffix)] + repl
    return word


@dataclass
class StateIndex:
    """What a state offers a call's arguments: its record tables, their id fields and values.

    Attributes:
        tables: ``{container: {key: record}}`` for every record table of the state.
        id_fields: ``{container: field}`` where every record's ``field`` equals its key.
        values: ``{field: [values]}`` of the scalar fields of every record, distinct, in state order.
    """

    tables: dict[str, dict[str, dict]]
    id_fields: dict[str, str]
    values: dict[str, list[Any]]

    @classmethod
    def of(cls, state: dict) -> StateIndex:
        tables = {str(c): t for c, t in state.items() if _is_table(t)}
        id_fields: dict[str, str] = {}
        values: dict[str, list[Any]] = {}
        for container, table in tables.items():
            shared = set.intersection(*(set(r) for r in table.values()))
            for name in sorted(shared):
                if all(r.get(name) == key for key, r in table.items()):
                    id_fields[container] = name
                    break
            for record in table.values():
                for name, value in record.items():
                    if isinstance(value, (str, int, float, bool)) and value not in values.setdefault(name, []):
                        values[name].append(value)
        return cls(tables, id_fields, values)

    def field_values(self, name: str, container: str | None) -> list[Any]:
        """Distinct values of field ``name`` in ``container``'s records (every table's when it has none)."""
        own: list[Any] = []
        for record in self.tables.get(container or "", {}).values():
            value = record.get(name)
            if isinstance(value, (str, int, float, bool)) and value not in own:
                own.append(value)
        return own or self.values.get(name, [])

    def container_of_id(self, param: str) -> str | None:
        """The table whose id field is ``param`` (``book_id`` -> ``books``)."""
        return next((c for c, f in self.id_fields.items() if f == param), None)

    def container_of_tool(self, tool: str) -> str | None:
        """The table a tool's name is about (``update_book_status`` -> ``books``), if any."""
        words = tool.lower().split("_")
        for container in self.tables:
            entity = _singular(container.lower())
            if entity in words or container.lower() in words or entity in tool.lower():
                return container
        return None

    def unique_field(self, container: str | None, name: str) -> bool:
        """Whether ``name`` differs in every record that has it (names, titles, emails): in
        ``container``, or in every table when ``container`` has no such field."""
        tables = [self.tables[container]] if container in self.tables else list(self.tables.values())
        seen = [str(r[name]) for t in tables for r in t.values() if name in r]
        if not seen and container in self.tables:
            return self.unique_field(None, name)
        return len(seen) >= 2 and len(set(seen)) == len(seen)

    def new_key(self, container: str, taken: set[str]) -> str:
        """A key for a new record of ``container`` that follows the existing ones (``B2`` -> ``B3``)."""
        keys = list(self.tables.get(container, {})) + sorted(taken)
        best = None
        for key in keys:
            match = _NUMBERED.match(key)
            if match:
                prefix, digits = match.groups()
                if best is None or int(digits) > int(best[1]):
                    best = (prefix, digits)
        if best is None:
            base = _singular(container)[:3].upper() or "R"
            best = (base, "0")
        prefix, digits = best
        number = int(digits) + 1
        while True:
            key = f"{prefix}{number:0{len(digits)}d}"
            if key not in keys:
                return key
            number += 1


def is_creating(tool: str) -> bool:
    """Whether a tool's name says it creates a record (``create_book``, ``add_member``)."""
    first = tool.lower().split("_")[0]
    return first in _CREATE_VERBS


def namesake(value: str, others: list[str]) -> bool:
    """Whether another text in ``others`` is close to ``value`` (a shared word or similar spelling)."""
    words = {w for w in re.findall(r"\w+", value.lower()) if len(w) >= 4}
    for other in others:
        if other == value:
            continue
        if words & {w for w in re.findall(r"\w+", other.lower()) if len(w) >= 4}:
            return True
        if SequenceMatcher(None, value.lower(), other.lower()).ratio() >= 0.6:
            return True
    return False


def new_text(values: list[str], rng: random.Random) -> str | None:
    """A text that is none of ``values``, made from them: two names mixed (``Ada Park`` + ``Bo Lin``
    -> ``Ada Lin``), or one word with a number (``ada@park.example`` -> ``ada7@park.example``)."""
    texts = [v for v in values if isinstance(v, str) and v.strip()]
    for _ in range(12):
        if not texts:
            return None
        a = rng.choice(texts)
        b = rng.choice([t for t in texts if t != a] or texts)
        wa, wb = a.split(), b.split()
        if len(wa) >= 2 and len(wb) >= 2:
            candidate = " ".join(wa[: len(wa) // 2] + wb[len(wb) // 2 :])
        else:
            local, at, domain = a.partition("@")
            candidate = f"{local}{rng.randint(2, 9)}{at}{domain}"
        if candidate not in texts:
            return candidate
    return None


def _other_number(current: Any, seen: list[Any], rng: random.Random) -> Any:
    pool = [v for v in seen if isinstance(v, type(current)) and not isinstance(v, bool) and v != current]
    if pool and rng.random() < 0.5:
        return rng.choice(pool)
    if isinstance(current, int):
        return current + rng.randint(1, 5)
    return round(current * rng.choice((0.5, 1.5, 2.0)) + rng.choice((0.5, 1.0)), 2)


def _shifted_date(current: str, rng: random.Random) -> str:
    year, month, day = (int(p) for p in current[:10].split("-"))
    day = min(28, day) + rng.randint(1, 20)
    month += (day - 1) // 28
    day = (day - 1) % 28 + 1
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return f"{year:04d}-{month:02d}-{day:02d}" + current[10:]


@dataclass
class Draft:
    """What a call of the walk knows: the records created so far and the ids already targeted."""

    created: dict[str, list[str]] = field(default_factory=dict)
    """Keys of records earlier calls of the plan added, per container."""
    removed: set[tuple[str, str]] = field(default_factory=set)
    preferred: list[tuple[str, str]] = field(default_factory=list)
    """Existing records to work on first (lookups, namesakes), in order."""
    link_wanted: bool = False
    """Prefer a key an earlier call created (a link) where the tool takes one."""


class ArgumentProposer:
    """Proposes calls of one tool from a state (see the module docstring).

    Args:
        index: The state the call will run on.
        rng: The walk's random source (seeded by the caller: the same seed, the same proposals).
    """

    def __init__(self, index: StateIndex, rng: random.Random) -> None:
        self.index, self.rng = index, rng

    def propose(self, tool: dict, draft: Draft) -> ToolCall | None:
        """One call of ``tool`` (an OpenAI schema), or None when a required parameter has no value."""
        fn = tool.get("function", tool)
        name = fn["name"]
        params = fn.get("parameters") or {}
        props: dict[str, dict] = params.get("properties") or {}
        required = set(params.get("required") or [])
        call = _CallDraft(name, is_creating(name), self.index.container_of_tool(name))
        # id parameters first: they decide the record the other values are compared with
        for param in sorted(props, key=lambda p: (self._id_container(p, name) is None, p not in required)):
            optional = param not in required
            container = self._id_container(param, name)
            if container is not None:
                value = self._id_argument(call, container, optional, draft)
            elif optional and not self._wants_optional(param, call.target, call.creating):
                continue
            elif (props.get(param) or {}).get("type") == "object" and call.target and param not in call.target:
                value = self._updates(call.target, call.target_container)  # update_book(book_id, updates={...})
            elif (props.get(param) or {}).get("type") == "object" and call.creating and call.own in self.index.tables:
                value = self._new_record(call.own, draft)  # add_book(book={...})
            else:
                value = self._value(param, props.get(param) or {}, call.target, call.own)
            if value is _SKIP or (value is _MISSING and optional):
                continue
            if value is _MISSING:
                return None
            call.args[param] = value
        return ToolCall(name=name, arguments=call.args)

    def _id_argument(self, call: _CallDraft, container: str, optional: bool, draft: Draft) -> Any:
        """A key of ``container`` for the call (a new one for a creating tool's own table); the
        first existing record named becomes the record the other values are compared with."""
        fresh = call.creating and container == call.own
        if optional and not fresh and self.rng.random() < 0.7:
            return _SKIP
        key = self._key(container, fresh, draft, call.args)
        if key is None:
            return _MISSING
        if call.target is None and not fresh:
            call.target, call.target_container = self.index.tables.get(container, {}).get(key), container
        return key

    # ------------------------------------------------------------------ ids
    def _id_container(self, param: str, tool: str) -> str | None:
        container = self.index.container_of_id(param)
        if container is None and param.lower() in ("id", "key"):
            container = self.index.container_of_tool(tool)
        return container

    def _key(self, container: str, fresh: bool, draft: Draft, args: dict) -> str | None:
        created = draft.created.get(container, [])
        if fresh:  # never a key a plan call removed: re-creating it would read as a change of it
            removed = {k for c, k in draft.removed if c == container}
            return self.index.new_key(container, set(created) | removed)
        existing = [k for k in self.index.tables.get(container, {}) if (container, k) not in draft.removed]
        if draft.link_wanted and created:
            return self.rng.choice(created)
        preferred = [k for c, k in draft.preferred if c == container and k in existing]
        used = {v for v in args.values() if isinstance(v, str)}
        if preferred and self.rng.random() < 0.75:
            return next((k for k in preferred if k not in used), preferred[0])
        pool = [k for k in existing if k not in used] or existing or created
        return self.rng.choice(pool) if pool else None

    # ------------------------------------------------------------------ other values
    def _wants_optional(self, param: str, target: dict | None, creating: bool) -> bool:
        if target is not None and param in target:
            return self.rng.random() < 0.5
        return creating and param in self.index.values and self.rng.random() < 0.5

    def _value(self, param: str, spec: dict, target: dict | None, container: str | None) -> Any:
        choices = spec.get("enum")
        current = target.get(param) if target else None
        if choices:
            others = [c for c in choices if c != current]
            return self.rng.choice(others or choices)
        seen = self.index.field_values(param, container)
        kind = spec.get("type")
        if current is None and not seen:
            return self._by_type(param, kind, target)
        if isinstance(current, bool) or (current is None and seen and isinstance(seen[0], bool)):
            return not current if isinstance(current, bool) else self.rng.choice([True, False])
        sample = current if current is not None else seen[0]
        if isinstance(sample, (int, float)):
            return _other_number(sample, seen, self.rng)
        if isinstance(sample, str) and _DATE.match(sample):
            return _shifted_date(sample, self.rng)
        if isinstance(sample, str):
            if self.index.unique_field(container, param):
                made = new_text([str(v) for v in seen], self.rng)
                return made if made is not None else _MISSING
            others = [v for v in seen if v != current]
            return self.rng.choice(others) if others else _MISSING
        return _MISSING

    def _updates(self, target: dict, container: str | None) -> Any:
        """New values for one or two of ``target``'s own fields (not its id, not another record's id)."""
        id_field = self.index.id_fields.get(container or "")
        fields = [
            f
            for f, v in target.items()
            if f != id_field and not f.endswith("_id") and isinstance(v, (str, int, float, bool))
        ]
        if not fields:
            return _MISSING
        out = {}
        for name in self.rng.sample(fields, min(len(fields), self.rng.choice((1, 1, 2)))):
            value = self._value(name, {}, target, container)
            if value is not _MISSING and value != target.get(name):
                out[name] = value
        return out or _MISSING

    def _new_record(self, container: str, draft: Draft) -> Any:
        """A whole new record for ``container``: a new key in its id field, and for each other field
        a value proposed as for a creating call's argument of that name."""
        fields = {f: v for r in self.index.tables[container].values() for f, v in r.items()}
        id_field = self.index.id_fields.get(container)
        record = {}
        for name, sample in fields.items():
            if name == id_field:
                taken = set(draft.created.get(container, [])) | {k for c, k in draft.removed if c == container}
                record[name] = self.index.new_key(container, taken)
            elif isinstance(sample, (str, int, float, bool)):
                value = self._value(name, {}, None, container)
                if value is _MISSING:
                    return _MISSING
                record[name] = value
        return record

    def _by_type(self, param: str, kind: Any, target: dict | None) -> Any:
        """A value for a parameter no record field is named after (``amount``, ``reason``)."""
        numbers = [v for v in (target or {}).values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if kind in ("number", "integer"):
            if numbers and self.rng.random() < 0.6:
                value = self.rng.choice(numbers)
                return int(value) if kind == "integer" else value
            return self.rng.randint(1, 5)
        if kind == "boolean":
            return self.rng.choice([True, False])
        if kind == "string":
            texts = [v for vs in self.index.values.values() for v in vs if isinstance(v, str) and " " in v]
            return f"{param.replace('_', ' ')}: {self.rng.choice(texts)}" if texts else param.replace("_", " ")
        if kind == "array":
            return []
        if kind == "object":
            return {}
        return _MISSING


class _Missing:
    """No value can be proposed."""


_MISSING: Any = _Missing()
_SKIP: Any = object()
"""An optional parameter left out."""


@dataclass
class _CallDraft:
    """A call being proposed: its arguments so far and the record they work on."""

    name: str
    creating: bool
    own: str | None
    """The table the tool's name is about."""
    args: dict[str, Any] = field(default_factory=dict)
    target: dict | None = None
    target_container: str | None = None
