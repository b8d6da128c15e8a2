#!/usr/bin/python3
"""Validate CDI spec files against the official CDI JSON schema (draft-07).

Usage:
    validate_schema.py SCHEMA_DIR [SPEC.json ...]
    validate_schema.py --generate-with CDI_TEST_BINARY --out DIR SCHEMA_DIR [SPEC.json ...]

SCHEMA_DIR holds schema.json, defs.json and testdata/{good,bad} as copied from
cncf-tags/container-device-interface (see its README.txt).  Before checking any spec the script
checks itself: every testdata/good file must pass, every testdata/bad file must fail, and two
specs that are wrong only inside defs.json must fail (so the relative "defs.json#/..." $ref is
really followed, not silently ignored).

--generate-with runs the C++ test binary's spec writer (gtest filter CdiSchemaSpecs.*) with
NUMADRA_CDI_SPEC_OUT=DIR after emptying DIR, then validates every *.json below DIR.  The run
fails when no spec at all was checked.  Exit status: 0 all good, 1 a check failed.
"""

import argparse
import copy
import json
import os
import pathlib
import shutil
import subprocess
import sys


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def make_validator(schema_dir):
    try:
        import jsonschema
    except ImportError:
        fail("the Python module jsonschema is missing (Debian: apt-get install python3-jsonschema)")
    schema = load_json(schema_dir / "schema.json")
    defs = load_json(schema_dir / "defs.json")
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator.check_schema(defs)
    base = (schema_dir / "schema.json").resolve().as_uri()
    defs_uri = (schema_dir / "defs.json").resolve().as_uri()
    try:
        # jsonschema >= 4.18: a registry instead of the deprecated RefResolver.
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7
        registry = Registry().with_resources([
            (uri, Resource.from_contents(defs, default_specification=DRAFT7))
            for uri in ("defs.json", defs_uri)])
        schema = dict(schema, **{"$id": base})
        return jsonschema.Draft7Validator(schema, registry=registry)
    except ImportError:
        resolver = jsonschema.RefResolver(base_uri=base, referrer=schema,
                                          store={"defs.json": defs, defs_uri: defs})
        return jsonschema.Draft7Validator(schema, resolver=resolver)


def errors_of(validator, path):
    """The schema violations of one file; a file that is not JSON at all is one violation."""
    try:
        document = load_json(path)
    except (ValueError, UnicodeDecodeError) as e:
        return [f"not JSON: {e}"]
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
            for e in validator.iter_errors(document)]


def self_check(validator, schema_dir):
    good = sorted((schema_dir / "testdata" / "good").glob("*.json"))
    bad = sorted((schema_dir / "testdata" / "bad").glob("*.json"))
    if not good or not bad:
        fail(f"{schema_dir}/testdata must have good/*.json and bad/*.json files")
    for path in good:
        errors = errors_of(validator, path)
        if errors:
            fail(f"{path} is upstream's valid example but fails: {errors}")
    for path in bad:
        if not errors_of(validator, path):
            fail(f"{path} is upstream's invalid example but passes")
    # Errors that only the definitions in defs.json can find.
    example = load_json(good[0])
    no_path = copy.deepcopy(example)
    no_path["devices"][0]["containerEdits"] = {"deviceNodes": [{"type": "c"}]}
    bad_major = copy.deepcopy(example)
    bad_major["devices"][0]["containerEdits"] = {
        "deviceNodes": [{"path": "/dev/x", "major": "one"}]}
    for name, document in (("a deviceNode without path", no_path),
                           ("a string major", bad_major)):
        if not list(validator.iter_errors(document)):
            fail(f"{name} passes: the schema's defs.json references are not being resolved")
    print(f"schema self-check: {len(good)} good examples pass, {len(bad)} bad ones fail, "
          "defs.json references resolve")


def generate(binary, out):
    if not os.access(binary, os.X_OK):
        fail(f"{binary} is not an executable (build the cdi_test target first)")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    env = dict(os.environ, NUMADRA_CDI_SPEC_OUT=str(out))
    run = subprocess.run([str(binary), "--gtest_filter=CdiSchemaSpecs.*", "--gtest_brief=1"],
                         env=env, capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"{binary} (spec writer) exited with {run.returncode}:\n{run.stdout}{run.stderr}")
    specs = sorted(out.rglob("*.json"))
    if not specs:
        fail(f"{binary} wrote no spec into {out} (did the CdiSchemaSpecs tests run?)\n"
             f"{run.stdout}{run.stderr}")
    machines = sorted({p.parent.name for p in specs})
    print(f"spec writer: {len(specs)} spec files for {len(machines)} machines in {out}")
    return specs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("schema_dir", type=pathlib.Path)
    ap.add_argument("specs", nargs="*", type=pathlib.Path)
    ap.add_argument("--generate-with", type=pathlib.Path, metavar="BINARY")
    ap.add_argument("--out", type=pathlib.Path, metavar="DIR")
    args = ap.parse_args(argv)

    schema_dir = args.schema_dir
    if not (schema_dir / "schema.json").is_file() or not (schema_dir / "defs.json").is_file():
        fail(f"no CDI schema at {schema_dir} (schema.json and defs.json expected). The test "
             "reads the shared spec folder that sits beside the source tree (../shared/spec/"
             "cdi-schema relative to the checkout); it is required, not optional.")
    validator = make_validator(schema_dir)
    self_check(validator, schema_dir)

    specs = list(args.specs)
    if args.generate_with:
        if not args.out:
            fail("--generate-with needs --out DIR")
        specs += generate(args.generate_with, args.out)
    if not specs:
        fail("no spec files to validate")

    failures = 0
    for path in specs:
        errors = errors_of(validator, path)
        for error in errors:
            print(f"{path}: {error}", file=sys.stderr)
        failures += bool(errors)
    if failures:
        fail(f"{failures} of {len(specs)} spec files do not match the CDI schema")
    print(f"{len(specs)} spec files match the CDI schema")
    return 0


if __name__ == "__main__":
    sys.exit(main())
