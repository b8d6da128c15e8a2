package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// sliceDeletions watches the node's slices of the driver from `resourceVersion` on and records
// every deletion, until stop is called; it returns what it saw then.
func sliceDeletions(t testing.TB, resourceVersion string) (stop func() []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := theNode.cluster.Admin.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{
		FieldSelector:   driverSlicesOnTheNode(),
		ResourceVersion: resourceVersion})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			switch event.Type {
			case watch.Deleted:
				if slice, ok := event.Object.(*resourceapi.ResourceSlice); ok {
					seen = append(seen, "deleted "+slice.Name)
				}
			case watch.Error:
				// A watch that ends early cannot vouch for the time after: a failure too
				// (unless it is the end stop asked for).
				if ctx.Err() == nil {
					seen = append(seen, fmt.Sprintf("watch error %v", event.Object))
				}
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		cancel()
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// sliceUIDs are the node's slices of the driver, name -> UID, and the list's resourceVersion.
func sliceUIDs(t testing.TB) (map[string]string, string) {
	t.Helper()
	list, err := theNode.cluster.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{
		FieldSelector: driverSlicesOnTheNode()})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, slice := range list.Items {
		uids[slice.Name] = string(slice.UID)
	}
	return uids, list.ResourceVersion
}

// failedPrepares are the kubelet's FailedPrepareDynamicResources events of a pod.
func failedPrepares(t testing.TB, pod *v1.Pod) []string {
	t.Helper()
	events, err := theNode.cluster.Admin.CoreV1().Events(pod.Namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + pod.Name + ",reason=FailedPrepareDynamicResources"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, event := range events.Items {
		out = append(out, event.Message)
	}
	return out
}

// kubeletLogSize is the kubelet log's length now, where a later kubeletPluginChanges starts.
func kubeletLogSize(t testing.TB) int64 {
	t.Helper()
	info, err := os.Stat(theNode.kubelet.Log())
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// kubeletPluginChanges are the kubelet's "Registered DRA plugin" / "Unregistered DRA plugin"
// lines about the driver (klog -v 3) written after `from`; each says how many endpoints of the
// driver the kubelet holds after the change (numPlugins).
func kubeletPluginChanges(t testing.TB, from int64) []string {
	t.Helper()
	var changes []string
	for _, line := range strings.Split(kubeletLogSince(t, from), "\n") {
		if (strings.Contains(line, `"Registered DRA plugin"`) || strings.Contains(line, `"Unregistered DRA plugin"`)) &&
			strings.Contains(line, `driverName="`+driverName+`"`) {
			changes = append(changes, line)
		}
	}
	return changes
}

// kubeletLogSince is what the kubelet logged after `from` (a kubeletLogSize).
func kubeletLogSince(t testing.TB, from int64) string {
	t.Helper()
	data, err := os.ReadFile(theNode.kubelet.Log())
	if err != nil {
		t.Fatal(err)
	}
	return string(data[from:])
}

// helmUpgrade runs `helm upgrade --reuse-values` of the driver's release with `values` set.
func helmUpgrade(t testing.TB, values ...string) {
	t.Helper()
	args := []string{"upgrade", driverRelease, filepath.Join(sourceDir(), "deploy", "helm", "numa-dra-driver"),
		"--namespace", driverNamespace, "--reuse-values"}
	for _, value := range values {
		args = append(args, "--set", value)
	}
	if out, err := theNode.helm(args...); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// driverSlicesOnTheNode selects the node's slices of the driver.
func driverSlicesOnTheNode() string {
	return "spec.nodeName=" + theNode.name + ",spec.driver=" + driverName
}

// driverPods are the node's driver pods not being deleted, by name.
func driverPods(t testing.TB) []v1.Pod {
	t.Helper()
	pods, err := theNode.cluster.Admin.CoreV1().Pods(driverNamespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=numa-dra-driver", FieldSelector: "spec.nodeName=" + theNode.name})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// `helm upgrade` to a new image tag with the chart's update settings, while pods with claims
// keep arriving: the new driver pod starts beside the old one, the kubelet never lacks a driver
// (no pod's prepare fails, each runs), the node's slices are never deleted (the same objects
// before and after), a workload started before keeps running, and its claim, prepared by the
// old pod, is unprepared by the new one.
func TestAHelmUpgradeToANewImageTagNeverLeavesTheNodeWithoutADriver(t *testing.T) {
	n := theNode
	ctx := context.Background()
	before := startExamplePod(t, "before-upgrade")
	old, err := n.waitForDriverPod(ctx, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	image := n.images["driver"].Name
	repository := image[:strings.LastIndex(image, ":")]
	upgraded := repository + ":upgraded"
	if _, err := n.ctr("images", "tag", "--force", image, upgraded); err != nil {
		t.Fatal(err)
	}
	slicesBefore, resourceVersion := sliceUIDs(t)
	if len(slicesBefore) == 0 {
		t.Fatal("the node has no slices of the driver before the upgrade")
	}
	stopWatching := sliceDeletions(t, resourceVersion)

	logFrom := kubeletLogSize(t)
	started := time.Now()
	helmUpgrade(t, "image.tag=upgraded")
	// Pods with a claim, one after the other, until the old driver pod has been gone a while:
	// some are prepared by the old pod, some while both run, some by the new one.
	var oldGoneAt time.Time
	var prepared []string
	for i := 0; ; i++ {
		w := startGPUPod(t, fmt.Sprintf("during-upgrade-%d", i))
		if failures := failedPrepares(t, w.pod); len(failures) != 0 {
			t.Errorf("pod %s/%s (started %s into the upgrade): the kubelet failed to prepare its claim: %v",
				w.pod.Namespace, w.pod.Name, time.Since(started).Round(time.Millisecond), failures)
		}
		prepared = append(prepared, fmt.Sprintf("%s@%s", w.pod.Namespace, time.Since(started).Round(100*time.Millisecond)))
		deleteWorkload(t, w.pod.Namespace, w.pod.Name)
		oldRunning := false
		for _, pod := range driverPods(t) {
			oldRunning = oldRunning || pod.UID == old.UID
		}
		if !oldRunning && oldGoneAt.IsZero() {
			oldGoneAt = time.Now()
		}
		if !oldGoneAt.IsZero() && time.Since(oldGoneAt) > 5*time.Second {
			break
		}
		if time.Since(started) > 4*time.Minute {
			var pods []string
			for _, pod := range driverPods(t) {
				pods = append(pods, pod.Name+": "+describePod(&pod))
			}
			t.Fatalf("the old driver pod %s still runs %s after helm upgrade; the node's driver pods: %s",
				old.Name, time.Since(started).Round(time.Second), strings.Join(pods, "; "))
		}
	}
	t.Logf("pods prepared during the upgrade: %s; the old driver pod gone after %s", strings.Join(prepared, " "),
		oldGoneAt.Sub(started).Round(time.Millisecond))

	replacement, err := n.waitForDriverPod(ctx, string(old.UID), 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := replacement.Spec.Containers[0].Image; got != upgraded {
		t.Errorf("the new driver pod runs %s, want %s", got, upgraded)
	}
	// The kubelet's own account: the new endpoint registered while the old one still was
	// (numPlugins=2), and the driver never dropped to no endpoint at all.
	changes := kubeletPluginChanges(t, logFrom)
	overlapped := false
	for _, change := range changes {
		overlapped = overlapped || (strings.Contains(change, `"Registered DRA plugin"`) && strings.Contains(change, "numPlugins=2"))
		if strings.Contains(change, `"Unregistered DRA plugin"`) && strings.Contains(change, "numPlugins=0") {
			t.Errorf("the kubelet had no endpoint of the driver during the upgrade: %s", change)
		}
	}
	if !overlapped {
		t.Errorf("the new driver pod never registered beside the old one; the kubelet's changes: %v", changes)
	}
	if deletions := stopWatching(); len(deletions) != 0 {
		t.Errorf("the node's slices were deleted during the upgrade: %v", deletions)
	}
	slicesAfter, _ := sliceUIDs(t)
	if fmt.Sprint(sortedPairs(slicesAfter)) != fmt.Sprint(sortedPairs(slicesBefore)) {
		t.Errorf("the node's slices are other objects after the upgrade: before %v, after %v", sortedPairs(slicesBefore), sortedPairs(slicesAfter))
	}
	checkStillRunning(t, before)
	// Prepared by the old pod, unprepared by the new one: its files go.
	deleteWorkload(t, before.pod.Namespace, before.pod.Name)
	if left := claimSpecFiles(t, string(before.claim.UID)); len(left) != 0 {
		t.Errorf("claim %s, prepared before the upgrade, left CDI specs after its pod was deleted: %v", before.claim.Name, left)
	}
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
