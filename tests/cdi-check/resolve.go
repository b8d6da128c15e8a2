package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
)

func runResolve(args []string, stdout, stderr io.Writer) error {
	p, err := parseArgs(args, nil, []string{"spec-dir", "output"})
	if err != nil {
		return err
	}
	dirs := p.values["spec-dir"]
	if len(dirs) == 0 {
		return usagef("resolve needs at least one --spec-dir")
	}
	if len(p.positional) == 0 {
		return usagef("resolve needs at least one CDI_ID (vendor/class=name)")
	}
	if len(p.values["output"]) > 1 {
		return usagef("--output given more than once")
	}
	// The library skips a spec folder that does not exist without a word; here that is a
	// mistake in the test, not an empty folder.
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil {
			return usagef("--spec-dir %s: %v", dir, err)
		}
		if !info.IsDir() {
			return usagef("--spec-dir %s is not a folder", dir)
		}
	}

	ociSpec, problems := resolve(dirs, p.positional)
	if len(problems) > 0 {
		for _, problem := range problems {
			fmt.Fprintf(stderr, "FAIL %s\n", problem)
		}
		return errFailed
	}

	out, err := json.MarshalIndent(ociSpec, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the OCI spec: %w", err)
	}
	out = append(out, '\n')
	if output := p.last("output"); output != "" {
		if err := os.WriteFile(output, out, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", output, err)
		}
		return nil
	}
	_, err = stdout.Write(out)
	return err
}

// resolve loads the spec folders into a cache of their own and injects the devices into an
// empty OCI spec, as a runtime does for a container. It returns the spec or every problem.
func resolve(dirs, ids []string) (*oci.Spec, []string) {
	var problems []string
	for _, id := range ids {
		if _, _, _, err := parser.ParseQualifiedName(id); err != nil {
			problems = append(problems, fmt.Sprintf("%s: not a fully-qualified CDI device name "+
				"(vendor/class=name): %v", id, err))
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}

	// Only these folders (never /etc/cdi or /var/run/cdi), read once: no watcher.
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dirs...), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, []string{fmt.Sprintf("creating the CDI cache: %v", err)}
	}
	// A runtime logs these and goes on without the broken spec (its devices just do not
	// resolve); a test must not go on.
	errorsByPath := cache.GetErrors()
	paths := make([]string, 0, len(errorsByPath))
	for path := range errorsByPath {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		for _, e := range errorsByPath[path] {
			problems = append(problems, fmt.Sprintf("%s: the CDI cache refused it: %s", path, oneLine(e.Error())))
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}

	ociSpec := &oci.Spec{Version: oci.Version}
	unresolved, err := cache.InjectDevices(ociSpec, ids...)
	if len(unresolved) > 0 {
		known := cache.ListDevices()
		hint := "no devices at all"
		if len(known) > 0 {
			const shown = 20
			hint = strings.Join(known[:min(len(known), shown)], ", ")
			if len(known) > shown {
				hint += fmt.Sprintf(", ... (%d in all)", len(known))
			}
		}
		for _, id := range unresolved {
			problems = append(problems, fmt.Sprintf("%s: unresolvable CDI device: no spec in %s "+
				"defines it (the cache knows: %s)", id, strings.Join(dirs, ", "), hint))
		}
		return nil, problems
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("injecting %s: %v", strings.Join(ids, ", "), err)}
	}
	return ociSpec, nil
}
