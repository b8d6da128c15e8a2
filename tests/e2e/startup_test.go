package e2e

import (
	"context"
	"os"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"numadra.dev/tests/e2e/cluster"
)

// Start-up to "slices published" against the real API server (issue 16 §4): from the fork of
// numa-dra-plugin until a watch on the API server has seen every slice of the node, and the
// daemon's own "ready startup_ms" (registration socket up and slices stored).

var startupLogged = regexp.MustCompile(`ready startup_ms=([0-9.]+)`)

// sliceSelector selects the node's slices, of one driver unless driver is empty.
func sliceSelector(node, driver string) string {
	selector := fields.OneTermEqualSelector("spec.nodeName", node)
	if driver != "" {
		selector = fields.AndSelectors(selector, fields.OneTermEqualSelector("spec.driver", driver))
	}
	return selector.String()
}

// startedUntilPublished runs start() and waits on a watch (opened before it) until `slices`
// slices the selector matches were added; returns the driver and the time since its fork.
func startedUntilPublished(t testing.TB, c *cluster.Cluster, selector string, slices int, start func() *daemon) (*daemon, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := c.Admin.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	d := start()
	seen := map[string]bool{}
	for len(seen) < slices {
		select {
		case event, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: the watch ended before %d slices were seen", selector, slices)
			}
			if slice, isSlice := event.Object.(*resourceapi.ResourceSlice); isSlice && event.Type == watch.Added {
				seen[slice.Name] = true
			}
		case <-ctx.Done():
			t.Fatalf("%s: %d of %d slices after a minute; the driver's log:\n%s", selector, len(seen), slices, d.output())
		}
	}
	return d, time.Since(d.started)
}

// publishedOnce starts the daemon, waits on a watch for the node's slices, stops the daemon and
// waits for its slices to be gone (SIGTERM deletes them), so that every start is a first one.
func publishedOnce(t testing.TB, c *cluster.Cluster, node, machine string, slices int) (watched, logged time.Duration) {
	t.Helper()
	d, watched := startedUntilPublished(t, c, sliceSelector(node, ""), slices, func() *daemon {
		return startDaemon(t, c, node, machine)
	})
	logged = loggedStartup(t, d)
	if err := d.stop(t); err != nil {
		t.Fatalf("numa-dra-plugin on %s: %v\n%s", node, err, d.output())
	}
	eventually(t, 30*time.Second, "the stopped daemon's slices are deleted", func() bool {
		return len(nodeSlices(t, c, node)) == 0
	})
	return watched, logged
}

func loggedStartup(t testing.TB, d *daemon) time.Duration {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(d.log)
		if match := startupLogged.FindSubmatch(data); match != nil {
			ms, _ := strconv.ParseFloat(string(match[1]), 64)
			return time.Duration(ms * float64(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the daemon logged no \"ready startup_ms\" within 5 s of publishing:\n%s", d.output())
	return 0
}

func median(values []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), values...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkDaemonStartupToSlicesPublished: scripts/e2e.sh --bench DaemonStartup. Each machine is
// started NUMADRA_E2E_BENCH_STARTS times (default 9); the medians are reported.
func BenchmarkDaemonStartupToSlicesPublished(b *testing.B) {
	starts := envCount(b, "NUMADRA_E2E_BENCH_STARTS", 9)
	c := clusterFor(b, cluster.AllDRA())
	installedDriver(b, c)
	for _, machine := range machines(b) {
		b.Run(machine, func(b *testing.B) {
			node := "start-" + machine
			createNode(b, c, node, machine)
			slices := len(expectedSlicesOn(b, c, node, machine))
			if slices == 0 {
				b.Skipf("%s publishes no slices", machine)
			}
			for i := 0; i < b.N; i++ {
				var watched, logged []time.Duration
				for start := 0; start < starts; start++ {
					w, l := publishedOnce(b, c, node, machine, slices)
					watched, logged = append(watched, w), append(logged, l)
				}
				b.ReportMetric(milliseconds(median(watched)), "ms-to-watched")
				b.ReportMetric(milliseconds(median(logged)), "ms-startup-logged")
				b.ReportMetric(float64(slices), "slices")
			}
		})
	}
}

// BenchmarkAPIServerStoresAMachinesSlices is the floor under the daemon's number: the same
// slices (numa-probe's for the machine) created by client-go (one warm HTTP/2 connection), one
// after the other and 4 at a time as the daemon writes them, deleted between runs; as the
// administrator and with the node's driver token (service-account authentication and the
// admission policy on every write, as for the daemon); medians of NUMADRA_E2E_BENCH_STARTS runs.
func BenchmarkAPIServerStoresAMachinesSlices(b *testing.B) {
	starts := envCount(b, "NUMADRA_E2E_BENCH_STARTS", 9)
	c := clusterFor(b, cluster.AllDRA())
	installedDriver(b, c)
	for _, machine := range []string{"epyc-2s-nps4", "big-2s-8n"} {
		b.Run(machine, func(b *testing.B) {
			node := "store-" + machine
			created := createNode(b, c, node, machine)
			slices := expectedSlicesOn(b, c, node, machine)
			for i := range slices {
				slices[i].OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: created.Name, UID: created.UID}}
			}
			driver := clientWithToken(b, c, "driver-"+node, driverToken(b, c, node))
			for i := 0; i < b.N; i++ {
				var sequential, parallel, asDriver []time.Duration
				for start := 0; start < starts; start++ {
					sequential = append(sequential, storeSlices(b, c, c.Admin, node, slices, 1))
					parallel = append(parallel, storeSlices(b, c, c.Admin, node, slices, 4))
					asDriver = append(asDriver, storeSlices(b, c, driver, node, slices, 4))
				}
				b.ReportMetric(milliseconds(median(sequential)), "ms-admin-one-by-one")
				b.ReportMetric(milliseconds(median(parallel)), "ms-admin-4-at-a-time")
				b.ReportMetric(milliseconds(median(asDriver)), "ms-driver-token-4-at-a-time")
				b.ReportMetric(float64(len(slices)), "slices")
			}
		})
	}
}

func storeSlices(b *testing.B, c *cluster.Cluster, client kubernetes.Interface, node string, slices []resourceapi.ResourceSlice, parallel int) time.Duration {
	b.Helper()
	ctx := context.Background()
	work := make(chan *resourceapi.ResourceSlice)
	errs := make(chan error, len(slices))
	started := time.Now()
	for w := 0; w < parallel; w++ {
		go func() {
			for slice := range work {
				_, err := client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
				errs <- err
			}
		}()
	}
	for i := range slices {
		work <- &slices[i]
	}
	close(work)
	for range slices {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(started)
	if err := c.Admin.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	}); err != nil {
		b.Fatal(err)
	}
	eventually(b, 30*time.Second, "the slices are deleted", func() bool { return len(nodeSlices(b, c, node)) == 0 })
	return elapsed
}
