// Package expectations reads the judges' files of known differences, one format for all of them
// (tests/upstream/README.md, "Expectation files"):
//
//   - UTF-8 lines; a line starting with # is a comment; blank lines are ignored;
//   - an entry is fields separated by " | " (space, bar, space), each trimmed of the spaces
//     around it (so columns may be aligned) and none empty;
//   - the reader declares how many fields an entry has; the last one takes the rest of the line,
//     so it alone may hold " | " (it is the free text, the reason);
//   - the first fields (as many as the reader says) name the entry: two entries of the same name
//     are an error.
//
// A line that does not fit is an error naming the file, the line and what was expected. Whether
// an entry still matches something (a stale entry fails) is the judge's to say: only it knows
// what there is to match.
package expectations

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// Separator separates the fields of an entry.
const Separator = " | "

// Format is how one judge's file is laid out.
type Format struct {
	// Fields names an entry's fields in order, as the file's header does (they appear in the
	// errors); the last one takes the rest of the line.
	Fields []string
	// KeyFields is how many of the first fields name an entry (at least 1).
	KeyFields int
}

// Entry is one entry of a file.
type Entry struct {
	Fields []string // len(Format.Fields) of them, trimmed, none empty
	Path   string   // the file, for messages
	Line   int      // 1-based
}

// Key is the entry's name: its first KeyFields fields joined by Separator.
func (e Entry) Key(format Format) string {
	return strings.Join(e.Fields[:format.KeyFields], Separator)
}

// Errorf is an error about the entry, prefixed with its file and line.
func (e Entry) Errorf(message string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", e.Path, e.Line, fmt.Sprintf(message, args...))
}

// Read reads the file at path. An empty path is a file without entries (a judge run without
// expectations expects no difference).
func (f Format) Read(path string) ([]Entry, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return f.Parse(path, string(data))
}

// Parse reads the entries of text; path names it in errors.
func (f Format) Parse(path, text string) ([]Entry, error) {
	if len(f.Fields) < 2 || f.KeyFields < 1 || f.KeyFields >= len(f.Fields) {
		return nil, fmt.Errorf("expectations: a format needs at least two fields and a key of fewer than all of them, got %d fields, key %d", len(f.Fields), f.KeyFields)
	}
	var entries []Entry
	lineOfKey := map[string]int{}
	for index, line := range strings.Split(text, "\n") {
		number := index + 1
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("%s:%d: not UTF-8", path, number)
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields, err := f.split(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, number, err)
		}
		entry := Entry{Fields: fields, Path: path, Line: number}
		key := entry.Key(f)
		if first, seen := lineOfKey[key]; seen {
			return nil, entry.Errorf("%q is listed twice (first on line %d)", key, first)
		}
		lineOfKey[key] = number
		entries = append(entries, entry)
	}
	return entries, nil
}

// split cuts line into the format's fields, the last taking the rest of the line.
func (f Format) split(line string) ([]string, error) {
	fields := strings.SplitN(line, Separator, len(f.Fields))
	if len(fields) < len(f.Fields) {
		return nil, fmt.Errorf("want %d fields %q, got %d", len(f.Fields), f.layout(), len(fields))
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
		if fields[i] == "" {
			return nil, fmt.Errorf("field %q is empty (want %q)", f.Fields[i], f.layout())
		}
	}
	return fields, nil
}

// layout is how an entry of the format is written, e.g. "case | status | reason".
func (f Format) layout() string {
	return strings.Join(f.Fields, Separator)
}
