package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A seeded generator of selector expressions over the device set: well-typed ones built from
// typed pieces (attributes of each type, capacities, literals, operators, macros, the string,
// list, quantity and semver functions) and, one time in five, an ill-typed one (operands of
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
	switch g.r.IntN(12) {
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
	default:
		return "cel.bind(x, " + g.intTerm(depth-1) + ", x * x >= " + g.intTerm(depth-1) + ")"
	}
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
		return g.pick("isQuantity", "isSemver") + "(" + g.intTerm(1) + ")"
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

// knownGap names the documented gap a difference belongs to, or "" for an unexplained one.
// Each is a compile-time refusal of upstream's (its cost estimator or its type checker) that
// ours, without those yet, leaves to evaluation; any other difference is unexplained.
func knownGap(differences []string) string {
	text := strings.Join(differences, "\n")
	if strings.Contains(text, "ours compile error") {
		return ""
	}
	switch {
	case strings.Contains(text, "upstream compile error (too complex, exceeds cost limit)"):
		return "static cost estimation"
	case strings.Contains(text, "found no matching overload"):
		return "type checking: overloads"
	case strings.Contains(text, "expected type '"):
		return "type checking: operand and element types"
	case strings.Contains(text, "program instantiation failed: type conversion error"):
		return "constant folding of conversions"
	case strings.Contains(text, "upstream compile error (must evaluate to bool"):
		return "type checking: result type"
	}
	return ""
}

var gapNames = []string{"static cost estimation", "type checking: overloads",
	"type checking: operand and element types", "type checking: result type",
	"constant folding of conversions"}

func runGenerated(ours *ourEngine, count int, first uint64) (int, error) {
	gaps := map[string]int{}
	unexplained := 0
	for seed := first; seed < first+uint64(count); seed++ {
		expression := newExprGenerator(seed).expression()
		differences, err := judge(ours, corpusEntry{Kind: "selector", Expression: expression})
		if err != nil {
			return 0, err
		}
		if len(differences) == 0 {
			gaps["same"]++
			continue
		}
		if gap := knownGap(differences); gap != "" {
			gaps[gap]++
			continue
		}
		unexplained++
		fmt.Printf("seed %d: %q differs (not a known gap):\n", seed, expression)
		for _, line := range differences {
			fmt.Printf("    %s\n", line)
		}
	}
	var known []string
	for _, name := range gapNames {
		known = append(known, fmt.Sprintf("%d %s", gaps[name], name))
	}
	fmt.Printf("upstream-cel: %d generated expressions (seeds %d-%d): %d same; known gaps: %s; %d unexplained\n",
		count, first, first+uint64(count)-1, gaps["same"], strings.Join(known, ", "), unexplained)
	return unexplained, nil
}
