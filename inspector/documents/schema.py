"""JSON Schema (draft 2020-12) of the `inspector report --json` document, generated from the
dataclasses that make the report, and of every other --json document (DOCUMENTS, at the end).

Types come from the fields' type hints (typing.get_type_hints), mapped the way
`inspector.model.to_jsonable` serialises them: `X | Unknown` becomes anyOf with the
{"unknown": reason} object, enums their JSON values (Level: lowercased names), dataclasses
entries of $defs. Descriptions come from the source: a field's `# comment` on its line, else a
comment block right above it; a class's docstring. So the schema cannot drift from the code,
and the comments stay the one place where a field is documented.

Two fields are typed `Any` in the code and made precise here: Report.sections (the sections of
inspector.report.sections.SECTIONS, each the return type of its collector) and
StorageSection.health (what inspector.discover.drives.collect builds: one health dataclass per
drive kind, or Unknown).
"""
from __future__ import annotations

import ast
import collections.abc
import dataclasses
import enum
import functools
import inspect
import io
import re
import sys
import tokenize
import types
import typing
from typing import Any

from inspector.model import SCHEMA_VERSION, Level, Report, Unknown

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = f"urn:inspector:report:{SCHEMA_VERSION}"

# Fields to_jsonable writes that `report --json` drops again (kept only with --diagnose).
OPTIONAL_FIELDS = {(Report, "timings")}

# The JSON spelling of a non-finite float (to_jsonable turns NaN and infinity into null).
_NUMBER = ["number", "null"]
_SIMPLE = {str: "string", bool: "boolean", int: "integer", bytes: "string", type(None): "null"}
_ARRAYS = (list, set, frozenset, collections.abc.Sequence, collections.abc.Set,
           collections.abc.Iterable)
_OBJECTS = (dict, collections.abc.Mapping)


# ----------------------------------------------------------------------------- comments
# Comments speak Python; the schema's reader sees JSON.
_PYTHON_WORDS_JSON = {"None": "null", "True": "true", "False": "false"}
_PYTHON_WORDS = re.compile(r"\b(None|True|False)\b")

@functools.cache
def _module_source(module_name: str) -> tuple[ast.Module, dict[int, tuple[str, bool, int]]]:
    """The module's AST and its comments: line -> (text, alone on its line, column)."""
    try:
        source = inspect.getsource(sys.modules[module_name])
    except (OSError, TypeError):  # installed without sources: a schema without descriptions
        return ast.Module(body=[], type_ignores=[]), {}
    comments: dict[int, tuple[str, bool, int]] = {}
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            alone = not lines[row - 1][:col].strip()
            comments[row] = (token.string.lstrip("#").strip(), alone, col)
    return ast.parse(source), comments


def _class_node(cls: type) -> ast.ClassDef | None:
    tree, _ = _module_source(cls.__module__)
    body: list[ast.stmt] = tree.body
    node = None
    for part in cls.__qualname__.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


@functools.cache
def field_comments(cls: type) -> dict[str, str]:
    """Field name -> its documentation comment, for the fields `cls` itself declares.

    The comment at the end of the field's line(s) wins, with the whole-line comments right
    below it that start in its column (its continuation); a field without one takes the block
    of whole-line comments directly above it, in the field's column (no blank line between)."""
    node = _class_node(cls)
    if node is None:
        return {}
    _, comments = _module_source(cls.__module__)
    found: dict[str, str] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        end = stmt.end_lineno or stmt.lineno
        trailing = [comments[n] for n in range(stmt.lineno, end + 1)
                    if n in comments and not comments[n][1]]
        line = end + 1
        while trailing and line in comments and comments[line][1:] == (True, trailing[-1][2]):
            trailing.append(comments[line])
            line += 1
        above: list[str] = []
        line = stmt.lineno - 1
        while line in comments and comments[line][1:] == (True, stmt.col_offset):
            above.insert(0, comments[line][0])
            line -= 1
        text = " ".join(c[0] for c in trailing) or " ".join(above)
        if text:
            found[stmt.target.id] = _PYTHON_WORDS.sub(lambda m: _PYTHON_WORDS_JSON[m[0]], text)
    return found


def class_doc(cls: type) -> str:
    """The class's own docstring (dataclasses invent one from the signature: not that)."""
    node = _class_node(cls)
    doc = ast.get_docstring(node) if node is not None else None
    return " ".join(doc.split()) if doc else ""


@functools.cache
def _hint(cls: type, name: str) -> Any:
    """The type hint of field `name` of `cls`, resolved alone: another field's hint may name
    a class imported only for the type checker (IoResult.recorder)."""
    for klass in cls.__mro__:
        annotations = vars(klass).get("__annotations__", {})
        if name in annotations:
            alone = type(klass.__name__, (), {"__module__": klass.__module__,
                                              "__annotations__": {name: annotations[name]}})
            return typing.get_type_hints(alone)[name]
    raise TypeError(f"{cls.__name__} has no field {name!r}")


def _field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()


def required_fields(cls: type) -> list[str]:
    """The fields every object of `cls` carries (OPTIONAL_FIELDS aside)."""
    return [f.name for f in dataclasses.fields(cls)
            if not f.metadata.get("json_skip") and (cls, f.name) not in OPTIONAL_FIELDS]


def _field_doc(cls: type, name: str) -> str:
    for klass in cls.__mro__:  # an inherited field is documented where it is declared
        if name in vars(klass).get("__annotations__", {}):
            return field_comments(klass).get(name, "")
    return ""


# ----------------------------------------------------------------------------- the builder
class SchemaBuilder:
    """Turns type hints into schemas, collecting every dataclass and enum into $defs."""

    def __init__(self) -> None:
        self.defs: dict[str, dict] = {}
        self._names: dict[type, str] = {}
        # (class, field) -> schema used instead of the one the hint gives
        self.overrides: dict[tuple[type, str], dict] = {}

    # --- $defs
    def ref(self, cls: type) -> dict:
        name = self._names.get(cls)
        if name is None:
            name = cls.__name__
            if name in self.defs:  # two modules use the same class name
                name = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"
            self._names[cls] = name
            self.defs[name] = {}  # reserved first: a dataclass may refer to itself
            self.defs[name] = self._enum(cls) if issubclass(cls, enum.Enum) else self._dataclass(cls)
        return {"$ref": f"#/$defs/{name}"}

    def _dataclass(self, cls: type) -> dict:
        if cls is Unknown:
            return {"type": "object", "description": class_doc(Unknown) +
                    " Any field may hold this object where its schema allows it.",
                    "properties": {"unknown": {"type": "string",
                                               "description": "why the value is unknown"}},
                    "required": ["unknown"], "additionalProperties": False}
        out: dict[str, Any] = {"type": "object"}
        if class_doc(cls):
            out["description"] = class_doc(cls)
        out.update(properties=self.fields(cls), required=required_fields(cls),
                   additionalProperties=False)
        return out

    def fields(self, cls: type, leave_out: tuple[str, ...] = ()) -> dict[str, dict]:
        """Field name -> schema, for the fields to_jsonable writes of dataclass `cls` (but for
        `leave_out`: what a to_json() drops or replaces)."""
        properties = {}
        for f in dataclasses.fields(cls):
            if not f.metadata.get("json_skip") and f.name not in leave_out:
                properties[f.name] = self.field(cls, f.name)
                if (cls, f.name) in OPTIONAL_FIELDS:
                    properties[f.name]["$comment"] = "only with --diagnose"
        return properties

    def field(self, cls: type, name: str) -> dict:
        """One field's schema (its override, else its type hint) with its comment."""
        override = self.overrides.get((cls, name))
        schema = dict(override) if override is not None else self.of(_hint(cls, name))
        doc = _field_doc(cls, name)
        return {"description": doc, **schema} if doc else schema

    def member(self, cls: type, name: str) -> dict:
        """A field of `cls` as field() gives it, or a property: its return hint and docstring
        (for the documents written by hand from a dataclass's fields and properties)."""
        if name in _field_names(cls):
            return self.field(cls, name)
        prop = inspect.getattr_static(cls, name)
        if not isinstance(prop, property) or prop.fget is None:
            raise TypeError(f"{cls.__name__}.{name} is neither a field nor a property")
        schema = self.of(typing.get_type_hints(prop.fget)["return"])
        doc = " ".join((prop.__doc__ or "").split())
        return {"description": doc, **schema} if doc else schema

    def _enum(self, cls: type[enum.Enum]) -> dict:
        values = [m.name.lower() if issubclass(cls, Level) else m.value for m in cls]
        schema: dict[str, Any] = {"enum": values}
        if class_doc(cls):
            schema["description"] = class_doc(cls)
        return schema

    # --- hints
    def of(self, hint: Any) -> dict:
        """The schema of the JSON that to_jsonable makes of a value of type `hint`."""
        if hint is Any or hint is object:
            return {}
        if hint is float:
            return {"type": list(_NUMBER)}
        if hint in _SIMPLE:
            return {"type": _SIMPLE[hint]}
        if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or issubclass(hint, enum.Enum)):
            return self.ref(hint)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (typing.Union, types.UnionType):
            return self._union(args)
        if origin is typing.Literal:
            return {"enum": [_json_value(a) for a in args]}
        if origin is tuple or hint is tuple:
            return self._tuple(args)
        if hint in _ARRAYS or origin in _ARRAYS:
            return {"type": "array", **({"items": self.of(args[0])} if args else {})}
        if hint in _OBJECTS or origin in _OBJECTS:
            return self._mapping(args)
        raise TypeError(f"no JSON schema for type hint {hint!r}")

    def _union(self, members: tuple) -> dict:
        # Unknown last: the value first, then how it may be missing.
        ordered = sorted(members, key=lambda m: m is Unknown)
        schemas = [self.of(m) for m in ordered]
        if any(s == {} for s in schemas):
            return {}
        types_only = [s["type"] for s in schemas if set(s) == {"type"}]
        if len(types_only) == len(schemas):
            flat: list[str] = []
            for t in types_only:
                flat.extend(t if isinstance(t, list) else [t])
            flat = list(dict.fromkeys(flat))
            return {"type": flat[0] if len(flat) == 1 else flat}
        return {"anyOf": schemas}

    def _tuple(self, args: tuple) -> dict:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", **({"items": self.of(args[0])} if args else {})}
        return {"type": "array", "prefixItems": [self.of(a) for a in args], "items": False,
                "minItems": len(args), "maxItems": len(args)}

    def _mapping(self, args: tuple) -> dict:
        schema: dict[str, Any] = {"type": "object"}
        if not args:
            return schema
        key, value = args
        if key is int:  # to_jsonable writes str(key)
            schema["propertyNames"] = {"pattern": "^-?[0-9]+$"}
        elif isinstance(key, type) and issubclass(key, enum.Enum):
            schema["propertyNames"] = {"enum": [str(_json_value(m)) for m in key]}
        schema["additionalProperties"] = self.of(value)
        return schema


def _json_value(value: Any) -> Any:
    if isinstance(value, Level):
        return value.name.lower()
    return value.value if isinstance(value, enum.Enum) else value


# ----------------------------------------------------------------------------- the report
def section_types() -> dict[str, Any]:
    """Section name -> the return type of its collector."""
    from inspector.report.sections import SECTIONS
    return {section.name: typing.get_type_hints(section.collect)["return"]
            for section in SECTIONS}


def drive_health_types() -> tuple[type, ...]:
    """The health dataclasses of inspector.discover.drives.collect: hioX (HioHealth), fioX and
    fctN (FioHealth, from fio_status.map_devices), nvmeXnY (NvmeHealth), sdX (SmartHealth)."""
    from inspector.discover.fio_status import FioHealth
    from inspector.discover.hio import HioHealth
    from inspector.discover.nvme_health import NvmeHealth
    from inspector.discover.smart import SmartHealth
    return HioHealth, FioHealth, NvmeHealth, SmartHealth


def _add_overrides(builder: SchemaBuilder) -> None:
    """Set before anything is built: a dataclass's $defs entry is made once, on first use."""
    from inspector.discover.storage import StorageSection
    kinds = drive_health_types()
    for cls in kinds:
        # each kind has a fixed `kind` default: it tells a reader which object this is
        default = next(f.default for f in dataclasses.fields(cls) if f.name == "kind")
        builder.overrides[(cls, "kind")] = {
            "description": f"drive kind: {default!r} marks a {cls.__name__} object", "const": default}
    builder.overrides[(StorageSection, "health")] = {
        "type": "object",
        "additionalProperties": {"anyOf": [builder.of(cls) for cls in kinds] + [builder.of(Unknown)]}}
    builder.overrides[(Report, "schema_version")] = {
        "description": "layout version of this document; changes when a field changes meaning",
        "const": SCHEMA_VERSION}
    # a collector that times out or crashes leaves Unknown in its section's place
    # (report/collect.py)
    sections = {name: builder.of(hint | Unknown) for name, hint in section_types().items()}
    builder.overrides[(Report, "sections")] = {
        "type": "object", "properties": sections, "additionalProperties": False,
        "$comment": "only the sections asked for with --section are present"}


def report_schema() -> dict:
    """The JSON Schema of `inspector report --json` (and of the report inside snapshots)."""
    builder = SchemaBuilder()
    _add_overrides(builder)
    builder.ref(Unknown)
    root = builder.ref(Report)
    return {"$schema": DIALECT, "$id": SCHEMA_ID,
            "title": "inspector report --json",
            "description": "The host report: identity, sections, findings. A value that could not "
                           "be read is {\"unknown\": \"<reason>\"} where its schema allows it.",
            **root, "$defs": dict(sorted(builder.defs.items()))}


# ----------------------------------------------------------------------------- the others
# The other stable documents, each built from the dataclasses it serialises. Their top-level
# objects open with `schema_version` and `kind` (inspector.documents.kinds).
def _stamp(kind: str, version: int) -> dict:
    return {"schema_version": {"description": "layout version of this kind of document",
                               "const": version},
            "kind": {"description": "which document this is", "const": kind}}


def _document(title: str, description: str, properties: dict, builder: SchemaBuilder,
              optional: tuple[str, ...] = ()) -> dict:
    return {"$schema": DIALECT, "title": title, "description": description, "type": "object",
            "properties": properties,
            "required": [name for name in properties if name not in optional],
            "additionalProperties": False, "$defs": dict(sorted(builder.defs.items()))}


def _object_of(builder: SchemaBuilder, cls: type, kind: str, version: int,
               extra: dict[str, dict] | None = None, description: str = "") -> dict:
    """The dataclass's object with schema_version and kind in front (one JSON line of top, a
    probe's document), and `extra`'s keys after its fields (a key it shares replaces the
    field's schema in place, as `{**to_jsonable(x), key: ...}` does)."""
    properties = {**_stamp(kind, version), **builder.fields(cls), **(extra or {})}
    required = ["schema_version", "kind", *required_fields(cls)]
    return {"type": "object", "description": description or class_doc(cls),
            "properties": properties,
            "required": required + [k for k in extra or {} if k not in required],
            "additionalProperties": False}


def _closed(properties: dict[str, dict], description: str = "") -> dict:
    """An object holding exactly these keys."""
    out: dict[str, Any] = {"type": "object"}
    if description:
        out["description"] = description
    out.update(properties=properties, required=list(properties), additionalProperties=False)
    return out


def _array(items: dict, description: str = "") -> dict:
    return {"description": description, "type": "array", "items": items} if description \
        else {"type": "array", "items": items}


def _defined(builder: SchemaBuilder, name: str, schema: dict) -> dict:
    """`schema` as the $defs entry `name` (a shape written by hand, used more than once)."""
    builder.defs[name] = schema
    return {"$ref": f"#/$defs/{name}"}


def _members(builder: SchemaBuilder, sources: tuple[type, ...], keys: str,
             aliases: dict[str, str] | None = None) -> dict[str, dict]:
    """JSON key -> the schema of the field or property it is written from: the key's name (or
    its alias), looked up in `sources` in order. For the documents a to_json() writes by hand
    from a dataclass: the keys are listed here, their types and descriptions come from it."""
    out = {}
    for key in keys.split():
        name = (aliases or {}).get(key, key)
        owner = next((cls for cls in sources if name in _field_names(cls) or hasattr(cls, name)),
                     None)
        if owner is None:
            raise TypeError(f"no field or property {name!r} in {[c.__name__ for c in sources]}")
        out[key] = builder.member(owner, name)
    return out


def snapshot_schema() -> dict:
    from inspector.compare.snapshot import SNAPSHOT_KIND, SNAPSHOT_VERSION
    report = report_schema()
    report_root = {k: v for k, v in report.items() if k not in ("$schema", "$id", "$defs")}
    return {"$schema": DIALECT, "$id": f"urn:inspector:snapshot:{SNAPSHOT_VERSION}",
            "title": "inspector snapshot file",
            "description": "The report and short probe runs at one moment, as `inspector "
                           "snapshot` writes them and `inspector diff` reads them.",
            "type": "object",
            "properties": {
                "kind": {"const": SNAPSHOT_KIND},
                "snapshot_version": {"description": "layout version of the snapshot file",
                                     "const": SNAPSHOT_VERSION},
                "schema_version": {"description": "the report's layout version",
                                   "const": SCHEMA_VERSION},
                "created_at": {"description": "when it was taken, unix time",
                               "type": "number"},
                "report": report_root,
                "probes": {"description": "one object per --probe run: kind, target, spec, "
                                          "summary or error (the probes' own layout)",
                           "type": "array", "items": {"type": "object"}}},
            "required": ["kind", "snapshot_version", "schema_version", "created_at", "report",
                         "probes"],
            "additionalProperties": False, "$defs": report["$defs"]}


def diff_schema() -> dict:
    from inspector.compare.diff import Change
    from inspector.documents.kinds import VERSIONS
    builder = SchemaBuilder()
    return _document(
        "inspector diff --json", "What changed between two snapshots; `regressions` counts "
        "the changes marked regression (the exit status is 1 when it is not 0).",
        {**_stamp("inspector-diff", VERSIONS["inspector-diff"]),
         "before": {"description": "the BEFORE argument", "type": "string"},
         "after": {"description": "the AFTER argument", "type": "string"},
         "regressions": {"type": "integer", "minimum": 0},
         "changes": {"type": "array", "items": builder.of(Change)}}, builder)


def top_schema() -> dict:
    """One line of `top --json`: rates over an interval, or (from a capture) one sample with
    the averages since boot."""
    from inspector.documents.kinds import VERSIONS
    from inspector.live.sampler import Counters, Rates
    builder = SchemaBuilder()
    rates = _object_of(builder, Rates, "inspector-top", VERSIONS["inspector-top"])
    boot = {"type": "object",
            "properties": {**_stamp("inspector-top-boot", VERSIONS["inspector-top-boot"]),
                           "source": {"type": "string"},
                           "samples": {"const": 1},
                           "note": {"type": "string"},
                           "snapshot": builder.of(Counters),
                           "since_boot": builder.of(Rates | Unknown)},
            "required": ["schema_version", "kind", "source", "samples", "note", "snapshot",
                         "since_boot"],
            "additionalProperties": False}
    return {"$schema": DIALECT, "title": "inspector top --json (one line)",
            "oneOf": [rates, boot], "$defs": dict(sorted(builder.defs.items()))}


def fleet_schema() -> dict:
    """`fleet DIR --json` (rows) or `fleet BEFORE_DIR AFTER_DIR --json` (per-host diffs)."""
    from inspector.compare.fleet import FLEET_SCHEMA_VERSION, HostDiff, HostRow
    builder = SchemaBuilder()
    rows = {"type": "object",
            "properties": {**_stamp("inspector-fleet", FLEET_SCHEMA_VERSION),
                           "directory": {"type": "string"},
                           "summary": {"description": "hosts per worst level, and unreadable "
                                                      "files", "type": "object",
                                       "additionalProperties": {"type": "integer"}},
                           "codes": {"description": "finding code -> hosts (shown) that "
                                                    "have it, most hosts first",
                                     "type": "object",
                                     "additionalProperties": {"type": "integer"}},
                           "hosts": {"type": "array", "items": builder.of(HostRow)}},
            "required": ["schema_version", "kind", "directory", "summary", "hosts"],
            "additionalProperties": False}
    builder.ref(HostDiff)
    diff_row = dict(builder.defs["HostDiff"])
    diff_row["properties"] = {**diff_row["properties"], "status": {
        "description": "as `inspector diff`: 0 no regressions, 1 regressions, 2 not compared",
        "enum": [0, 1, 2]}}
    diff_row["required"] = [*diff_row["required"], "status"]
    diffs = {"type": "object",
             "properties": {**_stamp("inspector-fleet-diff", FLEET_SCHEMA_VERSION),
                            "before": {"type": "string"}, "after": {"type": "string"},
                            "status": {"description": "the exit status", "enum": [0, 1, 2]},
                            "hosts": {"type": "array", "items": diff_row}},
             "required": ["schema_version", "kind", "before", "after", "status", "hosts"],
             "additionalProperties": False}
    return {"$schema": DIALECT, "title": "inspector fleet --json",
            "oneOf": [rows, diffs], "$defs": dict(sorted(builder.defs.items()))}


# ----------------------------------------------------------------------------- the probes
def _with_doc(schema: dict, description: str) -> dict:
    return {"description": description, **schema}


def probe_io_schema() -> dict:
    """`probe io --json` (IoResult.summary_json, the histogram, IoSample.to_json per interval)
    or, with --ramp, RampResult.to_json and every step's samples. Those methods write their
    keys by hand: the keys are listed here, their types and comments come from the fields and
    properties they are written from."""
    from inspector.documents.kinds import VERSIONS
    from inspector.probes.io.latency import (
        IoRampStep,
        IoResult,
        IoSample,
        IoWorkerResult,
        RampResult,
    )
    from inspector.probes.io.run import IoRun
    from inspector.probes.io.stats import BatchStats
    from inspector.probes.latency import LatencySummary
    builder = SchemaBuilder()
    latency = "min_ns avg_ns max_ns mdev_ns percentiles_ns"
    worker = _defined(builder, "IoWorkerResult.to_json", _closed(_members(
        builder, (IoWorkerResult, LatencySummary),
        f"worker requests warmups busy_ns iops {latency} stuck",
        {"worker": "index", "iops": "iops_mean"}), class_doc(IoWorkerResult)))
    summary = _defined(builder, "IoResult.summary_json", _closed({
        **_members(builder, (IoResult, LatencySummary),
                   "path description mode request_size jobs direct requests warmups "
                   "total_requests reads writes busy_ns wall_ns iops iops_wall bytes_per_s "
                   f"wall_bytes_per_s {latency} error interrupted loop", {"iops": "iops_mean"}),
        "workers": _array(worker, "each worker's share (the summary is their merge)")},
        "the run's statistics: ioping's, plus percentiles"))
    sample = _defined(builder, "IoSample.to_json", _closed(     # its stats inline
        {**builder.fields(IoSample, leave_out=("stats",)), **builder.fields(BatchStats)},
        class_doc(IoSample)))
    samples = _array(sample, "one per interval (4 per second), in order")
    histogram = typing.get_type_hints(IoResult.histogram)["return"]
    single = _closed({**_stamp("inspector-probe-io", VERSIONS["inspector-probe-io"]),
                      "summary": summary, "notes": builder.member(IoRun, "notes"),
                      "histogram": _with_doc(builder.of(histogram),
                                             "the latency histogram: (upper bound ns, requests)"),
                      "samples": samples})
    step_fields = builder.fields(IoRampStep, leave_out=("result",))   # its summary, on steps
    step = _defined(builder, "IoRampStep.to_json", _closed(step_fields, "one step of the ramp"))
    for name in ("knee", "max_iops", "min_latency"):
        builder.overrides[(RampResult, name)] = {"anyOf": [step, {"type": "null"}]}
    builder.overrides[(RampResult, "steps")] = _array(_closed(
        {**step_fields, "summary": summary}, "one step of the ramp, with its run's statistics"))
    ramp = _closed({**_stamp("inspector-probe-io-ramp", VERSIONS["inspector-probe-io-ramp"]),
                    "ramp": _closed(builder.fields(RampResult),
                                    "1, 2, 4 ... workers for -w each: IOPS, p99, the knee"),
                    "samples": _array(sample, "every step's intervals, step by step")})
    return {"$schema": DIALECT, "title": "inspector probe io --json",
            "oneOf": [single, ramp], "$defs": dict(sorted(builder.defs.items()))}


def probe_memcached_schema() -> dict:
    """`probe memcached --json` (the load's summary, its intervals in place of their count)
    or, with --ramp, the ramp's summary."""
    from inspector.documents.kinds import VERSIONS
    from inspector.probes.base import McInterval, McTest
    from inspector.probes.memcached.engine import ERROR_LABELS
    from inspector.probes.memcached.probe import ProbeSummary
    from inspector.probes.memcached.ramp import McRampStep, RampSummary
    builder = SchemaBuilder()
    # error kinds are stable ids (mc_engine.ERROR_LABELS); operations are named as the tests
    by_error = {"propertyNames": {"enum": list(ERROR_LABELS)}}
    by_op = {"propertyNames": {"enum": [McTest.SET.value, McTest.GET.value]}}
    keyed: list[tuple[type, str, dict]] = [
        (ProbeSummary, "errors", by_error), (ProbeSummary, "error_details", by_error),
        (McRampStep, "errors", by_error), (McRampStep, "error_details", by_error),
        (McInterval, "errors", by_error), (ProbeSummary, "ops", by_op),
        (McInterval, "ops", by_op), (McInterval, "latency_ns", by_op)]
    for owner, name, vocabulary in keyed:
        builder.overrides[(owner, name)] = {**builder.of(_hint(owner, name)), **vocabulary}
    for summary in (ProbeSummary, RampSummary):
        builder.overrides[(summary, "target_error")] = {"enum": [*ERROR_LABELS, None]}
    samples = _array(builder.of(McInterval), "the load's intervals (4 per second)")
    load = _object_of(builder, ProbeSummary, "inspector-probe-memcached",
                      VERSIONS["inspector-probe-memcached"], {"samples": samples},
                      "the load: per operation, errors by kind, the server's counters")
    ramp = _object_of(builder, RampSummary, "inspector-probe-memcached-ramp",
                      VERSIONS["inspector-probe-memcached-ramp"], description="the "
                      "connection ramp: each step, and where it degrades")
    return {"$schema": DIALECT, "title": "inspector probe memcached --json",
            "oneOf": [load, ramp], "$defs": dict(sorted(builder.defs.items()))}


def probe_dns_schema() -> dict:
    """`probe dns --json`: the probe's result, its findings (health/dns) and notes."""
    from inspector.documents.kinds import VERSIONS
    from inspector.model import Finding
    from inspector.probes.dns.failover import DnsProbeResult, Measured
    from inspector.probes.dns.predict import FAMILIES, Prediction, StartOutcome
    from inspector.probes.dns.query import KINDS, ServerResult
    builder = SchemaBuilder()
    kind = {"enum": list(KINDS)}
    families = _array({"enum": list(FAMILIES.values())})
    builder.overrides.update({
        (ServerResult, "kind"): kind,
        (DnsProbeResult, "history"): {"type": "object", "additionalProperties": _array(kind)},
        (Prediction, "families"): families, (Prediction, "asked"): families,
        (StartOutcome, "families"): families, (Measured, "families"): families})
    doc = _object_of(builder, DnsProbeResult, "inspector-probe-dns",
                     VERSIONS["inspector-probe-dns"], {
                         "findings": _array(builder.of(Finding), "what the servers' behaviour "
                                                                 "means (health/dns rules)"),
                         "notes": _array({"type": "string"}, "about the configuration read")},
                     "each nameserver as glibc queries it, the lookup time predicted from "
                     "that, and what if each server were refused or blackholed")
    return {"$schema": DIALECT, "title": "inspector probe dns --json", **doc,
            "$defs": dict(sorted(builder.defs.items()))}


# ----------------------------------------------------------------------------- history
# `history --by`'s choices (commands/history.py; a unit test keeps them the same)
HISTORY_GROUPINGS = ("hour", "day")


def history_schema() -> dict:
    """`history --json` (probe runs per target), `--checks --json` (the recorder's check
    results) or `--samples --json` (the recorded live samples), each per hour of day or day."""
    from inspector.documents.kinds import VERSIONS
    from inspector.record.history import CHECK_LEVELS, Bucket, CheckBucket
    from inspector.record.sample_history import SampleTables
    builder = SchemaBuilder()
    by = {"description": "hour of day or calendar day, in local time",
          "enum": list(HISTORY_GROUPINGS)}
    basis = {"description": "the clock the rows are in", "type": "string"}
    offsets = _array({"type": "integer"}, "the UTC offsets (s) the rows were recorded at")
    builder.overrides[(CheckBucket, "worst")] = _closed(
        {level: {"type": "integer", "minimum": 0} for level in CHECK_LEVELS})
    builder.overrides[(CheckBucket, "findings")] = _array(_closed(
        {"code": {"type": "string"}, "samples": {"type": "integer", "minimum": 1}}))
    builder.overrides[(SampleTables, "by")] = by

    def stamped(kind: str, properties: dict) -> dict:
        return _closed({**_stamp(kind, VERSIONS[kind]), **properties})
    runs = stamped("inspector-history", {
        "by": by, "time_basis": basis,
        "series": {"description": "KIND:TARGET -> its rows", "type": "object",
                   "additionalProperties": _array(builder.of(Bucket))},
        "utc_offsets_s": {"description": "KIND:TARGET -> the UTC offsets (s) its runs were "
                                         "recorded at", "type": "object",
                          "additionalProperties": {"type": "array",
                                                   "items": {"type": "integer"}}}})
    checks = stamped("inspector-history-checks", {
        "by": by, "time_basis": basis, "checks": _array(builder.of(CheckBucket)),
        "utc_offsets_s": offsets})
    samples = stamped("inspector-history-samples", {
        **_members(builder, (SampleTables,), "by"), "time_basis": basis,
        **_members(builder, (SampleTables,), "cpu disks utc_offsets_s",
                   {"utc_offsets_s": "offsets"})})
    return {"$schema": DIALECT, "title": "inspector history --json",
            "oneOf": [runs, checks, samples], "$defs": dict(sorted(builder.defs.items()))}


# command's document -> its schema (`--schema` of that command). Every --json document has one
# (`export --json` prints the report); the probes' are written from their typed results
# (probes/*), history's from its buckets (inspector.record.history, inspector.record.sample_history).
DOCUMENTS = {"report": report_schema, "snapshot": snapshot_schema, "diff": diff_schema,
             "top": top_schema, "fleet": fleet_schema, "probe io": probe_io_schema,
             "probe memcached": probe_memcached_schema, "probe dns": probe_dns_schema,
             "history": history_schema}


def document_schema(name: str) -> dict:
    return DOCUMENTS[name]()
