"""Pydantic models of the structured answers the LLM gives at each step.

The class names are the ``json_schema`` names of the requests (tests route on them).
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

AttrType = Literal["str", "int", "float", "bool", "list"]


def snake(name: str) -> str:
    """``"Book Loan"`` / ``"BookLoan"`` -> ``"book_loan"`` (a safe identifier)."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.strip())
    name = re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()
    return name if name and not name[0].isdigit() else f"x_{name}"


def camel(name: str) -> str:
    """``"book loan"`` -> ``"BookLoan"``."""
    return "".join(part[:1].upper() + part[1:] for part in snake(name).split("_")) or "Entity"


class JudgeAnswer(BaseModel):
    analysis: str = ""
    stateful: bool


class DescriptionAnswer(BaseModel):
    analysis: str = ""
    environment_summary: str
    environment_introduction: str
    usefulness: int = Field(ge=1, le=10)
    modelability: int = Field(ge=1, le=10)


class AttributeAnswer(BaseModel):
    name: str
    type: AttrType = "str"
    description: str = ""

    @field_validator("name")
    @classmethod
    def _ident(cls, value: str) -> str:
        return snake(value)


class EntityAnswer(BaseModel):
    name: str
    description: str = ""
    id_attribute: str
    attributes: list[AttributeAnswer] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _camel(cls, value: str) -> str:
        return camel(value)

    @field_validator("id_attribute")
    @classmethod
    def _ident(cls, value: str) -> str:
        return snake(value)


class StateAnswer(BaseModel):
    analysis: str = ""
    class_name: str
    entities: list[EntityAnswer] = Field(min_length=1)
    rules: list[str] = Field(default_factory=list)

    @field_validator("class_name")
    @classmethod
    def _camel(cls, value: str) -> str:
        return camel(value)


class OperationAnswer(BaseModel):
    name: str
    description: str = ""
    type: Literal["query", "state_change"]

    @field_validator("name")
    @classmethod
    def _ident(cls, value: str) -> str:
        return snake(value)


class OperationsAnswer(BaseModel):
    analysis: str = ""
    operations: list[OperationAnswer] = Field(min_length=1)


class TesterArguments(BaseModel):
    thought: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)


class CheckerVerdict(BaseModel):
    analysis: str = ""
    result: Literal["Pass", "Warning", "Fail"]
    error_reason: str = ""
