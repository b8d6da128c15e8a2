package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func check(t *testing.T, args ...string) (int, report, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	var r report
	if code != 2 {
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("no JSON report (exit %d): %v\n%s", code, err, stdout.String())
		}
	}
	return code, r, stderr.String()
}

func TestTheBuiltinSchemaIsLoaded(t *testing.T) {
	if _, err := builtinSchema(); err != nil {
		t.Fatal(err)
	}
}

func TestValidAndInvalidSpecs(t *testing.T) {
	good := "../testdata/valid/numa.dra.dev_metadata_1f00aa00-5e1f-4c2a-9d3b-00000000000a_gpu.json"
	bad := "../testdata/invalid/major-as-string.json"
	code, r, _ := check(t, "--", good, bad, "../testdata/no-such-file.json")
	if code != 1 || len(r.Results) != 3 {
		t.Fatalf("want exit 1 and three results, got %d %+v", code, r)
	}
	if r.Results[0].File != good || r.Results[0].Error != "" {
		t.Errorf("valid spec refused: %+v", r.Results[0])
	}
	if !strings.Contains(r.Results[1].Error, "devices.0.containerEdits.deviceNodes.0.major: Invalid type. Expected: integer, given: string") {
		t.Errorf("want the field and the reason, got %+v", r.Results[1])
	}
	if !strings.Contains(r.Results[2].Error, "no such file or directory") {
		t.Errorf("want the read error, got %+v", r.Results[2])
	}
	if !strings.HasPrefix(r.Library, "tags.cncf.io/container-device-interface v0.8.1") {
		t.Errorf("library: %q", r.Library)
	}

	if code, _, _ := check(t, good); code != 0 {
		t.Errorf("want exit 0 for a valid spec, got %d", code)
	}
	if code, _, stderr := check(t); code != 2 || !strings.Contains(stderr, "usage:") {
		t.Errorf("want exit 2 and the usage, got %d %q", code, stderr)
	}
}
