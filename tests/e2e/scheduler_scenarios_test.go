package e2e

// Why one file of ~870 lines: one test whose scenario objects go through the real scheduler
// and controller-manager and come back compared with dra-allocate's answer; creating, awaiting,
// comparing and removing a scenario share its liveScenario state.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"numadra.dev/tests/e2e/cluster"
)

// The scenarios of testdata/allocator that are the scheduler's, not the allocator library's
// (issue 23 §2): Pods with several claims, claim templates, extended resources and node
// resources. Each runs against the real kube-scheduler and kube-controller-manager, and what
// they decide is what dra-allocate decides on the same objects: the same node for each Pod, the
// same devices per request, the same statuses, and the Pods dra-allocate leaves unplaced are
// unschedulable.

// podScenarioTest names the test in scenario-expectations.txt reasons: a scenario listed with a
// reason naming it must be one this test runs.
const podScenarioTest = "TestTheSchedulerDecidesThePodScenariosAsDraAllocate"

// podScenariosNotOnThisControlPlane are the scenarios with Pods that Kubernetes 1.37.2 cannot
// run, each with why; stillTrue fails when the reason no longer holds, so that the scenario is
// run instead of staying listed. Empty today: every such scenario runs.
var podScenariosNotOnThisControlPlane = map[string]struct {
	reason    string
	stillTrue func(t *testing.T, c *cluster.Cluster) error
}{}

// forTheScheduler says whether the scenario is the scheduler's: a Pod, a ResourceClaimTemplate
// (which the controller manager turns into claims) or a Node's allocatable resources (which the
// scheduler's NodeResourcesFit reads). Invalid input is the API server's
// (invalid_scenarios_test.go). A scenario of claims, slices and classes alone, Nodes only
// labelling them included, is the allocator library's, judged by tests/upstream.
func (s scenario) forTheScheduler() bool {
	if s.exit == 2 {
		return false
	}
	if s.has("Pod") || s.has("ResourceClaimTemplate") {
		return true
	}
	for _, d := range s.documents {
		if status, _ := d.object["status"].(map[string]any); d.kind() == "Node" && status["allocatable"] != nil {
			return true
		}
	}
	return false
}

func TestTheSchedulerDecidesThePodScenariosAsDraAllocate(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	var selected []scenario
	selectedNames := map[string]bool{}
	for _, s := range allScenarios(t) {
		if s.forTheScheduler() {
			selected = append(selected, s)
			selectedNames[s.name] = true
		}
	}
	// The expectations that send a scenario here must be right about it.
	for name, expectation := range scenarioExpectations(t) {
		if strings.Contains(expectation.reason, podScenarioTest) && !selectedNames[name] {
			t.Errorf("scenario-expectations.txt sends %s to %s, which does not run it (no Pod, template or Node allocatable)", name, podScenarioTest)
		}
	}
	for name := range podScenariosNotOnThisControlPlane {
		if !selectedNames[name] {
			t.Errorf("%s is listed as not runnable on this control plane, but is no scenario of the scheduler's", name)
		}
	}
	for i, s := range selected {
		t.Run(s.name, func(t *testing.T) {
			if listed, ok := podScenariosNotOnThisControlPlane[s.name]; ok {
				if err := listed.stillTrue(t, c); err != nil {
					t.Fatalf("listed as not runnable on v1.37.2 (%s), but: %v: run it", listed.reason, err)
				}
				t.Skip(listed.reason)
			}
			runPodScenario(t, c, fmt.Sprintf("scn%d", i), s)
		})
	}
	if !t.Failed() {
		t.Logf("%d scenarios with Pods, templates or node resources: the real scheduler decided each as dra-allocate (%d listed as not runnable on v1.37.2)",
			len(selected)-len(podScenariosNotOnThisControlPlane), len(podScenariosNotOnThisControlPlane))
	}
}

// liveScenario is a scenario put into the cluster: what was created, as the API server returned
// it, before the scheduler decided anything.
type liveScenario struct {
	c      *cluster.Cluster
	s      scenario
	prefix string
	nodes  []string
	// written holds, per document, the object as the API server stored it before the scheduler
	// saw the pending Pods: what dra-allocate is given.
	written []any
	// extra are objects the scenario does not give but the cluster needed (Nodes its slices
	// name) or has anyway (DeviceClasses of other tests): dra-allocate sees them too.
	extra   []any
	pending []*v1.Pod // the Pods the scheduler places, in the scenario's order
	// pendingDocuments are the documents of the pending Pods.
	pendingDocuments []int
	why              map[string]string
}

// namespace is the cluster namespace of a scenario namespace ("" is "default", as dra-allocate
// and kubectl read it): each scenario gets its own, so that scenarios do not meet.
func (l *liveScenario) namespace(name string) string {
	if name == "" {
		name = "default"
	}
	return l.prefix + "-" + name
}

// The resources of a Node the scenario does not describe: room for any scenario's pods.
var defaultNodeResources = v1.ResourceList{
	v1.ResourceCPU:    resource.MustParse("64"),
	v1.ResourceMemory: resource.MustParse("256Gi"),
	v1.ResourcePods:   resource.MustParse("110"),
}

// readyNode is the Node as a kubelet registers it: the scenario's labels and allocatable (or
// defaultNodeResources), capacity as allocatable when not given, Ready, the features the
// cluster's kubelet declares added to the scenario's, and the hostname label.
func readyNode(c *cluster.Cluster, node *v1.Node) *v1.Node {
	node = node.DeepCopy()
	node.UID, node.ResourceVersion, node.CreationTimestamp = "", "", metav1.Time{}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels["kubernetes.io/hostname"] = node.Name
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = defaultNodeResources.DeepCopy()
	}
	if node.Status.Capacity == nil {
		node.Status.Capacity = node.Status.Allocatable.DeepCopy()
	}
	node.Status.Conditions = []v1.NodeCondition{{
		Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	features := map[string]bool{}
	for _, feature := range append(node.Status.DeclaredFeatures, declaredFeatures(c)...) {
		features[feature] = true
	}
	node.Status.DeclaredFeatures = nil
	for feature := range features {
		node.Status.DeclaredFeatures = append(node.Status.DeclaredFeatures, feature)
	}
	sort.Strings(node.Status.DeclaredFeatures)
	return node
}

// createReadyNode creates the Node Ready (a Node's status may be set on create) and takes off
// the not-ready taint the API server's TaintNodesByCondition admission puts on every new Node,
// as the node lifecycle controller does for a Ready node (it takes it up to 2 s); the scheduler
// would refuse the node to the first pods meanwhile.
func createReadyNode(t testing.TB, c *cluster.Cluster, node *v1.Node) *v1.Node {
	t.Helper()
	ctx := context.Background()
	created, err := c.Admin.CoreV1().Nodes().Create(ctx, readyNode(c, node), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", node.Name, err)
	}
	name := created.Name
	t.Cleanup(func() { _ = c.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if len(created.Spec.Taints) == 0 {
			return nil
		}
		created.Spec.Taints = nil
		updated, err := c.Admin.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			created, _ = c.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		} else if err == nil {
			created = updated
		}
		return err
	})
	if err != nil {
		t.Fatalf("node %s: taking off the not-ready taint: %v", name, err)
	}
	created.ManagedFields = nil
	return created
}

// completePod fills in what the API server requires of a Pod that a scenario may leave out: an
// image for each container.
func completePod(pod *v1.Pod) {
	for _, containers := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			if containers[i].Image == "" {
				containers[i].Image = "registry.invalid/app:e2e"
			}
		}
	}
}

// preferNodesByName adds a preferred node affinity that ranks the nodes in name order, as
// dra-allocate tries them: the scheduler's choice among nodes that all fit is then dra-allocate's
// (the first by name), not a tie its scoring breaks at random. It changes which nodes fit
// nothing.
func preferNodesByName(pod *v1.Pod, nodes []string) {
	if len(nodes) < 2 {
		return
	}
	sorted := append([]string(nil), nodes...)
	sort.Strings(sorted)
	var terms []v1.PreferredSchedulingTerm
	for i, node := range sorted {
		weight := int32(100 - i*99/(len(sorted)-1))
		terms = append(terms, v1.PreferredSchedulingTerm{Weight: weight, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
		}})
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &v1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = terms
}

// runPodScenario puts the scenario into the cluster, lets the scheduler place its Pods one at a
// time in the scenario's order, and compares with dra-allocate on the same objects.
func runPodScenario(t *testing.T, c *cluster.Cluster, prefix string, s scenario) {
	l := &liveScenario{c: c, s: s, prefix: prefix, written: make([]any, len(s.documents)), why: map[string]string{}}
	t.Cleanup(func() { l.remove(t) })
	l.create(t)
	for n, pod := range l.pending {
		stored, err := c.Admin.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", s.documents[l.pendingDocuments[n]].where(), err)
		}
		stored.ManagedFields = nil
		l.written[l.pendingDocuments[n]] = stored
		l.why[pod.Name] = awaitPlacement(t, c, pod.Namespace, pod.Name, len(l.nodes))
	}
	l.compare(t)
}

// create makes the scenario's objects in the order a cluster has them before pods come: Nodes,
// DeviceClasses, ResourceSlices, namespaces, claims and templates, the Pods already on a node,
// the claims' statuses (allocations, reservations) and then each pending Pod.
func (l *liveScenario) create(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c, s := l.c, l.s
	nodes := map[string]*v1.Node{}
	var nodeOrder []string
	addNode := func(name string, node *v1.Node) {
		if name == "" {
			return
		}
		if _, seen := nodes[name]; !seen {
			nodeOrder = append(nodeOrder, name)
		}
		if node != nil || nodes[name] == nil {
			nodes[name] = node
		}
	}
	objects := make([]any, len(s.documents))
	for i, d := range s.documents {
		switch d.kind() {
		case "Node":
			var node v1.Node
			d.decode(t, &node)
			addNode(node.Name, &node)
			objects[i] = &node
		case "DeviceClass":
			var class resourceapi.DeviceClass
			d.decode(t, &class)
			objects[i] = &class
		case "ResourceSlice":
			var slice resourceapi.ResourceSlice
			d.decode(t, &slice)
			addNode(ptr.Deref(slice.Spec.NodeName, ""), nil)
			objects[i] = &slice
		case "ResourceClaim":
			var claim resourceapi.ResourceClaim
			d.decode(t, &claim)
			objects[i] = &claim
		case "ResourceClaimTemplate":
			var template resourceapi.ResourceClaimTemplate
			d.decode(t, &template)
			objects[i] = &template
		case "Pod":
			var pod v1.Pod
			d.decode(t, &pod)
			addNode(pod.Spec.NodeName, nil)
			objects[i] = &pod
		default:
			t.Fatalf("%s: a %s: not a kind this test puts into the cluster", d.where(), d.kind())
		}
	}
	addNode(s.flag("--node"), nil)
	sort.Strings(nodeOrder)
	l.nodes = nodeOrder

	// Nodes: created Ready with their status (a Node's status may be set on create), so no
	// not-ready taint comes and goes while the scheduler looks.
	for _, name := range nodeOrder {
		given := nodes[name]
		if given == nil {
			given = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		created := createReadyNode(t, c, given)
		if nodes[name] == nil {
			l.extra = append(l.extra, created)
		}
		for i, object := range objects {
			if node, ok := object.(*v1.Node); ok && node.Name == name {
				l.written[i] = created
			}
		}
	}
	keepNodesReady(t, c, nodeOrder)

	// DeviceClasses, the older first where the scenario gives their creation times: the API
	// server sets a class's creationTimestamp itself, to the second, so a class meant to be newer
	// is created in a later second.
	classes := []int{}
	for i, object := range objects {
		if _, ok := object.(*resourceapi.DeviceClass); ok {
			classes = append(classes, i)
		}
	}
	created := func(i int) time.Time {
		return objects[i].(*resourceapi.DeviceClass).CreationTimestamp.Time
	}
	sort.SliceStable(classes, func(a, b int) bool { return created(classes[a]).Before(created(classes[b])) })
	var lastCreated time.Time
	for n, i := range classes {
		class := objects[i].(*resourceapi.DeviceClass).DeepCopy()
		if n > 0 && created(i).After(created(classes[n-1])) {
			for time.Now().Truncate(time.Second).Equal(lastCreated.Truncate(time.Second)) {
				time.Sleep(50 * time.Millisecond)
			}
		}
		class.CreationTimestamp = metav1.Time{}
		stored, err := c.Admin.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", s.documents[i].where(), err)
		}
		lastCreated = time.Now()
		stored.ManagedFields = nil
		l.written[i] = stored
	}
	for i, object := range objects {
		if slice, ok := object.(*resourceapi.ResourceSlice); ok {
			stored, err := c.Admin.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", s.documents[i].where(), err)
			}
			stored.ManagedFields = nil
			l.written[i] = stored
		}
	}

	namespaces := map[string]bool{}
	for _, object := range objects {
		switch o := object.(type) {
		case *resourceapi.ResourceClaim:
			o.Namespace = l.namespace(o.Namespace)
			namespaces[o.Namespace] = true
		case *resourceapi.ResourceClaimTemplate:
			o.Namespace = l.namespace(o.Namespace)
			namespaces[o.Namespace] = true
		case *v1.Pod:
			o.Namespace = l.namespace(o.Namespace)
			namespaces[o.Namespace] = true
		}
	}
	for namespace := range namespaces {
		createNamespace(t, c, namespace)
	}

	// Claims and templates. An object's uid is the API server's to give: a scenario's uid is
	// dropped, and a reservation naming it gets the real Pod's.
	statuses := map[int]resourceapi.ResourceClaimStatus{}
	for i, object := range objects {
		switch o := object.(type) {
		case *resourceapi.ResourceClaim:
			claim := o.DeepCopy()
			claim.UID, claim.Status = "", resourceapi.ResourceClaimStatus{}
			stored, err := c.Admin.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", s.documents[i].where(), err)
			}
			if o.Status.Allocation != nil || len(o.Status.ReservedFor) > 0 {
				statuses[i] = o.Status
			}
			stored.ManagedFields = nil
			l.written[i] = stored
		case *resourceapi.ResourceClaimTemplate:
			stored, err := c.Admin.ResourceV1().ResourceClaimTemplates(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", s.documents[i].where(), err)
			}
			stored.ManagedFields = nil
			l.written[i] = stored
		}
	}

	// The Pods already on a node (spec.nodeName), with the status their scheduler wrote.
	podUIDs := map[types.UID]types.UID{} // the scenario's uid -> the API server's
	for i, object := range objects {
		pod, ok := object.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			continue
		}
		bound := pod.DeepCopy()
		completePod(bound)
		bound.UID, bound.Status = "", v1.PodStatus{}
		stored, err := c.Admin.CoreV1().Pods(bound.Namespace).Create(ctx, bound, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", s.documents[i].where(), err)
		}
		if !apiequality.Semantic.DeepEqual(pod.Status, v1.PodStatus{}) {
			stored.Status = pod.Status
			if stored, err = c.Admin.CoreV1().Pods(bound.Namespace).UpdateStatus(ctx, stored, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("%s: status: %v", s.documents[i].where(), err)
			}
		}
		podUIDs[pod.UID] = stored.UID
		stored.ManagedFields = nil
		l.written[i] = stored
	}
	for i, status := range statuses {
		claim := l.written[i].(*resourceapi.ResourceClaim).DeepCopy()
		claim.Status = *status.DeepCopy()
		// A claim the scheduler allocated with DRADeviceBindingConditions and
		// DRAResourceClaimDeviceStatus on carries an allocationTimestamp. One without it (as a
		// scenario writes it) makes the scheduler's PreBind add the timestamp while reserving the
		// claim for the next pod, which the API server refuses as a change of the allocation
		// ("status.allocation: field cannot be modified once set"; upstream's bindClaim), and the
		// pod never binds. Written as the scheduler would have; a profile without those gates
		// drops the field.
		if allocation := claim.Status.Allocation; allocation != nil && allocation.AllocationTimestamp == nil {
			allocation.AllocationTimestamp = &metav1.Time{Time: time.Now()}
		}
		for j, consumer := range claim.Status.ReservedFor {
			if uid, ok := podUIDs[consumer.UID]; ok {
				claim.Status.ReservedFor[j].UID = uid
			}
		}
		stored, err := c.Admin.ResourceV1().ResourceClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("%s: status: %v", s.documents[i].where(), err)
		}
		stored.ManagedFields = nil
		l.written[i] = stored
	}

	// Every DeviceClass the scheduler sees, the scenario's or not.
	list, err := c.Admin.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if !l.wrote(&list.Items[i]) {
			list.Items[i].ManagedFields = nil
			l.extra = append(l.extra, &list.Items[i])
		}
	}

	// The pending Pods, created one at a time in the scenario's order by runPodScenario.
	for i, object := range objects {
		if pod, ok := object.(*v1.Pod); ok && pod.Spec.NodeName == "" {
			pending := pod.DeepCopy()
			completePod(pending)
			pending.UID, pending.Status = "", v1.PodStatus{}
			if node := s.flag("--node"); node != "" {
				if pending.Spec.NodeSelector == nil {
					pending.Spec.NodeSelector = map[string]string{}
				}
				pending.Spec.NodeSelector["kubernetes.io/hostname"] = node
			}
			preferNodesByName(pending, l.nodes)
			l.pending = append(l.pending, pending)
			l.pendingDocuments = append(l.pendingDocuments, i)
		}
	}
}

// wrote says whether the class is one of the scenario's.
func (l *liveScenario) wrote(class *resourceapi.DeviceClass) bool {
	for _, object := range l.written {
		if written, ok := object.(*resourceapi.DeviceClass); ok && written.Name == class.Name {
			return true
		}
	}
	return false
}

// nodesAvailable reads "0/N nodes are available" from the scheduler's message.
var nodesAvailable = regexp.MustCompile(`\d+/(\d+) nodes are available`)

// awaitPlacement creates the pending Pod and waits until the scheduler bound it or found it
// unschedulable on a view holding at least the scenario's nodes; returns its message.
func awaitPlacement(t *testing.T, c *cluster.Cluster, namespace, name string, nodes int) string {
	t.Helper()
	_, why := schedulerVerdict(t, c, namespace, name, func(message string) bool {
		if strings.Contains(message, filterError) {
			return true
		}
		match := nodesAvailable.FindStringSubmatch(message)
		seen, _ := strconv.Atoi(ptr.Deref(lastOf(match), "0"))
		return seen >= nodes
	})
	return why
}

func lastOf(values []string) *string {
	if len(values) == 0 {
		return nil
	}
	return &values[len(values)-1]
}

// podPlacement is where a Pod went and what its claims got, by the Pod's name for each claim.
type podPlacement struct {
	node        string                                   // "" when not placed
	claimNames  map[string]string                        // pod claim -> claim name
	allocations map[string]*resourceapi.AllocationResult // pod claim -> its allocation
	extended    *v1.PodExtendedResourceClaimStatus
	// extendedAllocation is the allocation of the claim for the Pod's extended resources.
	extendedAllocation *resourceapi.AllocationResult
	nodeAllocatable    []v1.NodeAllocatableResourceClaimStatus
}

// placementOf reads a Pod's placement from the pod and the claims' allocations by name.
func placementOf(pod *v1.Pod, node string, allocation func(name string) *resourceapi.AllocationResult) podPlacement {
	p := podPlacement{node: node, claimNames: map[string]string{}, allocations: map[string]*resourceapi.AllocationResult{}}
	generated := map[string]string{}
	for _, status := range pod.Status.ResourceClaimStatuses {
		generated[status.Name] = ptr.Deref(status.ResourceClaimName, "")
	}
	for _, claim := range pod.Spec.ResourceClaims {
		name := ptr.Deref(claim.ResourceClaimName, generated[claim.Name])
		p.claimNames[claim.Name] = name
		if name != "" {
			p.allocations[claim.Name] = allocation(name)
		}
	}
	if status := pod.Status.ExtendedResourceClaimStatus; status != nil {
		p.extended = status
		p.extendedAllocation = allocation(status.ResourceClaimName)
	}
	p.nodeAllocatable = pod.Status.NodeAllocatableResourceClaimStatuses
	return p
}

// allocatedNode is the node an allocation selects by name ("" when it selects by labels or not
// at all).
func allocatedNode(a *resourceapi.AllocationResult) string {
	if a == nil || a.NodeSelector == nil {
		return ""
	}
	for _, term := range a.NodeSelector.NodeSelectorTerms {
		for _, field := range term.MatchFields {
			if field.Key == "metadata.name" && len(field.Values) == 1 {
				return field.Values[0]
			}
		}
	}
	return ""
}

// allocationsDiffer compares the scheduler's allocation with dra-allocate's: devices per request
// in result order, admin access, consumed capacity, and the node selector ("" when equal).
func allocationsDiffer(scheduler, predicted *resourceapi.AllocationResult) string {
	if node := allocatedNode(scheduler); node != "" || scheduler == nil || predicted == nil {
		return allocationDifference(node, scheduler, predicted)
	}
	if g, w := describeResults(scheduler), describeResults(predicted); strings.Join(g, "\n") != strings.Join(w, "\n") {
		return fmt.Sprintf("scheduler:\n  %s\ndra-allocate:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	if !apiequality.Semantic.DeepEqual(scheduler.NodeSelector, predicted.NodeSelector) {
		return fmt.Sprintf("node selectors %v and %v", scheduler.NodeSelector, predicted.NodeSelector)
	}
	return ""
}

// placementDifference compares the scheduler's placement of a Pod with dra-allocate's ("" when
// the same).
func placementDifference(scheduler, predicted podPlacement) string {
	var out []string
	if scheduler.node != predicted.node {
		out = append(out, fmt.Sprintf("scheduler: node %q, dra-allocate: node %q", scheduler.node, predicted.node))
	}
	names := make([]string, 0, len(scheduler.claimNames))
	for name := range scheduler.claimNames {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if difference := allocationsDiffer(scheduler.allocations[name], predicted.allocations[name]); difference != "" {
			out = append(out, fmt.Sprintf("claim %s (%s; dra-allocate's %s): %s", name, scheduler.claimNames[name], predicted.claimNames[name], difference))
		}
	}
	if (scheduler.extended == nil) != (predicted.extended == nil) {
		out = append(out, fmt.Sprintf("extended-resource claim status: scheduler %+v, dra-allocate %+v", scheduler.extended, predicted.extended))
	} else if scheduler.extended != nil {
		if !apiequality.Semantic.DeepEqual(scheduler.extended.RequestMappings, predicted.extended.RequestMappings) {
			out = append(out, fmt.Sprintf("extended-resource request mappings: scheduler %+v, dra-allocate %+v", scheduler.extended.RequestMappings, predicted.extended.RequestMappings))
		}
		if difference := allocationsDiffer(scheduler.extendedAllocation, predicted.extendedAllocation); difference != "" {
			out = append(out, "extended-resource claim: "+difference)
		}
	}
	// dra-allocate names a generated claim <pod>-<name>, the controller manager and the
	// scheduler add a random suffix: compare the statuses with dra-allocate's names translated.
	real := map[string]string{}
	for name, claim := range predicted.claimNames {
		real[claim] = scheduler.claimNames[name]
	}
	if predicted.extended != nil && scheduler.extended != nil {
		real[predicted.extended.ResourceClaimName] = scheduler.extended.ResourceClaimName
	}
	translated := make([]v1.NodeAllocatableResourceClaimStatus, 0, len(predicted.nodeAllocatable))
	for _, status := range predicted.nodeAllocatable {
		status = *status.DeepCopy()
		if name, ok := real[status.ResourceClaimName]; ok {
			status.ResourceClaimName = name
		}
		translated = append(translated, status)
	}
	sort.Slice(translated, func(i, j int) bool { return translated[i].ResourceClaimName < translated[j].ResourceClaimName })
	if len(scheduler.nodeAllocatable)+len(translated) > 0 && !apiequality.Semantic.DeepEqual(scheduler.nodeAllocatable, translated) {
		out = append(out, fmt.Sprintf("nodeAllocatableResourceClaimStatuses: scheduler %+v, dra-allocate %+v", scheduler.nodeAllocatable, translated))
	}
	return strings.Join(out, "\n")
}

// compare gives dra-allocate the scenario as the scheduler saw it before the first pending Pod
// and compares each pending Pod's placement.
func (l *liveScenario) compare(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(l.c.Dir, "scenarios", l.s.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var items []any
	items = append(items, l.extra...)
	items = append(items, l.written...)
	writeObjects(t, filepath.Join(dir, "objects.json"), items)
	args := []string{"--explain"}
	if node := l.s.flag("--node"); node != "" {
		args = append(args, "--node", node)
	}
	predicted := runDraAllocate(t, dir, args...)

	stored := map[string]*resourceapi.ResourceClaim{}
	for _, namespace := range l.namespaces() {
		claims, err := l.c.Admin.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range claims.Items {
			stored[namespace+"/"+claims.Items[i].Name] = &claims.Items[i]
		}
	}
	placed := 0
	for _, pending := range l.pending {
		key := pending.Namespace + "/" + pending.Name
		pod, err := l.c.Admin.CoreV1().Pods(pending.Namespace).Get(ctx, pending.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scheduler := placementOf(pod, pod.Spec.NodeName, func(name string) *resourceapi.AllocationResult {
			if claim := stored[pod.Namespace+"/"+name]; claim != nil {
				return claim.Status.Allocation
			}
			return nil
		})
		prediction := predictedPlacement(t, predicted, pod.Namespace, pod.Name)
		if scheduler.node != "" {
			placed++
			if !contains(l.nodes, scheduler.node) {
				t.Errorf("pod %s: bound to %s, not a node of the scenario (%v)", key, scheduler.node, l.nodes)
			}
		}
		if difference := placementDifference(scheduler, prediction); difference != "" {
			t.Errorf("pod %s:\n%s\nthe scheduler said: %s\ndra-allocate said (dump in %s):\n%s", key, difference, l.why[pending.Name], dir, predicted.stderr)
		}
	}
	t.Logf("%d pods on %d nodes: %d bound, the rest unschedulable; dra-allocate decided each the same", len(l.pending), len(l.nodes), placed)
}

// predictedPlacement is where dra-allocate placed the pod: the node its claims' allocations
// select.
func predictedPlacement(t testing.TB, predicted draAllocateOutput, namespace, name string) podPlacement {
	t.Helper()
	pod := predicted.pods[namespace+"/"+name]
	if pod == nil {
		t.Fatalf("pod %s/%s: not in dra-allocate's output\n%s", namespace, name, predicted.stderr)
	}
	p := placementOf(pod, "", func(claim string) *resourceapi.AllocationResult {
		return predicted.allocations[namespace+"/"+claim]
	})
	p.node = predictedNode(p)
	// A pod whose claims were all allocated before has no new allocation to show where it went:
	// dra-allocate names each pod it does not place on stderr.
	if strings.Contains("\n"+predicted.stderr, "\npod "+namespace+"/"+name+": not allocated") {
		p.node = ""
	}
	return p
}

// predictedNode is the node dra-allocate placed the Pod on: the one its claims' allocations
// select, "" when a claim is not allocated.
func predictedNode(p podPlacement) string {
	node := ""
	allocations := []*resourceapi.AllocationResult{}
	for _, allocation := range p.allocations {
		allocations = append(allocations, allocation)
	}
	if p.extended != nil {
		allocations = append(allocations, p.extendedAllocation)
	}
	for _, allocation := range allocations {
		if allocation == nil {
			return ""
		}
		if name := allocatedNode(allocation); name != "" {
			if node != "" && node != name {
				return "(claims on " + node + " and " + name + ")"
			}
			node = name
		}
	}
	return node
}

func contains(values []string, value string) bool {
	for _, v := range values {
		if v == value {
			return true
		}
	}
	return false
}

// namespaces are the scenario's namespaces in the cluster.
func (l *liveScenario) namespaces() []string {
	set := map[string]bool{}
	for _, d := range l.s.documents {
		switch d.kind() {
		case "Pod", "ResourceClaim", "ResourceClaimTemplate":
			set[l.namespace(d.namespace())] = true
		}
	}
	var out []string
	for namespace := range set {
		out = append(out, namespace)
	}
	sort.Strings(out)
	return out
}

// writeObjects writes the objects as one v1 List, each with its kind and apiVersion.
func writeObjects(t testing.TB, path string, objects []any) {
	t.Helper()
	var items []json.RawMessage
	for _, object := range objects {
		if object == nil {
			continue
		}
		kind, apiVersion := "", ""
		switch object.(type) {
		case *v1.Node:
			kind, apiVersion = "Node", "v1"
		case *v1.Pod:
			kind, apiVersion = "Pod", "v1"
		case *resourceapi.DeviceClass:
			kind, apiVersion = "DeviceClass", "resource.k8s.io/v1"
		case *resourceapi.ResourceSlice:
			kind, apiVersion = "ResourceSlice", "resource.k8s.io/v1"
		case *resourceapi.ResourceClaim:
			kind, apiVersion = "ResourceClaim", "resource.k8s.io/v1"
		case *resourceapi.ResourceClaimTemplate:
			kind, apiVersion = "ResourceClaimTemplate", "resource.k8s.io/v1"
		default:
			t.Fatalf("writeObjects: a %T", object)
		}
		data, err := json.Marshal(object)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(data, &fields); err != nil {
			t.Fatal(err)
		}
		fields["kind"], fields["apiVersion"] = kind, apiVersion
		if data, err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
		items = append(items, data)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// remove deletes what the scenario made and waits until its claims are gone: the next scenario
// uses the same drivers, pools and devices, and the scheduler counts every allocated claim.
func (l *liveScenario) remove(t *testing.T) {
	ctx := context.Background()
	c := l.c
	zero := metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}
	namespaces := l.namespaces()
	for _, namespace := range namespaces {
		_ = c.Admin.CoreV1().Pods(namespace).DeleteCollection(ctx, zero, metav1.ListOptions{})
		_ = c.Admin.ResourceV1().ResourceClaims(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, namespace := range namespaces {
		for {
			claims, err := c.Admin.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
			if err != nil || len(claims.Items) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("claims of %s still there 30 s after their deletion: %s (finalizers %v)", namespace, claims.Items[0].Name, claims.Items[0].Finalizers)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Admin.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
	}
	for _, object := range l.written {
		var err error
		switch o := object.(type) {
		case *resourceapi.DeviceClass:
			err = c.Admin.ResourceV1().DeviceClasses().Delete(ctx, o.Name, metav1.DeleteOptions{})
		case *resourceapi.ResourceSlice:
			err = c.Admin.ResourceV1().ResourceSlices().Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %T: %v", object, err)
		}
	}
	for _, node := range l.nodes {
		if err := c.Admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", node, err)
		}
	}
}
