package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/internal/adapterproc"
)

// process is a child process of the suite (the adapter, Prometheus) whose
// output goes to a log file that outlives restarts, so a failure report shows
// what every incarnation said.
type process struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// startProcess starts bin and registers its stop (and, on failure, the tail
// of its log) with t.Cleanup.
func startProcess(t *testing.T, dir, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, bin: bin, args: args, logPath: dir + "/" + name + ".log"}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("last lines of %s (%s):\n%s", p.name, p.logPath, tailFile(p.logPath, 40))
		}
	})
	return p
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log of %s: %w", p.name, err)
	}
	fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = adapterproc.ChildAttrs()
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(f, "=== %s: exited: %v\n", time.Now().UTC().Format(time.RFC3339Nano), err)
		f.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// running says whether the current incarnation has not exited.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig and waits up to grace for the exit; SIGKILL after that.
func (p *process) signal(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return
	case <-time.After(grace):
	}
	_ = cmd.Process.Kill()
	<-exited
}

// stop ends the process gracefully (SIGTERM, SIGKILL after 15 s).
func (p *process) stop() { p.signal(syscall.SIGTERM, 15*time.Second) }

// kill ends the process at once, as a crash or the OOM killer would.
func (p *process) kill() { p.signal(syscall.SIGKILL, 10*time.Second) }

// waitReady polls url until it answers 200. It fails fast when the process
// exits, with the tail of its log.
func (p *process) waitReady(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		if !p.running() {
			t.Fatalf("%s exited before it was ready; last lines of %s:\n%s", p.name, p.logPath, tailFile(p.logPath, 40))
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready at %s after %v (last: %s); last lines of %s:\n%s", p.name, url, timeout, last, p.logPath, tailFile(p.logPath, 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runScript runs one of the repository's scripts and returns its stdout.
func runScript(ctx context.Context, root string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, root+"/scripts/"+name, args...)
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("scripts/%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		return "", fmt.Errorf("scripts/%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func itoa(i int) string { return strconv.Itoa(i) }
