package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// CPU pinning and memory binding through containerd's NRI. The driver reads, for these tests, a
// mocked machine whose CPUs and NUMA nodes are this machine's own (testdata/generate_sysfs.py
// --host-mirror /sys), with a GPU and a NIC on each node: the cpusets containerd applies from its
// slices are real, and what the containers get is checked from inside them (/proc/self/status:
// Cpus_allowed_list, Mems_allowed_list) and in the container's runtime spec.

// pinOnThisMachine upgrades the driver to the mirror of this machine with pinning required, and
// back to the tier's mocked machine without pinning when the test ends.
func pinOnThisMachine(t testing.TB) {
	t.Helper()
	mirror, err := theNode.mirrorMachine()
	if err != nil {
		t.Fatal(err)
	}
	upgradeDriver(t, append(hostRoots(mirror), "cpuPinning.mode=nri")...)
	t.Cleanup(func() {
		upgradeDriver(t, append(hostRoots(theNode.machineDir), "cpuPinning.mode=off")...)
	})
	waitFor(t, 60*time.Second, "this machine's CPU device published", func() error {
		for _, name := range publishedDevices(t) {
			if strings.HasSuffix(name, "/cpu-numa-0") {
				return nil
			}
		}
		return fmt.Errorf("devices %v", publishedDevices(t))
	})
}

// hostRoots are the chart's values that make the driver read the mocked machine in dir.
func hostRoots(dir string) []string {
	return []string{"hostRoots.sys=" + filepath.Join(dir, "sys"), "hostRoots.dev=" + filepath.Join(dir, "dev"),
		"hostRoots.proc=" + filepath.Join(dir, "proc")}
}

// onlineCPUs is this machine's /sys/devices/system/cpu/online, expanded.
func onlineCPUs(t testing.TB) []int {
	t.Helper()
	data, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := parseCPUList(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return cpus
}

// parseCPUList expands a kernel list ("0-2,5") into its numbers.
func parseCPUList(list string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(list, ",") {
		if part == "" {
			continue
		}
		from, to, isRange := strings.Cut(part, "-")
		if !isRange {
			to = from
		}
		low, err1 := strconv.Atoi(from)
		high, err2 := strconv.Atoi(to)
		if err1 != nil || err2 != nil || high < low {
			return nil, fmt.Errorf("malformed CPU list %q", list)
		}
		for cpu := low; cpu <= high; cpu++ {
			out = append(out, cpu)
		}
	}
	return out, nil
}

func formatCPUs(cpus []int) string {
	var parts []string
	for _, cpu := range cpus {
		parts = append(parts, strconv.Itoa(cpu))
	}
	return strings.Join(parts, ",")
}

// allowed is what a pod's first container may use, from its /proc/self/status: CPUs and memory
// nodes, each as a comma-separated list of numbers.
func allowed(t testing.TB, pod *v1.Pod) (cpus, mems string) {
	t.Helper()
	status := execIn(t, pod, "grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status")
	field := regexp.MustCompile(`(?m)^(Cpus|Mems)_allowed_list:\s*(\S+)$`)
	for _, match := range field.FindAllStringSubmatch(status, -1) {
		expanded, err := parseCPUList(match[2])
		if err != nil {
			t.Fatal(err)
		}
		if match[1] == "Cpus" {
			cpus = formatCPUs(expanded)
		} else {
			mems = formatCPUs(expanded)
		}
	}
	if cpus == "" || mems == "" {
		t.Fatalf("pod %s/%s: no allowed lists in /proc/self/status:\n%s", pod.Namespace, pod.Name, status)
	}
	return cpus, mems
}

// startPlainPod runs a pod without claims (startPod's rules otherwise) in the namespace `name`.
func startPlainPod(t testing.TB, name string) *v1.Pod {
	t.Helper()
	n := theNode
	createNamespace(t, name)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: name},
		Spec: v1.PodSpec{
			HostNetwork: true,
			Containers: []v1.Container{{
				Name: "main", Image: n.images["shell"].Name, ImagePullPolicy: v1.PullNever,
				Command: []string{"sh", "-c", "sleep infinity"},
			}},
		},
	}
	if _, err := n.cluster.Admin.CoreV1().Pods(name).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteWorkload(t, name, "plain") })
	return waitForRunning(t, name, "plain", 120*time.Second)
}

// startCPUPod runs a pod whose claim asks for `count` CPUs of the driver's CPU device (restarted
// when its container ends).
func startCPUPod(t testing.TB, name string, count int) workload {
	t.Helper()
	template := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "cpus"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: cpuClaim(count)},
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned"},
		Spec: v1.PodSpec{
			RestartPolicy:  v1.RestartPolicyAlways,
			ResourceClaims: []v1.PodResourceClaim{{Name: "cpus", ResourceClaimTemplateName: ptr.To("cpus")}},
			Containers: []v1.Container{{
				Name: "main", Command: []string{"sh", "-c", "sleep infinity"},
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "cpus"}}},
			}},
		},
	}
	return startPod(t, name, template, pod)
}

// cpuClaim asks for `count` CPUs of the driver's CPU device (request "cpu").
func cpuClaim(count int) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: "cpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "cpu." + driverName,
			Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
				"cpu": resource.MustParse(strconv.Itoa(count)),
			}},
		}}},
	}}
}

// claimCPUs is the CPU list the claim's CDI spec gives its container (NUMADRA_..._CPUS).
func claimCPUs(t testing.TB, w workload) string {
	t.Helper()
	for _, variable := range claimEdits(t, string(w.claim.UID)).Env {
		name, value, _ := strings.Cut(variable, "=")
		if strings.HasSuffix(name, "_CPUS") {
			cpus, err := parseCPUList(value)
			if err != nil {
				t.Fatal(err)
			}
			return formatCPUs(cpus)
		}
	}
	t.Fatalf("claim %s: no _CPUS variable in its CDI spec", w.claim.Name)
	return ""
}

func without(all []int, taken string) string {
	skip := map[string]bool{}
	for _, cpu := range strings.Split(taken, ",") {
		skip[cpu] = true
	}
	var rest []int
	for _, cpu := range all {
		if !skip[strconv.Itoa(cpu)] {
			rest = append(rest, cpu)
		}
	}
	return formatCPUs(rest)
}

func waitForAllowedCPUs(t testing.TB, pod *v1.Pod, want string) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("pod %s/%s on CPUs %s", pod.Namespace, pod.Name, want), func() error {
		if cpus, _ := allowed(t, pod); cpus != want {
			return fmt.Errorf("Cpus_allowed_list %s", cpus)
		}
		return nil
	})
}

// A pod claiming one CPU runs on exactly that CPU, its memory on the CPU's NUMA node; a pod
// started before it and one started after it run on every other CPU; when the claim's pod is
// gone, both have every CPU back.
func aClaimedCPUIsExclusiveToItsPodAndItsMemoryOnItsNode(t testing.TB, all []int) {
	before := startPlainPod(t, "plain-before")
	waitForAllowedCPUs(t, before, formatCPUs(all))

	pinned := startCPUPod(t, "pinned", 1)
	claimed := claimCPUs(t, pinned)
	if strings.Contains(claimed, ",") || claimed == "" {
		t.Fatalf("claim %s holds CPUs %q, want one", pinned.claim.Name, claimed)
	}
	cpus, mems := allowed(t, pinned.pod)
	if cpus != claimed || mems != "0" {
		t.Errorf("pinned pod: Cpus_allowed_list %s, Mems_allowed_list %s; want %s and 0", cpus, mems, claimed)
	}
	rest := without(all, claimed)
	waitForAllowedCPUs(t, before, rest)
	after := startPlainPod(t, "plain-after")
	if cpus, _ := allowed(t, after); cpus != rest {
		t.Errorf("a pod started after the claim's runs on CPUs %s, want %s", cpus, rest)
	}

	deleteWorkload(t, "pinned", pinned.pod.Name)
	waitForAllowedCPUs(t, before, formatCPUs(all))
	waitForAllowedCPUs(t, after, formatCPUs(all))
}

// checkPinning: the claim's pod on exactly its CPUs and node 0's memory, the plain pods on the
// rest (waiting for each: after a restart the driver's Synchronize brings them back).
func checkPinning(t testing.TB, pinned *v1.Pod, claimed, rest string, plain ...*v1.Pod) {
	t.Helper()
	waitForAllowedCPUs(t, pinned, claimed)
	if _, mems := allowed(t, pinned); mems != "0" {
		t.Errorf("pod %s/%s: Mems_allowed_list %s, want 0", pinned.Namespace, pinned.Name, mems)
	}
	for _, pod := range plain {
		waitForAllowedCPUs(t, pod, rest)
	}
}

// The pinning survives restarts on either side: the driver's pod deleted and replaced, containerd
// stopped and started (the NRI connection lost and made again, the runtime's Synchronize
// reconciled with the checkpoint), the claim's container killed and started again by the
// kubelet (pinned again at its creation). A plain pod started after each still gets the rest.
func cpuPinningSurvivesDriverContainerdAndContainerRestarts(t testing.TB, all []int) {
	n := theNode
	ctx := context.Background()
	pinned := startCPUPod(t, "pinned-restarts", 1)
	claimed := claimCPUs(t, pinned)
	rest := without(all, claimed)
	plain := startPlainPod(t, "plain-restarts")
	checkPinning(t, pinned.pod, claimed, rest, plain)

	old, err := n.waitForDriverPod(ctx, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cluster.Admin.CoreV1().Pods(driverNamespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.waitForDriverPod(ctx, string(old.UID), 120*time.Second); err != nil {
		t.Fatal(err)
	}
	checkPinning(t, pinned.pod, claimed, rest, plain, startPlainPod(t, "plain-after-driver"))

	if err := n.restartContainerd(true); err != nil {
		t.Fatalf("containerd after its restart: %v", err)
	}
	checkPinning(t, pinned.pod, claimed, rest, plain, startPlainPod(t, "plain-after-containerd"))

	current, err := n.cluster.Admin.CoreV1().Pods(pinned.pod.Namespace).Get(ctx, pinned.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containerID := current.Status.ContainerStatuses[0].ContainerID
	if out, err := n.ctr("tasks", "kill", "--signal", "SIGKILL", strings.TrimPrefix(containerID, "containerd://")); err != nil {
		t.Fatalf("ctr tasks kill %s: %v\n%s", containerID, err, out)
	}
	restarted := waitForNewContainer(t, pinned.pod.Namespace, pinned.pod.Name, containerID, 120*time.Second)
	checkPinning(t, restarted, claimed, rest, plain)
}

// CPU pinning on this machine's CPUs, the driver upgraded once for both stories.
func TestCPUPinningThroughContainerdsNRI(t *testing.T) {
	all := onlineCPUs(t)
	if len(all) < 2 {
		t.Fatalf("this machine has CPUs %v: exclusivity needs at least two", all)
	}
	pinOnThisMachine(t)
	t.Run("a claimed CPU is exclusive to its pod, its memory on its node", func(t *testing.T) {
		aClaimedCPUIsExclusiveToItsPodAndItsMemoryOnItsNode(t, all)
	})
	t.Run("the pinning survives driver, containerd and container restarts", func(t *testing.T) {
		cpuPinningSurvivesDriverContainerdAndContainerRestarts(t, all)
	})
	t.Run("memory is bound to the GPU's node when the claim asks", func(t *testing.T) {
		memoryIsBoundToTheGPUsNodeWhenTheClaimAsks(t, all)
	})
	t.Run("without NRI pods start unpinned, or wait when pinning is required", func(t *testing.T) {
		withoutNRIPodsStartUnpinnedOrWaitWhenPinningIsRequired(t, all)
	})
}

// runtimeCPUSet is the cpuset containerd's runtime spec gives the pod's first container
// (linux.resources.cpu): what NRI's adjustments made of it, "" where nothing set it. On a machine
// with one NUMA node a container's Mems_allowed_list is 0 with or without a binding; the spec
// tells them apart.
func runtimeCPUSet(t testing.TB, pod *v1.Pod) (cpus, mems string) {
	t.Helper()
	current, err := theNode.cluster.Admin.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(current.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s/%s has no container status", pod.Namespace, pod.Name)
	}
	id := strings.TrimPrefix(current.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := theNode.ctr("containers", "info", "--spec", id)
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Linux struct {
			Resources struct {
				CPU struct {
					Cpus string `json:"cpus"`
					Mems string `json:"mems"`
				} `json:"cpu"`
			} `json:"resources"`
		} `json:"linux"`
	}
	if err := json.Unmarshal([]byte(out), &spec); err != nil {
		t.Fatalf("ctr containers info --spec %s: %v\n%s", id, err, out)
	}
	return spec.Linux.Resources.CPU.Cpus, spec.Linux.Resources.CPU.Mems
}

// A GPU claim that asks for memory binding gets its GPU's NUMA node as the container's memory
// nodes (and the shared CPUs); one that does not ask gets no memory nodes set; a malformed
// binding is refused at prepare, naming the field, and its pod does not start.
func memoryIsBoundToTheGPUsNodeWhenTheClaimAsks(t testing.TB, all []int) {
	bound := startGPUPodClaiming(t, "gpu-bound", v1.RestartPolicyAlways, gpuClaim("NumaNode"))
	if cpus, mems := runtimeCPUSet(t, bound.pod); mems != "0" || cpus == "" {
		t.Errorf("claim with memoryBinding NumaNode: runtime spec cpuset cpus %q mems %q, want the shared CPUs and node 0", cpus, mems)
	}
	if cpus, mems := allowed(t, bound.pod); cpus != formatCPUs(all) || mems != "0" {
		t.Errorf("claim with memoryBinding NumaNode: Cpus_allowed_list %s Mems_allowed_list %s, want %s and 0", cpus, mems, formatCPUs(all))
	}
	checkEnvironment(t, bound)
	deleteWorkload(t, "gpu-bound", bound.pod.Name) // the machine's one GPU, for the next pods

	unbound := startGPUPodClaiming(t, "gpu-unbound", v1.RestartPolicyAlways, gpuClaim(""))
	if _, mems := runtimeCPUSet(t, unbound.pod); mems != "" {
		t.Errorf("claim without a binding: runtime spec cpuset mems %q, want none set", mems)
	}
	deleteWorkload(t, "gpu-unbound", unbound.pod.Name)

	namespace := "gpu-misbound"
	createNamespace(t, namespace)
	template := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu", Namespace: namespace}}
	template.Spec.Spec = gpuClaim("Nearby")
	waitForPrepareRefused(t, namespace, template, "memoryBinding")
}

// waitForPrepareRefused creates the template and a pod using it in the namespace, and waits
// until the kubelet reports the driver's refusal to prepare its claim, an event whose message
// names `field`; the pod must not be running by then.
func waitForPrepareRefused(t testing.TB, namespace string, template *resourceapi.ResourceClaimTemplate, field string) {
	t.Helper()
	ctx := context.Background()
	admin := theNode.cluster.Admin
	if _, err := admin.ResourceV1().ResourceClaimTemplates(namespace).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: namespace},
		Spec: v1.PodSpec{
			HostNetwork:    true,
			ResourceClaims: []v1.PodResourceClaim{{Name: "claim", ResourceClaimTemplateName: ptr.To(template.Name)}},
			Containers: []v1.Container{{
				Name: "main", Image: theNode.images["shell"].Name, ImagePullPolicy: v1.PullNever,
				Command:   []string{"sh", "-c", "sleep infinity"},
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "claim"}}},
			}},
		},
	}
	if _, err := admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteWorkload(t, namespace, pod.Name) })
	waitFor(t, 120*time.Second, fmt.Sprintf("an event of pod %s/%s naming %s", namespace, pod.Name, field), func() error {
		events, err := admin.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			return err
		}
		var seen []string
		for _, event := range events.Items {
			if strings.Contains(event.Message, field) {
				return nil
			}
			seen = append(seen, event.Reason+": "+event.Message)
		}
		return fmt.Errorf("events %v", seen)
	})
	current, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if current.Status.Phase == v1.PodRunning {
		t.Errorf("pod %s/%s runs although its claim was refused", namespace, pod.Name)
	}
}

// nriConnected is the driver's numadra_nri_connected gauge, from its metrics port (hostNetwork:
// the tier's loopback).
func nriConnected(t testing.TB) string {
	t.Helper()
	response, err := http.Get("http://127.0.0.1:9287/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatal(err)
	}
	match := regexp.MustCompile(`(?m)^numadra_nri_connected (\S+)$`).FindSubmatch(body)
	if match == nil {
		t.Fatalf("no numadra_nri_connected in the driver's metrics:\n%s", body)
	}
	return string(match[1])
}

// Without NRI in containerd: with `auto` a claim's pod starts with its variables and runs on
// every CPU (nothing pinned, the gauge at 0); with `nri` its claim is not prepared and the pod
// does not start until the runtime's NRI is back, and then it starts pinned.
func withoutNRIPodsStartUnpinnedOrWaitWhenPinningIsRequired(t testing.TB, all []int) {
	n := theNode
	if err := n.restartContainerd(false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.restartContainerd(true); err != nil {
			t.Errorf("containerd with NRI again: %v", err)
		}
	})
	upgradeDriver(t, "cpuPinning.mode=auto") // a driver started while containerd has no NRI
	unpinned := startCPUPod(t, "unpinned", 1)
	checkEnvironment(t, unpinned)
	if cpus, _ := allowed(t, unpinned.pod); cpus != formatCPUs(all) {
		t.Errorf("auto without NRI: the claim's pod runs on CPUs %s, want every CPU %s", cpus, formatCPUs(all))
	}
	if connected := nriConnected(t); connected != "0" {
		t.Errorf("auto without NRI: numadra_nri_connected %s, want 0", connected)
	}
	deleteWorkload(t, "unpinned", unpinned.pod.Name)

	upgradeDriver(t, "cpuPinning.mode=nri")
	namespace := "pin-required"
	createNamespace(t, namespace)
	template := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "cpus", Namespace: namespace}}
	template.Spec.Spec = cpuClaim(1)
	waitForPrepareRefused(t, namespace, template, "NRI")

	if err := n.restartContainerd(true); err != nil {
		t.Fatal(err)
	}
	pinned := waitForRunning(t, namespace, "refused", 180*time.Second)
	if cpus, mems := allowed(t, pinned); strings.Contains(cpus, ",") || cpus == formatCPUs(all) || mems != "0" {
		t.Errorf("once NRI is back: the claim's pod runs on CPUs %s memory %s, want its one CPU and node 0", cpus, mems)
	}
}
