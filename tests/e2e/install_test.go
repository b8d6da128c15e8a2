package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"numadra.dev/tests/e2e/cluster"
)

// helm runs the pinned Helm against the cluster as the administrator, with its own folders.
func helm(t testing.TB, c *cluster.Cluster, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(requireEnv(t, "NUMADRA_E2E_BIN"), "helm"), args...)
	home := filepath.Join(c.Dir, "helm")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.AdminKubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// readmeCommand is the first command of a README (relative to the source folder) that starts
// with `prefix`, its continuation lines joined, split into words.
func readmeCommand(t testing.TB, readme, prefix string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sourceDir(t), readme))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, prefix) {
			return strings.Fields(line)
		}
	}
	t.Fatalf("%s has no command starting with %q", readme, prefix)
	return nil
}

// The objects a default installation creates, by kind and name.
func checkInstalled(t *testing.T, c *cluster.Cluster, want bool) {
	t.Helper()
	ctx := context.Background()
	get := map[string]func() error{
		"DaemonSet numa-dra-driver": func() error {
			_, err := c.Admin.AppsV1().DaemonSets(driverNamespace).Get(ctx, "numa-dra-driver", metav1.GetOptions{})
			return err
		},
		"ClusterRole numa-dra-driver": func() error {
			_, err := c.Admin.RbacV1().ClusterRoles().Get(ctx, "numa-dra-driver", metav1.GetOptions{})
			return err
		},
		"ClusterRoleBinding numa-dra-driver": func() error {
			_, err := c.Admin.RbacV1().ClusterRoleBindings().Get(ctx, "numa-dra-driver", metav1.GetOptions{})
			return err
		},
		"ValidatingAdmissionPolicy numa-dra-driver-resourceslices": func() error {
			_, err := c.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "numa-dra-driver-resourceslices", metav1.GetOptions{})
			return err
		},
	}
	for _, class := range []string{"gpu", "nic", "vf", "cpu"} {
		name := class + "." + driverName
		get["DeviceClass "+name] = func() error {
			_, err := c.Admin.ResourceV1().DeviceClasses().Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	for what, lookup := range get {
		err := lookup()
		switch {
		case want && err != nil:
			t.Errorf("%s: %v", what, err)
		case !want && err == nil:
			t.Errorf("%s still there", what)
		case !want && !apierrors.IsNotFound(err):
			t.Errorf("%s: %v", what, err)
		}
	}
}

// The README's Helm command installs the chart into a real API server with every DRA gate on;
// each value the deploy README documents upgrades it with objects the server accepts; uninstall
// removes what it installed.
func TestHelmInstallUpgradeAndUninstallAsTheReadmeSays(t *testing.T) {
	profile := cluster.AllDRA()
	profile.Name = "helm"
	c := clusterFor(t, profile)
	chart := filepath.Join(sourceDir(t), "deploy", "helm", "numa-dra-driver")
	install := readmeCommand(t, "README.md", "helm install ")
	if deploy := readmeCommand(t, filepath.Join("deploy", "README.md"), "helm install "); strings.Join(deploy, " ") != strings.Join(install, " ") {
		t.Errorf("README.md and deploy/README.md install differently:\n%s\n%s", install, deploy)
	}
	args := append([]string(nil), install[1:]...) // without "helm"
	for i, arg := range args {
		if arg == "deploy/helm/numa-dra-driver" {
			args[i] = chart
		}
	}
	if out, err := helm(t, c, args...); err != nil {
		t.Fatalf("%s (as the README says): %v\n%s", strings.Join(install, " "), err, out)
	}
	checkInstalled(t, c, true)

	// deploy/README.md's upgrade command without its example value; each value set below is
	// applied over the install's values (--reuse-values), one set at a time.
	upgradeCommand := readmeCommand(t, filepath.Join("deploy", "README.md"), "helm upgrade ")
	upgrade := func() []string {
		var args []string
		for i := 1; i < len(upgradeCommand); i++ {
			switch {
			case upgradeCommand[i] == "--set":
				i++
			case upgradeCommand[i] == "deploy/helm/numa-dra-driver":
				args = append(args, chart)
			default:
				args = append(args, upgradeCommand[i])
			}
		}
		return args
	}
	for _, values := range [][]string{
		{"publish.numaList=auto", "publish.nodeAllocatableResources=false"},
		{"publish.numaList=true", "publish.sharedConsumableCapacity=true", "publish.resyncInterval=30s"},
		{"paths.kubeletRegistryDir=/var/lib/k0s/kubelet/plugins_registry", "paths.kubeletPluginsDir=/var/lib/k0s/kubelet/plugins", "paths.cdiDir=/etc/cdi"},
		{"deviceClasses.gpu.extendedResourceName=", "deviceClasses.cpu.enabled=false"},
		{"hostNetwork=false", "readDeviceSerialNumbers=true", "health.taintEffect=NoExecute", "log.format=text", "log.level=debug"},
		{"validatingAdmissionPolicy.enabled=false", "extraArgs={--keep-slices-on-exit}"},
	} {
		args := upgrade()
		for _, value := range values {
			args = append(args, "--set", value)
		}
		if out, err := helm(t, c, args...); err != nil {
			t.Errorf("helm upgrade --set %s: %v\n%s", strings.Join(values, " --set "), err, out)
		}
	}
	back := []string{"upgrade", "numa-dra-driver", chart, "--namespace", "numa-dra-driver", "--reset-values", "--set", "namespace.create=false"}
	if out, err := helm(t, c, back...); err != nil {
		t.Fatalf("helm upgrade back to the defaults: %v\n%s", err, out)
	}
	checkInstalled(t, c, true)

	if out, err := helm(t, c, "uninstall", "numa-dra-driver", "--namespace", "numa-dra-driver", "--wait", "--timeout", "60s"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !t.Failed() {
		if _, err := c.Admin.AppsV1().DaemonSets(driverNamespace).Get(context.Background(), "numa-dra-driver", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkInstalled(t, c, false)
}

// kubectl apply -f deploy/manifests/ (the chart rendered with its defaults) is accepted whole,
// and applying it again changes nothing.
func TestKubectlApplyOfTheManifestsIsAcceptedAndIdempotent(t *testing.T) {
	c := clusterFor(t, cluster.Defaults())
	installedDriver(t, c)
	checkInstalled(t, c, true)
	out, err := kubectl(t, c, "apply", "-f", filepath.Join(sourceDir(t), "deploy", "manifests"))
	if err != nil {
		t.Fatalf("kubectl apply again: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasSuffix(line, " unchanged") {
			t.Errorf("kubectl apply again changed something: %s", line)
		}
	}
	out, err = kubectl(t, c, "diff", "-f", filepath.Join(sourceDir(t), "deploy", "manifests"))
	if err != nil {
		t.Errorf("kubectl diff after apply: %v\n%s", err, out)
	}
}
