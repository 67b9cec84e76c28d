"""The JSON form of the typed results (dataclasses): their fields by name, a nested result as its
own `to_dict`, so a result class spells out only the keys that are not plain fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, asdict, fields, is_dataclass
from pathlib import PurePath
from typing import Any, ClassVar, Protocol, TypeVar

R = TypeVar("R", bound="Record")  # typing.Self is 3.11+; the project runs on 3.10


class KernelResult(Protocol):
    """What a kernel job's result leads with: the check's and the bench's alike."""

    kernel: str
    device: str
    mode: str

    @property
    def correct(self) -> bool: ...

    def summary(self) -> dict: ...


def plain(value: Any) -> Any:
    """A field's JSON value: a nested result as its `to_dict` (a dataclass without one as
    `asdict`), lists item by item, paths as text."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    return value


def fields_dict(obj: Any, *names: str) -> dict[str, Any]:
    """`obj`'s attributes `names` (default: every field, in order) as JSON values."""
    keys = names or tuple(f.name for f in fields(obj))
    return {k: plain(getattr(obj, k)) for k in keys}


def result_dict(result: KernelResult, *parts: str) -> dict[str, Any]:
    """A kernel job's result as JSON: kernel, device, mode, correct and its summary, then its
    own `parts` (attribute names)."""
    head = fields_dict(result, "kernel", "device", "mode", "correct")
    return {**head, "summary": result.summary(), **fields_dict(result, *parts)}


class Record:
    """A dataclass mixin: its JSON is its fields (`fields_dict`); it is read back from the keys
    that name a field (others are left out), the missing fields taking their defaults."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    """Set by `@dataclass` on each subclass: what makes `fields(cls)` a dataclass's fields."""

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)

    @classmethod
    def from_dict(cls: type[R], d: Mapping[str, Any]) -> R:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names} | cls.parsed_fields(d))

    @classmethod
    def parsed_fields(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        """The fields read back as more than their JSON value (a nested record, a null list as
        an empty one); none here."""
        return {}
