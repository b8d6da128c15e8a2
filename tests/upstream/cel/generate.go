package main

import (
	"fmt"
	"math/rand/v2"
)

// A seeded generator of selector expressions over the device set: well-typed ones built from
// typed pieces (attributes of each type, capacities, literals, operators, macros, the string,
// list, quantity, semver, URL and format functions) and, one time in five, an ill-typed one (operands of
// the wrong type, a missing field, an unknown function), so both compile errors and runtime
// errors are compared, not only values.
type exprGenerator struct {
	r *rand.Rand
}

func newExprGenerator(seed uint64) *exprGenerator {
	return &exprGenerator{r: rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))}
}

func (g *exprGenerator) pick(options ...string) string { return options[g.r.IntN(len(options))] }

const (
	gpu = `device.attributes["gpu.example.com"]`
	nic = `device.attributes["nic.example.com"]`
	k8s = `device.attributes["resource.kubernetes.io"]`
)

func (g *exprGenerator) intTerm(depth int) string {
	if depth <= 0 || g.r.IntN(3) == 0 {
		return g.pick(gpu+".index", "3", "-2", "7", `size(`+nic+".tags)", `size("abc")`, k8s+".numaNode")
	}
	switch g.r.IntN(5) {
	case 0:
		return "(" + g.intTerm(depth-1) + " " + g.pick("+", "-", "*", "/", "%") + " " + g.intTerm(depth-1) + ")"
	case 1:
		return g.boolTerm(depth-1) + " ? " + g.intTerm(depth-1) + " : " + g.intTerm(depth-1)
	case 2:
		return g.stringTerm(depth-1) + ".size()"
	case 3:
		return "[" + g.intTerm(depth-1) + ", " + g.intTerm(depth-1) + "]." + g.pick("max()", "min()", "sum()", "size()")
	default:
		return "int(" + g.pick(`"12"`, `2.7`, `3u`, g.stringTerm(depth-1)) + ")"
	}
}

func (g *exprGenerator) stringTerm(depth int) string {
	if depth <= 0 || g.r.IntN(3) == 0 {
		return g.pick(gpu+".model", nic+".model", `device.driver`, `"h100"`, `"a-b-c"`, k8s+".pcieRoot", `""`)
	}
	switch g.r.IntN(5) {
	case 0:
		return g.stringTerm(depth-1) + " + " + g.stringTerm(depth-1)
	case 1:
		return g.stringTerm(depth-1) + "." + g.pick("upperAscii()", "lowerAscii()", "trim()", `replace("a", "b")`, "substring(1)", "charAt(0)")
	case 2:
		return "string(" + g.intTerm(depth-1) + ")"
	case 3:
		return g.stringTerm(depth-1) + `.find("[0-9]+")`
	default:
		return `[` + g.stringTerm(depth-1) + `, "x"].join("-")`
	}
}

func (g *exprGenerator) boolTerm(depth int) string {
	if depth <= 0 || g.r.IntN(4) == 0 {
		return g.pick(gpu+".healthy", "device.allowMultipleAllocations", "true", "false",
			"has("+gpu+".model)", "has("+nic+".tags)", `"model" in `+gpu)
	}
	switch g.r.IntN(14) {
	case 0:
		return g.intTerm(depth-1) + " " + g.pick("==", "!=", "<", "<=", ">", ">=") + " " + g.intTerm(depth-1)
	case 1:
		return g.stringTerm(depth-1) + " " + g.pick("==", "!=", "<", ">") + " " + g.stringTerm(depth-1)
	case 2:
		return "(" + g.boolTerm(depth-1) + " " + g.pick("&&", "||") + " " + g.boolTerm(depth-1) + ")"
	case 3:
		return "!" + g.boolTerm(depth-1)
	case 4:
		return g.stringTerm(depth-1) + "." + g.pick(`startsWith("h")`, `endsWith("0")`, `contains("-")`, `matches("^[a-z]+[0-9]*$")`)
	case 5:
		return nic + ".tags." + g.pick("exists", "all", "exists_one") + "(t, " + g.pick(`t == "rdma"`, `t.size() > 3`, `t.startsWith("e")`) + ")"
	case 6:
		return k8s + ".numaNode.includes(" + g.intTerm(depth-1) + ")"
	case 7:
		return `device.capacity["gpu.example.com"].memory.` + g.pick("isGreaterThan", "isLessThan") + `(quantity("` + g.pick("1Gi", "80Gi", "100Gi", "500m") + `"))`
	case 8:
		return gpu + ".driverVersion." + g.pick("isGreaterThan", "isLessThan") + `(semver("` + g.pick("1.2.3", "1.0.0", "2.0.0") + `"))`
	case 9:
		return g.intTerm(depth-1) + " in [" + g.intTerm(depth-1) + ", " + g.intTerm(depth-1) + "]"
	case 10:
		return gpu + ".?model.orValue(" + g.stringTerm(depth-1) + ") == " + g.stringTerm(depth-1)
	case 11:
		return g.urlTerm(depth - 1)
	case 12:
		return g.formatTerm(depth - 1)
	default:
		return "cel.bind(x, " + g.intTerm(depth-1) + ", x * x >= " + g.intTerm(depth-1) + ")"
	}
}

// urlTerm: the URL library on valid and invalid URLs (url() of an invalid one is an error).
func (g *exprGenerator) urlTerm(depth int) string {
	text := g.pick(gpu+".endpoint", `"https://u:p@a.example:8443/x%2Fy?q=1&q=2#f"`, `"/p?x"`,
		`"mongodb://a:1:2/"`, `"http://[::1]:80/"`, `"x y"`, `"http://a:1:2/"`, g.stringTerm(depth))
	if g.r.IntN(3) == 0 {
		return "isURL(" + text + ")"
	}
	if g.r.IntN(4) == 0 {
		return "size(url(" + text + ").getQuery()) " + g.pick("==", ">") + " 1"
	}
	return "url(" + text + ")." + g.pick("getScheme()", "getHost()", "getHostname()", "getPort()",
		"getEscapedPath()") + " " + g.pick("==", "!=") + " " + g.stringTerm(depth)
}

// formatTerm: the Kubernetes format library, by name or by function.
func (g *exprGenerator) formatTerm(depth int) string {
	name := g.pick("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
		"dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri",
		"uuid", "byte", "date", "datetime")
	format := "format." + name + "()"
	if g.r.IntN(3) == 0 {
		format = `format.named("` + name + `").value()`
	}
	validated := format + ".validate(" + g.stringTerm(depth) + ")"
	if g.r.IntN(2) == 0 {
		return validated + ".hasValue()"
	}
	return validated + `.orValue([]).size() ` + g.pick("==", ">") + " " + g.intTerm(depth)
}

// illTyped breaks a well-typed expression in one of the ways users do.
func (g *exprGenerator) illTyped() string {
	switch g.r.IntN(7) {
	case 0:
		return g.intTerm(1) + " == " + g.stringTerm(1)
	case 1:
		return g.stringTerm(1) + " + " + g.intTerm(1) + ` == "x"`
	case 2:
		return "!" + g.intTerm(1)
	case 3:
		return gpu + ".nonexistent == 1"
	case 4:
		return "device.nonexistent == 1"
	case 5:
		return g.pick("isQuantity", "isSemver", "isURL") + "(" + g.intTerm(1) + ")"
	default:
		return g.boolTerm(1) + " && " + g.intTerm(1)
	}
}

func (g *exprGenerator) expression() string {
	if g.r.IntN(5) == 0 {
		return g.illTyped()
	}
	return g.boolTerm(3)
}

// runGenerated compares `count` generated expressions; every difference is a failure, printed
// with its seed (the compile-time gaps this once tolerated, static cost estimation, type checking
// and constant folding, are closed).
func runGenerated(ours *ourEngine, count int, first uint64) (int, error) {
	same, different := 0, 0
	for seed := first; seed < first+uint64(count); seed++ {
		expression := newExprGenerator(seed).expression()
		differences, err := judge(ours, corpusEntry{Kind: "selector", Expression: expression})
		if err != nil {
			return 0, err
		}
		if len(differences) == 0 {
			same++
			continue
		}
		different++
		fmt.Printf("seed %d: %q differs:\n", seed, expression)
		for _, line := range differences {
			fmt.Printf("    %s\n", line)
		}
	}
	fmt.Printf("upstream-cel: %d generated expressions (seeds %d-%d): %d same, %d differ\n",
		count, first, first+uint64(count)-1, same, different)
	return different, nil
}
