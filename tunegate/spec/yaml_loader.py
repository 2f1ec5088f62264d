"""Read a spec's YAML the way a person means it, remembering where every key was written.

PyYAML follows YAML 1.1, which has three traps for training configs: `1e-4` (no dot) is a string,
`yes`/`no`/`on`/`off` are booleans, and a key written twice silently keeps the last value. This
loader resolves numbers and booleans as YAML 1.2's core schema does and reports duplicate keys,
and it records the line and column of every key path so each finding can point at the line.

A spec is data, never code, and it is read with bounds a hostile file cannot get past:
- no tag ever constructs an object: a value is a plain string, number, boolean, null, list or
  mapping, built here from the node's text. Any other tag (`!!python/object`, `!!set`,
  `!!timestamp`, `!foo`), and a core tag whose text does not fit it (`!!int abc`), is a problem
  at its line (TG130) and the value is left out;
- nesting deeper than MAX_DEPTH stops the read (TG131) before PyYAML's recursive composer or our
  own walk could overflow the stack, and so does an alias that refers to itself;
- aliases are expanded by our walk, so a few lines of anchors can stand for billions of values
  ("billion laughs"); the walk stops at MAX_NODES values (TG132).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from tunegate.errors import YamlSyntaxError

# 64 levels: the deepest real spec (a sweep candidate's override of a section's key) is 5 deep; it
# also keeps PyYAML's composer (about 3 frames a level) far from Python's 1000-frame limit.
MAX_DEPTH = 64
# Values a spec may expand to, aliases included. The largest real spec (a sweep of a thousand
# candidates of ten keys each) is about 20,000; 100,000 take ~0.3 s to walk.
MAX_NODES = 100_000
# The codes of a YamlSyntaxError (the spec stage reports each as a finding with its fix).
NOT_YAML, TOO_DEEP, TOO_MANY_VALUES = "TG106", "TG131", "TG132"

_CORE = "tag:yaml.org,2002:"
_MAP, _SEQ, _STR = _CORE + "map", _CORE + "seq", _CORE + "str"


@dataclass
class TagProblem:
    """A value the loader refused to build: where, which key, and why."""

    key: str
    line: int
    column: int
    message: str


@dataclass
class Located:
    """A parsed YAML document plus where each dotted key path was written (1-based line, column)."""

    data: Any
    places: dict[str, tuple[int, int]] = field(default_factory=dict)
    duplicates: list[tuple[str, int, int, int]] = field(default_factory=list)  # key, line, col, first line
    refused: list[TagProblem] = field(default_factory=list)

    def place(self, path: str) -> tuple[int, int] | None:
        """The place of `path`, or of its nearest written ancestor (a default has no line)."""
        while path:
            if path in self.places:
                return self.places[path]
            path = path.rpartition(".")[0]
        return None


# YAML 1.2 core schema: floats may omit the dot (1e-4), and only true/false are booleans. One
# addition: digit groups (`16_384`, `0.000_2`), single underscores between digits as Python writes
# them. PyYAML's YAML 1.1, which axolotl and TRL read their configs with, takes them as numbers too
# (axolotl's own long-context examples write `sequence_len: 500_000`), and so does a person.
_DIGITS = r"[0-9]+(?:_[0-9]+)*"
_FLOAT_12 = re.compile(rf"""^(?:[-+]?(?:\.{_DIGITS}|{_DIGITS}(?:\.(?:{_DIGITS})?)?)(?:[eE][-+]?[0-9]+)?
                           |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X)
_INT_12 = re.compile(rf"^(?:[-+]?{_DIGITS}|0o[0-7]+|0x[0-9a-fA-F]+)$")
_BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL_12 = re.compile(r"^(?:~|null|Null|NULL|)$")
# Python refuses to turn longer digit strings into an int (sys.int_info.str_digits_check_threshold).
_MAX_INT_DIGITS = 4300


class _Loader(yaml.SafeLoader):
    """PyYAML's safe parser with YAML 1.2 resolution and a bound on flow nesting."""

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # noqa: N803 (PyYAML's name)
        # The scanner runs ahead of the composer: an unbounded `[[[[...` would cost time quadratic
        # in its depth (PyYAML re-scans its pending simple keys) before any depth check saw it.
        if self.flow_level >= MAX_DEPTH:
            raise _too_deep(*_place(self.get_mark()))
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise _too_deep(*_place(self.peek_event().start_mark))
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver(_CORE + "bool", _BOOL_12, list("tTfF"))
_Loader.add_implicit_resolver(_CORE + "int", _INT_12, list("-+0123456789"))
_Loader.add_implicit_resolver(_CORE + "float", _FLOAT_12, list("-+0123456789."))
_Loader.add_implicit_resolver(_CORE + "null", _NULL_12, ["~", "n", "N", ""])


def load(text: str) -> Located:
    """Parse YAML text into plain data plus key places; raise YamlSyntaxError with a location.

    The error's `code` is TG106 for text that is not YAML, TG131 for nesting past MAX_DEPTH and
    TG132 for more than MAX_NODES values; refused tags are collected in `Located.refused`.
    """
    node = _compose(text)
    located = Located(data=None)
    if node is not None:
        located.data = _Walk(located).build(node, "", 1)
    return located


def _compose(text: str) -> yaml.Node | None:
    try:
        loader = _Loader(text)
        try:
            return loader.get_single_node()
        finally:
            loader.dispose()
    except RecursionError:  # a last resort: MAX_DEPTH keeps the composer well inside the limit
        raise _too_deep(None, None) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise YamlSyntaxError(f"{exc.problem or exc.context}", line, col, NOT_YAML) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc), None, None, NOT_YAML) from None


def _too_deep(line: int | None, column: int | None) -> YamlSyntaxError:
    return YamlSyntaxError(f"the spec nests more than {MAX_DEPTH} levels deep (or an alias refers to "
                           "itself)", line, column, code=TOO_DEEP)


class _Walk:
    """Builds plain data from the node tree, counting every value it builds against MAX_NODES."""

    def __init__(self, located: Located):
        self.located = located
        self.built = 0

    def build(self, node: yaml.Node, path: str, depth: int) -> Any:
        self.built += 1
        if self.built > MAX_NODES:
            line, col = _mark(node)
            raise YamlSyntaxError(f"the spec expands to more than {MAX_NODES:,} values (aliases repeat "
                                  "what their anchor holds)", line, col, code=TOO_MANY_VALUES)
        if depth > MAX_DEPTH:  # only an alias inside its own anchor gets here: the composer is bounded
            raise _too_deep(*_mark(node))
        if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            return self._sequence(node, path, depth)
        if isinstance(node, yaml.ScalarNode):
            value, problem = _scalar(node.tag, node.value)
            if problem is None:
                return value
        else:
            kind = "a mapping" if isinstance(node, yaml.MappingNode) else "a list"
            problem = f"tag {_tag_name(node.tag)} is not supported on {kind}"
        self.located.refused.append(TagProblem(path, *_mark(node), problem))
        return None

    def _mapping(self, node: yaml.MappingNode, path: str, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = self.build(key_node, path, depth + 1)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                key = str(key)
            child = f"{path}.{key}" if path else str(key)
            line, col = _mark(key_node)
            if key in out:
                self.located.duplicates.append((child, line, col, first_line[key]))
            else:
                first_line[key] = line
                self.located.places[child] = (line, col)
            out[key] = self.build(value_node, child, depth + 1)
        return out

    def _sequence(self, node: yaml.SequenceNode, path: str, depth: int) -> list[Any]:
        items = []
        for i, item in enumerate(node.value):
            child = f"{path}.{i}"
            self.located.places.setdefault(child, _mark(item))
            items.append(self.build(item, child, depth + 1))
        return items


def _scalar(tag: str, text: str) -> tuple[Any, str | None]:
    """(value, None) for a scalar of a core tag whose text fits it; (None, why) otherwise."""
    if tag == _STR:
        return text, None
    kind = tag[len(_CORE):] if tag.startswith(_CORE) else None
    pattern = {"int": _INT_12, "float": _FLOAT_12, "bool": _BOOL_12, "null": _NULL_12}.get(kind or "")
    if pattern is None:
        return None, f"tag {_tag_name(tag)} is not supported"
    if not pattern.match(text):
        return None, f"{_show(text)} is not a valid {_tag_name(tag)}"
    if kind == "int":
        digits = len(text.lstrip("+-"))
        if digits > _MAX_INT_DIGITS:
            return None, f"an integer of {digits:,} digits is too long to read"
        return _int(text), None
    if kind == "float":
        return _float(text), None
    return (text.lower() == "true", None) if kind == "bool" else (None, None)


def _int(text: str) -> int:
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 0) if text.startswith("0x") else int(text)


def _float(text: str) -> float:
    lower = text.lower()
    if lower.endswith(".inf"):
        return float("-inf") if lower.startswith("-") else float("inf")
    return float("nan") if lower == ".nan" else float(text)


def _mark(node: yaml.Node) -> tuple[int, int]:
    return _place(node.start_mark)


def _place(mark: Any) -> tuple[int, int]:
    return mark.line + 1, mark.column + 1


def _tag_name(tag: str) -> str:
    """A tag as written: `!!int` for the core schema's, the full tag otherwise (capped)."""
    short = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
    return _show(short)


def _show(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
