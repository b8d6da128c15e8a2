package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is a started component: its own process group (so stopping it stops what it
// started), killed by the kernel if the test binary dies first, its output in logs/<name>.log.
type process struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProcess(dir, name, path string, args ...string) (*process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w (scripts/e2e.sh builds the control plane)", name, err)
	}
	logPath := filepath.Join(dir, "logs", name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after 15 seconds.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

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
