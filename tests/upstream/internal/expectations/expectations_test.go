package expectations

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var caseStatusReason = Format{Fields: []string{"case", "status", "reason"}, KeyFields: 1}

func TestCommentsAndBlankLinesAreSkipped(t *testing.T) {
	entries, err := caseStatusReason.Parse("f.txt", "# a header\n\n   \n  # indented comment\na | differs | why\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Line != 5 || entries[0].Path != "f.txt" {
		t.Fatalf("entries = %+v", entries)
	}
}

func TestFieldsAreTrimmedSoColumnsMayBeAligned(t *testing.T) {
	entries, err := caseStatusReason.Parse("f.txt", "a      | differs    | why\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "differs", "why"}; !reflect.DeepEqual(entries[0].Fields, want) {
		t.Fatalf("fields = %q, want %q", entries[0].Fields, want)
	}
}

func TestTheLastFieldTakesTheRestOfTheLine(t *testing.T) {
	entries, err := caseStatusReason.Parse("f.txt", "a | differs | x | y | z\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := entries[0].Fields[2]; got != "x | y | z" {
		t.Fatalf("reason = %q", got)
	}
}

func TestTheKeyIsTheFirstFields(t *testing.T) {
	format := Format{Fields: []string{"kind", "expression", "why"}, KeyFields: 2}
	entries, err := format.Parse("f.txt", "selector | 1 == 1 | why\nderived | 1 == 1 | why\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := entries[1].Key(format); got != "derived | 1 == 1" {
		t.Fatalf("key = %q", got)
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"too few fields", "# header\na | differs\n", `f.txt:2: want 3 fields "case | status | reason", got 2`},
		{"an old tab-separated line", "a\tdiffers\twhy\n", `f.txt:1: want 3 fields "case | status | reason", got 1`},
		{"a bar without spaces", "a|differs|why\n", `f.txt:1: want 3 fields`},
		{"an empty field", "a |  | why\n", `f.txt:1: field "status" is empty`},
		{"an empty last field", "a | differs |   \n", `f.txt:1: want 3 fields`},
		{"a duplicate key", "a | differs | why\nb | differs | why\na | refused | again\n", `f.txt:3: "a" is listed twice (first on line 1)`},
		{"not UTF-8", "a | differs | \xff\n", `f.txt:1: not UTF-8`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := caseStatusReason.Parse("f.txt", c.text)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestEntryErrorsNameTheFileAndLine(t *testing.T) {
	entries, err := caseStatusReason.Parse("f.txt", "\na | maybe | why\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := entries[0].Errorf("status %q is unknown", "maybe").Error(); got != `f.txt:2: status "maybe" is unknown` {
		t.Fatalf("err = %q", got)
	}
}

func TestAFormatNeedsAKeyAndAValue(t *testing.T) {
	for _, format := range []Format{
		{Fields: []string{"only"}, KeyFields: 1},
		{Fields: []string{"a", "b"}, KeyFields: 0},
		{Fields: []string{"a", "b"}, KeyFields: 2},
	} {
		if _, err := format.Parse("f.txt", ""); err == nil {
			t.Errorf("%+v was accepted", format)
		}
	}
}

func TestReadingAFile(t *testing.T) {
	if entries, err := caseStatusReason.Read(""); err != nil || entries != nil {
		t.Fatalf("no path: %v, %v", entries, err)
	}
	path := filepath.Join(t.TempDir(), "expected.txt")
	if err := os.WriteFile(path, []byte("a | b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := caseStatusReason.Read(path); err == nil || !strings.HasPrefix(err.Error(), path+":1: ") {
		t.Fatalf("err = %v", err)
	}
	if _, err := caseStatusReason.Read(filepath.Join(t.TempDir(), "missing.txt")); err == nil {
		t.Fatal("a missing file was read")
	}
}
