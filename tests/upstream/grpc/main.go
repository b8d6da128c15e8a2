// upstream-grpc: plugin/grpc's server (C++, libnghttp2) judged by grpc-go, the library the kubelet
// calls DRA plugins with, through the kubelet's own generated stubs (k8s.io/kubelet v0.37.2) and
// the way the kubelet dials: a unix socket, insecure credentials. The server runs as
// build/bin/grpc-judge-server (its methods are described there).
//
//	upstream-grpc --server build/bin/grpc-judge-server --scratch DIR
//
// Prints one line per check; exits 1 naming every check that failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	drahealth "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type judge struct {
	socket string
	conn   *grpc.ClientConn
}

func main() {
	server := flag.String("server", "", "the grpc-judge-server program")
	scratch := flag.String("scratch", "", "a folder for the socket (emptied first)")
	flag.Parse()
	if *server == "" || *scratch == "" {
		fmt.Fprintln(os.Stderr, "upstream-grpc: --server and --scratch are required")
		os.Exit(2)
	}
	_ = os.RemoveAll(*scratch)
	if err := os.MkdirAll(*scratch, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-grpc:", err)
		os.Exit(1)
	}
	socket := filepath.Join(*scratch, "grpc.sock")
	cmd := exec.Command(*server, socket)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-grpc:", err)
		os.Exit(1)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	j := &judge{socket: socket}
	var err error
	if j.conn, err = j.dial(); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-grpc:", err)
		os.Exit(1)
	}
	defer j.conn.Close()

	var failures []string
	for _, check := range []struct {
		name string
		run  func() error
	}{
		{"a unary call is answered", j.unary},
		{"an unknown method is UNIMPLEMENTED", j.unimplemented},
		{"a status message keeps its bytes (percent-encoded on the wire)", j.statusMessage},
		{"a call answered from another thread", j.answeredLater},
		{"a call past its deadline is DEADLINE_EXCEEDED and the server sees it cancelled", j.deadline},
		{"a call the client cancels is cancelled on the server", j.cancel},
		{"a server stream delivers its updates, and its cancel reaches the server", j.stream},
		{"50 concurrent calls on one connection", j.concurrentOnOneConnection},
		{"50 concurrent calls on 10 connections", j.concurrentOnTenConnections},
		{"a request over 4 MiB is RESOURCE_EXHAUSTED", j.tooLarge},
	} {
		err := check.run()
		if err != nil {
			failures = append(failures, check.name+": "+err.Error())
		}
		fmt.Printf("%s: %s\n", map[bool]string{true: "ok", false: "FAILED"}[err == nil], check.name)
	}
	if len(failures) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(failures, "\n"))
		os.Exit(1)
	}
}

// dial connects as the kubelet's DRA plugin client does: "unix:" target, insecure credentials.
func (j *judge) dial() (*grpc.ClientConn, error) {
	return grpc.NewClient("unix:"+j.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func timeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func expectCode(err error, want codes.Code) error {
	if got := status.Code(err); got != want {
		return fmt.Errorf("got %v (%v), want %v", got, err, want)
	}
	return nil
}

func (j *judge) unary() error {
	ctx, cancel := timeout(5 * time.Second)
	defer cancel()
	info, err := registerapi.NewRegistrationClient(j.conn).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return err
	}
	if info.Type != "DRAPlugin" || info.Name != "numa.example.com" {
		return fmt.Errorf("got %v", info)
	}
	return nil
}

func (j *judge) unimplemented() error {
	ctx, cancel := timeout(5 * time.Second)
	defer cancel()
	_, err := drapb.NewDRAPluginClient(j.conn).NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{})
	return expectCode(err, codes.Unimplemented)
}

func (j *judge) notify(ctx context.Context, what string) error {
	_, err := registerapi.NewRegistrationClient(j.conn).NotifyRegistrationStatus(ctx,
		&registerapi.RegistrationStatus{Error: what})
	return err
}

func (j *judge) statusMessage() error {
	ctx, cancel := timeout(5 * time.Second)
	defer cancel()
	err := j.notify(ctx, "fail")
	if e := expectCode(err, codes.FailedPrecondition); e != nil {
		return e
	}
	if got := status.Convert(err).Message(); got != "100% full\nno é" {
		return fmt.Errorf("message %q", got)
	}
	return nil
}

func (j *judge) answeredLater() error {
	ctx, cancel := timeout(5 * time.Second)
	defer cancel()
	return j.notify(ctx, "later")
}

// cancelledSoFar asks the server how many calls it has seen cancelled.
func (j *judge) cancelledSoFar() (int, error) {
	ctx, cancel := timeout(5 * time.Second)
	defer cancel()
	info, err := registerapi.NewRegistrationClient(j.conn).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return 0, err
	}
	var n int
	_, err = fmt.Sscanf(info.Endpoint, "cancelled=%d", &n)
	return n, err
}

// serverSeesCancel waits until the server counts one more cancelled call than `before`.
func (j *judge) serverSeesCancel(before int) error {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		n, err := j.cancelledSoFar()
		if err != nil {
			return err
		}
		if n > before {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the server never saw the call cancelled")
}

func (j *judge) deadline() error {
	before, err := j.cancelledSoFar()
	if err != nil {
		return err
	}
	ctx, cancel := timeout(200 * time.Millisecond)
	defer cancel()
	if err := expectCode(j.notify(ctx, "hold"), codes.DeadlineExceeded); err != nil {
		return err
	}
	return j.serverSeesCancel(before)
}

func (j *judge) cancel() error {
	before, err := j.cancelledSoFar()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if err := expectCode(j.notify(ctx, "hold"), codes.Canceled); err != nil {
		return err
	}
	return j.serverSeesCancel(before)
}

func (j *judge) stream() error {
	before, err := j.cancelledSoFar()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, err := drahealth.NewDRAResourceHealthClient(j.conn).NodeWatchResources(ctx,
		&drahealth.NodeWatchResourcesRequest{})
	if err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		update, err := watch.Recv()
		if err != nil {
			return fmt.Errorf("update %d: %v", i, err)
		}
		if len(update.Devices) != 1 || update.Devices[0].Message != fmt.Sprintf("update %d", i) {
			return fmt.Errorf("update %d: %v", i, update)
		}
	}
	cancel()
	if _, err := watch.Recv(); status.Code(err) != codes.Canceled {
		return fmt.Errorf("after cancel: %v", err)
	}
	return j.serverSeesCancel(before)
}

func concurrently(conns []*grpc.ClientConn, calls int) error {
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(conn *grpc.ClientConn) {
			defer wg.Done()
			ctx, cancel := timeout(10 * time.Second)
			defer cancel()
			// "later" answers after 50 ms: the calls overlap.
			_, err := registerapi.NewRegistrationClient(conn).NotifyRegistrationStatus(ctx,
				&registerapi.RegistrationStatus{Error: "later"})
			errs <- err
		}(conns[i%len(conns)])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *judge) concurrentOnOneConnection() error {
	return concurrently([]*grpc.ClientConn{j.conn}, 50)
}

func (j *judge) concurrentOnTenConnections() error {
	var conns []*grpc.ClientConn
	for i := 0; i < 10; i++ {
		conn, err := j.dial()
		if err != nil {
			return err
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	return concurrently(conns, 50)
}

func (j *judge) tooLarge() error {
	ctx, cancel := timeout(10 * time.Second)
	defer cancel()
	return expectCode(j.notify(ctx, strings.Repeat("x", 5<<20)), codes.ResourceExhausted)
}
