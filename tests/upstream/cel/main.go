// upstream-cel: upstream's DRA CEL environment (k8s.io/dynamic-resource-allocation/cel, with
// the features the scheduler enables, compiled as the API server compiles a new object)
// as the judge of ours (numadra::dracel, through build/bin/dracel-eval over a pipe).
//
// Every expression of the corpus is compiled by both; one refused is an error when read,
// the other's compile error must match it (the category, not the words). An expression both
// accept must get the same static worst-case cost estimate (cel-go's checker.Cost with
// upstream's size and cost model), and is evaluated on every device of the corpus's device set:
// same value, or an error on both. Upstream's estimate above 1,000,000 is a compile-time refusal
// ("too complex, exceeds cost limit"), as the API server's validation makes it.
//
// Every expression whose answers differ must be listed in the expectations file with why
// (the gaps issue 15 closes one by one); a listed expression that agrees fails too, so the
// list stays true.
//
//	upstream-cel --dracel-eval BIN --corpus FILE [--expectations FILE] [--generate N [--first S]] [-v]
//	upstream-cel --dracel-eval BIN --upstream-tests GOMODCACHE [--upstream-expectations FILE] [-v]
//
// Generated expressions (generate.go) must agree too, static cost estimate included; a
// difference fails with its seed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"numadra.dev/tests/upstream/internal/expectations"
	"numadra.dev/tests/upstream/internal/oracle"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"
)

// answer is one side's answer for one expression on one device.
type answer struct {
	CompileError string          `json:"compileError,omitempty"`
	Value        json.RawMessage `json:"value,omitempty"`
	Error        string          `json:"error,omitempty"`
	InputError   string          `json:"inputError,omitempty"`
	// MaxCost is the static worst-case cost of an expression that compiled; both sides
	// must estimate the same.
	MaxCost *uint64 `json:"maxCost,omitempty"`
}

func (a answer) category() string {
	switch {
	case a.CompileError != "":
		return "compile error"
	case a.Error != "":
		return "runtime error"
	case a.InputError != "":
		return "harness error"
	}
	return "value " + string(a.Value)
}

type question struct {
	Expression string         `json:"expression"`
	Kind       string         `json:"kind"`
	Device     questionDevice `json:"device"`
}

type questionDevice struct {
	Driver                   string                                                    `json:"driver"`
	Name                     string                                                    `json:"name,omitempty"`
	AllowMultipleAllocations bool                                                      `json:"allowMultipleAllocations"`
	Attributes               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes"`
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity"`
}

// The devices every expression is evaluated on: a GPU with every attribute type, a NIC with
// list attributes, and a device with nothing (where most lookups fail).
var devices = []questionDevice{
	{
		Driver: "gpu.example.com", Name: "gpu-3",
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model":                           {StringValue: ptr.To("h100")},
			"index":                           {IntValue: ptr.To(int64(3))},
			"healthy":                         {BoolValue: ptr.To(true)},
			"driverVersion":                   {VersionValue: ptr.To("1.2.3-rc.1")},
			"resource.kubernetes.io/numaNode": {IntValue: ptr.To(int64(1))},
			"resource.kubernetes.io/pcieRoot": {StringValue: ptr.To("pci0000:40")},
			"address":                         {StringValue: ptr.To("10.0.0.7")},
			"subnet":                          {StringValue: ptr.To("10.0.0.0/24")},
			"endpoint":                        {StringValue: ptr.To("https://gpu.example.com:8443/v1/health?x=1")},
			"since":                           {StringValue: ptr.To("2026-11-24T10:00:00Z")},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse("80Gi")},
			"share":  {Value: resource.MustParse("500m")},
		},
	},
	{
		Driver: "nic.example.com", Name: "eth1", AllowMultipleAllocations: true,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"resource.kubernetes.io/numaNode": {IntValues: []int64{4, 5, 6, 7}},
			"tags":                            {StringValues: []string{"rdma", "fast", "eth"}},
			"flags":                           {BoolValues: []bool{true, false}},
			"firmware":                        {VersionValues: []string{"1.0.0", "2.1.0"}},
			"model":                           {StringValue: ptr.To("cx7")},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"bandwidth": {Value: resource.MustParse("100G")},
		},
	},
	{Driver: "empty.example.com", Name: "nothing"},
}

func main() {
	os.Exit(run())
}

// countsFlag: where to write what was counted, for the documentation's numbers
// (scripts/check-doc-counts.py).
var countsFlag = flag.String("counts", "", "write what was counted here (\"key value\" lines)")

func run() int {
	evalBinary := flag.String("dracel-eval", "", "build/bin/dracel-eval")
	corpusPath := flag.String("corpus", "", "expressions, one per line")
	expectationsPath := flag.String("expectations", "", "expressions that may differ, with why")
	verbose := flag.Bool("v", false, "print every expression's answers")
	generated := flag.Int("generate", 0, "also compare this many generated expressions")
	first := flag.Uint64("first", 1, "the first seed of the generated expressions")
	dump := flag.String("dump-declarations", "", "write upstream's declarations to this file and stop")
	checkDecls := flag.String("check-declarations", "", "fail unless this file is upstream's declarations")
	flag.Parse()
	counts := map[string]int{}
	if *upstreamTestsFlag != "" { // upstreamtests.go: upstream's own test tables as the corpus
		return upstreamTestsMode(*evalBinary, *verbose, *countsFlag)
	}
	if *dump != "" {
		return dumpDeclarations(*dump)
	}
	if *checkDecls != "" {
		if status := checkDeclarations(*checkDecls); status != 0 || *corpusPath == "" {
			return status
		}
	}
	if *evalBinary == "" || *corpusPath == "" {
		fmt.Fprintln(os.Stderr, "upstream-cel: --dracel-eval and --corpus are required")
		return 2
	}
	corpus, err := readCorpus(*corpusPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	expected, err := readExpectations(*expectationsPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	ours, err := startOurs(*evalBinary)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	defer ours.close()

	unexpected := 0
	for _, entry := range corpus {
		differences, err := judge(ours, entry)
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream-cel:", err)
			return 2
		}
		status := "same"
		if len(differences) > 0 {
			status = "differs"
		}
		counts["upstream-cel.corpus-"+status]++
		_, listed := expected[entry.key()]
		ok := (status == "differs") == listed
		if !ok {
			unexpected++
		}
		if ok && !*verbose && status == "same" {
			continue
		}
		mark := "ok"
		switch {
		case !ok && listed:
			mark = "FAIL: listed as a difference, but the answers agree now (remove it from the expectations)"
		case !ok:
			mark = "FAIL: a difference not in the expectations"
		}
		if status == "differs" && ok && !*verbose {
			continue
		}
		fmt.Printf("%s %q: %s\n", entry.Kind, entry.Expression, mark)
		for _, line := range differences {
			fmt.Printf("    %s\n", line)
		}
	}
	for key := range expected {
		if !corpusHas(corpus, key) {
			fmt.Printf("%s: listed in the expectations but not in the corpus: FAIL\n", key)
			unexpected++
		}
	}
	fmt.Printf("upstream-cel: %d expressions on %d devices: %d same, %d differ (%d listed as known gaps); %d not as expected\n",
		len(corpus), len(devices), counts["upstream-cel.corpus-same"], counts["upstream-cel.corpus-differs"], len(expected), unexpected)
	counts["upstream-cel.corpus"] = len(corpus)
	counts["upstream-cel.corpus-listed"] = len(expected)
	if *generated > 0 {
		unexplained, err := runGenerated(ours, *generated, *first)
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream-cel:", err)
			return 2
		}
		unexpected += unexplained
		counts["upstream-cel.generated"] = *generated
		counts["upstream-cel.generated-differ"] = unexplained
	}
	if err := oracle.WriteCounts(*countsFlag, counts); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-cel:", err)
		return 2
	}
	if unexpected > 0 {
		return 1
	}
	return 0
}

type corpusEntry struct {
	Kind       string // selector or derived
	Expression string
}

// key names the entry as an expected-differences file does: "kind | expression".
func (e corpusEntry) key() string { return e.Kind + expectations.Separator + e.Expression }

func corpusHas(corpus []corpusEntry, key string) bool {
	for _, entry := range corpus {
		if entry.key() == key {
			return true
		}
	}
	return false
}

// readCorpus: one expression per line; "derived: " marks a derived-attribute expression;
// blank lines and lines starting with # are skipped.
func readCorpus(path string) ([]corpusEntry, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var corpus []corpusEntry
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		entry := corpusEntry{Kind: "selector", Expression: line}
		if rest, ok := strings.CutPrefix(line, "derived: "); ok {
			entry = corpusEntry{Kind: "derived", Expression: rest}
		}
		corpus = append(corpus, entry)
	}
	return corpus, scanner.Err()
}

// differenceExpectations is the layout of both expected-differences files.
var differenceExpectations = expectations.Format{Fields: []string{"kind", "expression", "why"}, KeyFields: 2}

// readExpectations reads the expressions that may differ, each with why, by corpusEntry.key().
func readExpectations(path string) (map[string]string, error) {
	entries, err := differenceExpectations.Read(path)
	if err != nil {
		return nil, err
	}
	expected := map[string]string{}
	for _, entry := range entries {
		listed := corpusEntry{Kind: entry.Fields[0], Expression: entry.Fields[1]}
		if listed.Kind != "selector" && listed.Kind != "derived" {
			return nil, entry.Errorf("kind %q is not selector or derived", listed.Kind)
		}
		expected[listed.key()] = entry.Fields[2]
	}
	return expected, nil
}

// judge asks both engines the entry on the corpus's device set.
func judge(ours *ourEngine, entry corpusEntry) ([]string, error) {
	return judgeOn(ours, entry, devices)
}

func detail(a answer) string {
	text := a.CompileError + a.Error + a.InputError
	if a.MaxCost != nil {
		text += fmt.Sprintf(" maxCost %d", *a.MaxCost)
	}
	if text == "" {
		return ""
	}
	if len(text) > 160 {
		text = text[:160] + "..."
	}
	return " (" + strings.ReplaceAll(text, "\n", " ") + ")"
}

// sameAnswer: the same static cost estimate (a cost on one side only is a difference: both
// give one exactly when the expression compiled), the same error category, or the same value.
// A harness error (a question or an answer the harness could not carry) is never the same: a
// judge that cannot judge fails.
func sameAnswer(a, b answer) bool {
	if a.InputError != "" || b.InputError != "" {
		return false
	}
	if (a.MaxCost == nil) != (b.MaxCost == nil) || (a.MaxCost != nil && *a.MaxCost != *b.MaxCost) {
		return false
	}
	if a.Value == nil || b.Value == nil {
		return a.Value == nil && b.Value == nil && a.category() == b.category()
	}
	return sameJSONValue(a.Value, b.Value)
}

// sameJSONValue compares two JSON values exactly: numbers are read as their text
// (json.Decoder.UseNumber), never through float64, so two int64 or uint64 values above 2^53
// that differ are different answers.
func sameJSONValue(a, b json.RawMessage) bool {
	x, errX := decodeExact(a)
	y, errY := decodeExact(b)
	return errX == nil && errY == nil && sameExact(x, y)
}

func decodeExact(text json.RawMessage) (any, error) {
	decoder := json.NewDecoder(bytes.NewReader(text))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return nil, err
	}
	if decoder.More() {
		return nil, fmt.Errorf("trailing data after the JSON value %s", text)
	}
	return value, nil
}

func sameExact(x, y any) bool {
	switch x := x.(type) {
	case json.Number:
		n, ok := y.(json.Number)
		return ok && sameNumber(string(x), string(n))
	case map[string]any:
		m, ok := y.(map[string]any)
		if !ok || len(m) != len(x) {
			return false
		}
		for key, value := range x {
			other, found := m[key]
			if !found || !sameExact(value, other) {
				return false
			}
		}
		return true
	case []any:
		list, ok := y.([]any)
		if !ok || len(list) != len(x) {
			return false
		}
		for i := range x {
			if !sameExact(x[i], list[i]) {
				return false
			}
		}
		return true
	}
	return x == y // string, bool, nil
}

var integerText = regexp.MustCompile(`^-?[0-9]+$`)

// sameNumber: two integers (int64 and uint64 alike) are compared as integers of any size; a
// number written with a fraction or an exponent, or as -0 (Go's encoder writes a double's
// negative zero so; no integer is written so), is a double, and two doubles are the same answer
// only when their bits are: -0 and 0 differ (string(), 1.0/x and math.signbit tell them apart),
// and a NaN would equal a NaN. That is not CEL's `==` (where -0.0 == 0.0 and NaN != NaN): a judge
// asks whether two engines gave the same value, not whether CEL calls them equal. JSON carries
// no NaN or infinity (an engine that gives one answers with an input error, judged as such);
// through the library tables a double reaches the judge as string(x), compared as text. The type
// of an attribute is the field that holds it ({"int": ...}), so an integer and a double are never
// compared with each other here.
func sameNumber(x, y string) bool {
	if integerText.MatchString(x) && integerText.MatchString(y) && !negativeZero(x) && !negativeZero(y) {
		a, okA := new(big.Int).SetString(x, 10)
		b, okB := new(big.Int).SetString(y, 10)
		return okA && okB && a.Cmp(b) == 0
	}
	a, errA := strconv.ParseFloat(x, 64)
	b, errB := strconv.ParseFloat(y, 64)
	return errA == nil && errB == nil && math.Float64bits(a) == math.Float64bits(b)
}

func negativeZero(text string) bool {
	return strings.TrimLeft(text, "-0") == "" && strings.HasPrefix(text, "-")
}

// compiledUpstream: in the upstream-tests mode, every expression compiled once (the CRD tables'
// guard and the judge ask the same compilation); nil (no cache) for the generated expressions,
// each asked once.
var compiledUpstream map[string]dracel.CompilationResult

func upstreamCompile(expression string, derived bool) dracel.CompilationResult {
	key := strconv.FormatBool(derived) + "\x00" + expression
	if compiled, ok := compiledUpstream[key]; ok {
		return compiled
	}
	compiler := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
	// A new object is validated with the newest environment, as the API server does.
	envType := environment.NewExpressions
	compiled := compiler.CompileCELExpression(expression, dracel.Options{EnvType: &envType, DerivedAttribute: derived})
	if compiledUpstream != nil {
		compiledUpstream[key] = compiled
	}
	return compiled
}

func upstreamEvaluate(compiled dracel.CompilationResult, device questionDevice, derived bool) answer {
	if compiled.Error != nil {
		return answer{CompileError: compiled.Error.Error()}
	}
	if compiled.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		return answer{CompileError: "too complex, exceeds cost limit"}
	}
	maxCost := compiled.MaxCost
	withCost := func(a answer) answer {
		a.MaxCost = &maxCost
		return a
	}
	input := dracel.Device{
		Driver: device.Driver, AllowMultipleAllocations: ptr.To(device.AllowMultipleAllocations),
		Attributes: device.Attributes, Capacity: device.Capacity,
	}
	if derived {
		value, _, err := compiled.EvaluateDerivedAttribute(context.Background(), input)
		if err != nil {
			return withCost(answer{Error: err.Error()})
		}
		text, err := json.Marshal(value)
		if err != nil { // a value JSON does not carry (a NaN): the harness cannot judge it
			return withCost(answer{InputError: "upstream's value: " + err.Error()})
		}
		return withCost(answer{Value: text})
	}
	matches, _, err := compiled.DeviceMatches(context.Background(), input)
	if err != nil {
		return withCost(answer{Error: err.Error()})
	}
	return withCost(answer{Value: json.RawMessage(strconv.FormatBool(matches))})
}

// ourEngine is one dracel-eval process, asked line by line.
type ourEngine struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

func startOurs(binary string) (*ourEngine, error) {
	cmd := exec.Command(binary)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &ourEngine{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20)}, nil
}

func (e *ourEngine) ask(q question) (answer, error) {
	line, err := json.Marshal(q)
	if err != nil {
		return answer{}, err
	}
	if _, err := e.stdin.Write(append(line, '\n')); err != nil {
		return answer{}, fmt.Errorf("dracel-eval: %w", err)
	}
	reply, err := e.stdout.ReadBytes('\n')
	if err != nil {
		return answer{}, fmt.Errorf("dracel-eval stopped answering: %w", err)
	}
	var a answer
	if err := json.Unmarshal(reply, &a); err != nil {
		return answer{}, fmt.Errorf("dracel-eval answered %q: %w", reply, err)
	}
	return a, nil
}

func (e *ourEngine) close() {
	e.stdin.Close()
	e.cmd.Wait()
}
