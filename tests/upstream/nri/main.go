// upstream-nri: the driver's NRI plugin (C++, node/nri/) judged by upstream's own runtime side of NRI,
// github.com/containerd/nri/pkg/adaptation at the version containerd v2.4.2 links (v0.12.3): the
// code that registers, configures and synchronizes a plugin, relays CreateContainer and
// RemoveContainer to it and merges its adjustments and updates, and receives the updates a
// plugin starts on its own. The plugin runs as build/bin/nri-judge-plugin (claims told on its
// standard input); each story below starts a fresh runtime and plugin.
//
//	upstream-nri --plugin build/bin/nri-judge-plugin --scratch DIR
//
// Exits 1 naming every expectation that failed.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
)

const (
	claimA = "6f1c0d2e-0a1b-4c2d-8e3f-a0b1c2d3e4f5" // prepared: CPUs 6-7, memory node 1
	claimB = "0d1e2f3a-4b5c-4d6e-8f70-a1b2c3d4e5f6" // never prepared
)

func main() {
	plugin := flag.String("plugin", "", "the nri-judge-plugin program")
	scratch := flag.String("scratch", "", "a folder for the sockets (emptied first)")
	flag.Parse()
	if *plugin == "" || *scratch == "" {
		fmt.Fprintln(os.Stderr, "upstream-nri: --plugin and --scratch are required")
		os.Exit(2)
	}
	var failures []string
	for _, story := range []struct {
		name    string
		version string
		run     func(*judge) []string
	}{
		{"containerd v2.4.2: creation, refusal, removal and updates the plugin starts", "v2.4.2", updatesOfItsOwnAccord},
		{"containerd v2.3.7: the plugin's updates only in answers to the runtime's calls", "v2.3.7", updatesOnlyInAnswers},
	} {
		j, err := startJudge(*plugin, filepath.Join(*scratch, strings.Fields(story.version)[0]), story.version)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream-nri: %s: %v\n", story.name, err)
			os.Exit(1)
		}
		found := story.run(j)
		if err := j.stop(); err != nil {
			found = append(found, err.Error())
		}
		for _, failure := range found {
			failures = append(failures, story.name+": "+failure)
		}
		fmt.Printf("%s: %s\n", map[bool]string{true: "ok", false: "FAILED"}[len(found) == 0], story.name)
	}
	if len(failures) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(failures, "\n"))
		os.Exit(1)
	}
}

// judge is upstream's runtime side with the plugin connected and synchronized.
type judge struct {
	runtime   *nri.Adaptation
	plugin    *exec.Cmd
	stdin     io.WriteCloser
	answers   *bufio.Scanner
	synced    []*nri.ContainerUpdate // what the plugin answered to Synchronize
	unsolicit chan []*nri.ContainerUpdate
	mu        sync.Mutex
}

func claimEnv(uid string) string {
	return "NUMADRA_CLAIM_" + strings.ToUpper(strings.ReplaceAll(uid, "-", "_")) + "=" + uid
}

func pod() *nri.PodSandbox {
	return &nri.PodSandbox{Id: "sandbox-1", Name: "workload", Namespace: "judge", Uid: "pod-1"}
}

func container(id string, env ...string) *nri.Container {
	return &nri.Container{Id: id, PodSandboxId: "sandbox-1", Name: id, Env: env, State: nri.ContainerState_CONTAINER_RUNNING}
}

// startJudge starts the plugin with claim A prepared, then upstream's runtime on its socket,
// and waits until the plugin is connected and synchronized (one running container, "web").
func startJudge(program, dir, version string) (*judge, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	for _, folder := range []string{"plugins", "conf.d"} {
		if err := os.MkdirAll(filepath.Join(dir, folder), 0o755); err != nil {
			return nil, err
		}
	}
	socket := filepath.Join(dir, "nri.sock")
	j := &judge{unsolicit: make(chan []*nri.ContainerUpdate, 8)}
	j.plugin = exec.Command(program, "--socket", socket, "--lock", filepath.Join(dir, "nri.lock"), "--cpus", "0-7", "--mems", "0-1")
	j.plugin.Stderr = os.Stderr
	var err error
	if j.stdin, err = j.plugin.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := j.plugin.StdoutPipe()
	if err != nil {
		return nil, err
	}
	j.answers = bufio.NewScanner(stdout)
	if err := j.plugin.Start(); err != nil {
		return nil, err
	}
	if err := j.tell("claims " + claimA + "=6-7/1"); err != nil {
		return nil, err
	}
	connected := make(chan struct{}, 1)
	syncFn := func(ctx context.Context, cb nri.SyncCB) error {
		updates, err := cb(ctx, []*nri.PodSandbox{pod()}, []*nri.Container{container("web")})
		j.mu.Lock()
		j.synced = updates
		j.mu.Unlock()
		connected <- struct{}{}
		return err
	}
	update := func(_ context.Context, updates []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) {
		j.unsolicit <- updates
		return nil, nil
	}
	j.runtime, err = nri.New("containerd", version, syncFn, update, nri.WithSocketPath(socket),
		nri.WithPluginPath(filepath.Join(dir, "plugins")), nri.WithPluginConfigPath(filepath.Join(dir, "conf.d")))
	if err != nil {
		return nil, err
	}
	if err := j.runtime.Start(); err != nil {
		return nil, err
	}
	select {
	case <-connected:
	case <-time.After(20 * time.Second):
		return nil, errors.New("the plugin was not synchronized within 20 s")
	}
	// The runtime adds the plugin to its list just after Synchronize returns.
	deadline := time.Now().Add(10 * time.Second)
	for {
		response, err := j.runtime.CreateContainer(context.Background(), &nri.CreateContainerRequest{Pod: pod(), Container: container("probe")})
		if err == nil && response.GetAdjust().GetLinux().GetResources().GetCpu().GetCpus() != "" {
			_ = j.runtime.RemoveContainer(context.Background(), &nri.RemoveContainerRequest{Pod: pod(), Container: container("probe")})
			return j, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the synchronized plugin adjusts no container (last: %v %v)", response, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tell sends the plugin one command and waits for its "ok".
func (j *judge) tell(command string) error {
	if _, err := io.WriteString(j.stdin, command+"\n"); err != nil {
		return err
	}
	if !j.answers.Scan() || j.answers.Text() != "ok" {
		return fmt.Errorf("the plugin did not answer %q: %q %v", command, j.answers.Text(), j.answers.Err())
	}
	return nil
}

func (j *judge) stop() error {
	j.runtime.Stop()
	j.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- j.plugin.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the plugin ended with %v", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = j.plugin.Process.Kill()
		return errors.New("the plugin did not stop within 10 s of its input's end")
	}
}

// cpusets renders updates as "id:cpus/mems", sorted.
func cpusets(updates []*nri.ContainerUpdate) string {
	var out []string
	for _, u := range updates {
		cpu := u.GetLinux().GetResources().GetCpu()
		out = append(out, u.GetContainerId()+":"+cpu.GetCpus()+"/"+cpu.GetMems())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func expect(failures *[]string, what, got, want string) {
	if got != want {
		*failures = append(*failures, fmt.Sprintf("%s: got %q, want %q", what, got, want))
	}
}

// create asks the runtime to create a container and returns its adjustment ("cpus/mems") and
// updates of the others.
func (j *judge) create(id string, env ...string) (adjusted, updates string, err error) {
	response, err := j.runtime.CreateContainer(context.Background(), &nri.CreateContainerRequest{Pod: pod(), Container: container(id, env...)})
	if err != nil {
		return "", "", err
	}
	cpu := response.GetAdjust().GetLinux().GetResources().GetCpu()
	return cpu.GetCpus() + "/" + cpu.GetMems(), cpusets(response.GetUpdate()), nil
}

// common: what both stories check before the claims change.
func common(j *judge) (failures []string) {
	j.mu.Lock()
	expect(&failures, "Synchronize: the running container moved off the claim's CPUs", cpusets(j.synced), "web:0-5/")
	j.mu.Unlock()
	adjusted, updates, err := j.create("job", claimEnv(claimA))
	if err != nil {
		return append(failures, fmt.Sprintf("CreateContainer of the claim's container: %v", err))
	}
	expect(&failures, "CreateContainer: the claim's container on its CPUs and node", adjusted, "6-7/1")
	expect(&failures, "CreateContainer: nothing else to move", updates, "")
	adjusted, _, err = j.create("late")
	if err != nil {
		return append(failures, fmt.Sprintf("CreateContainer of a plain container: %v", err))
	}
	expect(&failures, "CreateContainer: a plain container on the shared pool", adjusted, "0-5/")
	_, _, err = j.create("stray", claimEnv(claimB))
	if err == nil || !strings.Contains(err.Error(), claimB) || !strings.Contains(err.Error(), "judge/workload/stray") {
		failures = append(failures, fmt.Sprintf("CreateContainer naming a claim not prepared: got error %v, want one naming the claim and the container", err))
	}
	if err := j.runtime.RemoveContainer(context.Background(), &nri.RemoveContainerRequest{Pod: pod(), Container: container("job", claimEnv(claimA))}); err != nil {
		failures = append(failures, fmt.Sprintf("RemoveContainer: %v", err))
	}
	return failures
}

// With containerd 2.4 the claim unprepared moves the others back at once, through
// UpdateContainers of the plugin's own accord.
func updatesOfItsOwnAccord(j *judge) []string {
	failures := common(j)
	if err := j.tell("claims"); err != nil {
		return append(failures, err.Error())
	}
	select {
	case updates := <-j.unsolicit:
		expect(&failures, "UpdateContainers after the claim is gone", cpusets(updates), "late:0-7/ web:0-7/")
	case <-time.After(10 * time.Second):
		failures = append(failures, "no UpdateContainers within 10 s of the claim's end")
	}
	return failures
}

// With containerd 2.3 (NRI before v0.12.1, which could deadlock) nothing comes of the plugin's
// own accord: the next creation's answer carries the updates.
func updatesOnlyInAnswers(j *judge) []string {
	failures := common(j)
	if err := j.tell("claims"); err != nil {
		return append(failures, err.Error())
	}
	adjusted, updates, err := j.create("after")
	if err != nil {
		return append(failures, fmt.Sprintf("CreateContainer after the claim's end: %v", err))
	}
	expect(&failures, "CreateContainer after the claim's end: the new container", adjusted, "0-7/")
	expect(&failures, "CreateContainer after the claim's end: the others back on every CPU", updates, "late:0-7/ web:0-7/")
	select {
	case updates := <-j.unsolicit:
		failures = append(failures, "UpdateContainers of the plugin's own accord to containerd v2.3.7: "+cpusets(updates))
	default:
	}
	return failures
}
