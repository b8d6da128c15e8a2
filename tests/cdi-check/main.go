// Command cdi-check judges CDI spec files with the official CDI Go library
// (tags.cncf.io/container-device-interface), the code containerd and CRI-O link
// to read /etc/cdi and /var/run/cdi, so a test can see what a runtime would see.
//
//	cdi-check validate [--expect-minimum-version] [--schema-checker BIN | --no-schema] SPEC_FILE...
//	cdi-check resolve --spec-dir DIR [--spec-dir DIR...] [--output FILE] CDI_ID...
//	cdi-check version
//
// Exit status: 0 all good, 1 a check failed, 2 bad usage or a broken setup.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	programName = "cdi-check"
)

const usageText = `cdi-check: judge CDI spec files with the official CDI library (the one containerd and CRI-O link).

Usage:
  cdi-check validate [--expect-minimum-version] [--schema-checker BIN | --no-schema] SPEC_FILE...
  cdi-check resolve --spec-dir DIR [--spec-dir DIR...] [--output FILE] CDI_ID...
  cdi-check version
  cdi-check --help

validate   Checks each file as a runtime reads it:
             schema   the JSON schema built into the CDI library's schema package (run by the
                      helper cdi-schema-check; see README.md for why it is a separate program);
             spec     cdi.ReadSpec: strict decoding (unknown fields are errors), cdiVersion
                      known and high enough for the content, vendor/class of kind, device names,
                      duplicate devices, env entries, device nodes, mounts;
             file     the name ends in .json or .yaml (a runtime's cache skips other files);
             minimum  with --expect-minimum-version: cdiVersion is exactly the lowest version
                      the content needs (specs-go MinimumRequiredVersion), because a runtime
                      whose library knows only older versions refuses a newer one.
           --schema-checker BIN  the schema helper (default: $CDI_SCHEMA_CHECKER, else
                      cdi-schema-check beside this program); --no-schema skips the schema check.
resolve    Loads every spec in the given folders into the library's cache (no other folder,
           no auto-refresh), fails on any error the cache recorded for a spec, injects the
           fully-qualified devices (vendor/class=name) into an empty OCI runtime spec and
           prints that spec as JSON (process.env, linux.devices, linux.resources.devices,
           mounts, ...) to stdout or --output FILE.
version    Prints the CDI library version this program was built with.

Exit status: 0 all good, 1 a check failed, 2 bad usage or a broken setup.
`

// usageError is bad usage: the message is printed with a pointer to --help, exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// failedError means the checks ran and at least one failed (its details are already printed).
var errFailed = errors.New("a check failed")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without os.Exit, for the tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	case "validate":
		err = runValidate(args[1:], stdout, stderr)
	case "resolve":
		err = runResolve(args[1:], stdout, stderr)
	case "version", "--version":
		if len(args) > 1 {
			err = usagef("version takes no arguments")
		} else {
			fmt.Fprintln(stdout, versionText())
		}
	default:
		err = usagef("unknown command %q", args[0])
	}
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "%s: %s (see %s --help)\n", programName, usage.msg, programName)
		return exitUsage
	case errors.Is(err, errFailed):
		return exitFailed
	case errors.Is(err, errHelp):
		fmt.Fprint(stdout, usageText)
		return exitOK
	default:
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		return exitUsage
	}
}
