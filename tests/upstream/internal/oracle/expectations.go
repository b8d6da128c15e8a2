package oracle

import (
	"fmt"
	"os"
	"strings"
)

// ReadExpectations reads a judge's list of expected differences: one entry per line, blank
// lines and lines starting with # skipped, each line turned into a key and its status by
// parse (which gets the line as written; an error names the file and line). A missing path
// is an empty list.
func ReadExpectations(path string, parse func(line string) (key, status string, err error)) (map[string]string, error) {
	expected := map[string]string{}
	if path == "" {
		return expected, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for number, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		key, status, err := parse(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, number+1, err)
		}
		expected[key] = status
	}
	return expected, nil
}
