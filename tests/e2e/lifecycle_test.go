package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"numadra.dev/tests/e2e/cluster"
)

// eventually polls `done` every 100 ms until it is true or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// publishedNode installs the driver, creates the node and runs the daemon (health off) on the
// mocked machine until its slices are in the API server; returns the daemon and those slices.
func publishedNode(t *testing.T, c *cluster.Cluster, node, machine string, args ...string) (*daemon, []resourceapi.ResourceSlice) {
	t.Helper()
	installedDriver(t, c)
	createNode(t, c, node, machine)
	d := startDaemon(t, c, node, machine, append([]string{"--health=false"}, args...)...)
	expected := expectedSlicesOn(t, c, node, machine, args...)
	waitForSlices(t, c, d, node, expected)
	return d, expected
}

// A slice deleted by someone else is back within seconds (the daemon watches its slices).
func TestADeletedSliceIsRepaired(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	const node = "repair-gpu4-nic"
	d, expected := publishedNode(t, c, node, "gpu4-nic")
	victim := nodeSlices(t, c, node)[0]
	if err := c.Admin.ResourceV1().ResourceSlices().Delete(context.Background(), victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	waitForSlices(t, c, d, node, expected)
	t.Logf("slice %s deleted by the administrator, back after %s", victim.Name, time.Since(started).Round(time.Millisecond))
}

// A kube-apiserver restart is survived: nothing lost, nothing duplicated, and the watch resumes
// (a slice deleted after the restart is repaired too).
func TestAnAPIServerRestartIsSurvived(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	const node = "restart-xeon"
	d, expected := publishedNode(t, c, node, "xeon-6320r-2s")
	before := nodeSlices(t, c, node)

	if err := c.RestartAPIServer(context.Background(), 3*time.Second); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	if _, exited := d.wait(0); exited {
		t.Fatalf("numa-dra-plugin exited when kube-apiserver restarted:\n%s", d.output())
	}
	after := nodeSlices(t, c, node)
	if difference := specDifference(after, expected); difference != "" {
		t.Fatalf("after the restart: %s", difference)
	}
	for i := range before {
		if after[i].UID != before[i].UID {
			t.Errorf("slice %s was replaced during the restart (uid %s -> %s)", before[i].Name, before[i].UID, after[i].UID)
		}
	}
	victim := after[len(after)-1]
	if err := c.Admin.ResourceV1().ResourceSlices().Delete(context.Background(), victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, c, d, node, expected)
}

// Deleting the Node lets the garbage collector remove its slices (owner references), also
// when the driver left them behind (--keep-slices-on-exit).
func TestDeletingTheNodeGarbageCollectsItsSlices(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	const node = "gc-laptop"
	d, _ := publishedNode(t, c, node, "laptop", "--keep-slices-on-exit")
	if err := d.stop(t); err != nil {
		t.Fatalf("numa-dra-plugin: exit after SIGTERM: %v", err)
	}
	if len(nodeSlices(t, c, node)) == 0 {
		t.Fatal("--keep-slices-on-exit: the slices are gone")
	}
	if err := c.Admin.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the garbage collector removes the slices of the deleted Node", func() bool {
		return len(nodeSlices(t, c, node)) == 0
	})
}

// copyMachine copies a mocked machine so that a test can break its devices on disk.
func copyMachine(t testing.TB, machine, to string) string {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", machineRoot(t, machine)+"/.", to).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", machine, err, out)
	}
	return to
}

func deviceTaints(t testing.TB, c *cluster.Cluster, node, device string) []resourceapi.DeviceTaint {
	for _, slice := range nodeSlices(t, c, node) {
		for _, d := range slice.Spec.Devices {
			if d.Name == device {
				return d.Taints
			}
		}
	}
	return nil
}

func hasTaint(taints []resourceapi.DeviceTaint, key, value string) bool {
	for _, taint := range taints {
		if taint.Key == key && taint.Value == value && taint.Effect == resourceapi.DeviceTaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// A NIC that loses its carrier on disk gets the unhealthy taint in the real API server, and
// loses it when the carrier is back.
func TestABrokenDeviceIsTaintedInTheAPIServer(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const node = "health-sriov"
	createNode(t, c, node, "sriov-nic")
	machine := copyMachine(t, "sriov-nic", filepath.Join(c.Dir, "machines", node))
	link := filepath.Join(machine, "sys", "devices", "pci0000:00", "0000:00:01.0", "0000:01:00.0", "net", "ens1f0")
	startDaemonAt(t, c, node, machine, "--health-interval=1s")
	const key = driverName + "/unhealthy"
	eventually(t, 30*time.Second, "the slices published with ens1f1's carrier-down taint", func() bool {
		return hasTaint(deviceTaints(t, c, node, "nic-0000-01-00-1"), key, "carrier-down")
	})
	if taints := deviceTaints(t, c, node, "nic-0000-01-00-0"); len(taints) != 0 {
		t.Fatalf("healthy ens1f0 is tainted: %+v", taints)
	}
	write := func(name, value string) {
		if err := os.WriteFile(filepath.Join(link, name), []byte(value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("carrier", "0")
	write("operstate", "down")
	broken := time.Now()
	eventually(t, 30*time.Second, "ens1f0 tainted after losing its carrier on disk", func() bool {
		return hasTaint(deviceTaints(t, c, node, "nic-0000-01-00-0"), key, "carrier-down")
	})
	t.Logf("taint in the API server %s after the carrier went down on disk", time.Since(broken).Round(time.Millisecond))
	write("carrier", "1")
	write("operstate", "up")
	eventually(t, 30*time.Second, "ens1f0's taint removed once its carrier is back", func() bool {
		return len(deviceTaints(t, c, node, "nic-0000-01-00-0")) == 0
	})
}
