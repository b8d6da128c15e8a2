package e2e

import (
	"context"
	"strings"
	"testing"

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
			if _, err := c.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1ListOptions()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
