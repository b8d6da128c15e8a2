package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

func latestSpecVersion() string { return cdispec.CurrentVersion }

type validateOptions struct {
	expectMinimum bool
	schemaErrors  map[string]string // nil: no schema check
}

// fileVerdict is the outcome of every check of one file.
type fileVerdict struct {
	problems []string // "check: reason", in the order the checks ran
	summary  string   // for a valid file
}

func runValidate(args []string, stdout, _ io.Writer) error {
	p, err := parseArgs(args, []string{"expect-minimum-version", "no-schema"}, []string{"schema-checker"})
	if err != nil {
		return err
	}
	if len(p.positional) == 0 {
		return usagef("validate needs at least one SPEC_FILE")
	}
	if p.has("no-schema") && p.has("schema-checker") {
		return usagef("--no-schema and --schema-checker exclude each other")
	}
	files := p.positional
	opts := validateOptions{expectMinimum: p.has("expect-minimum-version")}
	schemaLibrary := "skipped (--no-schema)"
	if !p.has("no-schema") {
		checker, err := findSchemaChecker(p.last("schema-checker"))
		if err != nil {
			return err
		}
		if opts.schemaErrors, schemaLibrary, err = runSchemaChecker(checker, files); err != nil {
			return err
		}
	}

	invalid := 0
	for _, file := range files {
		verdict := checkFile(file, opts)
		if len(verdict.problems) == 0 {
			fmt.Fprintf(stdout, "ok   %s (%s)\n", file, verdict.summary)
			continue
		}
		invalid++
		for _, problem := range verdict.problems {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", file, problem)
		}
	}
	v := moduleVersions()
	fmt.Fprintf(stdout, "cdi-check validate: %d file(s), %d valid, %d invalid (spec checks: %s %s; JSON schema: %s)\n",
		len(files), len(files)-invalid, invalid, cdiModule, v[cdiModule], schemaLibrary)
	if invalid > 0 {
		return errFailed
	}
	return nil
}

// checkFile runs every check on one file and collects all problems, so one run shows them all.
func checkFile(file string, opts validateOptions) fileVerdict {
	var verdict fileVerdict
	addf := func(format string, args ...any) {
		verdict.problems = append(verdict.problems, fmt.Sprintf(format, args...))
	}

	data, err := os.ReadFile(file)
	if err != nil {
		addf("read: %v", err)
		return verdict
	}

	// A runtime's cache loads only *.json and *.yaml from its spec folders and skips the rest
	// without a word.
	if ext := filepath.Ext(file); ext != ".json" && ext != ".yaml" {
		addf("file: the name ends in %q, not .json or .yaml, so a runtime's CDI cache skips it", ext)
	}

	if opts.schemaErrors != nil {
		if reason := opts.schemaErrors[file]; reason != "" {
			addf("schema: %s", oneLine(reason))
		}
	}

	// Exactly what the cache does for every file it finds (cdi.ReadSpec: strict decode, then
	// version, kind, annotations, edits and every device validated).
	spec, specErr := cdi.ReadSpec(file, 0)
	raw, parseErr := cdi.ParseSpec(data)
	if parseErr != nil {
		raw = nil
	}
	if specErr != nil {
		addf("spec: %s", explainSpecError(specErr, raw))
	}

	if opts.expectMinimum && raw != nil {
		if problem := minimumVersionProblem(raw); problem != "" {
			addf("minimum: %s", problem)
		}
	}

	if len(verdict.problems) == 0 && spec != nil {
		minimum, _ := cdispec.MinimumRequiredVersion(spec.Spec)
		verdict.summary = fmt.Sprintf("cdiVersion %s, minimum %s, kind %s, %d device(s)",
			spec.Version, minimum, spec.Kind, len(spec.Devices))
	}
	return verdict
}

// explainSpecError keeps the library's words and names the field where the library does not.
func explainSpecError(err error, raw *cdispec.Spec) string {
	msg := oneLine(err.Error())
	if raw == nil {
		return msg
	}
	switch {
	case strings.Contains(msg, "invalid vendor") || strings.Contains(msg, "invalid class"):
		return fmt.Sprintf("kind %q: %s (kind must be vendor/class, e.g. numa.dra.dev/claim)", raw.Kind, msg)
	case strings.Contains(msg, "version"):
		return fmt.Sprintf("cdiVersion %q: %s", raw.Version, msg)
	}
	return msg
}

// minimumVersionProblem says why cdiVersion is not exactly the lowest version the content needs,
// or returns "".
func minimumVersionProblem(raw *cdispec.Spec) string {
	minimum, err := cdispec.MinimumRequiredVersion(raw)
	if err != nil {
		return fmt.Sprintf("the library cannot compute the minimum version: %v", err)
	}
	written := raw.Version
	switch {
	case written == minimum:
		return ""
	case written == "":
		return fmt.Sprintf("cdiVersion is missing; this content needs %s", minimum)
	case strings.TrimPrefix(written, "v") == minimum:
		return fmt.Sprintf("cdiVersion %q has a leading 'v'; write %q", written, minimum)
	case versionLess(minimum, strings.TrimPrefix(written, "v")):
		return fmt.Sprintf("cdiVersion %q is above %s, the lowest version this content needs; "+
			"a runtime whose CDI library knows only older versions (e.g. up to 0.5.0 in Debian 12's "+
			"podman 4.3) refuses the spec", written, minimum)
	default:
		return fmt.Sprintf("cdiVersion %q is below %s, which this content needs", written, minimum)
	}
}

// versionLess compares dotted numeric versions ("0.3.0" < "0.5.0" < "1.1.0"); a part that is not
// a number compares as 0.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			fmt.Sscanf(pa[i], "%d", &x)
		}
		if i < len(pb) {
			fmt.Sscanf(pb[i], "%d", &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func oneLine(s string) string {
	fields := strings.Fields(s)
	return strings.Join(fields, " ")
}
