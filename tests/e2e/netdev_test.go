package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"numadra.dev/tests/e2e/cluster"
)

// Issue 17 §3: with --cdi-net-devices a claim's spec moves a netdev VF's interface into the
// container (CDI 1.1 netDevices, cdiVersion 1.1.0). Debian 12's podman 4.3 (CDI library 0.5)
// cannot read such a spec: the test shows that it refuses the claim's devices whole, with the
// error the README quotes, and that no container is started or left behind.

// vfClaimPod creates a claim for one VF bound to iavf (a netdev VF) and a pod using it on node.
func vfClaimPod(t *testing.T, c *cluster.Cluster, namespace, name, node string) {
	t.Helper()
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "vf",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "vf." + driverName,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.attributes["` + driverName + `"].kernelDriver == "iavf"`,
				}}},
			},
		}}}},
	}
	createClaimAndPod(t, c, claim, podOn(namespace, name, node))
}

// scheduledVFPod creates the namespace, a VF claim and its pod, and waits until the scheduler
// bound the pod to node.
func scheduledVFPod(t *testing.T, c *cluster.Cluster, namespace, node string) {
	t.Helper()
	createNamespace(t, c, namespace)
	t.Cleanup(func() { deleteScaleNamespace(c, namespace) })
	vfClaimPod(t, c, namespace, "vf", node)
	if pod, why := schedulerVerdict(t, c, namespace, "vf", func(string) bool { return false }); pod.Spec.NodeName == "" {
		t.Fatalf("the VF pod was not scheduled: %s", why)
	}
}

// claimSpecFile reads the daemon's CDI spec of the claim.
func claimSpecFile(t *testing.T, cdiDir string, uid string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cdiDir, driverName+"-claim_"+uid+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestAVFsNetDevicesSpecIsRefusedWholeByPodman43(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	const machine = "sriov-nic"
	node := "netdev-" + machine
	publishedNode(t, c, node, machine, "--cdi-net-devices")
	keepNodeReady(t, c, node)
	namespace := node
	scheduledVFPod(t, c, namespace, node)
	claim, err := c.Admin.ResourceV1().ResourceClaims(namespace).Get(context.Background(), "vf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plugin := kubeletClient(t, c, node)
	ref := &drapb.Claim{Namespace: namespace, Name: claim.Name, Uid: string(claim.UID)}
	prepared, err := plugin.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{ref}})
	if err != nil {
		t.Fatal(err)
	}
	answer := prepared.Claims[string(claim.UID)]
	if answer == nil || answer.Error != "" || len(answer.Devices) != 1 {
		t.Fatalf("prepare answered %v", answer)
	}
	t.Cleanup(func() {
		_, _ = plugin.NodeUnprepareResources(context.Background(), &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{ref}})
	})

	// The spec moves the VF's interface under its own name, at cdiVersion 1.1.0.
	cdiDir := filepath.Join(c.Dir, "nodes", node, "cdi")
	spec := claimSpecFile(t, cdiDir, string(claim.UID))
	encoded, _ := json.Marshal(spec)
	if spec["cdiVersion"] != "1.1.0" || !strings.Contains(string(encoded), `"netDevices":[{"hostInterfaceName":"ens1f0v`) {
		t.Fatalf("the claim's spec does not move the VF's interface at 1.1.0: %s", encoded)
	}

	if !containersRun(t) {
		return
	}
	out, errOut, err := podmanRun(t, cdiDir, answer.Devices[0].CdiDeviceIds, "echo started")
	if err == nil || strings.Contains(out, "started") {
		t.Fatalf("podman 4.3 started a container with a CDI 1.1 spec: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "unresolvable CDI devices") {
		t.Errorf("podman's refusal %q does not say the CDI devices are unresolvable", errOut)
	}
	left, err := exec.Command("podman", "ps", "--all", "--quiet").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(left)) != "" {
		t.Errorf("podman left containers behind: %s", left)
	}
	t.Logf("podman 4.3 refused the VF's CDI 1.1 spec: %s", strings.TrimSpace(errOut))
}

// Issue 17 §2: the daemon writes a prepared VF's interface into its claim's status.devices with
// its node's driver token (RBAC: resourceclaims/status patch and resourceclaims/driver
// associated-node:patch), the real API server stores it, another node's driver may not write
// it, and unprepare removes it.
func TestAPreparedVFsInterfaceIsInItsClaimsStatusUntilUnprepared(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const machine = "sriov-nic"
	node := "status-" + machine
	publishedNode(t, c, node, machine)
	keepNodeReady(t, c, node)
	namespace := node
	scheduledVFPod(t, c, namespace, node)
	claims := c.Admin.ResourceV1().ResourceClaims(namespace)
	claim, err := claims.Get(context.Background(), "vf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	result := claim.Status.Allocation.Devices.Results[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plugin := kubeletClient(t, c, node)
	ref := &drapb.Claim{Namespace: namespace, Name: claim.Name, Uid: string(claim.UID)}
	if _, err := plugin.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{ref}}); err != nil {
		t.Fatal(err)
	}
	var entries []resourceapi.AllocatedDeviceStatus
	eventually(t, 10*time.Second, "the VF's entry in the claim's status", func() bool {
		stored, err := claims.Get(context.Background(), "vf", metav1.GetOptions{})
		entries = nil
		if err == nil {
			entries = stored.Status.Devices
		}
		return len(entries) == 1
	})
	entry := entries[0]
	if entry.Driver != driverName || entry.Pool != result.Pool || entry.Device != result.Device ||
		entry.NetworkData == nil || !strings.HasPrefix(entry.NetworkData.InterfaceName, "ens1f0v") ||
		len(entry.Conditions) != 1 || entry.Conditions[0].Type != "Ready" {
		t.Errorf("status.devices entry %+v for %s/%s", entry, result.Pool, result.Device)
	}

	// Another node's driver may not change this node's claims' entries.
	const other = "status-other"
	createNode(t, c, other, "laptop")
	intruder := clientWithToken(t, c, "driver-status-other", driverToken(t, c, other))
	apply := resourceapply.ResourceClaim("vf", namespace).WithStatus(resourceapply.ResourceClaimStatus().WithDevices(
		resourceapply.AllocatedDeviceStatus().WithDriver(driverName).WithPool(result.Pool).WithDevice(result.Device).
			WithNetworkData(resourceapply.NetworkDeviceData().WithInterfaceName("evil0"))))
	_, err = intruder.ResourceV1().ResourceClaims(namespace).ApplyStatus(context.Background(), apply,
		metav1.ApplyOptions{FieldManager: "intruder", Force: true})
	refused(t, "another node's driver writing the claim's status", err, "resourceclaims/driver")

	if _, err := plugin.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{ref}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the entry removed on unprepare", func() bool {
		stored, err := claims.Get(context.Background(), "vf", metav1.GetOptions{})
		return err == nil && len(stored.Status.Devices) == 0
	})
}
