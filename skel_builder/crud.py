"""Deterministic routine methods over a typed container (get / list / create / update / delete).

Used two ways: as the finished example methods shown to the model when it writes the domain
methods (always), and, with ``crud_scaffold``, as real tools so the model only writes the domain
logic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from skel_builder.answers import EntityAnswer, StateAnswer, snake
from skel_builder.skeleton import PY_TYPES, container_of

_CHECK = {"str": "str", "int": "int", "float": "(int, float)", "bool": "bool", "list": "list"}
_FILTER_HINTS = ("status", "state", "type", "category")


@dataclass
class RoutineMethod:
    name: str
    kind: Literal["query", "state_change"]
    description: str
    code: str


def _references(state: StateAnswer, entity: EntityAnswer) -> list[tuple[str, str]]:
    """(attribute, container) pairs: attributes of ``entity`` that name another entity's id."""
    return [
        (a.name, container_of(o))
        for a in entity.attributes
        for o in state.entities
        if o is not entity and a.name == o.id_attribute
    ]


def _referrers(state: StateAnswer, entity: EntityAnswer) -> list[str]:
    """Containers whose records point at ``entity`` by its id attribute."""
    return [
        container_of(o)
        for o in state.entities
        if o is not entity and any(a.name == entity.id_attribute for a in o.attributes)
    ]


def _filter_attr(entity: EntityAnswer) -> str | None:
    for hint in _FILTER_HINTS:
        for attr in entity.attributes:
            if attr.type == "str" and attr.name != entity.id_attribute and hint in attr.name:
                return attr.name
    return None


def get_method(entity: EntityAnswer) -> RoutineMethod:
    e, key, box = snake(entity.name), entity.id_attribute, container_of(entity)
    code = f'''def get_{e}(self, {key}: str) -> dict:
    """Get one {entity.name} record by its id.

    Args:
        {key}: The id of the {entity.name}.

    Returns:
        dict: {{"success": True, "data": {entity.name}Info}} or {{"success": False, "error": str}}.
    """
    record = self.{box}.get({key})
    if record is None:
        return {{"success": False, "error": f"{entity.name} {{{key}}} not found"}}
    return {{"success": True, "data": dict(record)}}
'''
    return RoutineMethod(f"get_{e}", "query", f"Get one {entity.name} by {key}.", code)


def list_method(entity: EntityAnswer) -> RoutineMethod:
    box, field = container_of(entity), _filter_attr(entity)
    if field:
        signature = f"self, {field}: Optional[str] = None"
        args = f"\n    Args:\n        {field}: Only records with this {field} (all records when omitted).\n"
        select = f'[dict(r) for r in self.{box}.values() if {field} is None or r.get("{field}") == {field}]'
    else:
        signature, args, select = "self", "", f"[dict(r) for r in self.{box}.values()]"
    code = f'''def list_{box}({signature}) -> dict:
    """List {entity.name} records.
{args}
    Returns:
        dict: {{"success": True, "data": list of {entity.name}Info}}.
    """
    return {{"success": True, "data": {select}}}
'''
    return RoutineMethod(
        f"list_{box}", "query", f"List {entity.name} records" + (f" filtered by {field}." if field else "."), code
    )


def create_method(entity: EntityAnswer, state: StateAnswer) -> RoutineMethod:
    e, key, box = snake(entity.name), entity.id_attribute, container_of(entity)
    attrs = entity.attributes
    params = ", ".join(f"{a.name}: {PY_TYPES[a.type]}" for a in attrs)
    docs = "\n".join(f"        {a.name}: {a.description or a.name}" for a in attrs)

    def no_bool(a) -> str:  # bool is an int subclass: a number field refuses it explicitly
        return f" or isinstance({a.name}, bool)" if a.type in ("int", "float") else ""

    checks = "\n".join(
        f"    if not isinstance({a.name}, {_CHECK[a.type]}){no_bool(a)}:\n"
        f'        return {{"success": False, "error": "{a.name} must be {a.type}"}}'
        for a in attrs
    )
    record = ", ".join(f'"{a.name}": {a.name}' for a in attrs)
    refs = "".join(
        f"    if {attr} not in self.{box_}:\n"
        f'        return {{"success": False, "error": f"unknown {attr} {{{attr}}}"}}\n'
        for attr, box_ in _references(state, entity)
    )
    code = f'''def create_{e}(self, {params}) -> dict:
    """Create a new {entity.name} record.

    Args:
{docs}

    Returns:
        dict: {{"success": True, "message": str}} or {{"success": False, "error": str}}.
    """
{checks}
    if not {key}:
        return {{"success": False, "error": "{key} must not be empty"}}
    if {key} in self.{box}:
        return {{"success": False, "error": f"{entity.name} {{{key}}} already exists"}}
{refs}    self.{box}[{key}] = {{{record}}}
    return {{"success": True, "message": f"{entity.name} {{{key}}} created"}}
'''
    return RoutineMethod(f"create_{e}", "state_change", f"Create a {entity.name}.", code)


def update_method(entity: EntityAnswer, state: StateAnswer) -> RoutineMethod:
    e, key, box = snake(entity.name), entity.id_attribute, container_of(entity)
    types = ", ".join(f'"{a.name}": {_CHECK[a.type]}' for a in entity.attributes if a.name != key)
    refs = ", ".join(f'"{attr}": self.{box_}' for attr, box_ in _references(state, entity))
    check_refs = (
        (
            f"    references = {{{refs}}}\n"
            "    for field, target in references.items():\n"
            "        if field in updates and updates[field] not in target:\n"
            '            return {"success": False, "error": f"unknown {field} {updates[field]}"}\n'
        )
        if refs
        else ""
    )
    code = f'''def update_{e}(self, {key}: str, updates: Dict[str, Any]) -> dict:
    """Change fields of an existing {entity.name} record.

    Args:
        {key}: The id of the {entity.name}.
        updates: Field names and their new values (the id cannot change).

    Returns:
        dict: {{"success": True, "message": str}} or {{"success": False, "error": str}}.
    """
    record = self.{box}.get({key})
    if record is None:
        return {{"success": False, "error": f"{entity.name} {{{key}}} not found"}}
    types = {{{types}}}
    if not updates:
        return {{"success": False, "error": "no fields to update"}}
    for field, value in updates.items():
        if field not in types:
            return {{"success": False, "error": f"field {{field}} cannot be updated"}}
        if not isinstance(value, types[field]) or (types[field] is not bool and isinstance(value, bool)):
            return {{"success": False, "error": f"wrong type for {{field}}"}}
{check_refs}    record.update(updates)
    return {{"success": True, "message": f"{entity.name} {{{key}}} updated"}}
'''
    return RoutineMethod(f"update_{e}", "state_change", f"Update fields of a {entity.name}.", code)


def delete_method(entity: EntityAnswer, state: StateAnswer) -> RoutineMethod:
    e, key, box = snake(entity.name), entity.id_attribute, container_of(entity)
    guards = "".join(
        f'    if any(r.get("{key}") == {key} for r in self.{other}.values()):\n'
        f'        return {{"success": False, "error": "still referenced by {other}"}}\n'
        for other in _referrers(state, entity)
    )
    code = f'''def delete_{e}(self, {key}: str) -> dict:
    """Delete a {entity.name} record.

    Args:
        {key}: The id of the {entity.name}.

    Returns:
        dict: {{"success": True, "message": str}} or {{"success": False, "error": str}}.
    """
    if {key} not in self.{box}:
        return {{"success": False, "error": f"{entity.name} {{{key}}} not found"}}
{guards}    del self.{box}[{key}]
    return {{"success": True, "message": f"{entity.name} {{{key}}} deleted"}}
'''
    return RoutineMethod(f"delete_{e}", "state_change", f"Delete a {entity.name}.", code)


def routine_methods(state: StateAnswer) -> list[RoutineMethod]:
    """Every routine method of every entity."""
    methods = []
    for entity in state.entities:
        methods += [
            get_method(entity),
            list_method(entity),
            create_method(entity, state),
            update_method(entity, state),
            delete_method(entity, state),
        ]
    return methods


def example_methods(state: StateAnswer) -> list[RoutineMethod]:
    """The two finished methods shown to the model as the house style: a query and a change."""
    entity = state.entities[0]
    return [get_method(entity), update_method(entity, state)]
