"""Reading the project's YAML files (simulator scenarios, data plane configurations) and
validating them with pydantic, with errors the user can act on: one line per problem, naming
the file, the field path, what is wrong and the value given."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from frerlab.errors import UsageError

Model = TypeVar("Model", bound=BaseModel)


def describe_error(err: ValidationError, source: str) -> str:
    """One line per problem, naming the field path and what is wrong."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if not str(p).startswith("function-"))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] != "value_error" and isinstance(e.get("input"), (int, float, str)):
            msg += f" (got {e['input']!r})"
        lines.append(f"{source}: {loc}: {msg}" if loc else f"{source}: {msg}")
    return "\n".join(lines)


def validate(model: type[Model], data: Any, source: str, shape: str) -> Model:
    """`data` validated as `model`; UsageError naming each bad field otherwise. `shape` says
    what a valid file looks like, for data that is not a mapping at all."""
    if not isinstance(data, dict):
        raise UsageError(f"{source}: {shape}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UsageError(describe_error(err, source)) from None


def read_mapping(path: str | Path, what: str, shape: str) -> dict[str, Any]:
    """The plain data of a YAML file holding one mapping; UsageError when the file is missing,
    not YAML, or not a mapping (`shape` says what it should look like)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{what} file {str(path)!r} does not exist") from None
    except yaml.YAMLError as err:
        raise UsageError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: {shape}")
    return data
