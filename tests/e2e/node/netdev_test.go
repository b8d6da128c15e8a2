package node

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The VF pool the test claims a share of (the default --vf-layout=pooled): the mlx5_core VFs of
// big-2s-8n's first ConnectX-7. The daemon hands the first claim the pool's first VF, 0000:02:00.2,
// a netdev.
const (
	netdevPF        = "0000:02:00.0"
	netdevPool      = "nic-0000-02-00-0-vfs-mlx5-core"
	netdevInterface = "ens1f0v0"
)

// standInForTheVF creates, in the tier's network namespace (the node's), one end of a veth pair
// with the mocked VF's interface name: the real netdev the runtime moves (this kernel has no
// dummy interfaces). Had the runtime left it in the pod's namespace, deleting that namespace
// would destroy the pair instead of handing the interface back. Removed at the test's end.
func standInForTheVF(t testing.TB) net.HardwareAddr {
	t.Helper()
	add := []string{"link", "add", netdevInterface, "type", "veth", "peer", "name", netdevInterface + "-peer"}
	if out, err := exec.Command("ip", add...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(add, " "), err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", netdevInterface).Run() })
	link, err := net.InterfaceByName(netdevInterface)
	if err != nil {
		t.Fatal(err)
	}
	return link.HardwareAddr
}

// With --cdi-net-devices (the tier's chart values: cdi.netDevices=true), a pod with its own
// network namespace that claims a netdev VF has the VF's interface inside, under its name and
// with its hardware address, and a variable naming it, while the node no longer has it; the
// interface stays in the pod's namespace until that namespace goes with the pod.
func TestANetdevVFsInterfaceMovesIntoThePodUntilItsNamespaceGoes(t *testing.T) {
	mac := standInForTheVF(t)
	template := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "one-vf"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "vf", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "vf." + driverName,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes["%s"].pfPciBusID == "%s"`, driverName, netdevPF)}}},
			}}},
		}}},
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "vf-user"},
		Spec: v1.PodSpec{
			RestartPolicy:  v1.RestartPolicyNever,
			ResourceClaims: []v1.PodResourceClaim{{Name: "vf", ResourceClaimTemplateName: ptr.To("one-vf")}},
			Containers: []v1.Container{{
				Name: "main", Command: []string{"sh", "-c", "sleep infinity"},
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "vf"}}},
			}},
		},
	}
	w := startPodWithItsOwnNetwork(t, "netdev-vf", template, pod)
	if got := w.claim.Status.Allocation.Devices.Results; len(got) != 1 || got[0].Device != netdevPool || got[0].ShareID == nil {
		t.Fatalf("claim %s allocated %v, want a share of %s", w.claim.Name, got, netdevPool)
	}

	inside := execIn(t, w.pod, "cat /sys/class/net/"+netdevInterface+"/address; ls /sys/class/net")
	if !strings.Contains(inside, mac.String()) {
		t.Errorf("pod %s: %s with address %s is not inside its network namespace: %s", w.pod.Name, netdevInterface, mac, inside)
	}
	if _, err := net.InterfaceByName(netdevInterface); err == nil {
		t.Errorf("%s is still on the node while pod %s runs", netdevInterface, w.pod.Name)
	}
	env := execIn(t, w.pod, "env")
	if !strings.Contains(env, "INTERFACE="+netdevInterface) {
		t.Errorf("pod %s: no variable names its interface %s: %s", w.pod.Name, netdevInterface, env)
	}

	// runc v1.4.4 moves the device in and never back (runtime-spec 1.3 says it MUST move it
	// back before the namespace goes; libcontainer has no such step). What brings a real VF back
	// is the kernel: a physical device of a network namespace being destroyed is moved to the
	// root namespace, the host's on a real node. A virtual device is destroyed instead, so the
	// stand-in's whole pair goes once the pod's namespace does: proof that it stayed in the pod
	// until then, and was not left or moved anywhere else.
	deleteWorkload(t, w.pod.Namespace, w.pod.Name)
	waitFor(t, 30*time.Second, "the pod's network namespace gone with the stand-in for "+netdevInterface, func() error {
		for _, name := range []string{netdevInterface, netdevInterface + "-peer"} {
			if _, err := net.InterfaceByName(name); err == nil {
				return fmt.Errorf("%s is on the node", name)
			}
		}
		return nil
	})
}
