package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// What the driver's NRI plugin adds to a container's creation, measured at containerd's CRI (the
// call the kubelet makes): pods of one container created, started and removed through the CRI,
// in blocks (the kubelet stopped meanwhile) alternating between the driver pinning (the plugin connected: containerd asks it
// about every container) and not pinning (mode off: no plugin), one exclusive CPU claim
// prepared throughout so that every container is adjusted to the shared pool. Not a CI test:
//
//	scripts/node-e2e.sh --bench NRICreation
//
// prints the medians and 99th percentiles of CreateContainer and StartContainer in each mode
// and the driver's resident memory and threads in each mode (docs/PERFORMANCE.md).
func BenchmarkNRICreation(b *testing.B) {
	const podsPerMode, blocks = 200, 4
	runtime := criClient(b)
	pinOnThisMachine(b)
	pinned := startCPUPod(b, "bench-pinned", 1)
	claimed := claimCPUs(b, pinned)

	samples := map[string]*creationSamples{"nri": {}, "off": {}}
	current := "nri" // pinOnThisMachine's
	for block := 0; block < 2*blocks; block++ {
		mode := []string{"nri", "off"}[block%2]
		if mode != current {
			upgradeDriver(b, "cpuPinning.mode="+mode)
			current = mode
		}
		waitForPinningMode(b, mode)
		// The kubelet would kill the benchmark's pods, which it does not know, as orphans.
		theNode.kubelet.Stop()
		for i := 0; i < podsPerMode/blocks; i++ {
			samples[mode].add(b, runtime, fmt.Sprintf("bench-%d-%d", block, i), mode == "nri", claimed)
		}
		samples[mode].daemon = append(samples[mode].daemon, driverProcess(b))
		if err := theNode.runKubelet(context.Background()); err != nil {
			b.Fatalf("the kubelet after a block: %v", err)
		}
	}
	b.StopTimer()
	for _, mode := range []string{"nri", "off"} {
		s := samples[mode]
		b.Logf("%-3s: CreateContainer p50 %s p99 %s, StartContainer p50 %s p99 %s over %d pods; driver %s",
			mode, percentile(s.create, 50), percentile(s.create, 99), percentile(s.start, 50),
			percentile(s.start, 99), len(s.create), strings.Join(s.daemon, ", "))
	}
	added := percentile(samples["nri"].create, 50) - percentile(samples["off"].create, 50)
	b.Logf("the plugin adds %s to the median CreateContainer (%.2fx)", added,
		float64(percentile(samples["nri"].create, 50))/float64(percentile(samples["off"].create, 50)))
	b.ReportMetric(float64(percentile(samples["nri"].create, 50).Microseconds()), "create-p50-nri-µs")
	b.ReportMetric(float64(percentile(samples["off"].create, 50).Microseconds()), "create-p50-off-µs")
	b.ReportMetric(float64(percentile(samples["nri"].create, 99).Microseconds()), "create-p99-nri-µs")
	b.ReportMetric(float64(percentile(samples["off"].create, 99).Microseconds()), "create-p99-off-µs")
}

type creationSamples struct {
	create, start []time.Duration
	daemon        []string // "RSS x MiB, n threads" after each block
}

// add runs one pod through the CRI: a sandbox on the node's network, one container created and
// started (both timed), then both removed. With pinning the container must come out on the
// shared pool (the claim's CPU excluded), without it on every CPU.
func (s *creationSamples) add(t testing.TB, runtime cri.RuntimeServiceClient, name string, pinning bool, claimed string) {
	ctx := context.Background()
	logs := filepath.Join(theNode.dir, "bench-logs", name)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	sandboxConfig := &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: name, Uid: name, Namespace: "numadra-bench"},
		LogDirectory: logs,
		Linux: &cri.LinuxPodSandboxConfig{
			CgroupParent:    requireEnv("NUMADRA_NODE_CGROUP_ROOT") + "/numadra-bench/" + name,
			SecurityContext: &cri.LinuxSandboxSecurityContext{NamespaceOptions: &cri.NamespaceOption{Network: cri.NamespaceMode_NODE}},
		},
	}
	sandbox, err := runtime.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: sandboxConfig})
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	defer func() {
		_, _ = runtime.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: sandbox.PodSandboxId})
		if _, err := runtime.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: sandbox.PodSandboxId}); err != nil {
			t.Errorf("RemovePodSandbox %s: %v", name, err)
		}
	}()
	created := time.Now()
	container, err := runtime.CreateContainer(ctx, &cri.CreateContainerRequest{
		PodSandboxId:  sandbox.PodSandboxId,
		SandboxConfig: sandboxConfig,
		Config: &cri.ContainerConfig{
			Metadata: &cri.ContainerMetadata{Name: "main"},
			Image:    &cri.ImageSpec{Image: theNode.images["shell"].Name},
			Command:  []string{"sh", "-c", "grep Cpus_allowed_list /proc/self/status; sleep 60"},
			LogPath:  "main.log",
		},
	})
	s.create = append(s.create, time.Since(created))
	if err != nil {
		t.Fatalf("CreateContainer in %s: %v", name, err)
	}
	started := time.Now()
	if _, err := runtime.StartContainer(ctx, &cri.StartContainerRequest{ContainerId: container.ContainerId}); err != nil {
		t.Fatalf("StartContainer in %s: %v", name, err)
	}
	s.start = append(s.start, time.Since(started))
	checkBenchContainerCPUs(t, filepath.Join(logs, "main.log"), pinning, claimed)
	_, _ = runtime.StopContainer(ctx, &cri.StopContainerRequest{ContainerId: container.ContainerId, Timeout: 0})
}

// checkBenchContainerCPUs: the container's first log line is its Cpus_allowed_list; with
// pinning the claimed CPU is not in it, without pinning every CPU is.
func checkBenchContainerCPUs(t testing.TB, log string, pinning bool, claimed string) {
	all := formatCPUs(onlineCPUs(t))
	want := all
	if pinning {
		want = without(onlineCPUs(t), claimed)
	}
	field := regexp.MustCompile(`Cpus_allowed_list:\s*(\S+)`)
	waitFor(t, 10*time.Second, "the bench container's CPUs in "+log, func() error {
		data, err := os.ReadFile(log)
		if err != nil {
			return err
		}
		match := field.FindSubmatch(data)
		if match == nil {
			return fmt.Errorf("log %q", data)
		}
		cpus, err := parseCPUList(string(match[1]))
		if err != nil {
			return err
		}
		if got := formatCPUs(cpus); got != want {
			t.Fatalf("a container created with pinning %t runs on CPUs %s, want %s", pinning, got, want)
		}
		return nil
	})
}

// waitForPinningMode waits until the driver's NRI gauge says what the mode implies (connected
// with nri, not with off).
func waitForPinningMode(t testing.TB, mode string) {
	want := map[string]string{"nri": "1", "off": "0"}[mode]
	waitFor(t, 60*time.Second, "numadra_nri_connected "+want, func() error {
		if got := nriConnected(t); got != want {
			return fmt.Errorf("numadra_nri_connected %s", got)
		}
		return nil
	})
}

// driverProcess is the driver's resident memory and thread count, from /proc (the tier's PID
// namespace holds its containers).
func driverProcess(t testing.TB) string {
	statuses, err := filepath.Glob("/proc/[0-9]*/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range statuses {
		data, err := os.ReadFile(file)
		if err != nil || !strings.HasPrefix(string(data), "Name:\tnuma-dra-plugin\n") {
			continue
		}
		fields := map[string]string{}
		for _, line := range strings.Split(string(data), "\n") {
			key, value, _ := strings.Cut(line, ":")
			fields[key] = strings.TrimSpace(value)
		}
		kib, _ := strconv.Atoi(strings.TrimSuffix(fields["VmRSS"], " kB"))
		return fmt.Sprintf("RSS %.1f MiB, %s threads", float64(kib)/1024, fields["Threads"])
	}
	t.Fatal("no numa-dra-plugin process in /proc")
	return ""
}

func criClient(t testing.TB) cri.RuntimeServiceClient {
	connection, err := grpc.NewClient("unix://"+containerdSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { connection.Close() })
	return cri.NewRuntimeServiceClient(connection)
}

// percentile is the nearest-rank percentile of the samples.
func percentile(samples []time.Duration, p int) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := (p*len(sorted) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
