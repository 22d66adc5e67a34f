#!/usr/bin/env python3
"""Checks that every JSON Schema we publish (schema/*.json) is a valid draft
2020-12 schema and that the examples validate against theirs."""
import json
import pathlib
import sys

from jsonschema import Draft202012Validator

root = pathlib.Path(sys.argv[1])
schemas = {p.name: json.loads(p.read_text()) for p in sorted((root / "schema").glob("*.json"))}
failures = 0
for name, schema in schemas.items():
    try:
        Draft202012Validator.check_schema(schema)
        print(f"ok      schema/{name}")
    except Exception as e:  # noqa: BLE001 - report every broken schema
        failures += 1
        print(f"FAILED  schema/{name}: {e}")

pairs = [("capabilities.schema.json", "examples/workers"), ("queue-config.schema.json", "examples/queues")]
for schema_name, folder in pairs:
    if schema_name not in schemas:
        continue
    validator = Draft202012Validator(schemas[schema_name])
    for example in sorted((root / folder).glob("*.json")):
        errors = sorted(validator.iter_errors(json.loads(example.read_text())), key=str)
        if errors:
            failures += 1
            print(f"FAILED  {folder}/{example.name}: {errors[0].message} at {list(errors[0].path)}")
        else:
            print(f"ok      {folder}/{example.name} against {schema_name}")

# A schema that accepts everything would make this test pointless: a broken
# capabilities body must be refused.
if "capabilities.schema.json" in schemas:
    bad = {"gpu": {"count": "eight"}}
    if Draft202012Validator(schemas["capabilities.schema.json"]).is_valid(bad):
        failures += 1
        print("FAILED  capabilities.schema.json accepts gpu.count = \"eight\"")

total = len(schemas)
print(f"{total} schemas checked; {failures} failed")
sys.exit(1 if failures else 0)
