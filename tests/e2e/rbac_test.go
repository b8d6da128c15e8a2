package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"numadra.dev/tests/e2e/cluster"
)

// clientWithToken is a client that authenticates as a service-account token does.
func clientWithToken(t testing.TB, c *cluster.Cluster, name, token string) *kubernetes.Clientset {
	t.Helper()
	path := filepath.Join(c.Dir, name+".kubeconfig")
	if err := c.TokenKubeconfig(path, token); err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	config.QPS, config.Burst = 200, 400 // as the administrator's: no client-side throttling in measurements
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func sliceFor(name, node, driver string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
			Devices:  []resourceapi.Device{{Name: "dev-0"}},
		},
	}
}

// refused fails unless err is the API server's refusal (403 or 422) with `words` in it.
func refused(t *testing.T, what string, err error, words string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: allowed, want a refusal", what)
	case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
		t.Errorf("%s: %v, want 403 Forbidden or 422 Invalid", what, err)
	case !strings.Contains(err.Error(), words):
		t.Errorf("%s: refused with %q, want it to say %q", what, err, words)
	}
}

// The admission policy keeps a node's driver to its own node's slices of its own driver, and
// RBAC grants exactly what the daemon asks for.
func TestANodesDriverTokenWritesOnlyItsOwnNodesSlices(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	ctx := context.Background()
	const nodeA, nodeB = "rbac-a", "rbac-b"
	createNode(t, c, nodeA, "gpu4-nic")
	createNode(t, c, nodeB, "sriov-nic")
	b := startDaemon(t, c, nodeB, "sriov-nic", "--health=false")
	waitForSlices(t, c, b, nodeB, expectedSlicesOn(t, c, nodeB, "sriov-nic"))
	sliceOfB := nodeSlices(t, c, nodeB)[0]

	driverA := clientWithToken(t, c, "driver-a", driverToken(t, c, nodeA))
	slices := driverA.ResourceV1().ResourceSlices()

	_, err := slices.Create(ctx, sliceFor("a-writes-b", nodeB, driverName), metav1.CreateOptions{})
	refused(t, "node A's driver creates a slice of node B", err, `may not write ResourceSlice a-writes-b of node "rbac-b"`)
	changed := sliceOfB.DeepCopy()
	changed.Labels = map[string]string{"written-by": "node-a"}
	_, err = slices.Update(ctx, changed, metav1.UpdateOptions{})
	refused(t, "node A's driver updates node B's slice", err, "may not write ResourceSlice "+sliceOfB.Name)
	err = slices.Delete(ctx, sliceOfB.Name, metav1.DeleteOptions{})
	refused(t, "node A's driver deletes node B's slice", err, "may not write ResourceSlice "+sliceOfB.Name)
	_, err = slices.Create(ctx, sliceFor("a-other-driver", nodeA, "other.example.com"), metav1.CreateOptions{})
	refused(t, "node A's driver creates another driver's slice", err, "may not write ResourceSlices of driver other.example.com")

	own, err := slices.Create(ctx, sliceFor("a-own", nodeA, driverName), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node A's driver creates its own slice: %v", err)
	}
	own.Spec.Devices = append(own.Spec.Devices, resourceapi.Device{Name: "dev-1"})
	if own, err = slices.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("node A's driver updates its own slice: %v", err)
	}
	if err := slices.Delete(ctx, own.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("node A's driver deletes its own slice: %v", err)
	}
	if left := nodeSlices(t, c, nodeB); len(left) == 0 || left[0].ResourceVersion != sliceOfB.ResourceVersion {
		t.Errorf("node B's slices changed while node A's driver was refused")
	}
}

// A token of the driver's service account that is not bound to a pod on a node carries no node
// name: the policy refuses every slice write.
func TestADriverTokenWithoutANodeWritesNoSlice(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	ctx := context.Background()
	token, err := c.Admin.CoreV1().ServiceAccounts(driverNamespace).CreateToken(ctx, driverAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unbound := clientWithToken(t, c, "driver-unbound", token.Status.Token)
	_, err = unbound.ResourceV1().ResourceSlices().Create(ctx, sliceFor("unbound", "rbac-a", driverName), metav1.CreateOptions{})
	refused(t, "an unbound driver token creates a slice", err, "must run in a pod bound to a node")
}

// RBAC grants the driver exactly the requests the daemon makes (deploy/manifests' ClusterRole),
// nothing beside them.
func TestTheDriversRBACIsExactlyWhatTheDaemonNeeds(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const node = "rbac-review"
	createNode(t, c, node, "laptop")
	driver := clientWithToken(t, c, "driver-review", driverToken(t, c, node))
	type request struct {
		group, resource, subresource, verb string
		allowed                            bool
	}
	for _, r := range []request{
		{"resource.k8s.io", "resourceslices", "", "list", true},
		{"resource.k8s.io", "resourceslices", "", "watch", true},
		{"resource.k8s.io", "resourceslices", "", "create", true},
		{"resource.k8s.io", "resourceslices", "", "update", true},
		{"resource.k8s.io", "resourceslices", "", "delete", true},
		{"resource.k8s.io", "resourceclaims", "", "get", true},
		{"", "nodes", "", "get", true},
		{"resource.k8s.io", "resourceslices", "", "get", false},
		{"resource.k8s.io", "resourceslices", "", "patch", false},
		{"resource.k8s.io", "resourceslices", "", "deletecollection", false},
		{"resource.k8s.io", "resourceclaims", "", "list", false},
		{"resource.k8s.io", "resourceclaims", "", "update", false},
		{"resource.k8s.io", "resourceclaims", "status", "patch", true},
		{"resource.k8s.io", "resourceclaims", "status", "update", false},
		{"resource.k8s.io", "deviceclasses", "", "create", false},
		{"", "nodes", "", "update", false},
		{"", "nodes", "", "delete", false},
		{"", "secrets", "", "get", false},
		{"", "pods", "", "create", false},
	} {
		review, err := driver.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: r.group, Resource: r.resource, Subresource: r.subresource, Verb: r.verb, Namespace: "default",
				},
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != r.allowed {
			t.Errorf("%s %s/%s %s: allowed=%v, want %v (%s)", r.verb, r.group, r.resource, r.subresource,
				review.Status.Allowed, r.allowed, review.Status.Reason)
		}
	}
}
