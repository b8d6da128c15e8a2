package main

// The declarations of upstream's DRA CEL environment, written as the text our type checker and
// cost estimator read (cluster/dracel/declarations.txt): every function overload (name, overload id, call
// style, type parameters, result and argument types), the variables, the fields of the declared
// object types, and the size limits of the `device` variable's declared types (the sizes the
// static cost estimate assumes). `upstream-cel --dump-declarations FILE` writes it;
// `--check-declarations FILE` fails when the committed file is not what upstream declares, so
// the two cannot drift apart.

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

const declarationsHeader = "# The declarations of upstream's DRA CEL environment (k8s.io/dynamic-resource-allocation/cel\n" +
	"# v0.37.2, every feature on, new expressions), read by numadra's type checker and cost estimator.\n" +
	"# Generated: upstream-cel --dump-declarations dracel/declarations.txt (tests/upstream/cel/declarations.go);\n" +
	"# the upstream.cel test fails when this file is not what upstream declares. Do not edit.\n" +
	"# overload <TAB> function <TAB> id <TAB> member|global <TAB> type params (, or -) <TAB> result <TAB> arguments...\n" +
	"# variable <TAB> name <TAB> type;  field <TAB> object type <TAB> field <TAB> type\n" +
	"# size <TAB> path <TAB> max elements <TAB> kind [<TAB> attribute]: the declared type tree under a variable\n"

// encodeType writes a type so that its kind is explicit: primitives by name, list(T), map(K,V),
// type(T), opaque:name(params), struct:name, and ~name for a type parameter.
func encodeType(t *types.Type) string {
	switch t.Kind() {
	case types.DynKind:
		return "dyn"
	case types.AnyKind:
		return "any"
	case types.BoolKind:
		return "bool"
	case types.BytesKind:
		return "bytes"
	case types.DoubleKind:
		return "double"
	case types.DurationKind:
		return "duration"
	case types.ErrorKind:
		return "error"
	case types.IntKind:
		return "int"
	case types.NullTypeKind:
		return "null"
	case types.StringKind:
		return "string"
	case types.TimestampKind:
		return "timestamp"
	case types.UintKind:
		return "uint"
	case types.TypeParamKind:
		return "~" + t.TypeName()
	case types.ListKind:
		return "list(" + encodeType(t.Parameters()[0]) + ")"
	case types.MapKind:
		return "map(" + encodeType(t.Parameters()[0]) + "," + encodeType(t.Parameters()[1]) + ")"
	case types.TypeKind:
		if len(t.Parameters()) == 0 {
			return "type"
		}
		return "type(" + encodeType(t.Parameters()[0]) + ")"
	case types.StructKind:
		return "struct:" + t.TypeName()
	case types.OpaqueKind:
		params := make([]string, len(t.Parameters()))
		for i, p := range t.Parameters() {
			params[i] = encodeType(p)
		}
		if len(params) == 0 {
			return "opaque:" + t.TypeName()
		}
		return "opaque:" + t.TypeName() + "(" + strings.Join(params, ",") + ")"
	}
	panic(fmt.Sprintf("declarations: a type of kind %v (%v) has no encoding", t.Kind(), t))
}

// renderDeclarations writes the environment's declarations in a stable order.
func renderDeclarations() ([]byte, error) {
	compiled := upstreamCompile("true", false)
	if compiled.Error != nil {
		return nil, fmt.Errorf("compiling a constant: %v", compiled.Error)
	}
	env := compiled.Environment
	// Functions by name; a function's overloads in upstream's order (the order overload
	// resolution tries them in).
	functions := env.Functions()
	names := make([]string, 0, len(functions))
	for name := range functions {
		names = append(names, name)
	}
	sort.Strings(names)
	var overloads []string
	for _, name := range names {
		for _, o := range functions[name].OverloadDecls() {
			overloads = append(overloads, overloadLine(name, o))
		}
	}
	var lines []string
	var objects []*types.Type
	for _, v := range env.Variables() {
		lines = append(lines, "variable\t"+v.Name()+"\t"+encodeType(v.Type()))
		if v.Type().Kind() == types.StructKind {
			objects = append(objects, v.Type())
		}
	}
	fieldLines, err := objectFields(env, objects)
	if err != nil {
		return nil, err
	}
	lines = append(lines, fieldLines...)
	sort.Strings(lines)
	sizes, err := deviceSizes(env)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString(declarationsHeader)
	for _, line := range append(append(overloads, lines...), sizes...) {
		out.WriteString(line + "\n")
	}
	return out.Bytes(), nil
}

func overloadLine(name string, o *decls.OverloadDecl) string {
	style := "global"
	if o.IsMemberFunction() {
		style = "member"
	}
	params := "-"
	if tp := o.TypeParams(); len(tp) > 0 {
		sorted := append([]string(nil), tp...)
		sort.Strings(sorted)
		params = strings.Join(sorted, ",")
	}
	fields := []string{"overload", name, o.ID(), style, params, encodeType(o.ResultType())}
	for _, a := range o.ArgTypes() {
		fields = append(fields, encodeType(a))
	}
	return strings.Join(fields, "\t")
}

// objectFields lists the fields of the declared object types (and of object types they hold).
func objectFields(env *cel.Env, objects []*types.Type) ([]string, error) {
	provider := env.CELTypeProvider()
	var lines []string
	seen := map[string]bool{}
	for len(objects) > 0 {
		object := objects[0]
		objects = objects[1:]
		if seen[object.TypeName()] {
			continue
		}
		seen[object.TypeName()] = true
		declType := findDeclType(object.TypeName())
		if declType == nil {
			return nil, fmt.Errorf("object type %s is not declared", object.TypeName())
		}
		for name := range declType.Fields {
			field, found := provider.FindStructFieldType(object.TypeName(), name)
			if !found {
				return nil, fmt.Errorf("object type %s has no field %s", object.TypeName(), name)
			}
			lines = append(lines, "field\t"+object.TypeName()+"\t"+name+"\t"+encodeType(field.Type))
			if field.Type.Kind() == types.StructKind {
				objects = append(objects, field.Type)
			}
		}
	}
	return lines, nil
}

// deviceSizes walks the declared type of `device` as upstream's sizeEstimator does: each node's
// path (fields by name, @keys, @values, @items) and MaxElements, and which node is the attribute
// type (any field name selected from a map of attributes reaches it).
func deviceSizes(env *cel.Env) ([]string, error) {
	deviceType, found := env.CELTypeProvider().FindStructType("kubernetes.DRADevice")
	if !found {
		return nil, fmt.Errorf("kubernetes.DRADevice is not declared")
	}
	declType := findDeclType(deviceType.Parameters()[0].TypeName())
	if declType == nil {
		return nil, fmt.Errorf("no declared type for kubernetes.DRADevice")
	}
	attribute := declType.Fields["attributes"].Type.ElemType.ElemType
	var lines []string
	var walk func(path string, t *apiservercel.DeclType)
	walk = func(path string, t *apiservercel.DeclType) {
		kind := "scalar"
		switch {
		case t.IsObject():
			kind = "object"
		case t.IsMap():
			kind = "map"
		case t.IsList():
			kind = "list"
		}
		line := fmt.Sprintf("size\t%s\t%d\t%s", path, t.MaxElements, kind)
		if t == attribute {
			line += "\tattribute"
		}
		lines = append(lines, line)
		names := make([]string, 0, len(t.Fields))
		for name := range t.Fields {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			walk(path+"."+name, t.Fields[name].Type)
		}
		if t.KeyType != nil {
			walk(path+".@keys", t.KeyType)
		}
		if t.ElemType != nil {
			sub := ".@values"
			if t.IsList() {
				sub = ".@items"
			}
			walk(path+sub, t.ElemType)
		}
	}
	walk("device", declType)
	return lines, nil
}

// findDeclType finds the DeclType behind an object type name: the compiler keeps the device's
// declarations; the environment's type provider exposes them as DeclTypes.
func findDeclType(name string) *apiservercel.DeclType {
	compiled := upstreamCompile("true", false)
	provider, ok := compiled.Environment.CELTypeProvider().(interface {
		FindDeclType(string) (*apiservercel.DeclType, bool)
	})
	if !ok {
		return nil
	}
	declType, found := provider.FindDeclType(name)
	if !found {
		return nil
	}
	return declType
}

func dumpDeclarations(path string) int {
	text, err := renderDeclarations()
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	return 0
}

func checkDeclarations(path string) int {
	want, err := renderDeclarations()
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	have, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	if !bytes.Equal(want, have) {
		fmt.Printf("upstream-cel: %s is not what upstream declares: FAIL (regenerate: upstream-cel --dump-declarations %s)\n", path, path)
		return 1
	}
	fmt.Printf("upstream-cel: %s is what upstream declares\n", path)
	return 0
}
