"""Pydantic models of the structured answers the LLM gives at each step.

The class names are the ``json_schema`` names of the requests (tests route on them).
"""

from __future__ import annotations

import keyword
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

AttrType = Literal["str", "int", "float", "bool", "list"]


def snake(name: str) -> str:
    """``"Book Loan"`` / ``"BookLoan"`` -> ``"book_loan"`` (a safe identifier)."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.strip())
    name = re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()
    name = name if name and not name[0].isdigit() else f"x_{name}"
    return name + "_" if keyword.iskeyword(name) or name in ("self", "init_config") else name


def camel(name: str) -> str:
    """``"book loan"`` -> ``"BookLoan"``."""
    return "".join(part[:1].upper() + part[1:] for part in snake(name).split("_")) or "Entity"


# Length caps become maxLength / maxItems in the JSON schema, so a constrained decoder must close
# the answer instead of looping until max_tokens (measured: the 0.5B model looped on operations).
Short = Annotated[str, Field(max_length=300)]


class JudgeAnswer(BaseModel):
    analysis: Short = ""
    stateful: bool


class DescriptionAnswer(BaseModel):
    analysis: Short = ""
    environment_summary: Annotated[str, Field(max_length=80)]
    environment_introduction: Annotated[str, Field(max_length=600)]
    usefulness: int = Field(ge=1, le=10)
    modelability: int = Field(ge=1, le=10)


class AttributeAnswer(BaseModel):
    name: Annotated[str, Field(max_length=40)]
    type: AttrType = "str"
    description: Annotated[str, Field(max_length=120)] = ""

    @field_validator("name")
    @classmethod
    def _ident(cls, value: str) -> str:
        return snake(value)


class EntityAnswer(BaseModel):
    name: Annotated[str, Field(max_length=40)]
    description: Annotated[str, Field(max_length=200)] = ""
    id_attribute: Annotated[str, Field(max_length=40)]
    attributes: list[AttributeAnswer] = Field(min_length=1, max_length=10)

    @field_validator("name")
    @classmethod
    def _camel(cls, value: str) -> str:
        return camel(value)

    @field_validator("id_attribute")
    @classmethod
    def _ident(cls, value: str) -> str:
        return snake(value)


class StateAnswer(BaseModel):
    analysis: Short = ""
    class_name: Annotated[str, Field(max_length=60)]
    entities: list[EntityAnswer] = Field(min_length=1, max_length=6)
    rules: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=6)

    @field_validator("class_name")
    @classmethod
    def _camel(cls, value: str) -> str:
        return camel(value)


class OperationAnswer(BaseModel):
    # Wire names as in the original release; a bare "name" next to "type" made the 0.5B model
    # call every operation "query" (measured).
    model_config = ConfigDict(populate_by_name=True)
    name: Annotated[str, Field(max_length=50, alias="operation_name")]
    description: Annotated[str, Field(max_length=200, alias="operation_description")] = ""
    type: Literal["query", "state_change"] = Field(alias="operation_type")

    @field_validator("name")
    @classmethod
    def _ident(cls, value: str) -> str:
        return snake(value)


class OperationsAnswer(BaseModel):
    analysis: Short = ""
    operations: list[OperationAnswer] = Field(min_length=1, max_length=15)


class TesterArguments(BaseModel):
    thought: Short = ""
    arguments: dict[str, Any] = Field(default_factory=dict)


class CheckerVerdict(BaseModel):
    analysis: Annotated[str, Field(max_length=600)] = ""
    result: Literal["Pass", "Warning", "Fail"]
    error_reason: Annotated[str, Field(max_length=400)] = ""
