package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The JSON schema check runs in a separate program, cdi-schema-check (schema-check/, its own Go
// module). The library's schema package is a separate Go module since the library moved to
// tags.cncf.io/container-device-interface v1.0: it is never tagged, so there is no release of it
// to pin (the module proxy here serves no version of it). Its last released copy is the schema
// package inside the library's v0.8.1 module, and one Go binary cannot link v0.8.1 and v1.1.1
// of the same module, hence the helper.

const (
	schemaCheckerName = "cdi-schema-check"
	schemaCheckerEnv  = "CDI_SCHEMA_CHECKER"
)

// schemaReport is what cdi-schema-check prints on stdout (exit status 0 or 1).
type schemaReport struct {
	Library string         `json:"library"`
	Results []schemaResult `json:"results"`
}

type schemaResult struct {
	File  string `json:"file"`
	Error string `json:"error,omitempty"`
}

// findSchemaChecker returns the helper to run: the explicit path, else $CDI_SCHEMA_CHECKER, else
// cdi-schema-check in this program's folder.
func findSchemaChecker(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if fromEnv := os.Getenv(schemaCheckerEnv); fromEnv != "" {
		return fromEnv, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this program's folder to look for %s: %w", schemaCheckerName, err)
	}
	candidate := filepath.Join(filepath.Dir(self), schemaCheckerName)
	if _, err := os.Stat(candidate); err != nil {
		return "", fmt.Errorf("the JSON schema helper %s is not beside this program (%s): build it "+
			"from schema-check/ (see README.md), name it with --schema-checker or $%s, or skip "+
			"the schema check with --no-schema", schemaCheckerName, candidate, schemaCheckerEnv)
	}
	return candidate, nil
}

// runSchemaChecker checks every file with the helper and returns the error per file ("" for a
// valid one). An error return means the helper itself could not do its job.
func runSchemaChecker(checker string, files []string) (map[string]string, string, error) {
	cmd := exec.Command(checker, append([]string{"--"}, files...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == exitFailed) {
		return nil, "", fmt.Errorf("JSON schema helper %s failed: %v: %s", checker, err,
			strings.TrimSpace(stderr.String()))
	}
	var report schemaReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		return nil, "", fmt.Errorf("JSON schema helper %s printed no report: %v: %s", checker, err,
			strings.TrimSpace(stderr.String()))
	}
	out := map[string]string{}
	for _, r := range report.Results {
		out[r.File] = r.Error
	}
	for _, f := range files {
		if _, ok := out[f]; !ok {
			return nil, "", fmt.Errorf("JSON schema helper %s reported nothing for %s", checker, f)
		}
	}
	return out, report.Library, nil
}

// schemaCheckerVersion is the helper's "version" line, or why there is none.
func schemaCheckerVersion() string {
	checker, err := findSchemaChecker("")
	if err != nil {
		return "not found (" + schemaCheckerName + " is not beside this program and $" + schemaCheckerEnv + " is unset)"
	}
	out, err := exec.Command(checker, "version").Output()
	if err != nil {
		return checker + " does not run: " + err.Error()
	}
	return strings.TrimSpace(string(out)) + " (" + checker + ")"
}
