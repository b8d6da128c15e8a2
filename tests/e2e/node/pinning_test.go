package node

import (
	"context"
	"fmt"
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

// CPU pinning through containerd's NRI. The driver reads this machine's own /sys for these tests
// (the mocked machine's CPUs do not exist here): its CPU device is this machine's CPUs and NUMA
// node, so the cpusets containerd applies are real, and what the containers see is checked from
// inside them (/proc/self/status: Cpus_allowed_list, Mems_allowed_list).

// pinOnThisMachine upgrades the driver to this machine's /sys with pinning required, and back to
// the mocked machine without pinning when the test ends.
func pinOnThisMachine(t *testing.T) {
	t.Helper()
	upgradeDriver(t, "hostRoots.sys=/sys", "cpuPinning.mode=nri")
	t.Cleanup(func() {
		upgradeDriver(t, "hostRoots.sys="+filepath.Join(theNode.machineDir, "sys"), "cpuPinning.mode=off")
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

// onlineCPUs is this machine's /sys/devices/system/cpu/online, expanded.
func onlineCPUs(t *testing.T) []int {
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
func allowed(t *testing.T, pod *v1.Pod) (cpus, mems string) {
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
func startPlainPod(t *testing.T, name string) *v1.Pod {
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
func startCPUPod(t *testing.T, name string, count int) workload {
	t.Helper()
	template := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "cpus"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "cpu", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "cpu." + driverName,
				Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
					"cpu": resource.MustParse(strconv.Itoa(count)),
				}},
			}}},
		}}},
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

// claimCPUs is the CPU list the claim's CDI spec gives its container (NUMADRA_..._CPUS).
func claimCPUs(t *testing.T, w workload) string {
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

func waitForAllowedCPUs(t *testing.T, pod *v1.Pod, want string) {
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
func aClaimedCPUIsExclusiveToItsPodAndItsMemoryOnItsNode(t *testing.T, all []int) {
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
func checkPinning(t *testing.T, pinned *v1.Pod, claimed, rest string, plain ...*v1.Pod) {
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
func cpuPinningSurvivesDriverContainerdAndContainerRestarts(t *testing.T, all []int) {
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

	n.containerd.Stop()
	if err := n.runContainerd(); err != nil {
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
}
