package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"numadra.dev/tests/e2e/cluster"
)

// kubeletClient speaks the kubelet's side of DRA v1 (upstream's own protos) to the daemon of a
// node, over the unix socket the daemon registered.
func kubeletClient(t testing.TB, c *cluster.Cluster, node string) drapb.DRAPluginClient {
	t.Helper()
	socket := filepath.Join(kubeletDir(c, node), "plugins", driverName, "dra.sock")
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return drapb.NewDRAPluginClient(conn)
}

// prepareAsTheKubelet prepares the claims as the kubelet does for a pod bound to the node (the
// claims as the API server stored them: namespace, name, UID), checks that the daemon returns
// every allocated device of this driver with CDI ids, starts a container with each claim's CDI
// ids where podman can run, then unprepares them.
func prepareAsTheKubelet(t *testing.T, c *cluster.Cluster, node string, claims []resourceapi.ResourceClaim) {
	t.Helper()
	plugin := kubeletClient(t, c, node)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var request drapb.NodePrepareResourcesRequest
	for _, claim := range claims {
		if claim.Status.Allocation != nil {
			request.Claims = append(request.Claims, &drapb.Claim{Namespace: claim.Namespace, Name: claim.Name, Uid: string(claim.UID)})
		}
	}
	if len(request.Claims) == 0 {
		return
	}
	containers := 0
	prepared, err := plugin.NodePrepareResources(ctx, &request)
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		answer := prepared.Claims[string(claim.UID)]
		if answer == nil || answer.Error != "" {
			t.Errorf("claim %s/%s: prepare answered %v", claim.Namespace, claim.Name, answer)
			continue
		}
		var want, got, ids []string
		for _, result := range claim.Status.Allocation.Devices.Results {
			if result.Driver == driverName {
				// The kubelet keeps request names without the subrequest ("gpus", not
				// "gpus/two"): a container names the claim's request, never a subrequest.
				base, _, _ := strings.Cut(result.Request, "/")
				want = append(want, base+" "+result.Pool+"/"+result.Device)
			}
		}
		for _, device := range answer.Devices {
			if len(device.CdiDeviceIds) == 0 {
				t.Errorf("claim %s/%s: device %s without CDI ids", claim.Namespace, claim.Name, device.DeviceName)
			}
			for _, request := range device.RequestNames {
				got = append(got, request+" "+device.PoolName+"/"+device.DeviceName)
			}
			ids = append(ids, device.CdiDeviceIds...)
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("claim %s/%s: prepared %v, allocated %v", claim.Namespace, claim.Name, got, want)
		}
		if len(ids) > 0 && containersRun(t) {
			runWithDevices(t, filepath.Join(c.Dir, "nodes", node, "cdi"), ids)
			containers++
		}
	}
	unprepare := drapb.NodeUnprepareResourcesRequest{Claims: request.Claims}
	unprepared, err := plugin.NodeUnprepareResources(ctx, &unprepare)
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	for uid, answer := range unprepared.Claims {
		if answer.Error != "" {
			t.Errorf("unprepare %s: %s", uid, answer.Error)
		}
	}
	t.Logf("the daemon prepared and unprepared %d claims as the kubelet asks; podman ran %d containers with their CDI ids", len(request.Claims), containers)
}

// inCI is the one rule for "this is CI" in the Go tiers (the scripts: scripts/lib/ci.sh, the C++
// tests: numadra/testing/ci.hpp, CMake: cmake/Go.cmake): CI is set to true or 1, in any case.
func inCI() bool {
	value := strings.ToLower(os.Getenv("CI"))
	return value == "true" || value == "1"
}

// containersRun says whether podman can start containers here; in CI it must.
func containersRun(t testing.TB) bool {
	missing := containerRuntimeMissing()
	switch {
	case missing == "":
		return true
	case inCI():
		t.Fatalf("CI needs podman to start containers with the prepared CDI ids: %s", missing)
	default:
		t.Logf("SKIPPED starting containers with the prepared CDI ids: %s", missing)
	}
	return false
}
