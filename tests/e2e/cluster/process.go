package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// process is a started component: its own process group (so stopping it stops what it
// started), killed by the kernel if the test binary dies first, its output appended to
// logs/<name>.log. A supervised one is started again when it exits, as the kubelet restarts a
// control plane's static pods (the controller manager exits when the API server goes away
// while it starts its controllers).
type process struct {
	name, path, log string
	args            []string
	env             []string // nil: the test binary's
	supervised      bool

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd exits
	stopping bool
	restarts int
}

func startProcess(dir, name, path string, args ...string) (*process, error) {
	return newProcess(dir, name, path, false, args)
}

func startSupervised(dir, name, path string, args ...string) (*process, error) {
	return newProcess(dir, name, path, true, args)
}

func newProcess(dir, name, path string, supervised bool, args []string) (*process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w (scripts/e2e.sh builds the control plane)", name, err)
	}
	p := &process{name: name, path: path, args: args, supervised: supervised,
		log: filepath.Join(dir, "logs", name+".log")}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.startLocked(); err != nil {
		return nil, err
	}
	if supervised {
		go p.supervise()
	}
	return p, nil
}

func (p *process) startLocked() error {
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

func (p *process) supervise() {
	for {
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		<-done
		time.Sleep(time.Second)
		p.mu.Lock()
		if p.stopping {
			p.mu.Unlock()
			return
		}
		p.restarts++
		fmt.Fprintf(os.Stderr, "cluster: %s exited, restarting it (restart %d; log %s)\n", p.name, p.restarts, p.log)
		err := p.startLocked()
		p.mu.Unlock()
		if err != nil {
			fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
			return
		}
	}
}

func (p *process) exited() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// stop ends supervision, sends SIGTERM to the process group, then SIGKILL after 15 seconds.
func (p *process) stop() {
	p.mu.Lock()
	p.stopping = true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		fmt.Fprintf(os.Stderr, "cluster: %s did not stop within 15 s of SIGTERM, killing it\n", p.name)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Process is a program started as the components are (its own process group, killed by the
// kernel if the test binary dies first, its output appended to <dir>/logs/<name>.log), for the
// tiers that start more than the control plane (the node tier's containerd and kubelet).
type Process struct{ p *process }

// StartProgram starts path with args and the environment env (nil: the test binary's).
func StartProgram(dir, name, path string, env []string, args ...string) (*Process, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, path: path, args: args, env: env, log: filepath.Join(dir, "logs", name+".log")}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.startLocked(); err != nil {
		return nil, err
	}
	return &Process{p}, nil
}

// Stop sends SIGTERM to the process group, then SIGKILL after 15 seconds, and waits.
func (p *Process) Stop() { p.p.stop() }

// Exited says whether the process has ended.
func (p *Process) Exited() bool { return p.p.exited() }

// Tail is the end of its log.
func (p *Process) Tail() string { return p.p.tail() }

// Log is its log file.
func (p *Process) Log() string { return p.p.log }

// Pid is its process id.
func (p *Process) Pid() int { return p.p.cmd.Process.Pid }

// tail is the end of the log, for error messages.
func (p *process) tail() string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	const keep = 3000
	if len(data) > keep {
		data = data[len(data)-keep:]
	}
	return string(data)
}
