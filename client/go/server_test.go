package clickd_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is one real clickd process on a loopback port, started by the test
// and stopped by its PID. The binary is $CLICKD_BINARY
// (scripts/test_clients.sh sets it to build/release/server/clickd).
type server struct {
	t       *testing.T
	flags   []string
	port    int
	Address string
	cmd     *exec.Cmd
	out     *syncBuffer
	exited  chan struct{}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var ready = regexp.MustCompile(`clickd: serving \d+ model\(s\) on \S+ \(port (\d+)\)`)

func binary(t *testing.T) string {
	path := os.Getenv("CLICKD_BINARY")
	if path == "" {
		t.Fatal("set CLICKD_BINARY to the clickd binary (scripts/test_clients.sh does)")
	}
	return path
}

// startServer starts clickd on 127.0.0.1 (port 0: the kernel picks one) with
// flags, and registers its stop.
func startServer(t *testing.T, flags ...string) *server {
	t.Helper()
	s := &server{t: t, flags: flags}
	s.start()
	t.Cleanup(func() { s.stop(syscall.SIGTERM) })
	return s
}

func (s *server) start() {
	s.t.Helper()
	args := append([]string{fmt.Sprintf("--address=127.0.0.1:%d", s.port), "--metrics_port=0"}, s.flags...)
	s.out = &syncBuffer{}
	s.cmd = exec.Command(binary(s.t), args...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start clickd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := ready.FindStringSubmatch(s.out.String()); m != nil {
			fmt.Sscan(m[1], &s.port)
			s.Address = fmt.Sprintf("127.0.0.1:%d", s.port)
			s.exited = exited
			return
		}
		select {
		case <-exited:
			s.t.Fatalf("clickd exited: %s", s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = s.cmd.Process.Kill()
	s.t.Fatalf("clickd was not ready within 30 s: %s", s.out.String())
}

// stop signals the server by PID and waits (SIGKILL after 15 s).
func (s *server) stop(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

func tempDir(t *testing.T, name string) string {
	return filepath.Join(t.TempDir(), name)
}
