"""Read a spec's YAML the way a person means it, remembering where every key was written.

PyYAML follows YAML 1.1, which has three traps for training configs: `1e-4` (no dot) is a string,
`yes`/`no`/`on`/`off` are booleans, and a key written twice silently keeps the last value. This
loader resolves numbers and booleans as YAML 1.2's core schema does and reports duplicate keys,
and it records the line and column of every key path so each finding can point at the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from tunegate.errors import YamlSyntaxError


@dataclass
class Located:
    """A parsed YAML document plus where each dotted key path was written (1-based line, column)."""

    data: Any
    places: dict[str, tuple[int, int]] = field(default_factory=dict)
    duplicates: list[tuple[str, int, int, int]] = field(default_factory=list)  # key, line, col, first line

    def place(self, path: str) -> tuple[int, int] | None:
        """The place of `path`, or of its nearest written ancestor (a default has no line)."""
        while path:
            if path in self.places:
                return self.places[path]
            path = path.rpartition(".")[0]
        return None


# YAML 1.2 core schema: floats may omit the dot (1e-4), and only true/false are booleans.
_FLOAT_12 = re.compile(r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
                           |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X)
_INT_12 = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


class _Loader(yaml.SafeLoader):
    pass


_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL_12, list("tTfF"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT_12, list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))
_Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"),
                              ["~", "n", "N", ""])


def _int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 0) if text.startswith("0x") else int(text)


_Loader.add_constructor("tag:yaml.org,2002:int", _int)


def load(text: str) -> Located:
    """Parse YAML text into plain data plus key places; raise YamlSyntaxError with a location."""
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise YamlSyntaxError(f"{exc.problem or exc.context}", line, col) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc), None, None) from None
    located = Located(data=None)
    if node is None:
        return located
    constructor = _Loader("")
    located.data = _build(node, "", located, constructor)
    return located


def _build(node: yaml.Node, path: str, located: Located, constructor: _Loader) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = _build(key_node, path, located, constructor)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                key = str(key)
            child = f"{path}.{key}" if path else str(key)
            line, col = key_node.start_mark.line + 1, key_node.start_mark.column + 1
            if key in out:
                located.duplicates.append((child, line, col, first_line[key]))
            else:
                first_line[key] = line
                located.places[child] = (line, col)
            out[key] = _build(value_node, child, located, constructor)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            child = f"{path}.{i}"
            located.places.setdefault(child, (item.start_mark.line + 1, item.start_mark.column + 1))
            items.append(_build(item, child, located, constructor))
        return items
    return constructor.construct_object(node, deep=True)
