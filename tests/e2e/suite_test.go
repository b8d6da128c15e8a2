package e2e

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"numadra.dev/tests/e2e/cluster"
)

// The control planes the tests share, one per profile, started on first use.
var (
	clustersMu sync.Mutex
	clusters   = map[string]*cluster.Cluster{}
	failedRun  bool
	// socketRoot holds the kubelet folders the daemons put their unix sockets in: a short path under
	// /tmp, as a socket path has at most 107 bytes and the work folder of a CI clone is deep.
	socketRoot string
)

func TestMain(m *testing.M) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-signals
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping the control planes\n", s)
		stopClusters()
		os.Exit(130)
	}()
	var err error
	if socketRoot, err = os.MkdirTemp("/tmp", "nde-"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: a folder for the daemons' sockets: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	stopClusters()
	_ = os.RemoveAll(socketRoot)
	work := workDir()
	switch {
	case code != 0:
		fmt.Fprintf(os.Stderr, "e2e: failed; the clusters' logs and certificates stay in %s\n", work)
	case os.Getenv("NUMADRA_E2E_KEEP") == "":
		_ = os.RemoveAll(work)
	}
	os.Exit(code)
}

func stopClusters() {
	clustersMu.Lock()
	defer clustersMu.Unlock()
	for _, c := range clusters {
		c.Stop()
	}
	clusters = map[string]*cluster.Cluster{}
}

func workDir() string {
	if dir := os.Getenv("NUMADRA_E2E_WORK"); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), "numadra-e2e")
}

// kubeletDir is the node's kubelet folder holding the registration and plugin sockets.
func kubeletDir(c *cluster.Cluster, node string) string {
	return filepath.Join(socketRoot, filepath.Base(c.Dir), node)
}

func requireEnv(t testing.TB, name string) string {
	value := os.Getenv(name)
	if value == "" {
		t.Fatalf("%s is not set: run the end-to-end tests through scripts/e2e.sh", name)
	}
	return value
}

// clusterFor returns the running control plane of the profile, starting it on first use.
func clusterFor(t testing.TB, profile cluster.Profile) *cluster.Cluster {
	t.Helper()
	clustersMu.Lock()
	defer clustersMu.Unlock()
	if c, ok := clusters[profile.Name]; ok {
		return c
	}
	bin := cluster.Binaries(requireEnv(t, "NUMADRA_E2E_BIN"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started := time.Now()
	c, err := cluster.Start(ctx, bin, filepath.Join(workDir(), profile.Name), profile)
	if err != nil {
		t.Fatalf("starting the %s control plane: %v", profile.Name, err)
	}
	t.Logf("control plane %s up in %s at %s", profile.Name, time.Since(started).Round(time.Millisecond), c.URL)
	clusters[profile.Name] = c
	return c
}
