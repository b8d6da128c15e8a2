package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain builds the JSON schema helper (schema-check/, a module of its own) once, so validate
// runs all its checks; the Go command fetches its modules only through the module proxy.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cdi-check-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	checker := filepath.Join(dir, schemaCheckerName)
	build := exec.Command("go", "build", "-mod=readonly", "-o", checker, ".")
	build.Dir = "schema-check"
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the schema helper in schema-check/:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	os.Setenv(schemaCheckerEnv, checker)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type outcome struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return outcome{code, stdout.String(), stderr.String()}
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
}

func fixtures(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures match testdata/%s (%v)", pattern, err)
	}
	return files
}

func TestUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, exitOK, "cdi-check validate [--expect-minimum-version]"},
		{[]string{"validate", "--help"}, exitOK, "cdi-check resolve --spec-dir DIR"},
		{nil, exitUsage, "Usage:"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"validate"}, exitUsage, "validate needs at least one SPEC_FILE"},
		{[]string{"validate", "--bogus", "x.json"}, exitUsage, `unknown option "--bogus"`},
		{[]string{"validate", "--no-schema", "--schema-checker", "x", "y.json"}, exitUsage, "exclude each other"},
		{[]string{"resolve", "numa.dra.dev/claim=x"}, exitUsage, "at least one --spec-dir"},
		{[]string{"resolve", "--spec-dir", "testdata/valid"}, exitUsage, "at least one CDI_ID"},
		{[]string{"resolve", "--spec-dir"}, exitUsage, "--spec-dir needs a value"},
		{[]string{"resolve", "--spec-dir", "testdata/no-such-folder", "a.com/b=c"}, exitUsage, "testdata/no-such-folder"},
		{[]string{"version", "extra"}, exitUsage, "version takes no arguments"},
	}
	for _, c := range cases {
		got := runCLI(t, c.args...)
		if got.code != c.code || !strings.Contains(got.stdout+got.stderr, c.want) {
			t.Errorf("cdi-check %q: want exit %d and %q in the output, got %v", c.args, c.code, c.want, got)
		}
	}
}

func TestVersionNamesTheLibrary(t *testing.T) {
	got := runCLI(t, "version")
	for _, want := range []string{
		"tags.cncf.io/container-device-interface v1.1.1",
		"tags.cncf.io/container-device-interface/specs-go v1.1.1 (CDI spec versions up to 1.1.0)",
		"github.com/opencontainers/runtime-spec v1.3.0",
		"JSON schema: tags.cncf.io/container-device-interface v0.8.1 (package schema, builtin schema)",
	} {
		if got.code != exitOK || !strings.Contains(got.stdout, want) {
			t.Errorf("want %q in the version text, got %v", want, got)
		}
	}
}

func TestValidSpecsPassEveryCheck(t *testing.T) {
	files := fixtures(t, "valid/*.json")
	got := runCLI(t, append([]string{"validate", "--expect-minimum-version"}, files...)...)
	if got.code != exitOK {
		t.Fatalf("valid specs refused: %v", got)
	}
	for _, f := range files {
		if !strings.Contains(got.stdout, "ok   "+f+" (") {
			t.Errorf("no ok line for %s: %v", f, got)
		}
	}
	for _, want := range []string{
		"claim_a1b2c3d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d.json (cdiVersion 0.3.0, minimum 0.3.0, kind numa.dra.dev/claim, 3 device(s))",
		"claim_1f00aa00-5e1f-4c2a-9d3b-00000000000a.json (cdiVersion 0.5.0, minimum 0.5.0, kind numa.dra.dev/claim, 3 device(s))",
		"_gpu.json (cdiVersion 0.5.0, minimum 0.5.0, kind numa.dra.dev/metadata, 1 device(s))",
		"3 file(s), 3 valid, 0 invalid",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("want %q in the output, got %v", want, got)
		}
	}
}

// Every invalid fixture is refused, by the check and with the reason named.
func TestInvalidSpecsAreRefusedWithTheReason(t *testing.T) {
	cases := map[string][]string{
		"kind-without-class.json": {`spec: kind "numa.dra.dev": invalid CDI Spec: invalid vendor. empty name`},
		"kind-bad-class.json":     {`spec: kind "numa.dra.dev/claim_": invalid CDI Spec: invalid class. "claim_", should end with a letter or digit`},
		"digit-name-at-0.3.0.json": {
			`spec: cdiVersion "0.3.0": invalid CDI Spec: the spec version must be at least v0.5.0`,
			`minimum: cdiVersion "0.3.0" is below 0.5.0, which this content needs`,
		},
		"host-path-at-0.3.0.json": {`spec: cdiVersion "0.3.0": invalid CDI Spec: the spec version must be at least v0.5.0`},
		"unknown-field.json":      {`spec: failed to parse CDI Spec`, `field hostpath not found in type specs.DeviceNode`},
		"duplicate-device.json":   {`spec: invalid CDI Spec: invalid spec, multiple device "cpu-numa-0"`},
		"empty-edits.json":        {`spec: invalid CDI Spec: failed add device "nic-0000-01-00-0": invalid device, empty device edits`},
		"bad-env.json":            {`invalid environment variable "=ens1f0"`},
		"major-as-string.json": {
			`schema: devices.0.containerEdits.deviceNodes.0.major: Invalid type. Expected: integer, given: string`,
			"spec: failed to parse CDI Spec",
		},
		"no-version.json": {
			`schema: (root): cdiVersion is required`,
			`spec: cdiVersion "": invalid CDI Spec: invalid version ""`,
			`minimum: cdiVersion is missing; this content needs 0.3.0`,
		},
		"wrong-extension.jsn": {`file: the name ends in ".jsn", not .json or .yaml, so a runtime's CDI cache skips it`},
	}
	all := fixtures(t, "invalid/*")
	if len(all) != len(cases) {
		t.Errorf("%d fixtures in testdata/invalid but %d cases here: keep them in step", len(all), len(cases))
	}
	for name, wants := range cases {
		file := filepath.Join("testdata", "invalid", name)
		got := runCLI(t, "validate", "--expect-minimum-version", file)
		if got.code != exitFailed {
			t.Errorf("%s: want exit 1, got %v", name, got)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(got.stdout, "FAIL "+file+": ") || !strings.Contains(got.stdout, want) {
				t.Errorf("%s: want a FAIL line naming the file with %q, got %v", name, want, got)
			}
		}
	}
}

// The metadata spec with a claim UID that starts with a letter is what metadata::cdiSpec()
// writes (cdiVersion fixed at 0.5.0): every runtime that knows 0.5.0 accepts it, but it is
// not the minimum its content needs.
func TestVersionAboveTheMinimumFailsOnlyWhenAsked(t *testing.T) {
	files := fixtures(t, "not-minimal/*.json")
	plain := runCLI(t, append([]string{"validate"}, files...)...)
	if plain.code != exitOK {
		t.Errorf("without --expect-minimum-version the spec is valid, got %v", plain)
	}
	strict := runCLI(t, append([]string{"validate", "--expect-minimum-version"}, files...)...)
	want := `minimum: cdiVersion "0.5.0" is above 0.3.0, the lowest version this content needs`
	if strict.code != exitFailed || !strings.Contains(strict.stdout, want) {
		t.Errorf("want exit 1 and %q, got %v", want, strict)
	}
}

func TestValidateReportsEveryFileInOneRun(t *testing.T) {
	files := append(fixtures(t, "valid/*.json"), "testdata/invalid/duplicate-device.json",
		"testdata/no-such-spec.json")
	got := runCLI(t, append([]string{"validate"}, files...)...)
	if got.code != exitFailed {
		t.Fatalf("want exit 1, got %v", got)
	}
	for _, want := range []string{
		"FAIL testdata/invalid/duplicate-device.json: spec:",
		"FAIL testdata/no-such-spec.json: read: open testdata/no-such-spec.json: no such file or directory",
		"5 file(s), 3 valid, 2 invalid",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("want %q, got %v", want, got)
		}
	}
}

func TestSchemaCheck(t *testing.T) {
	file := "testdata/invalid/major-as-string.json"
	t.Run("a missing helper is a broken setup, not a pass", func(t *testing.T) {
		got := runCLI(t, "validate", "--schema-checker", "/nonexistent/cdi-schema-check", file)
		if got.code != exitUsage || !strings.Contains(got.stderr, "JSON schema helper /nonexistent/cdi-schema-check failed") {
			t.Errorf("want exit 2 naming the helper, got %v", got)
		}
	})
	t.Run("--no-schema skips it and says so", func(t *testing.T) {
		got := runCLI(t, "validate", "--no-schema", file)
		if got.code != exitFailed || strings.Contains(got.stdout, ": schema: ") ||
			!strings.Contains(got.stdout, "JSON schema: skipped (--no-schema)") {
			t.Errorf("want only the spec check to fail, got %v", got)
		}
	})
	t.Run("found beside the program when nothing names it", func(t *testing.T) {
		t.Setenv(schemaCheckerEnv, "")
		_, err := findSchemaChecker("")
		if err == nil || !strings.Contains(err.Error(), "--no-schema") {
			t.Errorf("the test binary has no helper beside it; want an error that says what to do, got %v", err)
		}
	})
}
