// Command cdi-schema-check validates CDI spec files against the JSON schema built into the
// official CDI library's schema package, for cdi-check validate (which runs it).
//
//	cdi-schema-check [--] SPEC_FILE...   prints a JSON report on stdout
//	cdi-schema-check version
//
// Why a program of its own: since the library moved to tags.cncf.io/container-device-interface
// v1.0, its schema package is a separate Go module that is never tagged, so there is no release
// of it to pin (the module proxy here serves no version of it); its last released copy is the
// package inside the library's v0.8.1 module, and one Go binary cannot link two versions of one
// module (cdi-check links v1.1.1).
//
// Exit status: 0 every file valid, 1 a file invalid or unreadable (the report says which and
// why), 2 bad usage or the builtin schema did not load.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"tags.cncf.io/container-device-interface/schema"
)

const cdiModule = "tags.cncf.io/container-device-interface"

type report struct {
	Library string   `json:"library"`
	Results []result `json:"results"`
}

type result struct {
	File  string `json:"file"`
	Error string `json:"error,omitempty"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func libraryVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == cdiModule {
				return cdiModule + " " + dep.Version + " (package schema, builtin schema)"
			}
		}
	}
	return cdiModule + " unknown version (package schema, builtin schema)"
}

// builtinSchema returns the library's embedded schema, refusing to go on when it did not load:
// BuiltinSchema() falls back to a schema that accepts everything without saying so.
func builtinSchema() (*schema.Schema, error) {
	s := schema.BuiltinSchema()
	if s.ValidateData([]byte(`{}`)) == nil {
		return nil, errors.New("the library's builtin JSON schema did not load (it accepts an empty document)")
	}
	return s, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintln(stdout, libraryVersion())
		return 0
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: cdi-schema-check [--] SPEC_FILE... | cdi-schema-check version")
		return 2
	}
	s, err := builtinSchema()
	if err != nil {
		fmt.Fprintln(stderr, "cdi-schema-check:", err)
		return 2
	}
	out := report{Library: libraryVersion()}
	status := 0
	for _, file := range args {
		r := result{File: file}
		// ValidateData rather than ValidateFile: the latter turns the path into a file:// URL,
		// which breaks on paths with '%', '#' or spaces.
		data, err := os.ReadFile(file)
		if err == nil {
			err = s.ValidateData(data)
		}
		if err != nil {
			r.Error = err.Error()
			status = 1
		}
		out.Results = append(out.Results, r)
	}
	encoded, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "cdi-schema-check: encoding the report:", err)
		return 2
	}
	fmt.Fprintln(stdout, string(encoded))
	return status
}
