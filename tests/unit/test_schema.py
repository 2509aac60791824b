"""The JSON Schema of `report --json`: generated from the dataclasses, it must accept every real
report (live and each fixture root), reject wrong ones, and carry the field comments. The
generator's parts the other documents' schemas use, and which command prints which
(their real documents are validated in tests/cli/test_json_documents.py)."""
from __future__ import annotations

import argparse
import enum
import json
import typing
from dataclasses import dataclass, field

import jsonschema  # type: ignore[import-untyped]  # no stubs in the test deps
import pytest
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]  # no stubs in the test deps

from conftest import ROOTS, run_cli
from inspector.documents.schema import (
    DOCUMENTS,
    HISTORY_GROUPINGS,
    SchemaBuilder,
    drive_health_types,
    field_comments,
    report_schema,
)
from inspector.model import Finding, HostIdentity, Level, Report, Unknown, to_jsonable

FIXTURE_ROOTS = sorted(p.name for p in ROOTS.iterdir() if p.is_dir())

# Dataclasses whose leaf fields are mostly (< 80 %) without a `# comment` today. Their owners
# should document them; then drop the name here (the coverage test fails until you do, so the
# list can only shrink).
UNDOCUMENTED: set[str] = set()


@pytest.fixture(scope="module")
def schema() -> dict:
    return report_schema()


@pytest.fixture(scope="module")
def validator(schema) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def fixture_docs() -> dict[str, dict]:
    docs = {}
    for name in FIXTURE_ROOTS:
        result = run_cli("report", "--json", "--root", str(ROOTS / name))
        assert result.status == 0, (name, result.err)
        docs[name] = result.json()
    return docs


def assert_valid(validator, doc: dict, label: str) -> None:
    error = best_match(validator.iter_errors(doc))
    if error is not None:
        where = "/".join(map(str, error.absolute_path))
        pytest.fail(f"{label}: /{where}: {error.message[:300]}")


# ----------------------------------------------------------------------------- real documents
def test_live_report_matches_schema(validator):
    for args in (("report", "--json"), ("report", "--json", "--diagnose")):
        result = run_cli(*args)
        assert result.status == 0, result.err
        doc = result.json()
        assert set(doc["sections"]) == {"storage", "virt", "net", "dns", "cpu"}
        assert_valid(validator, doc, " ".join(args))


@pytest.mark.parametrize("name", FIXTURE_ROOTS)
def test_fixture_report_matches_schema(validator, fixture_docs, name):
    assert_valid(validator, fixture_docs[name], name)


def test_fixtures_exercise_every_drive_health_kind(fixture_docs):
    """Otherwise the fixture validation above would not cover the health union."""
    kinds = {h.get("kind", "unknown") for doc in fixture_docs.values()
             for h in doc["sections"]["storage"]["health"].values()}
    assert kinds >= {"hio", "fio", "nvme", "smart", "unknown"}


def test_unknown_section_and_findings_match_schema(validator):
    report = Report(host=HostIdentity(hostname=Unknown("no uname"), kernel="6.1", machine="x86_64",
                                      source="live", collected_at=1.0),
                    sections={"cpu": Unknown("timed out after 15 s")},
                    findings=[Finding(Level.CRIT, "md0", "degraded", ["[U_]"], code="md.degraded")],
                    timings={"cpu": 15.0, "total": float("inf")})  # inf is written as null
    assert_valid(validator, to_jsonable(report), "synthetic report")


# ----------------------------------------------------------------------------- it can say no
def test_schema_rejects_wrong_documents(validator, fixture_docs):
    good = fixture_docs["flash-mixed"]
    assert validator.is_valid(good)
    fio_name = next(n for n, h in good["sections"]["storage"]["health"].items()
                    if h.get("kind") == "fio")

    def broken(change) -> dict:
        doc = json.loads(json.dumps(good))
        change(doc)
        return doc

    cases = {
        "string for an int": lambda d: d["sections"]["cpu"].__setitem__("cores", "four"),
        "field not in the dataclass": lambda d: d["host"].__setitem__("uptime", 3),
        "required field missing": lambda d: d["sections"]["net"].pop("sysctls"),
        "unknown without reason": lambda d: d["sections"]["cpu"].__setitem__("model", {"unknown": 1}),
        "level not a Level": lambda d: d["findings"].append(
            {**to_jsonable(Finding(Level.OK, "x", "y")), "level": "fatal"}),
        "fio health claiming nvme": lambda d: d["sections"]["storage"]["health"][fio_name]
            .__setitem__("kind", "nvme"),
        "section nobody collects": lambda d: d["sections"].__setitem__("gpu", {}),
        "wrong schema version": lambda d: d.__setitem__("schema_version", 99),
    }
    accepted = [label for label, change in cases.items() if validator.is_valid(broken(change))]
    assert accepted == []


# ----------------------------------------------------------------------------- the generator
class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Inner:
    """An inner thing."""
    size: int  # bytes


@dataclass
class Sample:
    """Every kind of hint the generator maps."""
    name: str                                  # what it is called
    mode: typing.Literal["a", "b"]
    ratio: float | Unknown                     # fraction; None-free
    # the comment above documents
    # the field below it
    inner: Inner | None = None
    colour: Colour = Colour.RED
    level: Level = Level.OK
    pair: tuple[int, str] = (0, "")
    many: tuple[int, ...] = ()
    by_id: dict[int, Inner] = field(default_factory=dict)
    tags: set[str] = field(default_factory=set)
    anything: typing.Any = None
    maybe: list[int] | None = None


def test_builder_maps_each_hint_kind():
    builder = SchemaBuilder()
    assert builder.of(Sample) == {"$ref": "#/$defs/Sample"}
    sample = builder.defs["Sample"]
    props = sample["properties"]
    assert sample["description"] == "Every kind of hint the generator maps."
    assert sample["required"] == list(props) and sample["additionalProperties"] is False
    assert props["name"] == {"description": "what it is called", "type": "string"}
    assert props["mode"] == {"enum": ["a", "b"]}
    assert props["ratio"] == {"description": "fraction; null-free",
                              "anyOf": [{"type": ["number", "null"]}, {"$ref": "#/$defs/Unknown"}]}
    assert props["inner"] == {"description": "the comment above documents the field below it",
                              "anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}
    assert builder.defs["Inner"]["properties"]["size"] == {"description": "bytes", "type": "integer"}
    assert builder.defs["Colour"] == {"enum": ["red", "blue"]}
    assert builder.defs["Level"]["enum"] == ["ok", "warn", "crit", "unknown"]
    assert props["pair"] == {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                             "items": False, "minItems": 2, "maxItems": 2}
    assert props["many"] == {"type": "array", "items": {"type": "integer"}}
    assert props["by_id"] == {"type": "object", "propertyNames": {"pattern": "^-?[0-9]+$"},
                              "additionalProperties": {"$ref": "#/$defs/Inner"}}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["anything"] == {}
    assert props["maybe"] == {"anyOf": [{"type": "array", "items": {"type": "integer"}},
                                        {"type": "null"}]}
    validator = jsonschema.Draft202012Validator({**builder.of(Sample), "$defs": builder.defs})
    doc = to_jsonable(Sample("s", "a", Unknown("nope"), Inner(4), by_id={7: Inner(1)}, tags={"x"}))
    assert validator.is_valid(doc)
    assert not validator.is_valid({**doc, "by_id": {"seven": {"size": 1}}})


def test_builder_refuses_a_hint_it_cannot_map():
    with pytest.raises(TypeError, match="no JSON schema"):
        SchemaBuilder().of(typing.Callable[[], int])


def test_drive_health_union_covers_what_the_producers_return():
    """drives.collect returns what these build; a new health class must join the union."""
    from inspector.discover import fio_status, hio, nvme_health, smart

    def classes(hint) -> set:
        args = typing.get_args(hint)
        if not args:
            return {hint}
        return set().union(*(classes(a) for a in args)) - {str}

    produced = set()
    for producer in (hio.collect, nvme_health.collect, smart.collect, fio_status.map_devices):
        produced |= classes(typing.get_type_hints(producer)["return"])
    assert produced - {Unknown} == set(drive_health_types())


if typing.TYPE_CHECKING:
    from decimal import Decimal


@dataclass
class HalfTyped:
    """A field's hint names a class only the type checker imports (as IoResult.recorder)."""
    name: str
    exact: Decimal | None = None

    @property
    def shout(self) -> str:
        """The name, loud."""
        return self.name.upper()

    def whisper(self) -> str:
        return self.name.lower()


def test_builder_reads_a_field_hint_alone_and_a_property():
    with pytest.raises(NameError):
        typing.get_type_hints(HalfTyped)
    builder = SchemaBuilder()
    assert builder.field(HalfTyped, "name") == {"type": "string"}
    assert builder.member(HalfTyped, "name") == {"type": "string"}
    assert builder.member(HalfTyped, "shout") == {"description": "The name, loud.",
                                                   "type": "string"}
    with pytest.raises(TypeError, match="neither a field nor a property"):
        builder.member(HalfTyped, "whisper")
    assert builder.fields(HalfTyped, leave_out=("exact",)) == {"name": {"type": "string"}}


@dataclass
class Continued:
    reason: str = ""            # a trailing comment that runs on (resolve,
                                # connect_refused ...) to the line below
    after: int = 0
    # a block above documents the field below it
    below: int = 0


def test_field_comments_follow_a_trailing_comment_onto_its_next_lines():
    assert field_comments(Continued) == {
        "reason": "a trailing comment that runs on (resolve, connect_refused ...) to the line "
                  "below",
        "below": "a block above documents the field below it"}


# ----------------------------------------------------------------------------- the CLI
def _subcommand(parser: argparse.ArgumentParser, *names: str) -> argparse.ArgumentParser:
    for name in names:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def test_every_stamped_document_has_a_schema():
    """Each kind of inspector.documents.kinds (and each document's version) is in a --schema, and
    every document with a --schema is behind a command's --schema option."""
    from inspector.cli import build_parser
    from inspector.commands.common import _PrintSchema
    from inspector.documents.kinds import VERSIONS

    def stamps(node) -> set[tuple]:
        if isinstance(node, list):
            return set().union(*(stamps(v) for v in node))
        if not isinstance(node, dict):
            return set()
        found = set().union(*(stamps(v) for v in node.values()))
        props = node.get("properties", {})
        if "const" in props.get("kind", {}) and "schema_version" in props:
            found.add((props["kind"]["const"], props["schema_version"]["const"]))
        return found

    stamped = set().union(*(stamps(build()) for build in DOCUMENTS.values()))
    assert set(VERSIONS.items()) <= stamped
    parser = build_parser()
    for name in DOCUMENTS:
        schema_option = next(a for a in _subcommand(parser, *name.split())._actions
                             if "--schema" in a.option_strings)
        assert isinstance(schema_option, _PrintSchema) and schema_option.document == name


def test_history_schema_groups_as_the_cli_does():
    from inspector.cli import build_parser
    by = next(a for a in _subcommand(build_parser(), "history")._actions if a.dest == "by")
    assert by.choices is not None and tuple(by.choices) == HISTORY_GROUPINGS


def test_report_schema_flag_prints_the_schema():
    result = run_cli("report", "--schema")
    assert result.status == 0, result.err
    printed = result.json()
    assert printed == report_schema()
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    storage = printed["$defs"]["StorageSection"]["properties"]
    assert storage["roots"]["description"] == "tree roots: devices without slaves"


# ----------------------------------------------------------------------------- documentation
def _refs(node) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if "$ref" in node else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def leaf_coverage(schema: dict) -> dict[str, tuple[int, int]]:
    """Per object in $defs: (documented, all) over its leaf properties, i.e. those that hold no
    other dataclass (a nested object is documented by its own fields)."""
    defs = schema["$defs"]
    objects = {n for n, d in defs.items() if d.get("type") == "object" and n != "Unknown"}
    coverage = {}
    for name in objects:
        leaves = [p for p in defs[name]["properties"].values() if not _refs(p) & objects]
        coverage[name] = (sum(1 for p in leaves if p.get("description", "").strip()), len(leaves))
    return coverage


def test_field_comments_document_the_schema(schema):
    coverage = leaf_coverage(schema)
    below = {n for n, (doc, total) in coverage.items() if total and doc < 0.8 * total}
    assert below - UNDOCUMENTED == set(), "document these fields with `# comments`"
    assert UNDOCUMENTED - below == set(), "now documented: remove from UNDOCUMENTED"
    rest = [c for n, c in coverage.items() if n not in UNDOCUMENTED]
    documented, total = sum(d for d, _ in rest), sum(t for _, t in rest)
    assert total >= 40 and documented >= 0.8 * total
