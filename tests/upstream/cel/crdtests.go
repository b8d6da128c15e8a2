package main

// The CRD validation tables of k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel
// (TestValidationExpressions in validation_test.go; TestCelCostStability and
// TestCelEstimatedCostStability in celcoststability_test.go). Their rules are CEL expressions
// over `self` (the custom resource's value, typed by the case's schema) and `oldSelf`; the DRA
// environment declares neither, so an expression that reads one is asked as
// `cel.bind(self, LITERAL, expression)`, LITERAL being the case's own `obj` (`oldObj` for oldSelf)
// written as the CEL value the CRD environment makes of it under the case's schema. That is done
// only where the literal is that value exactly (crdLiteral: integers, doubles, booleans, strings,
// bytes, durations, dates and date-times, atomic lists and objects of those); any other case is
// not asked, and counted with why. An expression that reads neither is asked as it is, as a library
// table's is (askedAs).
//
// The Go values of the tables are folded from the syntax tree by goValue: literals, constants of
// math, conversions, fmt.Sprintf, []interface{}/map[string]interface{} literals and the file's
// own helpers (objs, schemas, the *Type schema builders, ValsEqualThemselvesAndDataLiteral,
// genString).
//
// Why one file of ~950 lines: the CRD tables' schemas turned into CEL literals (crdLiteral) are one
// translation, used by nothing else, and read against upstream's validation_test.go.

import (
	"context"
	"encoding/base64"
	"fmt"
	"go/ast"
	"go/token"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	apiservercel "k8s.io/apiserver/pkg/cel"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// crdSchema: what of a structural schema decides the CEL value of a custom resource's data.
type crdSchema struct {
	Type, Format, ListType           string
	Nullable, IntOrString, Unhandled bool // Unhandled: x-kubernetes-preserve-unknown-fields, embedded resources
	Items, AdditionalProperties      *crdSchema
	Properties                       map[string]*crdSchema
}

// notConstant: a Go expression goValue does not fold.
type notConstant struct{ why string }

func (n notConstant) Error() string { return n.why }

// crdFile is a parsed CRD test file with the file-level schema variables (integerType, ...).
type crdFile struct {
	*goFile
	vars map[string]ast.Expr
}

func newCRDFile(f *goFile) *crdFile {
	c := &crdFile{goFile: f, vars: map[string]ast.Expr{}}
	// The package's other test files declare the schemas the tables share (integerType, ...):
	// their variables too, each folded in its own file's syntax tree (positions are only for
	// messages).
	siblings, _ := filepath.Glob(filepath.Join(filepath.Dir(f.path), "*_test.go"))
	for _, path := range siblings {
		if path == f.path {
			continue
		}
		if sibling, err := parseGoFile(path, path); err == nil {
			c.addVars(sibling.file)
		}
	}
	c.addVars(f.file)
	return c
}

func (c *crdFile) addVars(file *ast.File) {
	for _, decl := range file.Decls {
		if gen, ok := decl.(*ast.GenDecl); ok && gen.Tok == token.VAR {
			for _, spec := range gen.Specs {
				value := spec.(*ast.ValueSpec)
				for i, name := range value.Names {
					if i < len(value.Values) {
						c.vars[name.Name] = value.Values[i]
					}
				}
			}
		}
	}
}

var mathConstants = map[string]any{
	"MaxInt64": int64(math.MaxInt64), "MinInt64": int64(math.MinInt64),
	"MaxInt32": int(math.MaxInt32), "MinInt32": int(math.MinInt32),
	"MaxFloat64": float64(math.MaxFloat64), "MaxFloat32": float64(math.MaxFloat32),
	"SmallestNonzeroFloat64": float64(math.SmallestNonzeroFloat64),
}

// goValue folds a Go expression of the tables into its value: string, bool, int, int32, int64,
// float32, float64, nil, []any, map[string]any or *crdSchema.
func (c *crdFile) goValue(e ast.Expr) (any, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		switch e.Kind {
		case token.STRING:
			return strconv.Unquote(e.Value)
		case token.INT:
			n, err := strconv.ParseInt(e.Value, 0, 64)
			return int(n), err
		case token.FLOAT:
			return strconv.ParseFloat(e.Value, 64)
		case token.CHAR:
			r, _, _, err := strconv.UnquoteChar(strings.Trim(e.Value, "'"), '\'')
			return int(r), err
		}
	case *ast.ParenExpr:
		return c.goValue(e.X)
	case *ast.UnaryExpr:
		x, err := c.goValue(e.X)
		if err != nil {
			return nil, err
		}
		switch {
		case e.Op == token.AND: // &schema
			return x, nil
		case e.Op == token.SUB:
			switch x := x.(type) {
			case int:
				return -x, nil
			case float64:
				return -x, nil
			}
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			x, err1 := c.goValue(e.X)
			y, err2 := c.goValue(e.Y)
			xs, ok1 := x.(string)
			ys, ok2 := y.(string)
			if err1 == nil && err2 == nil && ok1 && ok2 {
				return xs + ys, nil
			}
		}
	case *ast.Ident:
		switch e.Name {
		case "true", "false":
			return e.Name == "true", nil
		case "nil":
			return nil, nil
		}
		if text, ok := c.consts[e.Name]; ok {
			return text, nil
		}
		if value, ok := c.vars[e.Name]; ok {
			return c.goValue(value)
		}
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "math" {
			if value, ok := mathConstants[e.Sel.Name]; ok {
				return value, nil
			}
		}
	case *ast.CompositeLit:
		return c.compositeValue(e)
	case *ast.CallExpr:
		return c.callValue(e)
	}
	return nil, notConstant{fmt.Sprintf("%s: not a value this reader folds", c.fset.Position(e.Pos()))}
}

func (c *crdFile) args(call *ast.CallExpr) ([]any, error) {
	var out []any
	for _, arg := range call.Args {
		value, err := c.goValue(arg)
		if err != nil {
			return nil, err
		}
		out = append(out, value)
	}
	return out, nil
}

func (c *crdFile) callValue(call *ast.CallExpr) (any, error) {
	name := ""
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		name = fun.Name
	case *ast.SelectorExpr:
		if pkg, ok := fun.X.(*ast.Ident); ok {
			name = pkg.Name + "." + fun.Sel.Name
		}
	}
	args, err := c.args(call)
	if err != nil {
		return nil, err
	}
	bad := notConstant{fmt.Sprintf("%s: %s(...) is not folded", c.fset.Position(call.Pos()), name)}
	schemaArg := func(i int) (*crdSchema, bool) {
		if i >= len(args) {
			return nil, false
		}
		s, ok := args[i].(*crdSchema)
		return s, ok
	}
	switch name {
	case "int64", "int32", "int", "float64", "float32":
		if len(args) != 1 {
			return nil, bad
		}
		return convertNumber(name, args[0])
	case "fmt.Sprintf":
		format, ok := args[0].(string)
		if !ok {
			return nil, bad
		}
		return fmt.Sprintf(format, args[1:]...), nil
	case "ValsEqualThemselvesAndDataLiteral": // the file's helper, as it is written
		if len(args) != 3 {
			return nil, bad
		}
		return fmt.Sprintf("%s == %s && %s == %s && %s == %s", args[0], args[2], args[2], args[0], args[0], args[1]), nil
	case "genString": // genString(n, c): n times the rune c
		n, ok1 := args[0].(int)
		r, ok2 := args[1].(int)
		if len(args) != 2 || !ok1 || !ok2 {
			return nil, bad
		}
		return strings.Repeat(string(rune(r)), n), nil
	case "objs": // val1, val2, ... of an object
		m := map[string]any{}
		for i, value := range args {
			m[fmt.Sprintf("val%d", i+1)] = value
		}
		return m, nil
	case "schemas":
		s := &crdSchema{Type: "object", Properties: map[string]*crdSchema{}}
		for i := range args {
			item, ok := schemaArg(i)
			if !ok {
				return nil, bad
			}
			s.Properties[fmt.Sprintf("val%d", i+1)] = item
		}
		return s, nil
	case "primitiveType":
		typ, ok1 := args[0].(string)
		format, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, bad
		}
		return &crdSchema{Type: typ, Format: format}, nil
	case "objectType", "objectTypePtr":
		props, ok := args[0].(map[string]any)
		if !ok {
			return nil, bad
		}
		s := &crdSchema{Type: "object", Properties: map[string]*crdSchema{}}
		for key, value := range props {
			item, ok := value.(*crdSchema)
			if !ok {
				return nil, bad
			}
			s.Properties[key] = item
		}
		return s, nil
	case "mapType", "mapTypePtr":
		item, ok := schemaArg(0)
		if !ok {
			return nil, bad
		}
		return &crdSchema{Type: "object", AdditionalProperties: item}, nil
	case "listType", "listTypePtr", "listSetType":
		item, ok := schemaArg(0)
		if !ok {
			return nil, bad
		}
		listType := "atomic"
		if name == "listSetType" {
			listType = "set"
		}
		return &crdSchema{Type: "array", ListType: listType, Items: item}, nil
	case "listMapType", "listMapTypePtr":
		item, ok := schemaArg(1)
		if !ok {
			return nil, bad
		}
		return &crdSchema{Type: "array", ListType: "map", Items: item}, nil
	case "intOrStringType":
		return &crdSchema{IntOrString: true}, nil
	case "withRule", "withRulePtr", "withMaxLength", "withMaxItems", "withMaxProperties", "cloneWithRule":
		// rules and size limits: no effect on the value
		if s, ok := schemaArg(0); ok {
			copied := *s
			return &copied, nil
		}
		return nil, bad
	case "withDefault": // the data is given: a default does not change it
		if s, ok := schemaArg(1); ok {
			return s, nil
		}
		return nil, bad
	case "withNullable", "withNullablePtr":
		nullable, ok := args[0].(bool)
		s, ok2 := schemaArg(1)
		if !ok || !ok2 {
			return nil, bad
		}
		copied := *s
		copied.Nullable = nullable
		return &copied, nil
	case "ptr.To":
		return args[0], nil
	}
	return nil, bad
}

func convertNumber(to string, value any) (any, error) {
	var f float64
	var i int64
	isInt := true
	switch v := value.(type) {
	case int:
		i = int64(v)
	case int32:
		i = int64(v)
	case int64:
		i = v
	case float32:
		f, isInt = float64(v), false
	case float64:
		f, isInt = v, false
	default:
		return nil, notConstant{fmt.Sprintf("%s(%T)", to, value)}
	}
	if isInt {
		f = float64(i)
	} else {
		i = int64(f)
	}
	switch to {
	case "int64":
		return i, nil
	case "int32":
		return int32(i), nil
	case "int":
		return int(i), nil
	case "float32":
		return float32(f), nil
	}
	return f, nil
}

// compositeValue: []interface{}{...}, map[string]interface{}{...}, map[string]schema.Structural{...},
// schema.Structural{...} and the like.
func (c *crdFile) compositeValue(lit *ast.CompositeLit) (any, error) {
	bad := notConstant{fmt.Sprintf("%s: a composite literal this reader does not fold", c.fset.Position(lit.Pos()))}
	switch t := lit.Type.(type) {
	case *ast.ArrayType:
		var list []any
		for _, elt := range lit.Elts {
			value, err := c.goValue(elt)
			if err != nil {
				return nil, err
			}
			list = append(list, value)
		}
		if list == nil {
			list = []any{}
		}
		return list, nil
	case *ast.MapType:
		m := map[string]any{}
		for _, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				return nil, bad
			}
			key, err := c.goValue(kv.Key)
			text, isString := key.(string)
			if err != nil || !isString {
				return nil, bad
			}
			var value any
			if inner, ok := kv.Value.(*ast.CompositeLit); ok && inner.Type == nil {
				// map[string]schema.Structural{"a": {...}}: the element type is implied
				value, err = c.structuralValue(inner)
			} else {
				value, err = c.goValue(kv.Value)
			}
			if err != nil {
				return nil, err
			}
			m[text] = value
		}
		return m, nil
	case *ast.SelectorExpr:
		if t.Sel.Name == "Structural" {
			return c.structuralValue(lit)
		}
	}
	return nil, bad
}

// structuralValue reads a schema.Structural{...} literal: Generic{Type, Nullable}, Properties,
// Items, AdditionalProperties, Extensions{XListType, XIntOrString, XPreserveUnknownFields,
// XEmbeddedResource}, ValueValidation{Format} (validations other than the format do not change
// the value).
func (c *crdFile) structuralValue(lit *ast.CompositeLit) (*crdSchema, error) {
	bad := notConstant{fmt.Sprintf("%s: a schema this reader does not fold", c.fset.Position(lit.Pos()))}
	s := &crdSchema{}
	for name, value := range compositeFields(lit) {
		switch name {
		case "Generic":
			for field, v := range compositeFields(value) {
				folded, err := c.goValue(v)
				if err != nil {
					return nil, err
				}
				switch field {
				case "Type":
					s.Type, _ = folded.(string)
				case "Nullable":
					s.Nullable, _ = folded.(bool)
				}
			}
		case "Properties":
			props, err := c.goValue(value)
			m, ok := props.(map[string]any)
			if err != nil || !ok {
				return nil, bad
			}
			s.Properties = map[string]*crdSchema{}
			for key, item := range m {
				sub, ok := item.(*crdSchema)
				if !ok {
					return nil, bad
				}
				s.Properties[key] = sub
			}
		case "Items":
			item, err := c.goValue(value)
			sub, ok := item.(*crdSchema)
			if err != nil || !ok {
				return nil, bad
			}
			s.Items = sub
		case "AdditionalProperties":
			inner := compositeFields(unaddress(value))["Structural"]
			item, err := c.goValue(inner)
			sub, ok := item.(*crdSchema)
			if inner == nil || err != nil || !ok {
				return nil, bad
			}
			s.AdditionalProperties = sub
		case "Extensions":
			for field, v := range compositeFields(value) {
				folded, err := c.goValue(v)
				if err != nil {
					return nil, err
				}
				switch field {
				case "XListType":
					s.ListType, _ = folded.(string)
				case "XIntOrString":
					s.IntOrString, _ = folded.(bool)
				case "XPreserveUnknownFields", "XEmbeddedResource":
					if b, _ := folded.(bool); b {
						s.Unhandled = true
					}
				case "XListMapKeys":
				default:
					s.Unhandled = true
				}
			}
		case "ValueValidation":
			if format, ok := compositeFields(unaddress(value))["Format"]; ok {
				folded, err := c.goValue(format)
				if err != nil {
					return nil, err
				}
				s.Format, _ = folded.(string)
			}
		case "ValidationExtensions": // rules: no effect on the value
		default:
			return nil, bad
		}
	}
	return s, nil
}

func unaddress(e ast.Expr) ast.Expr {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		return u.X
	}
	return e
}

// crdLiteral writes a custom resource's data as the CEL literal of the value the CRD environment
// makes of it under the schema (k8s.io/apiserver/pkg/cel/common.UnstructuredToVal), or says why
// no literal is that value exactly.
func crdLiteral(value any, s *crdSchema) (string, error) {
	no := func(why string, args ...any) (string, error) { return "", fmt.Errorf(why, args...) }
	if s == nil {
		return no("no schema")
	}
	if s.Unhandled {
		return no("unknown fields preserved or an embedded resource")
	}
	if value == nil {
		if s.Nullable {
			return "null", nil
		}
		return no("null where the schema is not nullable")
	}
	if s.IntOrString {
		switch v := value.(type) {
		case int, int32, int64:
			return fmt.Sprintf("dyn(%d)", v), nil
		case string:
			return "dyn(" + strconv.Quote(v) + ")", nil
		}
		return no("data not of the schema's type: int-or-string holding %T", value)
	}
	switch s.Type {
	case "integer":
		switch v := value.(type) {
		case int, int32, int64:
			return fmt.Sprintf("%d", v), nil
		}
	case "number":
		var f float64
		switch v := value.(type) {
		case int:
			f = float64(v)
		case int32:
			f = float64(v)
		case int64:
			f = float64(v)
		case float32:
			f = float64(v)
		case float64:
			f = v
		default:
			return no("data not of the schema's type: number holding %T", value)
		}
		return doubleLiteral(f)
	case "boolean":
		if b, ok := value.(bool); ok {
			return strconv.FormatBool(b), nil
		}
	case "string":
		text, ok := value.(string)
		if !ok {
			return no("data not of the schema's type: string holding %T", value)
		}
		return stringLiteral(text, s.Format)
	case "array":
		list, ok := value.([]any)
		if !ok {
			return no("data not of the schema's type: array holding %T", value)
		}
		if s.ListType != "" && s.ListType != "atomic" {
			return no("x-kubernetes-list-type set or map (equality and + are not a list literal's): %s", s.ListType)
		}
		items := make([]string, 0, len(list))
		for _, item := range list {
			text, err := crdLiteral(item, s.Items)
			if err != nil {
				return "", err
			}
			items = append(items, text)
		}
		return "[" + strings.Join(homogeneous(items), ", ") + "]", nil
	case "object":
		m, ok := value.(map[string]any)
		if !ok {
			return no("data not of the schema's type: object holding %T", value)
		}
		keys := make([]string, 0, len(m))
		for key := range m {
			// A field an object's schema does not declare is not part of its CEL value (the
			// CRD environment neither reads nor iterates it).
			if s.Properties == nil || s.Properties[key] != nil {
				keys = append(keys, key)
			}
		}
		sort.Strings(keys)
		values := make([]string, 0, len(m))
		for _, key := range keys {
			item := s.AdditionalProperties
			if s.Properties != nil {
				item = s.Properties[key]
			}
			if item == nil {
				return no("an object whose schema has neither properties nor additionalProperties")
			}
			text, err := crdLiteral(m[key], item)
			if err != nil {
				return "", err
			}
			values = append(values, text)
		}
		values = homogeneous(values)
		entries := make([]string, len(keys))
		for i, key := range keys {
			name := key
			if s.Properties != nil { // an object's fields are read by their escaped names
				escaped, ok := apiservercel.Escape(key)
				if !ok {
					return no("a field name CEL cannot read: %q", key)
				}
				name = escaped
			}
			entries[i] = strconv.Quote(name) + ": " + values[i]
		}
		return "{" + strings.Join(entries, ", ") + "}", nil
	}
	return no("data not of the schema's type: %q holding %T", s.Type, value)
}

// homogeneous: the elements as they are when they are literals of one kind, else each as dyn()
// (the environment refuses a list or map literal whose elements differ in type).
func homogeneous(items []string) []string {
	kinds := map[string]bool{}
	for _, item := range items {
		kinds[literalKind(item)] = true
	}
	if len(kinds) <= 1 {
		return items
	}
	out := make([]string, len(items))
	for i, item := range items {
		if strings.HasPrefix(item, "dyn(") {
			out[i] = item
		} else {
			out[i] = "dyn(" + item + ")"
		}
	}
	return out
}

// literalKind: the type of a literal crdLiteral wrote, as far as a literal's elements must agree
// (a list or map literal is given its full shape, so [1] and ['a'] differ).
func literalKind(text string) string {
	switch {
	case strings.HasPrefix(text, "dyn("):
		return "dyn"
	case text == "null":
		return "null"
	case text == "true" || text == "false":
		return "bool"
	case strings.HasPrefix(text, "\""):
		return "string"
	case strings.HasPrefix(text, "b\""):
		return "bytes"
	case strings.HasPrefix(text, "duration("):
		return "duration"
	case strings.HasPrefix(text, "timestamp("):
		return "timestamp"
	case strings.HasPrefix(text, "[") || strings.HasPrefix(text, "{"):
		return text // compare whole shapes: only identical nested literals share a kind for sure
	case strings.ContainsAny(text, ".eE") || strings.HasPrefix(text, "double("):
		return "double"
	}
	return "int"
}

// doubleLiteral: the shortest text that reads back as the same float64 (as a CEL double).
func doubleLiteral(f float64) (string, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("a double with no literal: %v", f)
	}
	if f == 0 && math.Signbit(f) {
		return "-0.0", nil
	}
	text := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(text, ".e") {
		text += ".0"
	}
	return text, nil
}

// stringLiteral: a string, or the value its format makes of it in the CRD environment (byte:
// base64 bytes; duration: strfmt.ParseDuration, which is time.ParseDuration where that succeeds;
// date: midnight UTC; date-time: RFC 3339).
func stringLiteral(text, format string) (string, error) {
	switch format {
	case "byte":
		data, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return "", fmt.Errorf("a format whose value has no exact literal: byte %q: %v", text, err)
		}
		var out strings.Builder
		out.WriteString(`b"`)
		for _, b := range data {
			fmt.Fprintf(&out, `\x%02x`, b)
		}
		out.WriteString(`"`)
		return out.String(), nil
	case "duration":
		d, err := time.ParseDuration(text)
		if err != nil {
			return "", fmt.Errorf("a format whose value has no exact literal: duration %q", text)
		}
		return "duration(" + strconv.Quote(d.String()) + ")", nil
	case "date":
		if _, err := time.Parse(time.DateOnly, text); err != nil {
			return "", fmt.Errorf("a format whose value has no exact literal: date %q", text)
		}
		return "timestamp(" + strconv.Quote(text+"T00:00:00Z") + ")", nil
	case "date-time":
		if _, err := time.Parse(time.RFC3339, text); err != nil {
			return "", fmt.Errorf("a format whose value has no exact literal: date-time %q", text)
		}
		return "timestamp(" + strconv.Quote(text) + ")", nil
	}
	return strconv.Quote(text), nil
}

// crdCase: one table entry of the CRD tests.
type crdCase struct {
	self, oldSelf       string // literals; "" with selfWhy/oldSelfWhy when none is exact
	selfWhy, oldSelfWhy string
	hasOld              bool
}

// crdTableFunctions: the tests whose tables are read.
var crdTableFunctions = map[string]bool{
	"TestValidationExpressions": true, "TestCelCostStability": true, "TestCelEstimatedCostStability": true,
}

// crdExpressionFields: the fields that hold expressions in the CRD tables, and what the table
// expects of each: true (a valid rule; the cost-stability tests fail on any validation error
// too), or an error.
var crdExpressionFields = map[string]string{"valid": "list", "errors": "keys", "expectCost": "keys"}
var crdExpectation = map[string]string{"valid": "true", "errors": "error", "expectCost": "true"}

// extractCRDTests reads every composite literal with expression fields (valid, errors,
// expectCost) and binds self/oldSelf from its obj/oldObj under its schema/oldSchema.
func extractCRDTests(f *goFile) ([]upstreamCase, int) {
	c := newCRDFile(f)
	var cases []upstreamCase
	skipped := 0
	for _, decl := range f.file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil || !crdTableFunctions[fn.Name.Name] {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			fields := compositeFields(lit)
			has := false
			for name := range crdExpressionFields {
				if _, ok := fields[name]; ok {
					has = true
				}
			}
			if !has {
				return true
			}
			binding := c.bindingOf(fields)
			for name, how := range crdExpressionFields {
				list, ok := fields[name].(*ast.CompositeLit)
				if !ok {
					continue
				}
				for _, elt := range list.Elts {
					e := elt
					if how == "keys" {
						kv, ok := elt.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						e = kv.Key
					}
					value, err := c.goValue(e)
					text, isString := value.(string)
					if err != nil || !isString {
						skipped++
						continue
					}
					uc := f.newCase(e.Pos(), text, "")
					uc.crd = &binding
					uc.expect = crdExpectation[name]
					cases = append(cases, uc)
				}
			}
			return false
		})
	}
	return cases, skipped
}

func (c *crdFile) bindingOf(fields map[string]ast.Expr) crdCase {
	var b crdCase
	if fields["isRoot"] != nil {
		if root, _ := c.goValue(fields["isRoot"]); root == true {
			b.selfWhy = "a root object, where apiVersion, kind and metadata are declared besides (isRoot)"
			b.oldSelfWhy = b.selfWhy
			return b
		}
	}
	literal := func(objField, schemaField string) (string, string) {
		obj, ok := fields[objField]
		if !ok {
			return "", "the case has no data: no " + objField
		}
		schemaExpr := fields[schemaField]
		if schemaExpr == nil {
			schemaExpr = fields["schema"]
		}
		if schemaExpr == nil {
			return "", "the case has no schema: " + schemaField
		}
		value, err := c.goValue(obj)
		if err != nil {
			return "", "data this reader does not fold (YAML, a function): " + err.Error()
		}
		schemaValue, err := c.goValue(schemaExpr)
		s, ok := schemaValue.(*crdSchema)
		if err != nil || !ok {
			return "", fmt.Sprintf("a schema this reader does not fold (YAML, a function): %v", err)
		}
		text, err := crdLiteral(value, s)
		if err != nil {
			return "", err.Error()
		}
		return text, ""
	}
	b.self, b.selfWhy = literal("obj", "schema")
	if _, ok := fields["oldObj"]; ok {
		b.hasOld = true
	}
	b.oldSelf, b.oldSelfWhy = literal("oldObj", "oldSchema")
	return b
}

// bindCRD asks an expression of a CRD table: as it is when it reads neither self nor oldSelf,
// else inside cel.bind of the literals (the closing parenthesis on a line of its own, after any
// // comment the rule ends with); "" and why when a literal it needs is not exact.
func bindCRD(env *cel.Env, c upstreamCase) (expression, why string) {
	reads := map[string]bool{}
	if parsed, issues := env.Parse(c.Expression); issues == nil || issues.Err() == nil {
		celast.PreOrderVisit(parsed.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
			if e.Kind() == celast.IdentKind {
				reads[e.AsIdent()] = true
			}
		}))
	}
	expression = c.Expression
	if !reads["self"] && !reads["oldSelf"] {
		return expression, ""
	}
	defer func() {
		if why == "" && !givesTheTablesAnswer(expression, c.expect) {
			expression, why = "", "inexact: upstream's DRA environment does not give the table's answer ("+
				c.expect+") for the bound rule"
		}
	}()
	if reads["oldSelf"] {
		if c.crd.oldSelf == "" {
			return "", "oldSelf: " + c.crd.oldSelfWhy
		}
		expression = fmt.Sprintf("cel.bind(oldSelf, %s, %s\n)", c.crd.oldSelf, expression)
	}
	if reads["self"] {
		if c.crd.self == "" {
			return "", "self: " + c.crd.selfWhy
		}
		expression = fmt.Sprintf("cel.bind(self, %s, %s\n)", c.crd.self, expression)
	}
	return expression, ""
}

// extractFormattingTest: TestStringFormat builds `fmt.Sprintf("%q.format([%s])", format,
// formatArgs)` for each case; a case with dynArgs (variables of its own) or a locale is not asked
// (counted as not constant). TestStringFormatHeterogeneousLiterals' `expr` fields too.
func extractFormattingTest(f *goFile) ([]upstreamCase, int) {
	cases, skipped := fieldRule("expr")(f)
	for _, decl := range f.file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil || fn.Name.Name != "TestStringFormat" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			fields := compositeFields(lit)
			formatExpr, ok := fields["format"]
			if !ok {
				return true
			}
			format, ok1 := f.stringOf(formatExpr, nil)
			args := ""
			ok2 := true
			if e, has := fields["formatArgs"]; has {
				args, ok2 = f.stringOf(e, nil)
			}
			_, hasDyn := fields["dynArgs"]
			_, hasLocale := fields["locale"]
			if !ok1 || !ok2 || hasDyn || hasLocale {
				skipped++
				return false
			}
			cases = append(cases, f.newCase(formatExpr.Pos(), fmt.Sprintf("%q.format([%s])", format, args), ""))
			return false
		})
	}
	return cases, skipped
}

// givesTheTablesAnswer: upstream's DRA environment evaluates a bound rule as the table expects
// the CRD environment to (true, or an error), the proof that the literals are exact for it. The
// DRA environment's cost limit is not applied here: a rule it refuses as too complex (comparing
// types is, to its estimator) is still asked, and must be refused by both.
func givesTheTablesAnswer(expression, expect string) bool {
	compiled := upstreamCompile(expression, false)
	matched := false
	var err error
	if compiled.Error != nil { // a typed nil pointer must not become a non-nil error
		err = compiled.Error
	} else {
		matched, _, err = compiled.DeviceMatches(context.Background(), dracel.Device{Driver: "guard.example.com"})
	}
	switch expect {
	case "true":
		return err == nil && matched
	case "error":
		return err != nil
	}
	return false
}

// extractCRDCompilationTest: compilation_test.go checks rules against schemas without data
// (TestCelCompilation: `Rule` and `MessageExpression` fields; TestCostEstimation: the rule
// argument of its schema builders, gen...WithRule(..., rule)). A rule that reads self or oldSelf
// has no data to bind and is not asked; the others are asked as they are.
func extractCRDCompilationTest(f *goFile) ([]upstreamCase, int) {
	noData := &crdCase{selfWhy: "the case has no data (a compile-time test, a schema without an object)"}
	noData.oldSelfWhy = noData.selfWhy
	cases, skipped := fieldRule("Rule", "MessageExpression")(f)
	ast.Inspect(f.file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok && strings.HasSuffix(id.Name, "WithRule") &&
			(strings.HasPrefix(id.Name, "gen") || strings.HasPrefix(id.Name, "get")) {
			last := call.Args[len(call.Args)-1]
			if text, ok := f.stringOf(last, nil); ok {
				cases = append(cases, f.newCase(last.Pos(), text, ""))
			} else {
				skipped++
			}
		}
		return true
	})
	for i := range cases {
		cases[i].crd = noData
	}
	return cases, skipped
}
