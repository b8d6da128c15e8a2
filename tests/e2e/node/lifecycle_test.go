package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// checkStillRunning: the workload's container is the one that started (same container ID, no
// restart), running, and answers kubectl exec with its devices' variables.
func checkStillRunning(t testing.TB, w workload) {
	t.Helper()
	pod, err := theNode.cluster.Admin.CoreV1().Pods(w.pod.Namespace).Get(context.Background(), w.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, after := w.pod.Status.ContainerStatuses[0], pod.Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 || after.State.Running == nil {
		t.Fatalf("the workload's container changed: was %s, now %s (%s)", before.ContainerID, after.ContainerID, describePod(pod))
	}
	// A kubelet just started answers exec only once it has synced the pod again.
	waitFor(t, 60*time.Second, "kubectl exec into the workload", func() error {
		out, err := theNode.kubectl("exec", "-n", pod.Namespace, pod.Name, "--", "true")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	checkEnvironment(t, w)
}

// publishedDevices are the device names of the node's slices of the driver, by pool.
func publishedDevices(t testing.TB) []string {
	t.Helper()
	slices, err := theNode.cluster.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{
		FieldSelector: driverSlicesOnTheNode()})
	if err != nil {
		t.Fatal(err)
	}
	return deviceNames(slices.Items)
}

// The driver pod deleted while a workload with its devices runs: the DaemonSet's new pod
// registers with the kubelet again and becomes Ready, the workload's container keeps running
// untouched, and a new pod with a claim is prepared by the new driver pod.
func TestADriverPodRestartKeepsTheWorkloadAndPreparesNewClaims(t *testing.T) {
	n := theNode
	ctx := context.Background()
	w := startExamplePod(t, "driver-restart")
	old, err := n.waitForDriverPod(ctx, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := n.cluster.Admin.CoreV1().Pods(driverNamespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replacement, err := n.waitForDriverPod(ctx, string(old.UID), 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver pod %s deleted, %s Ready %s later", old.Name, replacement.Name, time.Since(deleted).Round(time.Millisecond))
	checkStillRunning(t, w)
	checkEnvironment(t, startGPUPod(t, "after-driver-restart"))
}

// The kubelet stopped and started again while a workload runs: the node is Ready again, the
// workload's container keeps running untouched, the driver (the same pod) is registered again and
// its node's slices are the machine's devices, and a new pod with a claim is prepared.
func TestAKubeletRestartKeepsTheWorkloadAndPreparesNewClaims(t *testing.T) {
	n := theNode
	ctx := context.Background()
	w := startExamplePod(t, "kubelet-restart")
	driver, err := n.waitForDriverPod(ctx, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n.kubelet.Stop()
	stopped := time.Now()
	if err := n.runKubelet(ctx); err != nil {
		t.Fatalf("the kubelet after its restart: %v", err)
	}
	t.Logf("kubelet stopped and Ready again in %s", time.Since(stopped).Round(time.Millisecond))
	want := probedDevices(t)
	waitFor(t, 60*time.Second, "the node's slices after the kubelet's restart", func() error {
		if got := publishedDevices(t); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("published %v, numa-probe finds %v", got, want)
		}
		return nil
	})
	if again, err := n.waitForDriverPod(ctx, "", 60*time.Second); err != nil || again.UID != driver.UID {
		t.Fatalf("the driver pod after the kubelet's restart: %v (was %s)", err, driver.UID)
	}
	checkStillRunning(t, w)
	checkEnvironment(t, startGPUPod(t, "after-kubelet-restart"))
}

// nicHealth is the health the kubelet reports in the pod's status for the device named
// `device` (allocatedResourcesStatus, KEP-4680), or "" while it reports none; then what it
// reports, for an error message.
func nicHealth(t testing.TB, w workload, device string) (string, string) {
	t.Helper()
	pod, err := theNode.cluster.Admin.CoreV1().Pods(w.pod.Namespace).Get(context.Background(), w.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, container := range pod.Status.ContainerStatuses {
		for _, status := range container.AllocatedResourcesStatus {
			for _, resource := range status.Resources {
				// The ID is the device's first CDI id (<kind>=<claim uid>-<device>), or
				// <driver>/<pool>/<device> for a device without one.
				id := string(resource.ResourceID)
				if strings.HasSuffix(id, "-"+device) || strings.HasSuffix(id, "/"+device) {
					return string(resource.Health), fmt.Sprintf("%s: %s %s", status.Name, resource.ResourceID, ptr.Deref(resource.Message, ""))
				}
			}
		}
	}
	return "", fmt.Sprintf("%+v", pod.Status.ContainerStatuses)
}

// deviceTainted says whether the published device carries the driver's unhealthy taint.
func deviceTainted(t testing.TB, device string) bool {
	t.Helper()
	slices, err := theNode.cluster.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{
		FieldSelector: driverSlicesOnTheNode()})
	if err != nil {
		t.Fatal(err)
	}
	for _, slice := range slices.Items {
		for _, d := range slice.Spec.Devices {
			if d.Name != device {
				continue
			}
			for _, taint := range d.Taints {
				if taint.Key == driverName+"/unhealthy" {
					return true
				}
			}
		}
	}
	return false
}

// The workload's NIC loses its carrier on the mocked machine's disk: the kubelet shows it
// Unhealthy in the pod's allocatedResourcesStatus (the driver's health stream, DRA health v1)
// and the slice taints it; the carrier back, both clear.
func TestABrokenNICShowsInThePodsStatusAndItsSliceUntilRepaired(t *testing.T) {
	w := startExamplePod(t, "health")
	nic := ""
	for _, result := range w.claim.Status.Allocation.Devices.Results {
		if result.Request == "nic" {
			nic = result.Device
		}
	}
	// nic-0000-19-00-0 is the PCI function 0000:19:00.0.
	address := strings.TrimPrefix(nic, "nic-")
	address = address[:4] + ":" + address[5:7] + ":" + address[8:10] + "." + address[11:]
	links, err := filepath.Glob(filepath.Join(theNode.machineDir, "sys", "bus", "pci", "devices", address, "net", "*"))
	if err != nil || len(links) != 1 {
		t.Fatalf("the network interface of %s (%s): %v %v", nic, address, links, err)
	}
	write := func(carrier, operstate string) {
		for name, value := range map[string]string{"carrier": carrier, "operstate": operstate} {
			if err := os.WriteFile(filepath.Join(links[0], name), []byte(value+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitHealth := func(want string, tainted bool) time.Duration {
		started := time.Now()
		waitFor(t, 60*time.Second, fmt.Sprintf("%s %s in the pod's status, tainted %v", nic, want, tainted), func() error {
			health, detail := nicHealth(t, w, nic)
			if health != want || deviceTainted(t, nic) != tainted {
				return fmt.Errorf("health %q (%s), tainted %v", health, detail, deviceTainted(t, nic))
			}
			return nil
		})
		return time.Since(started).Round(time.Millisecond)
	}
	waitHealth(string(v1.ResourceHealthStatusHealthy), false)
	write("0", "down")
	t.Cleanup(func() { write("1", "up") })
	broken := waitHealth(string(v1.ResourceHealthStatusUnhealthy), true)
	write("1", "up")
	repaired := waitHealth(string(v1.ResourceHealthStatusHealthy), false)
	t.Logf("%s (%s): Unhealthy and tainted %s after its carrier went down on disk, Healthy and untainted %s after it came back",
		nic, links[0], broken, repaired)
}
