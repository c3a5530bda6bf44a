"""YAML configs validated into typed dataclasses, with messages that name the file, the key and the fix.

A config section is a dataclass; its fields' annotations say what is allowed (``int``, ``float``,
``str``, ``bool``, ``X | None``, ``list[X]``, ``tuple[X, ...]``, ``Literal[...]``, nested dataclasses
and ``dict[str, Any]`` for pass-through options). Unknown keys, wrong types and missing required keys
raise :class:`ConfigError`; nothing is looked up by name at run time.

A file may start from a base: ``base: base_cv.yaml`` (a path relative to the file) takes every key of that file,
and the file's own keys replace the base's, section by section (a section's keys one by one; a list or a value
whole). A data set's runs share one base per trainer, so that a run file holds only what makes it that run.

A ``num_threads`` field (``training.num_threads``, ``booster.num_threads``) also takes ``auto``: the cores
this process may use (:func:`auto_threads`), resolved when the config is read, so that a run's record holds
the number it ran with.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

from gaprank import GaprankInputError

T = TypeVar("T")


class ConfigError(GaprankInputError):
    """A config file that cannot be used; the message says where and why."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key; the base class reports it
                continue
            if first != key_node.start_mark.line + 1:
                raise ConfigError(f"line {key_node.start_mark.line + 1}: key {key!r} is given twice "
                                  f"(first at line {first})")
        return super().construct_mapping(node, deep=deep)


INT64 = 2**63
THREADS_FIELD = "num_threads"  # an integer field that also takes "auto"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def local_processes() -> int:
    """The processes of this run on this machine: torchrun's ``LOCAL_WORLD_SIZE``, else 1."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))
    except ValueError:
        return 1


def auto_threads() -> int:
    """``num_threads: auto``: the cores this process may use, shared with the other processes torchrun
    started on this machine (``LOCAL_WORLD_SIZE``); at least 1."""
    return max(1, available_cores() // local_processes())


def _describe(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in get_args(tp))
    if origin in (list, tuple):
        return f"a list of {_describe(get_args(tp)[0])}"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return f"a mapping with keys {', '.join(f.name for f in dataclasses.fields(tp))}"
    return {type(None): "null", int: "an integer", float: "a number", str: "a string", bool: "true/false"}.get(tp, str(tp))


def _convert(value: Any, tp: Any, where: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where} must be {_describe(tp)}; got {value!r}")
    if origin is Literal:
        if value not in get_args(tp):
            raise ConfigError(f"{where} must be one of {_describe(tp)}; got {value!r}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where} must be {_describe(tp)}; got {value!r}")
        item = get_args(tp)[0]
        items = [_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{where} must be a mapping with string keys; got {value!r}")
        item = get_args(tp)[1] if get_args(tp) else Any
        if item is Any:  # pass-through options (e.g. LightGBM parameters)
            return dict(value)
        return {k: _convert(v, item, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false; got {value!r}")
        return value
    if tp is int:
        takes_auto = where.rsplit(".", 1)[-1] == THREADS_FIELD
        if takes_auto and value == "auto":
            return auto_threads()
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer{' or auto' if takes_auto else ''}; got {value!r}")
        if not -INT64 <= value < INT64:
            raise ConfigError(f"{where} must fit in 64 bits; got {value}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number; got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{where} must be a finite number; got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string; got {value!r}")
        return value
    raise TypeError(f"config type {tp!r} at {where} is not supported")  # a bug in a dataclass, not in the file


def _build(cls: type[T], data: Any, where: str) -> T:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be {_describe(cls)}; got {data!r}")
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                          f"known keys: {', '.join(fields)}")
    values = {}
    for name, field in fields.items():
        key = f"{where}.{name}" if where else name
        if name in data:
            values[name] = _convert(data[name], hints[name], key)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{key} is required ({_describe(hints[name])})")
    try:
        obj = cls(**values)  # a section that checks itself when built (gaprank.boosting.LambdaMARTSettings)
    except GaprankInputError as exc:
        raise ConfigError(f"{where or 'config'}: {exc}") from None
    if isinstance(values.get("output_dir"), str):
        try:
            output_path(values["output_dir"], f"{where}.output_dir" if where else "output_dir")
        except GaprankInputError as exc:
            raise ConfigError(str(exc)) from None
    check = getattr(obj, "validate", None)
    if check is not None:
        try:
            check()
        except GaprankInputError as exc:
            raise ConfigError(f"{where or 'config'}: {exc}") from None
    return obj


def output_path(text: str | Path, where: str = "output_dir") -> Path:
    """A directory results are written to; an empty or blank one (the working directory, whose files of
    the results' names would be overwritten) is refused."""
    if not str(text).strip():
        raise GaprankInputError(f"{where} must name a directory; got {str(text)!r} (results would be written into "
                                "the working directory)")
    return Path(text)


def build_config(cls: type[T], data: Any) -> T:
    """``data`` (plain dicts and lists, as :func:`to_dict` gives) built into ``cls`` and validated, as a
    config file would be."""
    return _build(cls, data, "")


def load_config(path: str | Path, cls: type[T]) -> T:
    """Read a YAML file (and its base) into ``cls``; every problem is a :class:`ConfigError` naming the file."""
    path = Path(path)
    data = read_config_data(path)
    try:
        return _build(cls, data, "")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


BASE_KEY = "base"


def read_config_data(path: str | Path) -> Any:
    """A config file's data as plain YAML values, its ``base`` merged in (the mapping :func:`load_config` builds)."""
    path = Path(path)
    data = _read_yaml(path)
    if not isinstance(data, dict) or BASE_KEY not in data:
        return data
    base_name = data.pop(BASE_KEY)
    if not isinstance(base_name, str) or not base_name.strip():
        raise ConfigError(f"{path}: base must name a YAML file beside it; got {base_name!r}")
    base_path = path.parent / base_name
    base = _read_yaml(base_path, f"{path}: base {base_name}")
    if not isinstance(base, dict):
        raise ConfigError(f"{path}: base {base_path} must be a mapping of config sections")
    if BASE_KEY in base:
        raise ConfigError(f"{path}: base {base_path} has a base of its own; a base is one file")
    return merged(base, data)


def merged(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``own``'s keys replacing its keys: a mapping in both merged key by key, anything else whole."""
    out = dict(base)
    for key, value in own.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _read_yaml(path: Path, what: str | None = None) -> Any:
    """The YAML values of ``path``; a missing, unreadable or malformed file is a :class:`ConfigError` naming it
    (``what``: how the message names it, for a base)."""
    name = what or f"config file {path}"
    if path.is_dir():
        raise ConfigError(f"{name} is a directory; give a YAML file")
    if not path.is_file():
        raise ConfigError(f"{name} does not exist" + (f" ({path})" if what else ""))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except ConfigError as exc:
        raise ConfigError(f"{path}, {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None


def to_dict(obj: Any) -> Any:
    """A config as plain data (for summary.json)."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj


def with_params(config: Any, params: dict[str, Any]) -> Any:
    """``config`` with the dotted-path ``params`` set, rebuilt and validated as its config file would be.

    A value for a list field (``training.learning_rates``: one rate; ``model.hidden``: "64,32") becomes
    that list; a key under a pass-through ``params`` section (LightGBM's) may be new."""
    data = to_dict(config)
    for path, value in params.items():
        *parents, leaf = path.split(".")
        node = data
        for part in parents:
            if not isinstance(node, dict) or not isinstance(node.get(part), dict):
                raise GaprankInputError(f"parameter {path!r}: {part!r} is not a section of the run's config")
            node = node[part]
        is_pass_through = parents and parents[-1] == "params"
        if leaf not in node and not is_pass_through:
            raise GaprankInputError(f"parameter {path!r}: the run's config has no {leaf!r} there "
                                    f"(keys: {', '.join(node)})")
        current = node.get(leaf)
        if isinstance(current, list) and not isinstance(value, list):
            value = [int(v) for v in value.split(",")] if isinstance(value, str) else [value]
        node[leaf] = value
    return build_config(type(config), data)


__all__ = ["ConfigError", "auto_threads", "available_cores", "local_processes", "build_config",
           "load_config", "merged", "read_config_data", "to_dict", "with_params"]
