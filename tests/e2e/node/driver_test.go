package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"syscall"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tier's network namespace, as every process of the node sees it (the driver pod is
// hostNetwork): only lo, no route through anything else, and the kubernetes Service's address
// (where an in-cluster client goes without apiServer.host) unreachable at once.
func TestTheNodeHasNoRouteOffTheMachine(t *testing.T) {
	if err := checkNoRouteOffTheMachine(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", "10.0.0.1:443", 2*time.Second)
	if err == nil {
		conn.Close()
		t.Fatal("10.0.0.1:443 (the kubernetes Service) answered: the tier has a route off the machine")
	}
	if !errors.Is(err, syscall.ENETUNREACH) {
		t.Fatalf("dialing 10.0.0.1:443: %v, want ENETUNREACH (no route at all)", err)
	}
}

// probedDevices are the device names numa-probe publishes for the node's mocked machine, by pool.
func probedDevices(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command(filepath.Join(requireEnv("NUMADRA_BUILD_DIR"), "bin", "numa-probe"),
		"--sysfs-root", filepath.Join(theNode.machineDir, "sys"), "--node-name", theNode.name, "--output", "json").Output()
	if err != nil {
		t.Fatalf("numa-probe: %v", err)
	}
	var list resourceapi.ResourceSliceList
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("numa-probe's output: %v", err)
	}
	return deviceNames(list.Items)
}

func deviceNames(slices []resourceapi.ResourceSlice) []string {
	var names []string
	for _, slice := range slices {
		for _, device := range slice.Spec.Devices {
			names = append(names, slice.Spec.Pool.Name+"/"+device.Name)
		}
	}
	sort.Strings(names)
	return names
}

// The DaemonSet `helm install` made runs the driver's image under the real kubelet, Ready
// through its probes, and its node's slices hold the devices numa-probe finds on the machine.
func TestTheChartsDriverPodRunsTheImageAndPublishesTheNodesDevices(t *testing.T) {
	n := theNode
	ctx := context.Background()
	pod, err := n.waitForDriverPod(ctx, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if image := pod.Spec.Containers[0].Image; image != n.images["driver"].Name {
		t.Errorf("driver pod image %s, want %s", image, n.images["driver"].Name)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("driver pod restarted: %s", describePod(pod))
	}
	want := probedDevices(t)
	var got []string
	waitFor(t, 30*time.Second, "the node's slices", func() error {
		slices, err := n.cluster.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: "spec.nodeName=" + n.name + ",spec.driver=" + driverName})
		if err != nil {
			return err
		}
		if got = deviceNames(slices.Items); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("published %v, numa-probe finds %v", got, want)
		}
		return nil
	})
	t.Logf("driver pod %s Ready; %d devices published: %v", pod.Name, len(got), got)
}
