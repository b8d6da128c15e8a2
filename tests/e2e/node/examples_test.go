package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The stories of deploy/examples/ and the chart values they need on this node: every pod of
// each runs here. gpu-nic-cpu-numa has its own tests here. numa-cpu-budgets and
// vf-bandwidth-budget need publish.sharedConsumableCapacity (KEP-5941), which Kubernetes
// v1.37.2 does not have (its API server drops the fields: tests/e2e's
// TestSharedConsumableCapacityIsRefusedCleanlyBy137). scalar-vs-list-numa's NIC claim,
// unallocatable with scalars on its epyc-2s-nps4, is allocatable here: big-2s-8n has a GPU and a
// NIC on every NUMA node.
var nodeExamples = []struct {
	story  string
	values []string // helm --set values on top of the install's; restored afterwards
}{
	{"admin-access", nil},
	{"extended-resource", nil},
	{"prioritized-alternatives", nil},
	{"scalar-vs-list-numa", nil},
	// With scalars the real scheduler's DynamicResources filter fails evaluating its derived
	// attribute ("no such key: 0"): it is written for the list form.
	{"derived-attributes", []string{"publish.numaList=true"}},
	{"scalar-vs-list-numa", []string{"publish.numaList=true"}},
}

// upgradeDriver runs helmUpgrade with `values` and waits until the new driver pod is Ready and
// the old one is gone.
func upgradeDriver(t testing.TB, values ...string) {
	t.Helper()
	old, err := theNode.waitForDriverPod(context.Background(), "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	helmUpgrade(t, values...)
	if _, err := theNode.waitForDriverPod(context.Background(), string(old.UID), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the old driver pod gone", func() error {
		for _, pod := range driverPods(t) {
			if pod.UID == old.UID {
				return fmt.Errorf("%s still there", pod.Name)
			}
		}
		return nil
	})
}

// exampleObjects reads a story's top-level YAML files, as objects ready for this node: the
// shell image (never pulled), and the node's host name where a pod is pinned to the examples'
// node-1.
func exampleObjects(t testing.TB, story string) (objects []map[string]any, pods []string) {
	t.Helper()
	dir := filepath.Join(sourceDir(), "deploy", "examples", story)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no YAML files (%v)", dir, err)
	}
	sort.Strings(files)
	separator := regexp.MustCompile(`(?m)^---\s*$`)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range separator.Split(string(data), -1) {
			var object map[string]any
			if err := yaml.Unmarshal([]byte(doc), &object); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if object == nil {
				continue
			}
			if object["kind"] == "Pod" {
				forThisNode(t, object)
				meta := object["metadata"].(map[string]any)
				pods = append(pods, fmt.Sprint(meta["namespace"], "/", meta["name"]))
			}
			objects = append(objects, object)
		}
	}
	// Namespaces first, as kubectl needs them before what goes in them.
	sort.SliceStable(objects, func(i, j int) bool {
		return objects[i]["kind"] == "Namespace" && objects[j]["kind"] != "Namespace"
	})
	return objects, pods
}

func forThisNode(t testing.TB, pod map[string]any) {
	t.Helper()
	spec := pod["spec"].(map[string]any)
	for _, c := range spec["containers"].([]any) {
		container := c.(map[string]any)
		container["image"] = theNode.images["shell"].Name
		container["imagePullPolicy"] = "Never"
	}
	if selector, ok := spec["nodeSelector"].(map[string]any); ok && selector["kubernetes.io/hostname"] != nil {
		selector["kubernetes.io/hostname"] = theNode.name
	}
}

// Every pod of each story in nodeExamples runs on the node with its devices: each container
// prints (its command: env | grep ^NUMADRA_) at least one variable, and each is a variable of
// the CDI specs of the pod's claims (those of its templates, named claims and extended
// resources); deleting the story's objects unprepares every claim.
func TestTheExamplesRunOnTheNode(t *testing.T) {
	for _, example := range nodeExamples {
		name := example.story
		if len(example.values) != 0 {
			name += "/" + strings.Join(example.values, ",")
		}
		t.Run(name, func(t *testing.T) {
			if len(example.values) != 0 {
				upgradeDriver(t, example.values...)
				t.Cleanup(func() {
					var back []string
					for _, value := range example.values {
						key, _, _ := strings.Cut(value, "=")
						back = append(back, key+"=false")
					}
					upgradeDriver(t, back...)
				})
			}
			runExample(t, example.story)
		})
	}
}

func runExample(t testing.TB, story string) {
	t.Helper()
	objects, pods := exampleObjects(t, story)
	var manifest strings.Builder
	for _, object := range objects {
		data, err := yaml.Marshal(object)
		if err != nil {
			t.Fatal(err)
		}
		manifest.WriteString("---\n")
		manifest.Write(data)
	}
	file := filepath.Join(t.TempDir(), story+".yaml")
	if err := os.WriteFile(file, []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := theNode.kubectl("apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply %s: %v\n%s", story, err, out)
	}
	var claims []string
	t.Cleanup(func() { deleteExample(t, file, pods, claims) })
	for _, key := range pods {
		namespace, name, _ := strings.Cut(key, "/")
		pod := waitForRunning(t, namespace, name, 2*time.Minute)
		uids := claimUIDsOf(t, pod)
		claims = append(claims, uids...)
		checkClaimVariables(t, pod, uids)
	}
}

// claimUIDsOf are the UIDs of the claims a running pod uses.
func claimUIDsOf(t testing.TB, pod *v1.Pod) []string {
	t.Helper()
	var names []string
	for _, claim := range pod.Spec.ResourceClaims {
		if claim.ResourceClaimName != nil {
			names = append(names, *claim.ResourceClaimName)
		}
	}
	for _, status := range pod.Status.ResourceClaimStatuses {
		if status.ResourceClaimName != nil {
			names = append(names, *status.ResourceClaimName)
		}
	}
	if status := pod.Status.ExtendedResourceClaimStatus; status != nil {
		names = append(names, status.ResourceClaimName)
	}
	var uids []string
	for _, name := range names {
		claim, err := theNode.cluster.Admin.ResourceV1().ResourceClaims(pod.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, string(claim.UID))
	}
	if len(uids) == 0 {
		t.Fatalf("pod %s/%s runs without a claim", pod.Namespace, pod.Name)
	}
	return uids
}

// checkClaimVariables: every container of the pod has a NUMADRA_ variable, and only variables
// of its claims' CDI specs.
func checkClaimVariables(t testing.TB, pod *v1.Pod, uids []string) {
	t.Helper()
	known := map[string]bool{}
	for _, uid := range uids {
		for _, variable := range claimEdits(t, uid).Env {
			known[variable] = true
		}
	}
	for _, container := range pod.Spec.Containers {
		out, err := theNode.kubectl("exec", "-n", pod.Namespace, pod.Name, "-c", container.Name, "--", "env")
		if err != nil {
			t.Fatalf("kubectl exec %s/%s -c %s -- env: %v\n%s", pod.Namespace, pod.Name, container.Name, err, out)
		}
		seen := 0
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "NUMADRA_") {
				continue
			}
			seen++
			if !known[line] {
				t.Errorf("pod %s/%s container %s: %s is in none of its claims' CDI specs", pod.Namespace, pod.Name, container.Name, line)
			}
		}
		if seen == 0 {
			t.Errorf("pod %s/%s container %s has no NUMADRA_ variable", pod.Namespace, pod.Name, container.Name)
		}
	}
}

// deleteExample deletes the story's objects, waits for its pods to go (the kubelet removes a pod
// only after NodeUnprepareResources), and checks the claims' CDI specs are gone.
func deleteExample(t testing.TB, file string, pods, claims []string) {
	if out, err := theNode.kubectl("delete", "--wait=false", "--grace-period=1", "-f", file); err != nil {
		t.Errorf("kubectl delete: %v\n%s", err, out)
	}
	for _, key := range pods {
		namespace, name, _ := strings.Cut(key, "/")
		waitFor(t, 2*time.Minute, "pod "+key+" deleted", func() error {
			_, err := theNode.cluster.Admin.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
			if err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
	}
	for _, uid := range claims {
		waitFor(t, 30*time.Second, "claim "+uid+" unprepared", func() error {
			if left := claimSpecFiles(t, uid); len(left) != 0 {
				return fmt.Errorf("CDI specs left: %v", left)
			}
			return nil
		})
	}
}
