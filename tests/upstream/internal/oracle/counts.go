package oracle

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WriteCounts writes what a judge counted ("key value" lines, sorted), for the test that keeps
// the numbers the documentation states equal to what the judges print
// (scripts/check-doc-counts.py). An empty path writes nothing. The file is written whole or not
// at all: a temporary file renamed over it.
func WriteCounts(path string, counts map[string]int) error {
	if path == "" {
		return nil
	}
	keys := make([]string, 0, len(counts))
	for key := range counts {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var text strings.Builder
	for _, key := range keys {
		fmt.Fprintf(&text, "%s %d\n", key, counts[key])
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	temporary := path + ".tmp"
	if err := os.WriteFile(temporary, []byte(text.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(temporary, path)
}
