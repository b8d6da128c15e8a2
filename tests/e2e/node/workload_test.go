package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"numadra.dev/tests/e2e/cdispec"
)

// workload is a pod of deploy/examples/gpu-nic-cpu-numa running on the node, with its claim.
type workload struct {
	pod   *v1.Pod
	claim *resourceapi.ResourceClaim
}

// readExample decodes one object of deploy/examples/<story>/<file>.
func readExample(t testing.TB, story, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sourceDir(), "deploy", "examples", story, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s/%s: %v", story, file, err)
	}
}

// startExamplePod runs the example's claim template and pod in the namespace `name` (startPod).
func startExamplePod(t testing.TB, name string) workload {
	t.Helper()
	var template resourceapi.ResourceClaimTemplate
	var pod v1.Pod
	readExample(t, "gpu-nic-cpu-numa", "claim-template.yaml", &template)
	readExample(t, "gpu-nic-cpu-numa", "pod.yaml", &pod)
	return startPod(t, name, &template, &pod)
}

// startGPUPod runs a pod whose one claim (from a template) asks for one GPU of the driver, in
// the namespace `name` (startPod), never restarted.
func startGPUPod(t testing.TB, name string) workload {
	t.Helper()
	return startGPUPodRestarted(t, name, v1.RestartPolicyNever)
}

// startGPUPodRestarted is startGPUPod with the pod's restart policy.
func startGPUPodRestarted(t testing.TB, name string, restart v1.RestartPolicy) workload {
	t.Helper()
	return startGPUPodClaiming(t, name, restart, gpuClaim(""))
}

// gpuClaim asks for one GPU (request "gpu"), with the driver's NumaPlacement configuration
// when `binding` is not "".
func gpuClaim(binding string) resourceapi.ResourceClaimSpec {
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu." + driverName}}},
	}}
	if binding != "" {
		parameters := fmt.Sprintf(`{"apiVersion": "numa.dra.dev/v1alpha1", "kind": "NumaPlacement", "memoryBinding": %q}`, binding)
		spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{
			Requests: []string{"gpu"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: driverName, Parameters: runtime.RawExtension{Raw: []byte(parameters)},
			}},
		}}
	}
	return spec
}

// startGPUPodClaiming runs a pod of one container using a claim made from `spec`.
func startGPUPodClaiming(t testing.TB, name string, restart v1.RestartPolicy, spec resourceapi.ResourceClaimSpec) workload {
	t.Helper()
	template := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "one-gpu"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: spec},
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-user"},
		Spec: v1.PodSpec{
			RestartPolicy:  restart,
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}},
			Containers: []v1.Container{{
				Name: "main", Command: []string{"sh", "-c", "sleep infinity"},
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}},
			}},
		},
	}
	return startPod(t, name, template, pod)
}

// startPod creates the claim template and the pod in a new namespace `name`, the pod's image
// replaced by the tier's shell image (its command unchanged) and hostNetwork (the tier's network
// has only loopback), and waits until the pod runs. The pod and the namespace are deleted at the
// test's end, and the test waits until the pod is gone (its claim unprepared), so that the next
// test finds the devices free.
func startPod(t testing.TB, name string, template *resourceapi.ResourceClaimTemplate, pod *v1.Pod) workload {
	t.Helper()
	return startPodOnNetwork(t, name, template, pod, true)
}

// startPodWithItsOwnNetwork is startPod for a pod with a network namespace of its own (the
// tier's pod network, node_test.go).
func startPodWithItsOwnNetwork(t testing.TB, name string, template *resourceapi.ResourceClaimTemplate, pod *v1.Pod) workload {
	t.Helper()
	return startPodOnNetwork(t, name, template, pod, false)
}

func startPodOnNetwork(t testing.TB, name string, template *resourceapi.ResourceClaimTemplate, pod *v1.Pod, hostNetwork bool) workload {
	t.Helper()
	n := theNode
	ctx := context.Background()
	namespace := name
	createNamespace(t, namespace)
	template.Namespace, pod.Namespace = namespace, namespace
	if _, err := n.cluster.Admin.ResourceV1().ResourceClaimTemplates(namespace).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Node-level pods share the tier's network namespace.
	pod.Spec.HostNetwork = hostNetwork
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Image = n.images["shell"].Name
		pod.Spec.Containers[i].ImagePullPolicy = v1.PullNever
	}
	created, err := n.cluster.Admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteWorkload(t, namespace, created.Name) })
	running := waitForRunning(t, namespace, pod.Name, 120*time.Second)
	if len(running.Status.ResourceClaimStatuses) != 1 || running.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod %s: resourceClaimStatuses %v, want the one claim made from the template", pod.Name, running.Status.ResourceClaimStatuses)
	}
	claim, err := n.cluster.Admin.ResourceV1().ResourceClaims(namespace).Get(ctx, *running.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Allocation == nil {
		t.Fatalf("claim %s of the running pod is not allocated", claim.Name)
	}
	return workload{pod: running, claim: claim}
}

// createNamespace creates the namespace and waits for its default service account (a pod
// cannot be created in it before).
func createNamespace(t testing.TB, namespace string) {
	t.Helper()
	ctx := context.Background()
	admin := theNode.cluster.Admin
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the default service account of "+namespace, func() error {
		_, err := admin.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// waitForRunning waits until the pod runs and is Ready, and returns it.
func waitForRunning(t testing.TB, namespace, name string, timeout time.Duration) *v1.Pod {
	t.Helper()
	var running *v1.Pod
	waitFor(t, timeout, "pod "+namespace+"/"+name+" running", func() error {
		var err error
		running, err = theNode.cluster.Admin.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if running.Status.Phase != v1.PodRunning || !podReady(running) {
			return fmt.Errorf("%s", describePod(running))
		}
		return nil
	})
	return running
}

// checkEnvironment: every variable of the claim's CDI specs is in the pod's container.
func checkEnvironment(t testing.TB, w workload) {
	t.Helper()
	edits := claimEdits(t, string(w.claim.UID))
	if len(edits.Env) == 0 {
		t.Fatalf("claim %s: its CDI specs have no variable", w.claim.Name)
	}
	environment := map[string]bool{}
	for _, line := range strings.Split(execIn(t, w.pod, "env"), "\n") {
		environment[line] = true
	}
	for _, variable := range edits.Env {
		if !environment[variable] {
			t.Errorf("pod %s/%s: variable %s of claim %s is not in the container's environment", w.pod.Namespace, w.pod.Name, variable, w.claim.Name)
		}
	}
}

// deleteWorkload deletes the pod and its namespace and waits until both are gone (the pod's claim
// unprepared by then: the kubelet removes a pod only after NodeUnprepareResources).
func deleteWorkload(t testing.TB, namespace, pod string) {
	n := theNode
	ctx := context.Background()
	_ = n.cluster.Admin.CoreV1().Pods(namespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(1))})
	waitFor(t, 120*time.Second, "pod "+namespace+"/"+pod+" deleted", func() error {
		_, err := n.cluster.Admin.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	_ = n.cluster.Admin.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
}

// waitFor polls check until it succeeds, failing the test after the timeout with its last error.
func waitFor(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// claimSpecFiles are the CDI spec files the driver wrote for the claim (their names carry its
// UID: the claim's devices and its metadata).
func claimSpecFiles(t testing.TB, uid string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cdiDir, "*"+uid+"*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// claimEdits gathers the edits of every device of the claim's specs, spec-wide edits included.
func claimEdits(t testing.TB, uid string) cdispec.Edits {
	t.Helper()
	var all cdispec.Edits
	for _, file := range claimSpecFiles(t, uid) {
		spec, err := cdispec.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		all.Add(spec.ContainerEdits)
		for _, device := range spec.Devices {
			all.Add(device.ContainerEdits)
		}
	}
	return all
}

// exec runs a shell script in the pod's first container with kubectl exec.
func execIn(t testing.TB, pod *v1.Pod, script string) string {
	t.Helper()
	out, err := theNode.kubectl("exec", "-n", pod.Namespace, pod.Name, "-c", pod.Spec.Containers[0].Name, "--", "sh", "-c", script)
	if err != nil {
		t.Fatalf("kubectl exec %s/%s -- sh -c %q: %v\n%s", pod.Namespace, pod.Name, script, err, out)
	}
	return out
}

// The example's pod (a GPU, an RDMA NIC and CPUs on one NUMA node) is scheduled by the real
// scheduler, prepared through the real kubelet's call, and started by containerd with the CDI
// edits: inside the container (kubectl exec) every variable of the claim's specs, every device
// node as a character device with the spec's major and minor, and every metadata file with the
// host file's content, mounted read-only.
func TestAPodWithTheGpuNicCpuClaimGetsItsDevicesInsideTheContainer(t *testing.T) {
	w := startExamplePod(t, "gpu-nic-cpu")
	requests := map[string]int{}
	for _, result := range w.claim.Status.Allocation.Devices.Results {
		if result.Driver != driverName || result.Pool != theNode.name {
			t.Errorf("claim %s: result %+v is not the node's driver's", w.claim.Name, result)
		}
		requests[result.Request]++
	}
	for _, request := range []string{"gpu", "nic", "cpu"} {
		if requests[request] != 1 {
			t.Errorf("claim %s: %d devices for request %s, want 1: %+v", w.claim.Name, requests[request], request, w.claim.Status.Allocation.Devices.Results)
		}
	}
	edits := claimEdits(t, string(w.claim.UID))
	if len(edits.Env) == 0 || len(edits.DeviceNodes) == 0 || len(edits.Mounts) == 0 {
		t.Fatalf("the claim's CDI specs %v have %d variables, %d device nodes, %d mounts: the check would prove nothing",
			claimSpecFiles(t, string(w.claim.UID)), len(edits.Env), len(edits.DeviceNodes), len(edits.Mounts))
	}

	checkEnvironment(t, w)

	for _, device := range edits.DeviceNodes {
		if device.Major == nil || device.Minor == nil || device.Type != "c" {
			t.Errorf("device node %s: type %q major %v minor %v in the spec: want a character device with both", device.Path, device.Type, device.Major, device.Minor)
			continue
		}
		got := strings.TrimSpace(execIn(t, w.pod, "stat -c '%F %t %T' "+device.Path))
		want := fmt.Sprintf("character special file %s %s", strconv.FormatUint(*device.Major, 16), strconv.FormatUint(*device.Minor, 16))
		if got != want {
			t.Errorf("device node %s in the container: %q, want %q", device.Path, got, want)
		}
	}

	mounts := execIn(t, w.pod, "cat /proc/mounts")
	for _, mount := range edits.Mounts {
		host, err := os.ReadFile(mount.HostPath)
		if err != nil {
			t.Errorf("mount %s: the host file: %v", mount.ContainerPath, err)
			continue
		}
		if got := execIn(t, w.pod, "cat "+mount.ContainerPath); got != string(host) {
			t.Errorf("mount %s in the container:\n%s\nwant the host's %s:\n%s", mount.ContainerPath, got, mount.HostPath, host)
		}
		if options := mountOptions(mounts, mount.ContainerPath); !options["ro"] {
			t.Errorf("mount %s is not read-only in the container: %v", mount.ContainerPath, options)
		}
	}
	t.Logf("claim %s: %d variables, %d device nodes, %d metadata mounts checked in the container",
		w.claim.Name, len(edits.Env), len(edits.DeviceNodes), len(edits.Mounts))
}

// mountOptions are the options of the mount at path in a /proc/mounts text.
func mountOptions(mounts, path string) map[string]bool {
	options := map[string]bool{}
	for _, line := range strings.Split(mounts, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 4 && fields[1] == path {
			options = map[string]bool{}
			for _, option := range strings.Split(fields[3], ",") {
				options[option] = true
			}
		}
	}
	return options
}

// Deleting the pod unprepares its claim through the real kubelet: the claim's CDI specs and its
// metadata folder are gone from the node, and the claim (made from the template) with them.
func TestDeletingThePodUnpreparesItsClaim(t *testing.T) {
	w := startExamplePod(t, "unprepare")
	uid := string(w.claim.UID)
	claimDir := filepath.Join(metadataDir, w.claim.Namespace+"_"+w.claim.Name)
	if files := claimSpecFiles(t, uid); len(files) == 0 {
		t.Fatalf("no CDI spec of claim %s in %s while its pod runs", uid, cdiDir)
	}
	if _, err := os.Stat(claimDir); err != nil {
		t.Fatalf("the claim's metadata folder while its pod runs: %v", err)
	}
	deleteWorkload(t, w.pod.Namespace, w.pod.Name)
	waitFor(t, 30*time.Second, "the claim's CDI specs and metadata removed", func() error {
		if files := claimSpecFiles(t, uid); len(files) != 0 {
			return fmt.Errorf("CDI specs of the claim left after its pod is gone: %v", files)
		}
		if _, err := os.Stat(claimDir); !os.IsNotExist(err) {
			return fmt.Errorf("the claim's metadata folder %s after its pod is gone: %v", claimDir, err)
		}
		return nil
	})
	waitFor(t, 60*time.Second, "claim "+w.claim.Name+" deleted", func() error {
		_, err := theNode.cluster.Admin.ResourceV1().ResourceClaims(w.claim.Namespace).Get(context.Background(), w.claim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// Last (it removes the driver): `helm uninstall` leaves no slice behind although the chart keeps
// them on the pod's exit (publish.keepSlicesOnExit): the kubelet deletes a driver's slices once
// its last endpoint has been gone for 30 s (its wipingDelay), and its log says so.
func TestHelmUninstallLeavesNoSliceBehind(t *testing.T) {
	logFrom := kubeletLogSize(t)
	started := time.Now()
	if out, err := theNode.helm("uninstall", driverRelease, "--namespace", driverNamespace, "--wait", "--timeout", "90s"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	waitFor(t, 90*time.Second, "the node's slices of the driver deleted", func() error {
		if left := publishedDevices(t); len(left) != 0 {
			return fmt.Errorf("%d devices still published", len(left))
		}
		return nil
	})
	t.Logf("slices gone %s after helm uninstall", time.Since(started).Round(100*time.Millisecond))
	if !strings.Contains(kubeletLogSince(t, logFrom), `"Deleted ResourceSlices"`) {
		t.Errorf("the kubelet's log does not say it deleted the driver's slices")
	}
}
