// Writes the CEL conformance suite shipped by @bufbuild/cel-spec as one JSON file per test file
// (basic.json, string_ext.json, ...) into the folder given as the only argument. Run by
// fetch_cel_spec.sh from inside the npm cache folder, so the imports resolve there.
//
// Each file: {"name": "basic", "sections": [{"name": "self_eval_zeroish", "tests": [<test>]}]}
// where <test> is a cel.expr.conformance.test.SimpleTest in proto3 JSON form (int64 as strings,
// doubles as numbers or "NaN"/"Infinity"/"-Infinity", bytes as base64, Any with "@type").
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { SimpleTestSchema } from "@bufbuild/cel-spec/cel/expr/conformance/test/simple_pb.js";
import { getTestRegistry } from "@bufbuild/cel-spec/testdata/registry.js";
import { getConformanceSuite } from "@bufbuild/cel-spec/testdata/tests.js";

const out = process.argv[2];
if (!out) {
  console.error("usage: node export_cel_spec.mjs <output-dir>");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const registry = getTestRegistry();

// Sections may nest; their names are joined with "/" so that every test keeps its full path.
function collect(suite, prefix, sections) {
  if (suite.tests.length > 0) {
    sections.push({
      name: prefix,
      tests: suite.tests.map((t) => {
        const json = toJson(SimpleTestSchema, t.original, { registry });
        if (!json.name) json.name = t.name;
        return json;
      }),
    });
  }
  for (const s of suite.suites) collect(s, prefix ? `${prefix}/${s.name}` : s.name, sections);
}

const root = getConformanceSuite();
const index = [];
for (const file of root.suites) {
  const sections = [];
  collect({ tests: file.tests, suites: file.suites }, "", sections);
  const count = sections.reduce((n, s) => n + s.tests.length, 0);
  writeFileSync(join(out, `${file.name}.json`), JSON.stringify({ name: file.name, sections }, null, 1));
  index.push({ name: file.name, tests: count });
}
writeFileSync(join(out, "index.json"), JSON.stringify(index, null, 1));
console.error(`export_cel_spec: wrote ${index.length} test files to ${out}`);
