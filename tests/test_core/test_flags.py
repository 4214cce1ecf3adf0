"""Flags derived from config fields: name, type, choices and help from the field; a flag not
given leaves the field to the config file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from envscaler_core.flags import add_field_flags, field_values

pytestmark = pytest.mark.unit


class Settings(BaseModel):
    version: Literal[1, 2] = Field(default=1, description="which version")
    domains: list[str] = Field(default_factory=list, description="comma list of domains")
    limit: int | None = Field(default=None, description="first N")
    folder: Path | None = Field(default=None, description="a folder at 100%")
    templates: bool = Field(default=True, description="keep templates")
    undocumented: int = 0


class Other(BaseModel):
    port: int = Field(default=8000, description="the port")


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    add_field_flags(made, Settings, ["version", ("domains", "--domain"), "limit", "folder", "templates"])
    add_field_flags(made, Other, ["port"])
    return made


def test_given_flags_are_typed_values_of_their_fields_and_the_rest_is_left_out():
    args = parser().parse_args(["--version", "2", "--domain", "retail, airline", "--no-templates", "--port", "9"])
    assert field_values(args, Settings) == {"version": 2, "domains": ["retail", "airline"], "templates": False}
    assert field_values(args, Other) == {"port": 9}
    assert field_values(parser().parse_args([]), Settings) == {}


def test_choices_and_help_come_from_the_field(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["--version", "3"])
    assert "invalid choice: 3" in capsys.readouterr().err
    text = parser().format_help()
    assert "comma list of domains" in text and "--folder FOLDER" in text and "a folder at 100%" in text


def test_a_field_without_a_description_gets_no_flag():
    with pytest.raises(ValueError, match=r"Settings\.undocumented has no description"):
        add_field_flags(argparse.ArgumentParser(), Settings, ["undocumented"])
