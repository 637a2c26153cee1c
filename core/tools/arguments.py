"""Tool arguments: one pydantic model per tool gives both the JSON schema the model sees
and the check of what it sends.

The schema says exactly what a tool wants; the checks accept more, because models send
arguments in many near-miss forms: numbers as text (`"20"`), booleans as text
(`"true"`), lists as JSON or Python-literal text (`"['a', 'b']"`), and other names for a
field (`task_id` for `taskId`). Each field type here is a strict type for the schema with
a before-validator that normalises those forms, and that raises one clear line for
anything still wrong. `Arguments.aliases` maps the other names a model may use to the
declared one; aliases stay out of the schema (it costs tokens on every request and should
teach one spelling).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError


def fail(message: str) -> PydanticCustomError:
    """The error a validator raises: `message` is what the model reads, verbatim."""
    return PydanticCustomError("tool_argument", message)


class Arguments(BaseModel):
    """Base of every tool's arguments. Unknown keys are ignored, not refused: a model that
    sends an extra hint should not lose its call over it (the schema still says
    `additionalProperties: false`, so well-behaved models send none)."""

    # defer_build: each model is compiled on first use, not while the app starts.
    model_config = ConfigDict(extra="ignore", frozen=True, hide_input_in_errors=True, defer_build=True)
    aliases: ClassVar[Mapping[str, str]] = {}
    """Other names a model may use for a field → the declared name (not in the schema)."""

    @model_validator(mode="before")
    @classmethod
    def _rename_aliases(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not cls.aliases:
            return data
        renamed = dict(data)
        for alias, name in cls.aliases.items():
            if renamed.get(name) is None and renamed.get(alias) is not None:
                renamed[name] = renamed[alias]
        return renamed

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The lean schema sent to the model: no titles, no defaults, optional fields as
        their plain type, nested models inlined, every object closed."""
        raw = cls.model_json_schema()
        schema: dict[str, Any] = _lean(raw, raw.get("$defs", {}), root=True)
        return schema


def arguments_error(exc: ValidationError) -> str:
    """The first problem, in one line that names the parameter."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    context = error.get("ctx") or {}
    if error["type"] == "tool_argument":
        return error["msg"]
    if error["type"] == "missing":
        return f"missing required parameter '{where}'"
    if error["type"] == "greater_than_equal":
        return f"parameter '{where}' must be >= {context['ge']}"
    return f"parameter '{where}': {error['msg']}"


# --- lenient field types ------------------------------------------------------------------


def structured(value: Any) -> Any:
    """A list or object that arrived as text (JSON or a Python literal), decoded; else as is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return json.loads(text)
    except RecursionError:  # nested past Python's limit: not a value anyone sent on purpose
        return value
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


def _string(*, empty: bool, numbers: bool = False) -> Callable[[Any, ValidationInfo], Any]:
    def check(value: Any, info: ValidationInfo) -> Any:
        key = info.field_name
        if value is None:
            raise fail(f"missing required parameter '{key}'")
        if numbers and isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise fail(f"parameter '{key}' must be a string")
        if not empty and not value:
            raise fail(f"parameter '{key}' must not be empty")
        return value

    return check


def _path(value: Any, info: ValidationInfo) -> Any:
    value = _string(empty=False)(value, info)
    if "\0" in value:
        raise fail(f"parameter '{info.field_name}' contains a NUL byte; give a real path")
    return value


def _optional(check: Callable[[Any, ValidationInfo], Any]) -> Callable[[Any, ValidationInfo], Any]:
    return lambda value, info: None if value is None else check(value, info)


def _integer(value: Any, info: ValidationInfo) -> Any:
    key = info.field_name
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        if len(value.strip()) > 18:
            raise fail(f"parameter '{key}' is too large")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise fail(f"parameter '{key}' must be an integer")
    return int(value)


def _flag(value: Any, info: ValidationInfo) -> Any:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):  # booleans sent as text
        return value.strip().lower() == "true"
    raise fail(f"parameter '{info.field_name}' must be true or false")


Text = Annotated[str, BeforeValidator(_string(empty=False))]
"""A required string that must not be empty."""
AnyText = Annotated[str, BeforeValidator(_string(empty=True))]
"""A required string that may be empty (file content, a replacement)."""
PathText = Annotated[str, BeforeValidator(_path)]
"""A path as the model gives it (resolve it with `ctx.resolve`): not empty, no NUL byte."""
OptionalPath = Annotated[
    str | None, BeforeValidator(lambda value, info: None if value in (None, "") else _path(value, info))
]
"""A path that may be left out; an empty string counts as left out."""
RequiredLabel = Annotated[str, BeforeValidator(_string(empty=True, numbers=True))]
"""Free text (a title, a name): a number sent for it (`subject: 42`) becomes its text."""
Label = Annotated[str | None, BeforeValidator(_optional(_string(empty=True, numbers=True)))]
"""Like RequiredLabel, but may be left out."""
Hint = Annotated[str | None, BeforeValidator(lambda value: value if isinstance(value, str) else None)]
"""Display-only text (Bash's `description`): anything but a string is ignored, never refused."""
Count = Annotated[int | None, BeforeValidator(_integer)]
"""An integer that may be left out; `"20"` and `20.0` mean 20. Give a minimum with `Field(ge=…)`."""
Flag = Annotated[bool, BeforeValidator(_flag)]
"""A boolean (false when left out); `"true"` and `"false"` are accepted."""


# --- the lean schema --------------------------------------------------------------------


def object_schema(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    """A closed JSON-schema object (for tools whose schema is written by hand, as in tests)."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_ORDER = ("type", "enum", "items", "minLength", "minimum", "description")


def _lean(node: Any, defs: Mapping[str, Any], *, root: bool = False) -> Any:
    """Every schema is sent with every request, so it says each thing once: the arguments
    object closed, with its `required` list; a nested object closed too but without an
    empty `required`; a nested object that declares no properties (a map such as
    `metadata`) open, since closing it would allow only `{}`."""
    if isinstance(node, list):
        return [_lean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        # A nested model's docstring is for people; the field's own description is for the model.
        target = {k: v for k, v in defs[node["$ref"].rsplit("/", 1)[-1]].items() if k != "description"}
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    options = [option for option in node.get("anyOf", ()) if option != {"type": "null"}]
    if len(options) == 1:  # `X | None`: the schema says X and leaves the field out of `required`
        node = {**{k: v for k, v in node.items() if k != "anyOf"}, **options[0]}
    if node.get("type") == "object":
        properties = {name: _lean(value, defs) for name, value in node.get("properties", {}).items()}
        if root:
            schema = object_schema(properties, node.get("required", ()))
        elif not properties:
            schema = {"type": "object"}
        else:
            schema = {"type": "object", "properties": properties, "additionalProperties": False}
            if node.get("required"):
                schema["required"] = list(node["required"])
        if "description" in node and not root:  # the root's is the model's docstring
            schema["description"] = node["description"]
        return schema
    kept = {k: _lean(v, defs) for k, v in node.items() if k not in ("title", "default", "$defs")}
    return {k: kept[k] for k in sorted(kept, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))}
