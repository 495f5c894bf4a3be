#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check JSON Lines against a JSON Schema (doc/*.schema.json).

usage: jsonschema-check.py SCHEMA FILE...

Every line of every FILE must be one JSON object the schema accepts.
Prints one line per bad record (file:line: what is wrong) and, last,
"types: t1 t2 ..." (the record types seen, sorted).  Exit status: 0 all
records valid, 1 otherwise, 2 usage or an unreadable schema.
Uses python3-jsonschema (Debian's package).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("jsonschema-check: python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = cls(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print(f"jsonschema-check: {argv[1]}: {e}", file=sys.stderr)
        return 2
    bad = 0
    types = set()
    for name in argv[2:]:
        with open(name) as f:
            for n, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    print(f"{name}:{n}: not JSON: {e}")
                    bad += 1
                    continue
                errors = sorted(validator.iter_errors(rec), key=lambda e: e.path)
                if errors:
                    bad += 1
                    why = "; ".join(f"{'/'.join(map(str, e.path)) or '(record)'}: {e.message}"
                                    for e in errors[:3])
                    print(f"{name}:{n}: {rec.get('type', '?') if isinstance(rec, dict) else '?'}: {why}"[:600])
                elif isinstance(rec, dict):
                    types.add(rec.get("type"))
    print("types: " + " ".join(sorted(t for t in types if isinstance(t, str))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
