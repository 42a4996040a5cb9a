"""Reading the project's YAML files (simulator scenarios, data plane configurations) and
validating them with pydantic, with errors the user can act on: one line per problem, naming
the file, the field path, what is wrong and what would be valid.

frerlab runs as root, so a "configuration" may be any file, a secret one included: errors
never show the file's text. A value is shown only when it is a number or a text of at most
MAX_SHOWN characters, a key only when it looks like a field name, a YAML syntax error only by
line and column, at most MAX_LINES problems.
Work is bounded before it starts: a file is read only if it is a regular text file of at most
MAX_FILE_BYTES, its YAML may hold at most MAX_VALUES values (aliases counted each time they
are used), and a key given twice in one mapping is refused.

`--set FIELD=VALUE` overrides of a file's data (`parse_overrides`, `set_field`) are here too:
the simulator's scenarios and the topology files take them alike.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from frerlab.errors import UsageError
from frerlab.names import shown

Model = TypeVar("Model", bound=BaseModel)

#: Largest YAML file read (bytes): far above any real configuration or scenario.
MAX_FILE_BYTES = 1 << 20
#: Most values (scalars, list items, mapping entries) one YAML file may expand to.
MAX_VALUES = 100_000
#: Longest number in a file, in characters (Python refuses to convert an int of more than
#: 4300 digits; nothing frerlab reads needs more than a few dozen).
MAX_NUMBER_CHARS = 1000
#: Most problems one error message lists.
MAX_LINES = 10
#: Longest text of the file an error message shows (a longer one may be a line of a file that
#: is not a configuration at all: it is shown by its length only).
MAX_SHOWN = 32
#: What a key from the file must look like to be shown in an error message.
_TOKEN = re.compile(rf"[A-Za-z0-9_.:+-]{{1,{MAX_SHOWN}}}")


class _Loader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping, and a number too long to read."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: SafeLoader says so itself
                continue
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {_key(key)} is given twice (first on line {first.start_mark.line + 1})",
                    key_node.start_mark)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An int, refusing one longer than MAX_NUMBER_CHARS by its length."""
        if len(node.value) > MAX_NUMBER_CHARS:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(node.value)} characters is too long (at most {MAX_NUMBER_CHARS})",
                node.start_mark)
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _show(value: object) -> str:
    """A value from the file as an error message may show it."""
    if isinstance(value, str) and len(value) > MAX_SHOWN:
        return f"(a text of {len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool):
        return shown(value)
    return repr(value) if isinstance(value, (bool, int, float, str)) or value is None else f"a {type(value).__name__}"


def _key(key: object) -> str:
    """A key from the file as an error message may show it: only if it looks like a field name."""
    return repr(key) if isinstance(key, str) and _TOKEN.fullmatch(key) else "(not a field name)"


def field_path(loc: tuple | list) -> str:
    """A pydantic error's location as an error message may show it: list indices, and keys
    only where they look like field names (any other as <key>)."""
    return ".".join(str(p) if isinstance(p, int) or (isinstance(p, str) and _TOKEN.fullmatch(p)) else "<key>"
                    for p in loc)


def hide_texts(message: str, data: Any) -> str:
    """`message` with every text of `data` longer than MAX_SHOWN replaced by its length."""
    texts, stack = set(), [data]
    while stack and len(texts) < 100:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and len(item) > MAX_SHOWN:
            texts.add(item)
    for text in sorted(texts, key=len, reverse=True):
        for form in (repr(text), shown(text), text):
            message = message.replace(form, _show(text))
    return message


def _unwrap(tp: Any) -> Any:
    """The model or list type inside Annotated / Optional wrappers (None if ambiguous)."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin is Union or type(tp).__name__ == "UnionType":
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return None
            tp = args[0]
        else:
            return tp


def _fields(model: type[BaseModel]) -> dict[str, tuple[str, Any]]:
    """Every name a field of `model` accepts in a file -> (the name it is shown by, its type)."""
    fields = {}
    for name, f in model.model_fields.items():
        shown_as = f.validation_alias if isinstance(f.validation_alias, str) else f.alias or name
        fields[name] = fields[shown_as] = (shown_as, f.annotation)
    return fields


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model reached by following error location `loc` from `model`, if one is."""
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            tp = _fields(tp).get(part, (None, None))[1]
        elif get_origin(tp) is list and isinstance(part, int):
            tp = get_args(tp)[0]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _is_field(model: type[BaseModel] | None, loc: tuple, name: str) -> bool:
    """Whether `name` is a field name of the model at `loc` (a name of frerlab's, not the file's)."""
    parent = _model_at(model, loc) if model else None
    return parent is not None and name in _fields(parent)


def describe_error(err: ValidationError, source: str, model: type[BaseModel] | None = None) -> str:
    """One line per problem (at most MAX_LINES), naming the field path, what is wrong and what
    would be valid; never a text from the file longer than MAX_SHOWN."""
    problems: list[tuple[tuple, str]] = []
    unknown: dict[tuple, list] = {}  # unknown keys by the location of their mapping
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not str(p).startswith("function-"))
        if e["type"] == "extra_forbidden":
            unknown.setdefault(loc[:-1], []).append(loc[-1])
            continue
        msg = hide_texts(e["msg"].removeprefix("Value error, "), e.get("input"))
        if e["type"] != "value_error" and isinstance(e.get("input"), (bool, int, float, str)):
            msg += f" (got {_show(e['input'])})"
        problems.append((loc, msg))
    for loc, keys in unknown.items():
        parent = _model_at(model, loc) if model else None
        valid = f" (valid: {', '.join(dict.fromkeys(n for n, _ in _fields(parent).values()))})" if parent else ""
        named = [repr(k) for k in keys if isinstance(k, str) and _TOKEN.fullmatch(k)]
        parts = [*named[:5], *([f"{len(named) - 5} more"] if len(named) > 5 else [])]
        if len(named) < len(keys):
            parts.append(f"{len(keys) - len(named)} key(s) not shown (not field names)")
        problems.append((loc, f"unknown field{'s' if len(keys) > 1 else ''} {', '.join(parts)}{valid}"))
    lines = []
    for loc, msg in problems:
        path = ".".join(p if isinstance(p, str) and (_TOKEN.fullmatch(p) or _is_field(model, loc[:i], p)) else
                        str(p) if isinstance(p, int) else "<key>" for i, p in enumerate(loc))
        lines.append(f"{source}: {path}: {msg}" if path else f"{source}: {msg}")
    if len(lines) > MAX_LINES:
        lines[MAX_LINES:] = [f"{source}: and {len(lines) - MAX_LINES} more problems"]
    return "\n".join(lines)


def validate(model: type[Model], data: Any, source: str, shape: str) -> Model:
    """`data` validated as `model`; UsageError naming each bad field otherwise. `shape` says
    what a valid file looks like, for data that is not a mapping at all."""
    if not isinstance(data, dict):
        raise UsageError(f"{source}: {shape}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UsageError(describe_error(err, source, model)) from None


def read_text(path: str | Path, what: str) -> str:
    """The text of `what` file `path`; UsageError in one line when it is missing, not a
    regular file, larger than MAX_FILE_BYTES or not text."""
    path = Path(path)
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{what} file {str(path)!r} is a directory, not a YAML file")
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{what} file {str(path)!r} is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise UsageError(f"{what} file {str(path)!r} is {info.st_size} bytes, above the limit "
                             f"of {MAX_FILE_BYTES} bytes")
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{what} file {str(path)!r} does not exist") from None
    except OSError as err:
        raise UsageError(f"{what} file {str(path)!r} cannot be read: {err.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise UsageError(f"{what} file {str(path)!r} is above the limit of {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = "\0"
    if "\0" in text:
        raise UsageError(f"{what} file {str(path)!r} is not a text file (a YAML file is UTF-8 text)")
    return text


def _count_values(data: Any, budget: int) -> int:
    """What is left of `budget` after counting the values of `data`; stops below zero."""
    stack = [data]
    while stack and budget >= 0:
        item = stack.pop()
        budget -= 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return budget


def load(text: str, source: str) -> Any:
    """The plain data of YAML `text`; UsageError naming line and column of a syntax error,
    a key given twice, or more than MAX_VALUES values."""
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = re.sub(rf"'[^']{{{MAX_SHOWN + 1},}}'", "(a long text)", str(err.problem or err.context or "syntax error"))
        raise UsageError(f"{source}: not valid YAML{where}: {problem}") from None
    except yaml.YAMLError:
        raise UsageError(f"{source}: not valid YAML (characters YAML does not allow)") from None
    except RecursionError:
        raise UsageError(f"{source}: nested too deeply") from None
    if _count_values(data, MAX_VALUES) < 0:
        raise UsageError(f"{source}: more than {MAX_VALUES} values (aliases counted each time they are used)")
    return data


def read_mapping(path: str | Path, what: str, shape: str) -> dict[str, Any]:
    """The plain data of a YAML file holding one mapping; UsageError when the file is missing,
    not a bounded text file, not YAML, or not a mapping (`shape` says what it should look like)."""
    data = load(read_text(path, what), str(path))
    if not isinstance(data, dict):
        raise UsageError(f"{path}: {shape}")
    return data


def parse_overrides(items: list[str]) -> dict[str, object]:
    """`--set` FIELD=VALUE strings into a mapping; values are read as YAML scalars (numbers,
    lists)."""
    overrides: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--set {item!r} is not FIELD=VALUE (e.g. streams.udp.rate=600Mbps)")
        try:
            overrides[name] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise UsageError(f"--set {shown(item)}: the value is not a YAML scalar or list (e.g. 600Mbps, 10, [1, 2])") from None
    return overrides


def set_field(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Sets `dotted` (e.g. "streams.video.rate" or "links.0.loss.p") in a YAML file's plain data;
    list items are found by their `name` or by index. Raises UsageError for a bad path."""
    parts = dotted.split(".")
    target: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(target, list):
            index = next((k for k, item in enumerate(target) if isinstance(item, dict) and item.get("name") == part), None)
            if index is None and part.isdigit() and int(part) < len(target):
                index = int(part)
            if index is None:
                names = [item.get("name") for item in target if isinstance(item, dict)]
                raise UsageError(f"field {dotted!r}: no list item {part!r} (names: {names}, or an index < {len(target)})")
            if last:
                target[index] = value
            else:
                target = target[index]
        elif isinstance(target, dict):
            if last:
                target[part] = value
            else:
                target = target.setdefault(part, {})
        else:
            raise UsageError(f"field {dotted!r}: {'.'.join(parts[:i])} is a value, not a mapping or list")
