package main

import (
	"math"
	"strings"
	"testing"
)

// crdLiteral writes the value the CRD environment makes of the data under its schema.
func TestCRDLiteralIsTheValueTheSchemaMakes(t *testing.T) {
	integer := &crdSchema{Type: "integer"}
	number := &crdSchema{Type: "number"}
	str := &crdSchema{Type: "string"}
	for _, c := range []struct {
		name   string
		value  any
		schema *crdSchema
		want   string
	}{
		{"int64", int64(9223372036854775807), integer, "9223372036854775807"},
		{"int32", int32(-5), integer, "-5"},
		{"a number holding an int", int64(10), number, "10.0"},
		{"the largest double", 1.7976931348623157e308, number, "1.7976931348623157e+308"},
		{"a float32", float32(3.4028234663852886e38), number, "3.4028234663852886e+38"},
		{"a fraction", 10.49, number, "10.49"},
		{"negative zero", math.Copysign(0, -1), number, "-0.0"},
		{"a string with a newline", "l1\nl2", str, `"l1\nl2"`},
		{"bytes", "QUI=", &crdSchema{Type: "string", Format: "byte"}, `b"\x41\x42"`},
		{"a duration", "1h2m3s4ms", &crdSchema{Type: "string", Format: "duration"}, `duration("1h2m3.004s")`},
		{"a date", "1997-07-16", &crdSchema{Type: "string", Format: "date"}, `timestamp("1997-07-16T00:00:00Z")`},
		{"a date-time", "2011-08-18T19:03:37.010000000+01:00", &crdSchema{Type: "string", Format: "date-time"},
			`timestamp("2011-08-18T19:03:37.010000000+01:00")`},
		{"an unknown format is a string", "a@b", &crdSchema{Type: "string", Format: "email"}, `"a@b"`},
		{"int-or-string", "50%", &crdSchema{IntOrString: true}, `dyn("50%")`},
		{"an atomic list", []any{1, 2}, &crdSchema{Type: "array", Items: integer}, "[1, 2]"},
		{"an object of one type", map[string]any{"b": 1, "a": 2},
			&crdSchema{Type: "object", Properties: map[string]*crdSchema{"a": integer, "b": integer}}, `{"a": 2, "b": 1}`},
		{"an object of two types", map[string]any{"i": 1, "s": "x"},
			&crdSchema{Type: "object", Properties: map[string]*crdSchema{"i": integer, "s": str}}, `{"i": dyn(1), "s": dyn("x")}`},
		{"escaped field names", map[string]any{"dash-dash": 1, "if": 2},
			&crdSchema{Type: "object", Properties: map[string]*crdSchema{"dash-dash": integer, "if": integer}},
			`{"dash__dash__dash": 1, "__if__": 2}`},
		{"an undeclared field is not in the value", map[string]any{"x": 1, "a": 2},
			&crdSchema{Type: "object", Properties: map[string]*crdSchema{"a": integer}}, `{"a": 2}`},
		{"a map keeps its keys", map[string]any{"dash-dash": 1},
			&crdSchema{Type: "object", AdditionalProperties: integer}, `{"dash-dash": 1}`},
		{"null where nullable", nil, &crdSchema{Type: "string", Nullable: true}, "null"},
	} {
		got, err := crdLiteral(c.value, c.schema)
		if err != nil || got != c.want {
			t.Errorf("%s: %q (%v), want %q", c.name, got, err, c.want)
		}
	}
}

// Data with no exact literal is not bound.
func TestCRDLiteralRefusesWhatNoLiteralIs(t *testing.T) {
	for _, c := range []struct {
		name   string
		value  any
		schema *crdSchema
		why    string
	}{
		{"a set list", []any{"a"}, &crdSchema{Type: "array", ListType: "set", Items: &crdSchema{Type: "string"}}, "list-type"},
		{"a map list", []any{}, &crdSchema{Type: "array", ListType: "map", Items: &crdSchema{Type: "object"}}, "list-type"},
		{"unknown fields", map[string]any{}, &crdSchema{Type: "object", Unhandled: true}, "unknown fields"},
		{"null, not nullable", nil, &crdSchema{Type: "string"}, "not nullable"},
		{"an object with no schema for its fields", map[string]any{"x": 1}, &crdSchema{Type: "object"}, "neither properties"},
		{"a double that is not a number", 1.5, &crdSchema{Type: "integer"}, "not of the schema's type"},
		{"a duration strfmt reads but Go does not", "1d", &crdSchema{Type: "string", Format: "duration"}, "no exact literal"},
		{"bad base64", "%%", &crdSchema{Type: "string", Format: "byte"}, "no exact literal"},
	} {
		got, err := crdLiteral(c.value, c.schema)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %q (%v), want a refusal with %q", c.name, got, err, c.why)
		}
	}
}

// The tables' self is bound from the case's own obj, and only exact bindings are asked: each
// reproduces the table's answer in upstream's DRA environment (the guard), and a rule that
// reads neither self nor oldSelf is asked as it is.
func TestTheCRDTablesBindSelfFromTheirObjects(t *testing.T) {
	reports, err := extractUpstreamTests(testModuleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var validation *sourceReport
	for i := range reports {
		if strings.HasSuffix(reports[i].Source.File, "schema/cel/validation_test.go") {
			validation = &reports[i]
		}
	}
	if validation == nil {
		t.Fatal("validation_test.go was not read")
	}
	env := upstreamCompile("true", false).Environment
	found := map[string]string{}
	for _, c := range validation.Cases {
		if c.Expression == "self.val1 == self.val6" || c.Expression == "double(5) < 10.0" ||
			c.Expression == "self.val1.getHours() == 1" {
			if _, seen := found[c.Expression]; seen {
				continue // the first case that has it: "integers"
			}
			bound, why := bindCRD(env, c)
			found[c.Expression] = bound + why
		}
	}
	want := map[string]string{
		"self.val1 == self.val6": "cel.bind(self, {\"val1\": 9223372036854775807, \"val2\": 9223372036854775807, " +
			"\"val3\": 2147483647, \"val4\": 2147483647, \"val5\": 9223372036854775807, \"val6\": 9223372036854775807}, " +
			"self.val1 == self.val6\n)",
		"double(5) < 10.0": "double(5) < 10.0",
	}
	for expression, text := range want {
		if found[expression] != text {
			t.Errorf("%s: asked as %q, want %q", expression, found[expression], text)
		}
	}
	// A binding that does not give the table's answer upstream is not asked.
	guarded := upstreamCase{Expression: "self == 2", expect: "true", crd: &crdCase{self: "1"}}
	if bound, why := bindCRD(env, guarded); bound != "" || !strings.Contains(why, "table's answer") {
		t.Errorf("an inexact binding was asked: %q (%s)", bound, why)
	}
}
