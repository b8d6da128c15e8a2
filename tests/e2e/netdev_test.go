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
	ctx := context.Background()
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
	if _, err := c.Admin.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := scalePod(namespace, name)
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	if _, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
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
	createNamespace(t, c, namespace)
	t.Cleanup(func() { deleteScaleNamespace(c, namespace) })

	vfClaimPod(t, c, namespace, "vf", node)
	if pod, why := schedulerVerdict(t, c, namespace, "vf", func(string) bool { return false }); pod.Spec.NodeName == "" {
		t.Fatalf("the VF pod was not scheduled: %s", why)
	}
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
