package node

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helm runs the pinned Helm as the administrator, with its own folders.
func (n *node) helm(args ...string) (string, error) {
	cmd := exec.Command(kubeBin("helm"), args...)
	home := filepath.Join(n.dir, "helm")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.cluster.AdminKubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// readmeCommand is the first command of a README (relative to the source folder) that starts
// with `prefix`, its continuation lines joined, split into words.
func readmeCommand(readme, prefix string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(sourceDir(), readme))
	if err != nil {
		return nil, err
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, prefix) {
			return strings.Fields(line), nil
		}
	}
	return nil, fmt.Errorf("%s has no command starting with %q", readme, prefix)
}

// driverValues are the only values the tier sets, each one a user could need: the image as it
// was imported, the mocked machine's folders (and no pinning of its mocked CPUs), and the API
// server's address (no kube-proxy
// serves the kubernetes Service's 10.0.0.1 here, and the tier's network has no route to it).
func (n *node) driverValues() ([]string, error) {
	image := n.images["driver"].Name
	colon := strings.LastIndex(image, ":")
	api, err := url.Parse(n.cluster.URL)
	if err != nil {
		return nil, err
	}
	return append(hostRoots(n.machineDir),
		"image.repository="+image[:colon], "image.tag="+image[colon+1:],
		"apiServer.host="+api.Hostname(), "apiServer.port="+api.Port(),
		// A netdev VF's interface moves into its pod (containerd 2.4's CDI and runc 1.4 can).
		"cdi.netDevices=true",
		// The mocked machine's CPUs are not this machine's: pinning containers to them would ask
		// runc for CPUs that do not exist. pinning_test.go pins on a mirror of this machine.
		"cpuPinning.mode=off",
	), nil
}

// installDriver runs the README's `helm install` with driverValues, then waits until the
// DaemonSet's pod on the node is Ready (its readiness probe: sockets served, slices published).
func (n *node) installDriver(ctx context.Context) error {
	install, err := readmeCommand("README.md", "helm install ")
	if err != nil {
		return err
	}
	args := append([]string(nil), install[1:]...)
	for i, arg := range args {
		if arg == "deploy/helm/numa-dra-driver" {
			args[i] = filepath.Join(sourceDir(), "deploy", "helm", "numa-dra-driver")
		}
	}
	values, err := n.driverValues()
	if err != nil {
		return err
	}
	for _, value := range values {
		args = append(args, "--set", value)
	}
	if out, err := n.helm(args...); err != nil {
		return fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	_, err = n.waitForDriverPod(ctx, "", 3*time.Minute)
	return err
}

// waitForDriverPod waits for a Ready driver pod on the node other than `previous` (a pod's
// UID; "" for any) and returns it.
func (n *node) waitForDriverPod(ctx context.Context, previous string, timeout time.Duration) (*v1.Pod, error) {
	deadline := time.Now().Add(timeout)
	last := "no driver pod"
	for time.Now().Before(deadline) {
		if n.kubelet.Exited() {
			return nil, fmt.Errorf("the kubelet exited: %s", n.kubelet.Tail())
		}
		pods, err := n.cluster.Admin.CoreV1().Pods(driverNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=numa-dra-driver", FieldSelector: "spec.nodeName=" + n.name})
		if err != nil {
			last = err.Error()
		} else {
			for i := range pods.Items {
				pod := &pods.Items[i]
				if string(pod.UID) == previous || pod.DeletionTimestamp != nil {
					continue
				}
				if podReady(pod) {
					return pod, nil
				}
				last = describePod(pod)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil, fmt.Errorf("no Ready driver pod after %s: %s\n%s", timeout, last, n.driverLogs(ctx))
}

func podReady(pod *v1.Pod) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == v1.PodReady && condition.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// describePod says the pod's phase, conditions and containers' states, for an error message.
func describePod(pod *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s/%s phase %s", pod.Namespace, pod.Name, pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, s := range pod.Status.ContainerStatuses {
		fmt.Fprintf(&b, "; container %s ready=%v restarts=%d", s.Name, s.Ready, s.RestartCount)
		if s.State.Waiting != nil {
			fmt.Fprintf(&b, " waiting %s: %s", s.State.Waiting.Reason, s.State.Waiting.Message)
		}
		if s.State.Terminated != nil {
			fmt.Fprintf(&b, " terminated %s (exit %d): %s", s.State.Terminated.Reason, s.State.Terminated.ExitCode, s.State.Terminated.Message)
		}
	}
	return b.String()
}

// driverLogs is the end of each driver container's log on the node (what kubectl logs shows).
func (n *node) driverLogs(ctx context.Context) string {
	pods, err := n.cluster.Admin.CoreV1().Pods(driverNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, pod := range pods.Items {
		out, _ := n.kubectl("-n", driverNamespace, "logs", pod.Name, "--tail", "30")
		fmt.Fprintf(&b, "--- %s (%s):\n%s\n", pod.Name, describePod(&pod), out)
	}
	return b.String()
}
