package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Containerd stopped and started again while a workload runs: the workload's
// container keeps running untouched (its shim outlives containerd), and a new pod with a claim
// starts with its devices.
func TestAContainerdRestartKeepsTheWorkloadAndPreparesNewClaims(t *testing.T) {
	n := theNode
	w := startExamplePod(t, "containerd-restart")
	n.containerd.Stop()
	stopped := time.Now()
	if err := n.runContainerd(); err != nil {
		t.Fatalf("containerd after its restart: %v", err)
	}
	t.Logf("containerd stopped and answering again in %s", time.Since(stopped).Round(time.Millisecond))
	checkStillRunning(t, w)
	checkEnvironment(t, startGPUPod(t, "after-containerd-restart"))
}

// killShims kills every containerd shim left in the tier's PID namespace and waits until they
// are gone, as a power cut would.
func killShims(t testing.TB) {
	t.Helper()
	var pids []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		var pid int
		if _, err := fmt.Sscan(entry.Name(), &pid); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "comm"))
		if err == nil && strings.HasPrefix(string(comm), "containerd-shim") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			pids = append(pids, pid)
		}
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("the shims %v gone", pids), func() error {
		for _, pid := range pids {
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
				return fmt.Errorf("shim %d still running", pid)
			}
		}
		return nil
	})
}

// unmountUnder detaches every mount at or below the folders (deepest first), as a reboot loses
// them: the containers' root file systems, the sandboxes' shm, the pods' projected volumes.
func unmountUnder(t testing.TB, folders ...string) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		for _, folder := range folders {
			if fields[4] == folder || strings.HasPrefix(fields[4], folder+"/") {
				points = append(points, fields[4])
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, point := range points {
		if err := syscall.Unmount(point, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL {
			t.Fatalf("unmounting %s: %v", point, err)
		}
	}
}

// simulateReboot stops the node as a power cut would (kubelet, every container, containerd and
// its shims), drops what does not survive a reboot (the mounts, /run: containerd's state, the
// CDI specs in /var/run/cdi, NRI's socket), gives the machine a new boot id, and starts
// containerd and the kubelet again. What is on disk stays: the kubelet's folder (its
// checkpoints, the driver's state), containerd's root (the images, its metadata).
func (n *node) simulateReboot(t *testing.T) {
	t.Helper()
	n.kubelet.Stop()
	n.killContainers()
	n.containerd.Stop()
	killShims(t)
	unmountUnder(t, "/run/containerd", "/run/netns", "/var/lib/kubelet/pods")
	for _, folder := range []string{"/run/containerd", "/run/nri", "/run/netns"} {
		if err := os.RemoveAll(folder); err != nil {
			t.Fatal(err)
		}
	}
	specs, err := filepath.Glob(filepath.Join(cdiDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range specs {
		if err := os.RemoveAll(spec); err != nil {
			t.Fatal(err)
		}
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	bootID := fmt.Sprintf("%x-%x-%x-%x-%x\n", id[0:4], id[4:6], id[6:8], id[8:10], id[10:])
	if err := os.WriteFile(filepath.Join(n.machineDir, "proc", "sys", "kernel", "random", "boot_id"), []byte(bootID), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.runContainerd(); err != nil {
		t.Fatalf("containerd after the reboot: %v", err)
	}
	if err := n.runKubelet(context.Background()); err != nil {
		t.Fatalf("the kubelet after the reboot: %v", err)
	}
}

// waitForNewContainer waits until the pod's first container is another one than `old`, running
// and Ready, and returns the pod.
func waitForNewContainer(t testing.TB, namespace, name, old string, timeout time.Duration) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, timeout, "pod "+namespace+"/"+name+" running a new container", func() error {
		var err error
		pod, err = theNode.cluster.Admin.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].ContainerID == old ||
			pod.Status.Phase != v1.PodRunning || !podReady(pod) {
			return fmt.Errorf("%s", describePod(pod))
		}
		return nil
	})
	return pod
}

// A simulated reboot (k/k#141433, which pods of other drivers do not survive): the node stopped
// as by a power cut, /run and the mounts gone with the CDI specs, a new boot id. The kubelet
// starts the driver's pod again, the driver writes its prepared claim's CDI specs again from its
// checkpoint, and the workload (restartPolicy Always) gets a new container with its devices.
func TestASimulatedRebootBringsTheWorkloadBackWithItsDevices(t *testing.T) {
	n := theNode
	ctx := context.Background()
	w := startGPUPodRestarted(t, "reboot", v1.RestartPolicyAlways)
	driver, err := n.waitForDriverPod(ctx, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	n.simulateReboot(t)
	t.Logf("node Ready %s after the power cut", time.Since(started).Round(time.Millisecond))
	waitForNewContainer(t, driverNamespace, driver.Name, driver.Status.ContainerStatuses[0].ContainerID, 120*time.Second)
	t.Logf("driver pod Ready again %s after the power cut", time.Since(started).Round(time.Millisecond))
	w.pod = waitForNewContainer(t, w.pod.Namespace, w.pod.Name, w.pod.Status.ContainerStatuses[0].ContainerID, 120*time.Second)
	t.Logf("workload running a new container %s after the power cut", time.Since(started).Round(time.Millisecond))
	if files := claimSpecFiles(t, string(w.claim.UID)); len(files) == 0 {
		t.Fatalf("no CDI spec of claim %s after the reboot", w.claim.Name)
	}
	checkEnvironment(t, w)
}
