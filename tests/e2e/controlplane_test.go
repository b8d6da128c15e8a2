package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"numadra.dev/tests/e2e/cluster"
)

func TestTheControlPlaneServesResourceV1(t *testing.T) {
	for _, profile := range []cluster.Profile{cluster.AllDRA(), cluster.Defaults()} {
		t.Run(profile.Name, func(t *testing.T) {
			c := clusterFor(t, profile)
			version, err := c.Admin.Discovery().ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kube-apiserver %s", version.GitVersion)
			if !strings.HasPrefix(version.GitVersion, "v1.37.2") {
				t.Errorf("kube-apiserver says %s, want v1.37.2", version.GitVersion)
			}
			if _, err := c.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if os.Getenv("NUMADRA_E2E_HOLD") != "" {
		holdForHands()
	}
}

// holdForHands keeps the control planes running until Ctrl-C (TestMain stops them then).
func holdForHands() {
	clustersMu.Lock()
	for name, c := range clusters {
		fmt.Printf("e2e: holding the %s control plane: export KUBECONFIG=%s\n", name, c.AdminKubeconfig)
	}
	clustersMu.Unlock()
	fmt.Println("e2e: Ctrl-C stops them")
	select {}
}
