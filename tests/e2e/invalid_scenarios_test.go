package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"numadra.dev/tests/e2e/cluster"
)

// The scenarios dra-allocate refuses as invalid input (exit 2), and those scenario-expectations.txt
// lists as unreadable or invalid for upstream's library, go to the real API server (issue 23 §2):
// it must refuse each, and its refusal must name the field dra-allocate names.

// A judgement says how the API server's answer on a scenario is compared with dra-allocate's.
type judgement int

const (
	// byFieldPath: dra-allocate refuses the scenario (exit 2) naming a document and a field path;
	// the API server accepts every document before that one and refuses that one, naming the
	// same path among its causes. The judgement of every scenario not listed below.
	byFieldPath judgement = iota
	// byDecodedFieldPath: the document cannot even be decoded into the API's types; the API
	// server's JSON decoder names the field without list indices
	// ("spec.devices.requests.exactly.count"), so dra-allocate's path is compared without them.
	byDecodedFieldPath
	// byName: two objects of one name; the API server refuses the second create (AlreadyExists),
	// which dry-run cannot show: the scenario is created for real, and the refused document must
	// be the one dra-allocate names, with the same kind and name.
	byName
	// notAPIValidation: the API server accepts every document; dra-allocate's refusal is about
	// what it reads, not about the API's validation.
	notAPIValidation
	// notInThisAPI: dra-allocate reads it (it implements the field), v1.37.2's API has no such
	// field: the API server refuses it as unknown (strict field validation).
	notInThisAPI
)

// listedJudgements are the scenarios not judged byFieldPath, each with why (one place): the test
// fails when a listed scenario's answer is not what its judgement says, so the list cannot go
// stale.
var listedJudgements = map[string]struct {
	judgement
	reason string
}{
	"invalid-count-not-a-number":                     {byDecodedFieldPath, "`count: two` cannot be decoded into an int64: the API server's decoder refuses it before validation and names the field without list indices"},
	"invalid-device-class-given-twice":               {byName, "one name given twice is no validation error: the API server refuses the second create (AlreadyExists); dry-run keeps nothing, so the objects are created for real"},
	"invalid-unsupported-kind":                       {notAPIValidation, "a Deployment is a valid API object: the API server accepts it; dra-allocate reads Pods, not the workloads that make them, and refuses it as input"},
	"sriov-vf-bandwidth-committed-claims-counted":    {notInThisAPI, kep5941},
	"sriov-vf-bandwidth-exhausted":                   {notInThisAPI, kep5941},
	"sriov-vf-bandwidth-policy-rounding-and-default": {notInThisAPI, kep5941},
	"sriov-vf-bandwidth-released":                    {notInThisAPI, kep5941},
	"sriov-vf-pool-shared-link":                      {notInThisAPI, kep5941},
}

const kep5941 = "KEP-5941 counter request policies (requestPolicy on a counter): dra-allocate reads them, v1.37.2's API has no such field and the API server refuses it as unknown; no component of 1.37.2 can judge the allocation"

// forTheAPIServer says whether the scenario is the API server's to refuse: dra-allocate refuses
// it as invalid input, or the expectations list it as unreadable or invalid for the library.
func (s scenario) forTheAPIServer(expectations map[string]scenarioExpectation) bool {
	if s.exit == 2 {
		return true
	}
	e, listed := expectations[s.name]
	return listed && (e.status == "unreadable" || strings.Contains(e.reason, "does not validate"))
}

// invalidScenarioTest names the test in scenario-expectations.txt reasons.
const invalidScenarioTest = "TestTheAPIServerRefusesTheInvalidScenariosAsDraAllocate"

func TestTheAPIServerRefusesTheInvalidScenariosAsDraAllocate(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	expectations := scenarioExpectations(t)
	submitter := newSubmitter(t, c)
	judged := map[string]bool{}
	for i, s := range allScenarios(t) {
		if strings.HasPrefix(s.name, "invalid-") && s.exit != 2 {
			t.Errorf("%s: named invalid, but dra-allocate is not expected to refuse it (expected-exit %d)", s.name, s.exit)
		}
		if !s.forTheAPIServer(expectations) {
			continue
		}
		judged[s.name] = true
		t.Run(s.name, func(t *testing.T) {
			listed, ok := listedJudgements[s.name]
			if ok {
				t.Logf("judged %s: %s", listed.judgement, listed.reason)
			}
			namespace := fmt.Sprintf("invalid-%d", i)
			createNamespace(t, c, namespace)
			t.Cleanup(func() {
				_ = c.Admin.CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
			})
			judge(t, submitter, namespace, s, listed.judgement)
		})
	}
	for name := range listedJudgements {
		if !judged[name] {
			t.Errorf("%s: listed with a judgement, but no scenario for the API server", name)
		}
	}
	for name, expectation := range expectations {
		if strings.Contains(expectation.reason, invalidScenarioTest) && !judged[name] {
			t.Errorf("scenario-expectations.txt sends %s to %s, which does not judge it", name, invalidScenarioTest)
		}
	}
	t.Logf("%d scenarios given to the API server", len(judged))
}

func (j judgement) String() string {
	return [...]string{"by field path", "by decoded field path", "by name", "not API validation", "not in this API"}[j]
}

// judge submits the scenario and compares the API server's answer with dra-allocate's.
func judge(t *testing.T, submitter *submitter, namespace string, s scenario, how judgement) {
	t.Helper()
	run := runDraAllocateOn(t, append(append([]string{}, s.flags...), s.dir)...)
	refusal := parseRefusal(run.stderr)
	if how == notInThisAPI {
		if run.exit == 2 {
			t.Fatalf("listed as read by dra-allocate, which refuses it: %s", run.stderr)
		}
		answers := submitter.submitAll(t, namespace, s, true)
		for _, answer := range answers {
			if answer.err != nil {
				t.Logf("%s: the API server: %v", answer.document.where(), answer.err)
				if !strings.Contains(strings.Join(refusedPaths(answer.err), " "), "requestPolicy") {
					t.Errorf("%s: refused, but not for the unknown requestPolicy: %v", answer.document.where(), answer.err)
				}
				return
			}
		}
		t.Fatal("the API server accepts every document: KEP-5941 is in this API now, judge the scenario by the allocation (tests/upstream) instead of listing it")
	}
	if run.exit != 2 || refusal == nil {
		t.Fatalf("dra-allocate: exit %d, want 2 with a file and document named\n%s", run.exit, run.stderr)
	}
	answers := submitter.submitAll(t, namespace, s, how != byName)
	var named *submitted
	for i := range answers {
		answer := &answers[i]
		if answer.document.file == refusal.file && answer.document.number == refusal.document {
			named = answer
			break
		}
		if answer.err != nil && how != notAPIValidation {
			t.Errorf("the API server refuses %s, before the document dra-allocate names (%s, document %d): %v",
				answer.document.where(), refusal.file, refusal.document, answer.err)
		}
	}
	if named == nil {
		t.Fatalf("dra-allocate names %s, document %d, not an input document of the scenario:\n%s", refusal.file, refusal.document, run.stderr)
	}
	switch how {
	case notAPIValidation:
		for _, answer := range answers {
			if answer.err != nil {
				t.Errorf("listed as valid for the API server, which refuses %s: %v", answer.document.where(), answer.err)
			}
		}
		t.Logf("the API server accepts every document; dra-allocate: %s", refusal.message)
	case byName:
		if !apierrors.IsAlreadyExists(named.err) {
			t.Fatalf("%s: the API server answered %v, want AlreadyExists; dra-allocate: %s", named.document.where(), named.err, refusal.message)
		}
		name := named.document.name()
		if !strings.Contains(refusal.message, named.document.kind()+" "+name+" ") {
			t.Errorf("dra-allocate says %q, not naming %s %s", refusal.message, named.document.kind(), name)
		}
		t.Logf("%s: the API server: %v | dra-allocate: %s", named.document.where(), named.err, refusal.message)
	default:
		if named.err == nil {
			t.Fatalf("the API server ACCEPTS %s, which dra-allocate refuses: %s", named.document.where(), refusal.message)
		}
		want := refusal.path
		if how == byDecodedFieldPath {
			want = withoutIndices(want)
		}
		paths := refusedPaths(named.err)
		if want == "" || !contains(paths, want) {
			t.Fatalf("%s: dra-allocate names field %q (%s); the API server names %q: %v", named.document.where(), want, refusal.message, paths, named.err)
		}
		t.Logf("%s: field %s | dra-allocate: %s | the API server: %v", named.document.where(), want, refusal.message, named.err)
	}
}

// refusal is dra-allocate's exit-2 error: "FILE, document N: PATH: MESSAGE".
type refusal struct {
	file     string
	document int
	path     string // "" when the message names no field
	message  string
}

var refusalLine = regexp.MustCompile(`(?m)^(?:dra-allocate: )?(\S+), document (\d+)(?:, item \d+)?(?: \(line \d+(?:, column \d+)?\))?: (.*)$`)

// A field path as dra-allocate writes it: spec.devices[0].nodeAllocatableResources[memory].mapping.
var fieldPath = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*|\[[^\]\s]+\])*$`)

var unknownField = regexp.MustCompile(`^unknown field "([^"]+)"`)

func parseRefusal(stderr string) *refusal {
	match := refusalLine.FindStringSubmatch(stderr)
	if match == nil {
		return nil
	}
	r := &refusal{file: filepath.Base(match[1]), message: match[3]}
	fmt.Sscan(match[2], &r.document)
	if path, rest, found := strings.Cut(match[3], ": "); found && fieldPath.MatchString(path) {
		r.path = path
		if unknown := unknownField.FindStringSubmatch(rest); unknown != nil {
			r.path += "." + unknown[1]
		}
	}
	return r
}

var indices = regexp.MustCompile(`\[[^\]]*\]`)

func withoutIndices(path string) string { return indices.ReplaceAllString(path, "") }

// refusedPaths are the field paths the API server's refusal names: its causes' fields, an
// unknown field of strict field validation, or the field its JSON decoder could not decode.
func refusedPaths(err error) []string {
	var paths []string
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			if cause.Field != "" {
				paths = append(paths, cause.Field)
			}
		}
	}
	for _, match := range regexp.MustCompile(`unknown field "([^"]+)"`).FindAllStringSubmatch(err.Error(), -1) {
		paths = append(paths, match[1])
	}
	for _, match := range regexp.MustCompile(`Go struct field \w+\.([\w.]+) of type`).FindAllStringSubmatch(err.Error(), -1) {
		paths = append(paths, match[1])
	}
	sort.Strings(paths)
	return paths
}

// submitter creates scenario documents of any kind through the API server's discovery.
type submitter struct {
	client dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newSubmitter(t testing.TB, c *cluster.Cluster) *submitter {
	t.Helper()
	client, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &submitter{client, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Admin.Discovery()))}
}

// submitted is the API server's answer to one document.
type submitted struct {
	document scenarioDocument
	err      error
}

// submitAll creates every document in the scenario's order (namespaced ones in namespace),
// with strict field validation, as a dry run or for real; objects created for real are deleted
// when the test ends.
func (s *submitter) submitAll(t *testing.T, namespace string, sc scenario, dryRun bool) []submitted {
	t.Helper()
	ctx := context.Background()
	var out []submitted
	for _, d := range sc.documents {
		gv, err := schema.ParseGroupVersion(d.apiVersion())
		if err != nil {
			out = append(out, submitted{d, err})
			continue
		}
		mapping, err := s.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: d.kind()}, gv.Version)
		if err != nil {
			out = append(out, submitted{d, fmt.Errorf("the API server serves no %s %s: %w", d.apiVersion(), d.kind(), err)})
			continue
		}
		object := &unstructured.Unstructured{Object: deepCopyJSON(d.object)}
		resource := s.client.Resource(mapping.Resource)
		var client dynamic.ResourceInterface = resource
		if mapping.Scope.Name() == "namespace" {
			object.SetNamespace(namespace)
			client = resource.Namespace(namespace)
		}
		object.SetUID("")
		object.SetCreationTimestamp(metav1.Time{})
		options := metav1.CreateOptions{FieldValidation: "Strict"}
		if dryRun {
			options.DryRun = []string{metav1.DryRunAll}
		}
		_, err = client.Create(ctx, object, options)
		if err == nil && !dryRun {
			name := object.GetName()
			t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
		out = append(out, submitted{d, err})
	}
	return out
}

// deepCopyJSON copies a decoded JSON object, with its numbers as unstructured wants them.
func deepCopyJSON(in map[string]any) map[string]any {
	out := map[string]any{}
	for key, value := range in {
		out[key] = copyJSONValue(value)
	}
	return out
}

func copyJSONValue(value any) any {
	switch v := value.(type) {
	case map[string]any:
		return deepCopyJSON(v)
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = copyJSONValue(v[i])
		}
		return out
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
		return v
	default:
		return value
	}
}

// sliceMutation breaks a ResourceSlice in a way the API server refuses (a validation dra-allocate
// once lacked, issue 23 §3); apply changes the first place it fits and says whether it did.
type sliceMutation struct {
	name  string
	apply func(spec map[string]any) bool
}

var sliceMutations = []sliceMutation{
	{"a requestPolicy on the capacity of a device without allowMultipleAllocations", func(spec map[string]any) bool {
		devices, _ := spec["devices"].([]any)
		for _, device := range devices {
			device, _ := device.(map[string]any)
			if multiple, _ := device["allowMultipleAllocations"].(bool); multiple {
				continue
			}
			capacities, _ := device["capacity"].(map[string]any)
			for _, name := range sortedKeys(capacities) {
				capacity, _ := capacities[name].(map[string]any)
				if capacity != nil && capacity["requestPolicy"] == nil {
					capacity["requestPolicy"] = map[string]any{"default": capacity["value"]}
					return true
				}
			}
		}
		return false
	}},
	{"a counter set without counters", func(spec map[string]any) bool {
		sets, _ := spec["sharedCounters"].([]any)
		for _, set := range sets {
			if set, _ := set.(map[string]any); set != nil {
				set["counters"] = map[string]any{}
				return true
			}
		}
		return false
	}},
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// Slices of the valid scenarios, broken in ways the API server refuses: the API server and
// dra-allocate refuse each, naming the same field.
func TestTheAPIServerAndDraAllocateRefuseTheSameBrokenSlices(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	expectations := scenarioExpectations(t)
	submitter := newSubmitter(t, c)
	cases := 0
	for _, s := range allScenarios(t) {
		if s.forTheAPIServer(expectations) {
			continue // invalid already, or not this API's
		}
		for _, mutation := range sliceMutations {
			broken, where := breakFirstSlice(s, mutation)
			if where == nil {
				continue
			}
			cases++
			t.Run(s.name+"/"+strings.ReplaceAll(mutation.name, " ", "-"), func(t *testing.T) {
				dir := t.TempDir()
				var objects []any
				for _, d := range broken.documents {
					objects = append(objects, d.object)
				}
				writeRawList(t, filepath.Join(dir, "objects.json"), objects)
				run := runDraAllocateOn(t, append(append([]string{}, s.flags...), dir)...)
				answer := submitter.submitAll(t, "default", scenario{documents: []scenarioDocument{*where}}, true)[0]
				if answer.err == nil {
					t.Fatalf("the API server accepts %s with %s", where.where(), mutation.name)
				}
				refusal := parseRefusal(run.stderr)
				if run.exit != 2 || refusal == nil {
					t.Fatalf("%s: dra-allocate accepts %s (exit %d); the API server: %v", where.where(), mutation.name, run.exit, answer.err)
				}
				if paths := refusedPaths(answer.err); !contains(paths, refusal.path) {
					t.Fatalf("%s: dra-allocate names field %q (%s); the API server names %q: %v", where.where(), refusal.path, refusal.message, paths, answer.err)
				}
				t.Logf("%s: field %s | dra-allocate: %s | the API server: %v", where.where(), refusal.path, refusal.message, answer.err)
			})
		}
	}
	if cases == 0 {
		t.Fatal("no scenario slice to break: the test judged nothing")
	}
	if !t.Failed() {
		t.Logf("%d broken slices: the API server and dra-allocate refused each, naming the same field", cases)
	}
}

// breakFirstSlice copies the scenario with the mutation applied to its first slice it fits;
// returns the copy and the broken document (nil when it fits no slice).
func breakFirstSlice(s scenario, mutation sliceMutation) (scenario, *scenarioDocument) {
	broken := s
	broken.documents = make([]scenarioDocument, len(s.documents))
	var where *scenarioDocument
	for i, d := range s.documents {
		broken.documents[i] = scenarioDocument{d.file, d.number, deepCopyJSON(d.object)}
		if spec, _ := broken.documents[i].object["spec"].(map[string]any); where == nil && d.kind() == "ResourceSlice" && mutation.apply(spec) {
			where = &broken.documents[i]
		}
	}
	return broken, where
}

// writeRawList writes decoded objects as one v1 List.
func writeRawList(t testing.TB, path string, objects []any) {
	t.Helper()
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objects})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
