package main

import (
	"archive/tar"
	"compress/bzip2"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"numadra.dev/tests/upstream/internal/expectations"
)

// The divergences each tree shows, by "machine form" ("epyc-2s-nps4 list"); a tree not named
// shows none.
type expectedDivergences map[string][]string

// divergenceExpectations is the layout of expected-divergences.txt.
var divergenceExpectations = expectations.Format{Fields: []string{"machine", "form", "divergences"}, KeyFields: 2}

// readExpectations reads the divergences each listed tree shows, by "machine form".
func readExpectations(path string) (expectedDivergences, error) {
	entries, err := divergenceExpectations.Read(path)
	if err != nil {
		return nil, err
	}
	expected := expectedDivergences{}
	for _, entry := range entries {
		machine, form := entry.Fields[0], entry.Fields[1]
		if form != "scalar" && form != "list" {
			return nil, entry.Errorf("form %q is not scalar or list", form)
		}
		names := strings.Split(entry.Fields[2], ",")
		for _, name := range names {
			if _, known := divergences[name]; !known {
				return nil, entry.Errorf("%q is not a divergence the README lists", name)
			}
		}
		sort.Strings(names)
		expected[machine+" "+form] = names
	}
	return expected, nil
}

// runSuite compares every tree (each machine folder's sys/, in both forms) and checks that each
// shows exactly the divergences expected of it. Returns the exit status.
func runSuite(probe string, trees map[string]string, expected expectedDivergences, out io.Writer) int {
	status := 0
	names := make([]string, 0, len(trees))
	for name := range trees {
		names = append(names, name)
	}
	sort.Strings(names)
	used := map[string]bool{}
	for _, name := range names {
		for _, form := range []string{"scalar", "list"} {
			key := name + " " + form
			used[key] = true
			devices, err := publishedDevices(probe, trees[name], form == "list")
			if err != nil {
				fmt.Fprintf(out, "FAIL %-40s %v\n", key, err)
				status = 1
				continue
			}
			r := compare(newTree(trees[name]), devices, form == "list")
			shown := shownDivergences(r)
			want := expected[key]
			line := fmt.Sprintf("%-40s %4d agree, deliberate: %s", key, len(r.agreed), describeNames(shown))
			switch {
			case len(r.unexplained) > 0:
				status = 1
				fmt.Fprintf(out, "FAIL %s\n", line)
				for _, d := range r.unexplained {
					fmt.Fprintf(out, "       DIFFERENT %s: %s\n", d.what, d.detail)
				}
			case strings.Join(shown, ",") != strings.Join(want, ","):
				status = 1
				fmt.Fprintf(out, "FAIL %s (expected: %s)\n", line, describeNames(want))
			default:
				fmt.Fprintf(out, "ok   %s\n", line)
			}
		}
	}
	for key := range expected {
		if name, _, _ := strings.Cut(key, " "); trees[name] != "" && !used[key] {
			status = 1
			fmt.Fprintf(out, "FAIL expectation for %q matches no run\n", key)
		}
	}
	return status
}

func shownDivergences(r report) []string {
	seen := map[string]bool{}
	for _, d := range r.explained {
		seen[d.divergence] = true
	}
	names := []string{}
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func describeNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// machineTrees: the sys/ folder of every machine folder in `dir`, by machine name.
func machineTrees(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	trees := map[string]string{}
	for _, e := range entries {
		sys := filepath.Join(dir, e.Name(), "sys")
		if info, err := os.Stat(sys); err == nil && info.IsDir() {
			trees[e.Name()] = sys
		}
	}
	if len(trees) == 0 {
		return nil, fmt.Errorf("%s: no machine folder with a sys/ folder", dir)
	}
	return trees, nil
}

// gatheredTrees unpacks every NAME.tar.bz2 of hwloc's gathered machines in `dir` below
// `scratch` and returns each one's sys/ folder, by NAME.
func gatheredTrees(dir, scratch string) (map[string]string, error) {
	tarballs, err := filepath.Glob(filepath.Join(dir, "*.tar.bz2"))
	if err != nil || len(tarballs) == 0 {
		return nil, fmt.Errorf("%s: no *.tar.bz2", dir)
	}
	trees := map[string]string{}
	for _, tarball := range tarballs {
		name := strings.TrimSuffix(filepath.Base(tarball), ".tar.bz2")
		into := filepath.Join(scratch, name)
		if err := unpack(tarball, into); err != nil {
			return nil, fmt.Errorf("%s: %v", tarball, err)
		}
		matches, _ := filepath.Glob(filepath.Join(into, "*", "sys"))
		if len(matches) != 1 {
			return nil, fmt.Errorf("%s: expected one */sys folder inside, found %d", tarball, len(matches))
		}
		trees[name] = matches[0]
	}
	return trees, nil
}

// unpack extracts folders, regular files and symbolic links (all a sysfs tree has), refusing
// names that would land outside `into`.
func unpack(tarball, into string) error {
	file, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer file.Close()
	archive := tar.NewReader(bzip2.NewReader(file))
	for {
		header, err := archive.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(into, header.Name)
		if !strings.HasPrefix(target, filepath.Clean(into)+string(filepath.Separator)) {
			return fmt.Errorf("%q leaves the folder", header.Name)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		switch header.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(header.Linkname, target)
		case tar.TypeReg:
			err = writeFile(target, archive)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, content io.Reader) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, content); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
