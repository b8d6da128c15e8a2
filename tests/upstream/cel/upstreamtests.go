package main

// The second corpus: upstream's OWN test tables (issue 15, §3). The _test.go files of the DRA CEL
// environment (k8s.io/dynamic-resource-allocation/cel), of the apiserver CEL libraries it enables
// and of the cel-go extensions it enables are read from the module cache (the versions this
// program is built with) with go/parser, and every CEL expression of their tables is asked of
// both environments through the same judge as corpus.txt (compile error category, value or
// runtime error, static cost estimate).
//
//	upstream-cel --dracel-eval BIN --upstream-tests GOMODCACHE [--upstream-expectations FILE] [-v]
//
// Which string literals are expressions is decided per file (upstreamSources: each source has its
// rule), not by a heuristic over every literal. An expression of the DRA table is asked as the
// table asks it: a selector, or a derived attribute in the derived-attribute tests, on the
// device of its own case (decoded from the table: driver, attributes, capacity,
// allowMultipleAllocations) as well as on the corpus's three devices. An expression of a library
// table is asked so that its value is compared: upstream's checker gives its type; a bool is
// asked as a selector, a string, int, semver or dyn (or a list of those) as a derived attribute,
// and another type through a conversion to one of those (valueExpression). Expressions upstream's
// DRA environment refuses (names it does not declare, libraries it does not enable) are asked
// too, as selectors: both must refuse them at compile time; the summary counts them apart.
//
// Why one file of ~1,100 lines: most of it is the table of upstream's test sources (which string
// literals of which _test.go are expressions, and why), data read alongside upstream's files.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"numadra.dev/tests/upstream/internal/oracle"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"
)

// upstreamCase is one expression of an upstream test table.
type upstreamCase struct {
	Source     string // module-relative file, e.g. "k8s.io/apiserver/pkg/cel/library/ip_test.go"
	Line       int
	Expression string
	// Kind: "selector" or "derived" when the table says how the expression is used; "" when the
	// type upstream's checker gives decides (askedAs).
	Kind string
	// Device: the table case's own device (nil: none, or not decodable); asked besides the
	// corpus's devices.
	Device *questionDevice
	// crd: a CRD table's case, with the literals self and oldSelf are bound to (crdtests.go);
	// expect: what the table expects of the rule ("true" or "error").
	crd    *crdCase
	expect string
}

// upstreamSource is one _test.go file and the rule that finds its expressions.
type upstreamSource struct {
	Module string // module path
	File   string // path inside the module
	Rule   string // which literals are expressions (the README repeats these)
	// extract returns the file's expressions and how many expression fields were not constant
	// strings (fmt.Sprintf of a loop variable and the like), which are not asked.
	extract func(f *goFile) ([]upstreamCase, int)
}

var upstreamSources = []upstreamSource{
	{Module: "k8s.io/dynamic-resource-allocation", File: "cel/compile_test.go",
		Rule: "`expression` fields of the `testcases` table (selectors, each on its case's device: " +
			"driver, attributes, capacity, allowMultipleAllocations), of TestCompileDerivedAttributes " +
			"and TestEvaluateDerivedAttributes (derived attributes, the latter on its `device`), and " +
			"TestInterrupt's `expression :=`",
		extract: extractDRACompileTest},
	{Module: "k8s.io/apiserver", File: "pkg/cel/library/quantity_test.go", Rule: "`expr` fields", extract: fieldRule("expr")},
	{Module: "k8s.io/apiserver", File: "pkg/cel/library/semver_test.go", Rule: "`expr` fields", extract: fieldRule("expr")},
	{Module: "k8s.io/apiserver", File: "pkg/cel/library/ip_test.go", Rule: "`expr` fields", extract: fieldRule("expr")},
	{Module: "k8s.io/apiserver", File: "pkg/cel/library/cidr_test.go", Rule: "`expr` fields", extract: fieldRule("expr")},
	{Module: "k8s.io/apiserver", File: "pkg/cel/library/format_test.go",
		Rule: "`expr` fields (the fmt.Sprintf ones over every format name are not constants)", extract: fieldRule("expr")},
	{Module: "k8s.io/apiserver", File: "pkg/cel/library/cost_test.go",
		Rule: "`expr` and `op` fields; and the expressions its loops build: every `ops`/`opts` entry " +
			"appended to each base expression of the same test (the first operand of `testCost(t, base+op, …)`; " +
			"the `comparableLiteral` of each case in the same table entry, its `param` filling a %s)",
		extract: extractCostTest},
	{Module: "k8s.io/apiserver", File: "pkg/cel/environment/environment_test.go",
		Rule: "the strings of `validExpressions` and `invalidExpressions` fields and of the " +
			"`defaultCompatibilityValid`/`defaultCompatibilityInvalid` lists", extract: extractEnvironmentTest},
	{Module: "github.com/google/cel-go", File: "ext/strings_test.go",
		Rule: "`expr` fields and the values of `supportedFunctions` maps", extract: fieldRule("expr", "supportedFunctions")},
	{Module: "github.com/google/cel-go", File: "ext/lists_test.go",
		Rule: "`expr` fields and the values of `supportedFunctions` maps", extract: fieldRule("expr", "supportedFunctions")},
	{Module: "github.com/google/cel-go", File: "ext/sets_test.go", Rule: "`expr` fields", extract: fieldRule("expr")},
	{Module: "github.com/google/cel-go", File: "ext/bindings_test.go",
		Rule: "`expr` fields that are strings (TestBlockEval builds ASTs, not text)", extract: fieldRule("expr")},
	{Module: "github.com/google/cel-go", File: "ext/comprehensions_test.go", Rule: "`expr` fields", extract: fieldRule("expr")},
	{Module: "github.com/google/cel-go", File: "ext/formatting_test.go",
		Rule: "TestStringFormat's cases as it builds them, `%q.format([formatArgs])` (those with `dynArgs`, " +
			"variables of their own, or a `locale` are not asked), and `expr` fields",
		extract: extractFormattingTest},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/apiserver/schema/cel/validation_test.go",
		Rule: "TestValidationExpressions: `valid` lists and `errors` keys; `self`/`oldSelf` bound to the " +
			"case's `obj`/`oldObj` as the CEL literal of the value its schema makes (crdtests.go)",
		extract: extractCRDTests},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/apiserver/schema/cel/celcoststability_test.go",
		Rule:    "TestCelCostStability and TestCelEstimatedCostStability: `expectCost` keys, bound the same way",
		extract: extractCRDTests},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/apiserver/schema/cel/compilation_test.go",
		Rule: "`Rule` and `MessageExpression` fields, and the rule argument of the gen...WithRule schema builders " +
			"(TestCostEstimation); rules reading self or oldSelf have no data and are not asked",
		extract: extractCRDCompilationTest},
}

// goFile is a parsed _test.go file with its file-level string constants.
type goFile struct {
	fset   *token.FileSet
	file   *ast.File
	consts map[string]string
	label  string
	path   string
}

func parseGoFile(path, label string) (*goFile, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	f := &goFile{fset: fset, file: file, consts: map[string]string{}, label: label, path: path}
	for _, decl := range file.Decls {
		if gen, ok := decl.(*ast.GenDecl); ok && (gen.Tok == token.CONST || gen.Tok == token.VAR) {
			for _, spec := range gen.Specs {
				value := spec.(*ast.ValueSpec)
				for i, name := range value.Names {
					if i < len(value.Values) {
						if text, ok := f.stringOf(value.Values[i], nil); ok {
							f.consts[name.Name] = text
						}
					}
				}
			}
		}
	}
	return f, nil
}

// stringOf folds a constant string expression: literals, +, parentheses, and names bound to one
// (file-level constants, or `locals` of the enclosing function).
func (f *goFile) stringOf(e ast.Expr, locals map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		text, err := strconv.Unquote(e.Value)
		return text, err == nil
	case *ast.ParenExpr:
		return f.stringOf(e.X, locals)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok1 := f.stringOf(e.X, locals)
		y, ok2 := f.stringOf(e.Y, locals)
		return x + y, ok1 && ok2
	case *ast.Ident:
		if text, ok := locals[e.Name]; ok {
			return text, true
		}
		text, ok := f.consts[e.Name]
		return text, ok
	}
	return "", false
}

// isStringCall: fmt.Sprintf(...) and the like, an expression field that is not a constant.
func isStringCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Sprintf"
}

// localStrings: `name := "constant"` assignments in a function.
func (f *goFile) localStrings(body ast.Node) map[string]string {
	locals := map[string]string{}
	ast.Inspect(body, func(n ast.Node) bool {
		if assign, ok := n.(*ast.AssignStmt); ok && len(assign.Lhs) == len(assign.Rhs) {
			for i, lhs := range assign.Lhs {
				if name, ok := lhs.(*ast.Ident); ok {
					if text, ok := f.stringOf(assign.Rhs[i], locals); ok {
						locals[name.Name] = text
					}
				}
			}
		}
		return true
	})
	return locals
}

func (f *goFile) newCase(pos token.Pos, expression, kind string) upstreamCase {
	return upstreamCase{Source: f.label, Line: f.fset.Position(pos).Line, Expression: expression, Kind: kind}
}

func keyName(kv *ast.KeyValueExpr) string {
	if id, ok := kv.Key.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// fieldRule: the constant strings of the named fields of composite literals (a field whose value
// is a map literal contributes the map's values).
func fieldRule(fields ...string) func(f *goFile) ([]upstreamCase, int) {
	wanted := map[string]bool{}
	for _, name := range fields {
		wanted[name] = true
	}
	return func(f *goFile) ([]upstreamCase, int) {
		var cases []upstreamCase
		skipped := 0
		for _, decl := range f.file.Decls {
			locals := f.localStrings(decl)
			ast.Inspect(decl, func(n ast.Node) bool {
				kv, ok := n.(*ast.KeyValueExpr)
				if !ok || !wanted[keyName(kv)] {
					return true
				}
				if text, ok := f.stringOf(kv.Value, locals); ok {
					cases = append(cases, f.newCase(kv.Value.Pos(), text, ""))
				} else if m, ok := kv.Value.(*ast.CompositeLit); ok {
					for _, elt := range m.Elts {
						if entry, ok := elt.(*ast.KeyValueExpr); ok {
							if text, ok := f.stringOf(entry.Value, locals); ok {
								cases = append(cases, f.newCase(entry.Value.Pos(), text, ""))
							}
						}
					}
				} else if isStringCall(kv.Value) {
					skipped++
				}
				return true
			})
		}
		return cases, skipped
	}
}

// extractEnvironmentTest: the base environment's valid/invalid expression lists.
func extractEnvironmentTest(f *goFile) ([]upstreamCase, int) {
	var cases []upstreamCase
	addList := func(list ast.Expr) {
		if lit, ok := list.(*ast.CompositeLit); ok {
			for _, elt := range lit.Elts {
				if text, ok := f.stringOf(elt, nil); ok {
					cases = append(cases, f.newCase(elt.Pos(), text, ""))
				}
			}
		}
	}
	ast.Inspect(f.file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.KeyValueExpr:
			if name := keyName(n); name == "validExpressions" || name == "invalidExpressions" {
				addList(n.Value)
			}
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				if id, ok := lhs.(*ast.Ident); ok && strings.HasPrefix(id.Name, "defaultCompatibility") && i < len(n.Rhs) {
					addList(n.Rhs[i])
				}
			}
		}
		return true
	})
	return cases, 0
}

// extractCostTest: `expr`/`op` fields, and base+op combinations the test loops build.
func extractCostTest(f *goFile) ([]upstreamCase, int) {
	cases, skipped := fieldRule("expr", "op")(f)
	for _, decl := range f.file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		locals := f.localStrings(fn.Body)
		// Bases: testCost(t, base+op, ...) with a constant base.
		var bases []string
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "testCost" {
				return true
			}
			if sum, ok := call.Args[1].(*ast.BinaryExpr); ok && sum.Op == token.ADD {
				if _, isOp := sum.Y.(*ast.Ident); isOp {
					if base, ok := f.stringOf(sum.X, locals); ok {
						bases = append(bases, base)
					}
				}
			}
			return true
		})
		// Every table entry with ops (or opts): with the bases, or with its own comparable literals.
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			entry, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			var ops []string
			var comparables [][2]string // literal, param
			for _, elt := range entry.Elts {
				kv, ok := elt.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch keyName(kv) {
				case "ops", "opts":
					if list, ok := kv.Value.(*ast.CompositeLit); ok {
						for _, op := range list.Elts {
							if text, ok := f.stringOf(op, locals); ok {
								ops = append(ops, text)
							}
						}
					}
				case "costs":
					if list, ok := kv.Value.(*ast.CompositeLit); ok {
						for _, c := range list.Elts {
							comparables = append(comparables, comparableOf(f, c, locals))
						}
					}
				}
			}
			if len(ops) == 0 {
				return true
			}
			for _, op := range ops {
				if len(comparables) > 0 {
					for _, c := range comparables {
						if c[0] == "" {
							continue
						}
						withParam := op
						if strings.Contains(op, "%s") {
							withParam = fmt.Sprintf(op, c[1])
						}
						cases = append(cases, f.newCase(entry.Pos(), c[0]+withParam, ""))
					}
					continue
				}
				for _, base := range bases {
					cases = append(cases, f.newCase(entry.Pos(), base+op, ""))
				}
			}
			return true
		})
	}
	return cases, skipped
}

func comparableOf(f *goFile, e ast.Expr, locals map[string]string) [2]string {
	var out [2]string
	if lit, ok := e.(*ast.CompositeLit); ok {
		for _, elt := range lit.Elts {
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				text, _ := f.stringOf(kv.Value, locals)
				switch keyName(kv) {
				case "comparableLiteral":
					out[0] = text
				case "param":
					out[1] = text
				}
			}
		}
	}
	return out
}

// extractDRACompileTest: the DRA environment's own table, with each case's device.
func extractDRACompileTest(f *goFile) ([]upstreamCase, int) {
	var cases []upstreamCase
	skipped := 0
	for _, decl := range f.file.Decls {
		switch decl := decl.(type) {
		case *ast.GenDecl: // var testcases = map[string]struct{...}{ "name": {...}, ... }
			ast.Inspect(decl, func(n ast.Node) bool {
				spec, ok := n.(*ast.ValueSpec)
				if !ok || len(spec.Names) != 1 || spec.Names[0].Name != "testcases" || len(spec.Values) != 1 {
					return true
				}
				table, ok := spec.Values[0].(*ast.CompositeLit)
				if !ok {
					return false
				}
				for _, elt := range table.Elts {
					kv, ok := elt.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					name, _ := f.stringOf(kv.Key, nil)
					fields := compositeFields(kv.Value)
					text, ok := f.stringOf(fields["expression"], nil)
					if !ok {
						skipped++
						continue
					}
					c := f.newCase(fields["expression"].Pos(), text, "selector")
					c.Device = decodeDevice(f, "table:"+name, fields)
					cases = append(cases, c)
				}
				return false
			})
		case *ast.FuncDecl:
			if decl.Body == nil {
				continue
			}
			switch decl.Name.Name {
			case "TestCompileDerivedAttributes", "TestEvaluateDerivedAttributes":
				devices := map[string]map[string]ast.Expr{} // local Device{...} variables
				ast.Inspect(decl.Body, func(n ast.Node) bool {
					if assign, ok := n.(*ast.AssignStmt); ok && len(assign.Lhs) == 1 && len(assign.Rhs) == 1 {
						if id, ok := assign.Lhs[0].(*ast.Ident); ok {
							if lit, ok := assign.Rhs[0].(*ast.CompositeLit); ok {
								if typ, ok := lit.Type.(*ast.Ident); ok && typ.Name == "Device" {
									devices[id.Name] = compositeFields(lit)
								}
							}
						}
					}
					return true
				})
				ast.Inspect(decl.Body, func(n ast.Node) bool {
					lit, ok := n.(*ast.CompositeLit)
					if !ok {
						return true
					}
					fields := compositeFields(lit)
					expression, ok := fields["expression"]
					if !ok {
						return true
					}
					text, ok := f.stringOf(expression, nil)
					if !ok {
						skipped++
						return true
					}
					c := f.newCase(expression.Pos(), text, "derived")
					if decl.Name.Name == "TestEvaluateDerivedAttributes" {
						// A case without `device` is evaluated on Device{}.
						deviceFields := map[string]ast.Expr{}
						name := "derived:empty"
						if id, ok := fields["device"].(*ast.Ident); ok {
							deviceFields, name = devices[id.Name], "derived:"+id.Name
						}
						c.Device = decodeDevice(f, name, deviceFields)
					}
					cases = append(cases, c)
					return true
				})
			case "TestInterrupt":
				ast.Inspect(decl.Body, func(n ast.Node) bool {
					if assign, ok := n.(*ast.AssignStmt); ok && len(assign.Lhs) == 1 && len(assign.Rhs) == 1 {
						if id, ok := assign.Lhs[0].(*ast.Ident); ok && id.Name == "expression" {
							if text, ok := f.stringOf(assign.Rhs[0], nil); ok {
								cases = append(cases, f.newCase(assign.Rhs[0].Pos(), text, "selector"))
							}
						}
					}
					return true
				})
			}
		}
	}
	return cases, skipped
}

func compositeFields(e ast.Expr) map[string]ast.Expr {
	fields := map[string]ast.Expr{}
	if lit, ok := e.(*ast.CompositeLit); ok {
		for _, elt := range lit.Elts {
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				fields[keyName(kv)] = kv.Value
			}
		}
	}
	return fields
}

// decodeDevice builds the device of a DRA table case from its fields (Driver/driver,
// Attributes/attributes, Capacity/capacity, AllowMultipleAllocations/allowMultipleAllocations);
// nil when a part is not a literal this decoder reads (a function building the attributes).
func decodeDevice(f *goFile, name string, fields map[string]ast.Expr) *questionDevice {
	get := func(key string) ast.Expr {
		if e, ok := fields[key]; ok {
			return e
		}
		return fields[strings.ToUpper(key[:1])+key[1:]]
	}
	device := &questionDevice{Name: name}
	if e := get("driver"); e != nil {
		text, ok := f.stringOf(e, nil)
		if !ok {
			return nil
		}
		device.Driver = text
	}
	if e := get("allowMultipleAllocations"); e != nil {
		value, ok := literalValue(pointee(e))
		b, isBool := value.(bool)
		if !ok || !isBool {
			if id, isIdent := e.(*ast.Ident); !isIdent || id.Name != "nil" {
				return nil
			}
		}
		device.AllowMultipleAllocations = b
	}
	if e := get("attributes"); e != nil {
		device.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		ok := f.eachEntry(e, func(key string, value ast.Expr) bool {
			attribute, ok := decodeAttribute(value)
			device.Attributes[resourceapi.QualifiedName(key)] = attribute
			return ok
		})
		if !ok {
			return nil
		}
	}
	if e := get("capacity"); e != nil {
		device.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
		ok := f.eachEntry(e, func(key string, value ast.Expr) bool {
			call, ok := compositeFields(value)["Value"].(*ast.CallExpr) // resource.MustParse("1Mi")
			if !ok || len(call.Args) != 1 {
				return false
			}
			text, ok := f.stringOf(call.Args[0], nil)
			if !ok {
				return false
			}
			quantity, err := resource.ParseQuantity(text)
			device.Capacity[resourceapi.QualifiedName(key)] = resourceapi.DeviceCapacity{Value: quantity}
			return err == nil
		})
		if !ok {
			return nil
		}
	}
	return device
}

// eachEntry calls visit with each constant-string key and value of a map literal; false when
// the expression is not one or visit refuses an entry.
func (f *goFile) eachEntry(e ast.Expr, visit func(key string, value ast.Expr) bool) bool {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return false
	}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return false
		}
		key, ok := f.stringOf(kv.Key, nil)
		if !ok || !visit(key, kv.Value) {
			return false
		}
	}
	return true
}

// pointee: X of ptr.To(X) or new(X).
func pointee(e ast.Expr) ast.Expr {
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 {
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			if fun.Sel.Name == "To" {
				return call.Args[0]
			}
		case *ast.Ident:
			if fun.Name == "new" {
				return call.Args[0]
			}
		}
	}
	return nil
}

// literalValue: true, false, "text", 12, int64(12).
func literalValue(e ast.Expr) (any, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		if e.Name == "true" || e.Name == "false" {
			return e.Name == "true", true
		}
	case *ast.BasicLit:
		switch e.Kind {
		case token.STRING:
			text, err := strconv.Unquote(e.Value)
			return text, err == nil
		case token.INT:
			n, err := strconv.ParseInt(e.Value, 0, 64)
			return n, err == nil
		}
	case *ast.CallExpr:
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "int64" && len(e.Args) == 1 {
			return literalValue(e.Args[0])
		}
	}
	return nil, false
}

func decodeAttribute(e ast.Expr) (resourceapi.DeviceAttribute, bool) {
	var attribute resourceapi.DeviceAttribute
	for name, value := range compositeFields(e) {
		if strings.HasSuffix(name, "Values") {
			list, ok := value.(*ast.CompositeLit)
			if !ok {
				return attribute, false
			}
			for _, elt := range list.Elts {
				item, ok := literalValue(elt)
				if !ok {
					return attribute, false
				}
				switch name {
				case "BoolValues":
					attribute.BoolValues = append(attribute.BoolValues, item.(bool))
				case "IntValues":
					attribute.IntValues = append(attribute.IntValues, item.(int64))
				case "StringValues":
					attribute.StringValues = append(attribute.StringValues, item.(string))
				case "VersionValues":
					attribute.VersionValues = append(attribute.VersionValues, item.(string))
				default:
					return attribute, false
				}
			}
			continue
		}
		item, ok := literalValue(pointee(value))
		if !ok {
			return attribute, false
		}
		switch name {
		case "BoolValue":
			attribute.BoolValue = ptr.To(item.(bool))
		case "IntValue":
			attribute.IntValue = ptr.To(item.(int64))
		case "StringValue":
			attribute.StringValue = ptr.To(item.(string))
		case "VersionValue":
			attribute.VersionValue = ptr.To(item.(string))
		default:
			return attribute, false
		}
	}
	return attribute, true
}

// moduleDir: where a module this program is built with lies in the module cache; a module read
// only as a source (sources.go: in go.mod, not linked) is fetched with `go mod download` in the
// module folder, at the version go.mod pins and go.sum checks.
func moduleDir(modcache, module string) (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("no build information in this binary")
	}
	for _, dep := range info.Deps {
		if dep.Path == module {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			return filepath.Join(modcache, escapeModulePath(dep.Path)+"@"+dep.Version), nil
		}
	}
	if *goToolFlag == "" || *goModuleFlag == "" {
		return "", fmt.Errorf("module %s is not linked into this program: --go and --go-module fetch it", module)
	}
	return downloadedModuleDir(*goToolFlag, *goModuleFlag, module)
}

// downloadedModuleDir: `go mod download -json MODULE` in the module folder (GOFLAGS=-mod=readonly:
// the version go.mod requires, never another).
func downloadedModuleDir(goTool, folder, module string) (string, error) {
	cmd := exec.Command(goTool, "mod", "download", "-json", module)
	cmd.Dir = folder
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	var download struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &download); jsonErr != nil || download.Dir == "" {
		return "", fmt.Errorf("go mod download %s in %s: %v %s", module, folder, err, download.Error)
	}
	return download.Dir, nil
}

// escapeModulePath: the module cache's case encoding (an upper-case letter becomes ! and the letter).
func escapeModulePath(path string) string {
	var out strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			out.WriteByte('!')
			r = unicode.ToLower(r)
		}
		out.WriteRune(r)
	}
	return out.String()
}

// sourceReport: what one source file gave.
type sourceReport struct {
	Source   upstreamSource
	Path     string
	Cases    []upstreamCase
	Skipped  int
	Distinct int
	// NotBound: expressions of a CRD table that read self or oldSelf where the case's data has no
	// exact literal, by why (not asked).
	NotBound map[string]int
}

// extractUpstreamTests reads every source; a missing file or one that yields no expression is
// an error (the corpus must not shrink silently when upstream moves its tests).
func extractUpstreamTests(dirOf func(module string) (string, error)) ([]sourceReport, error) {
	var reports []sourceReport
	for _, source := range upstreamSources {
		dir, err := dirOf(source.Module)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, source.File)
		f, err := parseGoFile(path, source.Module+"/"+source.File)
		if err != nil {
			return nil, fmt.Errorf("upstream test source: %w", err)
		}
		cases, skipped := source.extract(f)
		if len(cases) == 0 {
			return nil, fmt.Errorf("upstream test source %s: no expression found (rule: %s)", path, source.Rule)
		}
		reports = append(reports, sourceReport{Source: source, Path: path, Cases: cases, Skipped: skipped})
	}
	return reports, nil
}

var undeclaredRE = regexp.MustCompile(`undeclared reference to '([^']+)'`)

// askedAs decides how an expression of a library table is asked, from the type upstream's
// checker gives it in the DRA environment. refusal names why upstream refuses it ("" when it
// compiles): "unknown variable", "unknown function" or "other".
func askedAs(env *cel.Env, expression string) (entry corpusEntry, how, refusal string) {
	checked, issues := env.Compile(expression)
	if issues != nil && issues.Err() != nil {
		refusal = "other"
		if names := undeclaredRE.FindAllStringSubmatch(issues.Err().Error(), -1); len(names) > 0 {
			refusal = "unknown function"
			variables := identifiersOf(env, expression)
			for _, name := range names {
				if variables[strings.Split(name[1], ".")[0]] {
					refusal = "unknown variable"
				}
			}
		}
		return corpusEntry{Kind: "selector", Expression: expression}, "selector (refused by upstream)", refusal
	}
	t := checked.OutputType()
	if t.IsExactType(types.BoolType) {
		return corpusEntry{Kind: "selector", Expression: expression}, "selector (bool)", ""
	}
	if derivable(t) {
		return corpusEntry{Kind: "derived", Expression: expression}, "derived (" + t.String() + ")", ""
	}
	if wrapped, ok := valueExpression(t, "("+strings.TrimSpace(expression)+")", 0); ok {
		return corpusEntry{Kind: "derived", Expression: wrapped}, "derived through a conversion (" + t.String() + ")", ""
	}
	return corpusEntry{Kind: "selector", Expression: expression}, "selector (no value to compare: " + t.String() + ")", ""
}

// identifiersOf: the identifiers an expression reads (not function names).
func identifiersOf(env *cel.Env, expression string) map[string]bool {
	names := map[string]bool{}
	parsed, issues := env.Parse(expression)
	if issues != nil && issues.Err() != nil {
		return names
	}
	celast.PreOrderVisit(parsed.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.IdentKind {
			names[e.AsIdent()] = true
		}
	}))
	return names
}

// derivable: a type a derived attribute may have (upstream's isAllowedDerivedAttributeType with
// list-type attributes on).
func derivable(t *types.Type) bool {
	if derivableScalar(t) {
		return true
	}
	return t.Kind() == types.ListKind && derivableScalar(t.Parameters()[0])
}

func derivableScalar(t *types.Type) bool {
	return t.IsExactType(types.BoolType) || t.IsExactType(types.IntType) || t.IsExactType(types.StringType) ||
		t.IsExactType(types.DynType) || t.IsExactType(types.AnyType) || t.TypeName() == "kubernetes.Semver"
}

// valueExpression converts e, of type t, into a derivable value that still tells its value apart:
// string() of the scalars that have one, a URL's parts, a quantity's approximate value, a map's
// sorted "key=value" strings, an optional's value or "optional.none".
func valueExpression(t *types.Type, e string, depth int) (string, bool) {
	v := fmt.Sprintf("v%d_", depth)
	switch {
	case derivableScalar(t):
		return e, true
	case t.IsExactType(types.DoubleType), t.IsExactType(types.UintType), t.IsExactType(types.BytesType),
		t.IsExactType(types.TimestampType), t.IsExactType(types.DurationType),
		t.TypeName() == "net.IP", t.TypeName() == "net.CIDR":
		return "string(" + e + ")", true
	case t.TypeName() == "kubernetes.Quantity":
		return "string(" + e + ".asApproximateFloat())", true
	case t.TypeName() == "kubernetes.URL":
		return fmt.Sprintf("cel.bind(%s, %s, [%s.getScheme(), %s.getHost(), %s.getEscapedPath()])", v, e, v, v, v), true
	case t.Kind() == types.ListKind:
		inner, ok := valueExpression(t.Parameters()[0], v, depth+1)
		if !ok {
			return "", false
		}
		if derivableScalar(t.Parameters()[0]) {
			return e, true
		}
		inner = stringValue(t.Parameters()[0], v, inner)
		if inner == "" {
			return "", false
		}
		return fmt.Sprintf("%s.map(%s, %s)", e, v, inner), true
	case t.Kind() == types.MapKind:
		k, val := fmt.Sprintf("k%d_", depth), fmt.Sprintf("m%d_", depth)
		key, ok1 := valueExpression(t.Parameters()[0], k, depth+1)
		value, ok2 := valueExpression(t.Parameters()[1], val+"["+k+"]", depth+1)
		if !ok1 || !ok2 {
			return "", false
		}
		key = stringValue(t.Parameters()[0], k, key)
		value = stringValue(t.Parameters()[1], val+"["+k+"]", value)
		if key == "" || value == "" {
			return "", false
		}
		return fmt.Sprintf("cel.bind(%s, %s, %s.map(%s, %s + \"=\" + %s).sort())", val, e, val, k, key, value), true
	case t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type":
		inner, ok := valueExpression(t.Parameters()[0], v+".value()", depth+1)
		if !ok {
			return fmt.Sprintf("cel.bind(%s, %s, %s.hasValue())", v, e, v), true
		}
		return fmt.Sprintf("cel.bind(%s, %s, %s.hasValue() ? dyn(%s) : dyn(\"optional.none\"))", v, e, v, inner), true
	}
	return "", false
}

// stringValue: a string for a scalar converted by valueExpression ("" when none).
func stringValue(t *types.Type, e, converted string) string {
	switch {
	case t.IsExactType(types.StringType):
		return e
	case t.IsExactType(types.IntType), t.IsExactType(types.BoolType):
		return "string(" + e + ")"
	case strings.HasPrefix(converted, "string("):
		return converted
	case t.Kind() == types.ListKind && t.Parameters()[0].IsExactType(types.StringType):
		return e + `.join(",")`
	}
	return ""
}

// upstreamTestEntry: one distinct question of the second corpus.
type upstreamTestEntry struct {
	Entry   corpusEntry
	How     string
	Refusal string
	Devices []questionDevice
	Sources map[string]bool
	Line    string // file:line of its first occurrence
}

// buildUpstreamTestCorpus turns the extracted cases into distinct questions (the same expression
// asked the same way with the same extra device is asked once).
func buildUpstreamTestCorpus(reports []sourceReport) []*upstreamTestEntry {
	env := upstreamCompile("true", false).Environment
	byKey := map[string]*upstreamTestEntry{}
	var order []*upstreamTestEntry
	for i := range reports {
		distinct := map[string]bool{}
		for _, c := range reports[i].Cases {
			if c.crd != nil {
				bound, why := bindCRD(env, c)
				if why != "" {
					if reports[i].NotBound == nil {
						reports[i].NotBound = map[string]int{}
					}
					reports[i].NotBound[whyCategory(why)]++
					continue
				}
				c.Expression = bound
			}
			var entry corpusEntry
			how, refusal := "", ""
			if c.Kind != "" {
				entry = corpusEntry{Kind: c.Kind, Expression: c.Expression}
				how = c.Kind + " (as the table asks)"
				if _, issues := env.Compile(c.Expression); issues != nil && issues.Err() != nil {
					if undeclaredRE.MatchString(issues.Err().Error()) {
						refusal = "unknown function"
					}
				}
			} else {
				entry, how, refusal = askedAs(env, c.Expression)
			}
			key := entry.key()
			if c.Device != nil {
				deviceKey, _ := jsonKey(c.Device)
				key += "\t" + deviceKey
			}
			distinct[key] = true
			if existing, ok := byKey[key]; ok {
				existing.Sources[c.Source] = true
				continue
			}
			e := &upstreamTestEntry{Entry: entry, How: how, Refusal: refusal, Devices: devices,
				Sources: map[string]bool{c.Source: true}, Line: fmt.Sprintf("%s:%d", c.Source, c.Line)}
			if c.Device != nil {
				e.Devices = append(append([]questionDevice(nil), devices...), *c.Device)
			}
			byKey[key] = e
			order = append(order, e)
		}
		reports[i].Distinct = len(distinct)
	}
	return order
}

// judgeOn is judge() on a given device list.
func judgeOn(ours *ourEngine, entry corpusEntry, on []questionDevice) ([]string, error) {
	derived := entry.Kind == "derived"
	compiled := upstreamCompile(entry.Expression, derived)
	var differences []string
	for _, device := range on {
		theirs := upstreamEvaluate(compiled, device, derived)
		mine, err := ours.ask(question{Expression: entry.Expression, Kind: entry.Kind, Device: device})
		if err != nil {
			return nil, err
		}
		if !sameAnswer(theirs, mine) {
			differences = append(differences, fmt.Sprintf("device %s: upstream %s%s, ours %s%s",
				device.Name, theirs.category(), detail(theirs), mine.category(), detail(mine)))
		}
		if theirs.CompileError != "" && mine.CompileError != "" {
			break // a compile error does not depend on the device
		}
	}
	return differences, nil
}

// runUpstreamTests is the --upstream-tests mode.
func runUpstreamTests(ours *ourEngine, modcache, expectationsPath string, verbose bool, counts map[string]int) (int, error) {
	compiledUpstream = map[string]dracel.CompilationResult{}
	defer func() { compiledUpstream = nil }()
	reports, err := extractUpstreamTests(func(module string) (string, error) { return moduleDir(modcache, module) })
	if err != nil {
		return 0, err
	}
	expected, err := readExpectations(expectationsPath)
	if err != nil {
		return 0, err
	}
	corpus := buildUpstreamTestCorpus(reports)
	type tally struct{ asked, same, differ, refusedVariable, refusedFunction int }
	perSource := map[string]*tally{}
	for _, r := range reports {
		perSource[r.Source.Module+"/"+r.Source.File] = &tally{}
	}
	hows := map[string]int{}
	unexpected, same, differ := 0, 0, 0
	seen := map[string]bool{}
	for _, e := range corpus {
		differences, err := judgeOn(ours, e.Entry, e.Devices)
		if err != nil {
			return 0, err
		}
		seen[e.Entry.key()] = true
		hows[e.How]++
		for source := range e.Sources {
			t := perSource[source]
			t.asked++
			if len(differences) == 0 {
				t.same++
			} else {
				t.differ++
			}
			switch e.Refusal {
			case "unknown variable":
				t.refusedVariable++
			case "unknown function":
				t.refusedFunction++
			}
		}
		_, listed := expected[e.Entry.key()]
		differs := len(differences) > 0
		if differs {
			differ++
		} else {
			same++
		}
		ok := differs == listed
		if !ok {
			unexpected++
		}
		if ok && !verbose {
			continue
		}
		mark := "ok"
		switch {
		case !ok && listed:
			mark = "FAIL: listed as a difference, but the answers agree now (remove it from the expectations)"
		case !ok:
			mark = "FAIL: a difference not in the expectations"
		}
		fmt.Printf("%s %q (%s; %s): %s\n", e.Entry.Kind, e.Entry.Expression, e.Line, e.How, mark)
		for _, line := range differences {
			fmt.Printf("    %s\n", line)
		}
	}
	keys := make([]string, 0, len(expected))
	for key := range expected {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if !seen[key] {
			fmt.Printf("%q: listed in the expectations but not asked: FAIL\n", key)
			unexpected++
		}
	}
	fmt.Println("upstream-cel: upstream's own test tables:")
	for _, r := range reports {
		t := perSource[r.Source.Module+"/"+r.Source.File]
		fmt.Printf("  %-60s %4d found, %4d distinct, %4d same, %3d differ; upstream refuses for names the DRA environment lacks: %d variables, %d functions",
			r.Source.Module+"/"+r.Source.File, len(r.Cases), r.Distinct, t.same, t.differ, t.refusedVariable, t.refusedFunction)
		if r.Skipped > 0 {
			fmt.Printf("; %d not constant, not asked", r.Skipped)
		}
		fmt.Println()
		for _, why := range sortedKeys(r.NotBound) {
			fmt.Printf("      not asked, %3d reading self/oldSelf: %s\n", r.NotBound[why], why)
		}
	}
	howNames := make([]string, 0, len(hows))
	for how := range hows {
		howNames = append(howNames, how)
	}
	sort.Strings(howNames)
	if verbose {
		for _, how := range howNames {
			fmt.Printf("  asked as %s: %d\n", how, hows[how])
		}
	}
	fmt.Printf("upstream-cel: %d distinct questions from upstream's tests: %d same, %d differ (%d listed as known); %d not as expected\n",
		len(corpus), same, differ, len(expected), unexpected)
	counts["upstream-cel.upstream-tests"] = len(corpus)
	counts["upstream-cel.upstream-tests-same"] = same
	counts["upstream-cel.upstream-tests-differ"] = differ
	counts["upstream-cel.upstream-tests-listed"] = len(expected)
	return unexpected, nil
}

// whyCategory: the reason without its detail ("self: a format ...: date-time \"x\"" -> "self: a
// format ..."), so that the report counts by reason.
func whyCategory(why string) string {
	parts := strings.SplitN(why, ": ", 3)
	if len(parts) < 2 {
		return why
	}
	return parts[0] + ": " + parts[1]
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// jsonKey: a device's identity for de-duplication.
func jsonKey(d *questionDevice) (string, error) {
	text, err := json.Marshal(d)
	return string(text), err
}

var (
	upstreamTestsFlag = flag.String("upstream-tests", "",
		"the module cache (go env GOMODCACHE): ask upstream's own test tables instead of a corpus")
	upstreamExpectationsFlag = flag.String("upstream-expectations", "",
		"expressions of upstream's test tables that may differ, with why")
	goToolFlag   = flag.String("go", "", "the go command, to fetch the modules read only as sources")
	goModuleFlag = flag.String("go-module", "", "the folder of this program's go.mod (tests/upstream)")
)

func upstreamTestsMode(evalBinary string, verbose bool, countsPath string) int {
	if evalBinary == "" {
		fmt.Fprintln(os.Stderr, "upstream-cel: --dracel-eval is required")
		return 2
	}
	ours, err := startOurs(evalBinary)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	defer ours.close()
	counts := map[string]int{}
	unexpected, err := runUpstreamTests(ours, *upstreamTestsFlag, *upstreamExpectationsFlag, verbose, counts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	if err := oracle.WriteCounts(countsPath, counts); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	if unexpected > 0 {
		return 1
	}
	return 0
}
