// Package node is the real-node tier (issue 24): kubelet v1.37.2 and containerd 2.x run the
// driver from its image as the Helm chart installs it, and real pods get its devices.
//
// scripts/node-e2e.sh builds everything, makes the cgroup root, and runs this test binary inside
// network, mount and PID namespaces of its own: only a loopback interface and no route off the
// machine, tmpfs and overlays over the folders a node writes (/run, /etc, /var/lib, /var/log),
// files over the kernel settings the kubelet writes (/proc/sys), and a PID namespace whose end
// takes every process started here with it (containerd's shims and the containers too). TestMain
// brings the node up once: the control plane (tests/e2e/cluster), containerd, the images, the
// kubelet, `helm install` of the chart; the tests share it.
package node

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The node every test uses, up before the first test runs.
var theNode *node

func TestMain(m *testing.M) {
	if os.Getenv("NUMADRA_NODE_WORK") == "" {
		fmt.Fprintln(os.Stderr, "node: NUMADRA_NODE_WORK is not set: run the node tier through scripts/node-e2e.sh")
		os.Exit(2)
	}
	// Before anything is started: the tier must not be able to send a packet off the machine.
	if err := checkNoRouteOffTheMachine(); err != nil {
		fmt.Fprintf(os.Stderr, "node: refusing to start: %v\n", err)
		os.Exit(1)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-signals
		fmt.Fprintf(os.Stderr, "node: %v: stopping the node and the control plane\n", s)
		if theNode != nil {
			theNode.stop()
		}
		os.Exit(130)
	}()
	started := time.Now()
	n, err := startNode(context.Background())
	theNode = n
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: bring-up failed after %s: %v\n", time.Since(started).Round(time.Millisecond), err)
		if n != nil {
			n.stop()
		}
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "node: up in %s (%s)\n", time.Since(started).Round(time.Millisecond), n.versions)
	code := m.Run()
	stopping := time.Now()
	n.stop()
	fmt.Fprintf(os.Stderr, "node: stopped in %s\n", time.Since(stopping).Round(time.Millisecond))
	os.Exit(code)
}

// requireEnv is a setting scripts/node-e2e.sh passes.
func requireEnv(name string) string {
	value := os.Getenv(name)
	if value == "" {
		panic(name + " is not set: run the node tier through scripts/node-e2e.sh")
	}
	return value
}

func work() string { return requireEnv("NUMADRA_NODE_WORK") }

func sourceDir() string { return requireEnv("NUMADRA_SOURCE_DIR") }

func kubeBin(name string) string { return filepath.Join(requireEnv("NUMADRA_E2E_BIN"), name) }
