"""The Python types against the one description of the outcome,
``schema/outcome.schema.json``: the same fields in the same order, None
exactly where the schema allows null, and real outcomes that validate."""

import json
import typing
from dataclasses import fields
from pathlib import Path

import jsonschema
import pytest

import spillway
from spillway import Outcome, StoredObject

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schema" / "outcome.schema.json").read_text())


def nullable(prop: dict) -> bool:
    return any(alt.get("type") == "null" for alt in prop.get("oneOf", []))


def optional(hint: object) -> bool:
    return type(None) in typing.get_args(hint)


@pytest.mark.parametrize(
    "cls, props",
    [
        (Outcome, SCHEMA["properties"]),
        (StoredObject, SCHEMA["$defs"]["stored_object"]["properties"]),
    ],
)
def test_the_dataclass_has_the_schemas_fields_in_order_and_nullability(cls, props):
    assert [f.name for f in fields(cls)] == list(props)
    hints = typing.get_type_hints(cls)
    for name, prop in props.items():
        assert optional(hints[name]) == nullable(prop), name


def test_real_outcomes_validate(tmp_path):
    spiller = spillway.Spiller(str(tmp_path / "store"), max_inline_bytes="2KiB", max_inline_tokens=600)
    log = "".join(f"step {i}\n" if i != 500 else "error: it broke\n" for i in range(1, 2001))
    doc = json.dumps({"rows": [{"n": i} for i in range(2000)]})
    for outcome in [
        spiller.apply("fits\n"),
        spiller.apply(log),
        spiller.apply(log),
        spiller.apply(b"\x00" * 5000),
        spillway.Spiller(str(tmp_path / "store"), max_inline_bytes="2KiB", format="json").apply(doc),
    ]:
        jsonschema.validate(outcome.to_dict(), SCHEMA)


def test_the_validation_can_fail(tmp_path):
    d = spillway.Spiller(str(tmp_path / "store")).apply("x\n" * 30000).to_dict()
    d["format"] = "yaml"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(d, SCHEMA)
