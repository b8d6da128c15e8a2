package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"numadra.dev/tests/e2e/cluster"
)

// keepNodeReady renews the node's Lease as a kubelet does, so that the node lifecycle
// controller keeps it Ready and untainted while the test needs the scheduler to use it.
func keepNodeReady(t testing.TB, c *cluster.Cluster, node string) {
	keepNodesReady(t, c, []string{node})
}

// keepNodesReady renews the nodes' Leases from one goroutine.
func keepNodesReady(t testing.TB, c *cluster.Cluster, nodes []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	t.Cleanup(func() { cancel(); <-stopped })
	leases := c.Admin.CoordinationV1().Leases("kube-node-lease")
	renew := func(node string) {
		now := metav1.NewMicroTime(time.Now())
		lease, err := leases.Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, _ = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now},
			}, metav1.CreateOptions{})
			return
		}
		if err == nil {
			lease.Spec.RenewTime = &now
			_, _ = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
	}
	renewAll := func() {
		for _, node := range nodes {
			renew(node)
		}
	}
	renewAll()
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(5 * time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				renewAll()
			}
		}
	}()
}

// story is one folder of deploy/examples/ as a set of API objects.
type story struct {
	namespaces map[string]map[string]string // namespace -> labels it must have
	templates  []resourceapi.ResourceClaimTemplate
	claims     []resourceapi.ResourceClaim
	pods       []v1.Pod
}

func readStory(t testing.TB, folder string) story {
	t.Helper()
	s := story{namespaces: map[string]map[string]string{}}
	files, err := filepath.Glob(filepath.Join(folder, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, document := range strings.Split(string(data), "\n---") {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(document), &meta); err != nil || meta.Kind == "" {
				continue
			}
			decode := func(into any) {
				if err := yaml.UnmarshalStrict([]byte(document), into); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
			}
			switch meta.Kind {
			case "Namespace":
				var ns v1.Namespace
				decode(&ns)
				s.namespaces[ns.Name] = ns.Labels
			case "ResourceClaimTemplate":
				var template resourceapi.ResourceClaimTemplate
				decode(&template)
				s.templates = append(s.templates, template)
			case "ResourceClaim":
				var claim resourceapi.ResourceClaim
				decode(&claim)
				s.claims = append(s.claims, claim)
			case "Pod":
				var pod v1.Pod
				decode(&pod)
				s.pods = append(s.pods, pod)
			default:
				t.Fatalf("%s: a %s in a story", file, meta.Kind)
			}
		}
	}
	return s
}

// create puts the story into the cluster, each namespace N renamed to prefix-N; returns the
// namespaces it made.
func (s story) create(t testing.TB, c *cluster.Cluster, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	rename := func(namespace string) string {
		if namespace == "" {
			namespace = "default"
		}
		if _, ok := s.namespaces[namespace]; !ok {
			s.namespaces[namespace] = nil
		}
		return prefix + "-" + namespace
	}
	for i := range s.templates {
		s.templates[i].Namespace = rename(s.templates[i].Namespace)
	}
	for i := range s.claims {
		s.claims[i].Namespace = rename(s.claims[i].Namespace)
	}
	for i := range s.pods {
		s.pods[i].Namespace = rename(s.pods[i].Namespace)
	}
	var made []string
	for namespace, labels := range s.namespaces {
		name := rename(namespace)
		if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForDefaultServiceAccount(t, c, name)
		made = append(made, name)
	}
	for _, template := range s.templates {
		if _, err := c.Admin.ResourceV1().ResourceClaimTemplates(template.Namespace).Create(ctx, &template, metav1.CreateOptions{}); err != nil {
			t.Fatalf("template %s: %v", template.Name, err)
		}
	}
	for _, claim := range s.claims {
		if _, err := c.Admin.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, &claim, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", claim.Name, err)
		}
	}
	for _, pod := range s.pods {
		if _, err := c.Admin.CoreV1().Pods(pod.Namespace).Create(ctx, &pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod %s: %v", pod.Name, err)
		}
	}
	return made
}

// waitForScheduling waits until every pod is bound, or for 30 s: a pod the scheduler found
// unschedulable is retried when its claims appear (the controller manager creates them from
// templates), so only one still unschedulable then counts as refused.
func waitForScheduling(t testing.TB, c *cluster.Cluster, namespaces []string) []v1.Pod {
	t.Helper()
	var pods []v1.Pod
	deadline := time.Now().Add(30 * time.Second)
	eventually(t, 40*time.Second, "the scheduler decides every pod", func() bool {
		pods = nil
		for _, namespace := range namespaces {
			list, err := c.Admin.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pods = append(pods, list.Items...)
		}
		for _, pod := range pods {
			if pod.Spec.NodeName == "" && (time.Now().Before(deadline) || !unschedulable(pod)) {
				return false
			}
		}
		return true
	})
	return pods
}

func unschedulable(pod v1.Pod) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == v1.PodScheduled && condition.Status == v1.ConditionFalse && condition.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// claimsOf lists the claims of the namespaces, in creation order (the order the scheduler met
// them in), and the slices and classes, as the scheduler saw them.
func claimsOf(t testing.TB, c *cluster.Cluster, namespaces []string) []resourceapi.ResourceClaim {
	t.Helper()
	var claims []resourceapi.ResourceClaim
	for _, namespace := range namespaces {
		list, err := c.Admin.ResourceV1().ResourceClaims(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, list.Items...)
	}
	sort.SliceStable(claims, func(i, j int) bool {
		a, b := claims[i].CreationTimestamp, claims[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return claims[i].Namespace+"/"+claims[i].Name < claims[j].Namespace+"/"+claims[j].Name
	})
	return claims
}

// writeList writes objects as a v1 List, as `kubectl get -o json` does.
func writeList(t testing.TB, path, kind, apiVersion string, items []any) {
	t.Helper()
	var raw []json.RawMessage
	for _, item := range items {
		data, err := json.Marshal(item)
		if err != nil {
			t.Fatal(err)
		}
		var object map[string]any
		_ = json.Unmarshal(data, &object)
		object["kind"], object["apiVersion"] = kind, apiVersion
		data, _ = json.Marshal(object)
		raw = append(raw, data)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": raw})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// predict runs dra-allocate on the cluster's slices and classes and the claims without their
// status, on the node; returns its allocations by namespace/name.
func predict(t testing.TB, c *cluster.Cluster, dir, node string, claims []resourceapi.ResourceClaim) (map[string]*resourceapi.AllocationResult, string) {
	t.Helper()
	var claimItems []any
	for i := range claims {
		claimItems = append(claimItems, unallocated(&claims[i]))
	}
	dumpCluster(t, c, dir, []string{node})
	writeList(t, filepath.Join(dir, "4-claims.json"), "ResourceClaim", "resource.k8s.io/v1", claimItems)
	allocations, _, explanation := draAllocate(t, dir, "--node", node, "--explain")
	return allocations, explanation
}

// unallocated is the claim as its author wrote it: no status, no managed fields.
func unallocated(claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	copied := claim.DeepCopy()
	copied.Status, copied.ManagedFields = resourceapi.ResourceClaimStatus{}, nil
	return copied
}

// allocationDifference compares what the scheduler allocated with what dra-allocate predicted:
// node, devices per request in result order, admin access, consumed capacity. "" when equal.
func allocationDifference(node string, got, want *resourceapi.AllocationResult) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil:
		return "dra-allocate allocated it, the scheduler did not"
	case want == nil:
		return "the scheduler allocated it, dra-allocate did not"
	}
	if g, w := describeResults(got), describeResults(want); strings.Join(g, "\n") != strings.Join(w, "\n") {
		return fmt.Sprintf("scheduler:\n  %s\ndra-allocate:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	for _, r := range got.Devices.Results {
		for _, w := range want.Devices.Results {
			if r.Request == w.Request && r.Device == w.Device && !apiequality.Semantic.DeepEqual(r.ConsumedCapacity, w.ConsumedCapacity) {
				return fmt.Sprintf("%s: consumed capacity %v, predicted %v", r.Device, r.ConsumedCapacity, w.ConsumedCapacity)
			}
		}
	}
	if !selectsNode(got.NodeSelector, node) || !selectsNode(want.NodeSelector, node) {
		return fmt.Sprintf("node selectors %v and %v, want node %s", got.NodeSelector, want.NodeSelector, node)
	}
	return ""
}

// describeResults is an allocation's results, one line each: request, device, admin access and
// consumed capacity.
func describeResults(a *resourceapi.AllocationResult) []string {
	var lines []string
	for _, r := range a.Devices.Results {
		line := fmt.Sprintf("%s: %s/%s/%s admin=%v", r.Request, r.Driver, r.Pool, r.Device, ptr.Deref(r.AdminAccess, false))
		names := make([]string, 0, len(r.ConsumedCapacity))
		for name := range r.ConsumedCapacity {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			q := r.ConsumedCapacity[resourceapi.QualifiedName(name)]
			line += fmt.Sprintf(" %s=%s", name, q.String())
		}
		lines = append(lines, line)
	}
	return lines
}

func selectsNode(selector *v1.NodeSelector, node string) bool {
	if selector == nil {
		return false
	}
	for _, term := range selector.NodeSelectorTerms {
		for _, field := range term.MatchFields {
			if field.Key == "metadata.name" && len(field.Values) == 1 && field.Values[0] == node {
				return true
			}
		}
	}
	return false
}

// The stories of deploy/examples/, as pods with claims and templates against a node the real
// daemon published: what the real kube-scheduler allocates is what dra-allocate predicts on the
// same objects.
func TestTheSchedulerAllocatesWhatDraAllocatePredicts(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	runs := []struct {
		story, machine string
		flags          []string
	}{
		{"gpu-nic-cpu-numa", "epyc-2s-nps4", []string{"--numa-list"}},
		{"scalar-vs-list-numa", "epyc-2s-nps4", []string{"--numa-list"}},
		{"scalar-vs-list-numa", "epyc-2s-nps4", nil},
		{"derived-attributes", "epyc-2s-nps4", []string{"--numa-list"}},
		{"prioritized-alternatives", "gpu4-nic", nil},
		{"prioritized-alternatives", "epyc-2s-nps4", []string{"--numa-list"}},
		{"extended-resource", "epyc-2s-nps4", nil},
		{"admin-access", "epyc-2s-nps4", nil},
	}
	for i, run := range runs {
		name := fmt.Sprintf("%s/%s%s", run.story, run.machine, strings.Join(run.flags, ""))
		t.Run(name, func(t *testing.T) {
			node := fmt.Sprintf("sched-%d", i)
			createNode(t, c, node, run.machine)
			// The stories pin pods with kubernetes.io/hostname: node-1 (deploy/examples' node).
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				current, err := c.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
				if err != nil {
					return err
				}
				current.Labels["kubernetes.io/hostname"] = "node-1"
				_, err = c.Admin.CoreV1().Nodes().Update(context.Background(), current, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			keepNodeReady(t, c, node)
			d := startDaemon(t, c, node, run.machine, append([]string{"--health=false"}, run.flags...)...)
			waitForSlices(t, c, d, node, expectedSlicesOn(t, c, node, run.machine, run.flags...))
			s := readStory(t, filepath.Join(sourceDir(t), "deploy", "examples", run.story))
			namespaces := s.create(t, c, node)
			t.Cleanup(func() {
				// No kubelet confirms a pod's end: delete the pods at once, so that their claims
				// are released before the next run.
				for _, namespace := range namespaces {
					_ = c.Admin.CoreV1().Pods(namespace).DeleteCollection(context.Background(),
						metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{})
					_ = c.Admin.CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
				}
			})
			pods := waitForScheduling(t, c, namespaces)
			scheduled := 0
			why := ""
			for _, pod := range pods {
				for _, condition := range pod.Status.Conditions {
					if condition.Type == v1.PodScheduled && condition.Status == v1.ConditionFalse {
						why += fmt.Sprintf("\n  pod %s/%s: %s", pod.Namespace, pod.Name, condition.Message)
					}
				}
				if pod.Spec.NodeName != "" {
					scheduled++
					if pod.Spec.NodeName != node {
						t.Errorf("pod %s/%s on %s, want %s", pod.Namespace, pod.Name, pod.Spec.NodeName, node)
					}
				}
			}
			claims := claimsOf(t, c, namespaces)
			predicted, explanation := predict(t, c, filepath.Join(c.Dir, "predictions", node), node, claims)
			allocated := 0
			for _, claim := range claims {
				key := claim.Namespace + "/" + claim.Name
				if claim.Status.Allocation != nil {
					allocated++
				}
				if difference := allocationDifference(node, claim.Status.Allocation, predicted[key]); difference != "" {
					t.Errorf("claim %s: %s\nthe scheduler said:%s\ndra-allocate said:\n%s", key, difference, why, explanation)
				}
			}
			t.Logf("%d pods, %d scheduled; %d claims, %d allocated by the scheduler, the same by dra-allocate%s", len(pods), scheduled, len(claims), allocated, why)
			prepareAsTheKubelet(t, c, node, claims)
		})
	}
}

// podWithClaim creates a claim for the NIC named ifName, with or without a toleration of the
// unhealthy taint, and a pod using it, both named `name`.
func podWithClaim(t *testing.T, c *cluster.Cluster, namespace, name, ifName string, tolerate bool) {
	t.Helper()
	ctx := context.Background()
	exact := &resourceapi.ExactDeviceRequest{
		DeviceClassName: "nic." + driverName,
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes[%q].ifName == %q`, driverName, ifName),
		}}},
	}
	if tolerate {
		exact.Tolerations = []resourceapi.DeviceToleration{{Key: driverName + "/unhealthy", Operator: resourceapi.DeviceTolerationOpExists}}
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "nic", Exactly: exact}}}},
	}
	if _, err := c.Admin.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{{Name: "nic", ResourceClaimName: ptr.To(name)}},
			Containers: []v1.Container{{Name: "app", Image: "registry.invalid/app:e2e",
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "nic"}}}}},
		},
	}
	if _, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A device the daemon tainted as unhealthy (a NIC whose carrier is down) is not allocated by the
// real scheduler to a pod that does not tolerate the taint; one that tolerates it gets it; and
// dra-allocate predicts both.
func TestTheSchedulerKeepsPodsOffATaintedDevice(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const node = "taint-sriov"
	createNode(t, c, node, "sriov-nic")
	keepNodeReady(t, c, node)
	startDaemon(t, c, node, "sriov-nic", "--health-interval=1s")
	eventually(t, 30*time.Second, "ens1f1's carrier-down taint published", func() bool {
		return hasTaint(deviceTaints(t, c, node, "nic-0000-01-00-1"), driverName+"/unhealthy", "carrier-down")
	})
	namespace := "taint-test"
	createNamespace(t, c, namespace)
	t.Cleanup(func() {
		_ = c.Admin.CoreV1().Pods(namespace).DeleteCollection(context.Background(),
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{})
		_ = c.Admin.CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
	})
	podWithClaim(t, c, namespace, "intolerant", "ens1f1", false)
	podWithClaim(t, c, namespace, "tolerant", "ens1f1", true)
	pods := waitForScheduling(t, c, []string{namespace})
	for _, pod := range pods {
		bound := pod.Spec.NodeName != ""
		if want := pod.Name == "tolerant"; bound != want {
			t.Errorf("pod %s: bound=%v, want %v", pod.Name, bound, want)
		}
	}
	claims := claimsOf(t, c, []string{namespace})
	predicted, explanation := predict(t, c, filepath.Join(c.Dir, "predictions", node), node, claims)
	for _, claim := range claims {
		key := claim.Namespace + "/" + claim.Name
		if difference := allocationDifference(node, claim.Status.Allocation, predicted[key]); difference != "" {
			t.Errorf("claim %s: %s\ndra-allocate said:\n%s", key, difference, explanation)
		}
	}
}
