//go:build cgo && clickd_embedded

package clickd_test

// clickd.EmbeddedReplica against a real deployment: one nats-server with
// JetStream and one clickd replica (--replication=jetstream), both started
// on loopback by the test and stopped by PID (as
// client/python/tests/test_embedded.py does). scripts/test_clients.sh runs
// it with -tags clickd_embedded and $CLICKD_EMBEDDED_LIB set to
// build/release/embedded/libclickd_embedded.so.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	clickd "github.com/clickd/clickd/client/go"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// natsServer is one nats-server with JetStream on loopback ($CLICKD_NATS_SERVER,
// else /usr/local/bin/nats-server); it returns the client URL and the
// monitoring address.
func natsServer(t *testing.T) (url, monitor string) {
	t.Helper()
	bin := os.Getenv("CLICKD_NATS_SERVER")
	if bin == "" {
		bin = "/usr/local/bin/nats-server"
	}
	port, mport := freePort(t), freePort(t)
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-m", fmt.Sprint(mport),
		"-js", "-sd", t.TempDir())
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (bash scripts/install_nats.sh installs it): %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 500*time.Millisecond); err == nil {
			c.Close()
			return fmt.Sprintf("nats://127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", mport)
		}
		select {
		case <-exited:
			t.Fatalf("nats-server exited: %s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("nats-server was not listening within 20 s: %s", out.String())
	return "", ""
}

// natsConnections names the client connections nats-server's monitoring
// endpoint lists.
func natsConnections(t *testing.T, monitor string) []string {
	t.Helper()
	resp, err := http.Get("http://" + monitor + "/connz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var connz struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&connz); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range connz.Connections {
		names = append(names, c.Name)
	}
	return names
}

func embeddedConnected(t *testing.T, monitor string) bool {
	for _, name := range natsConnections(t, monitor) {
		if name == "clickd-embedded" {
			return true
		}
	}
	return false
}

func openEmbedded(t *testing.T, url, prefix string) *clickd.EmbeddedReplica {
	t.Helper()
	if os.Getenv("CLICKD_EMBEDDED_LIB") == "" {
		t.Fatal("set CLICKD_EMBEDDED_LIB to build/release/embedded/libclickd_embedded.so (scripts/test_clients.sh does)")
	}
	r, err := clickd.NewEmbeddedReplica(url, prefix, clickd.WithCatchUpTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// teach sends n keyed Updates of 10 examples to model; the last model_version.
func teach(t *testing.T, c *clickd.Client, model string, from, n int) uint64 {
	t.Helper()
	var version uint64
	for i := from; i < from+n; i++ {
		var examples []clickd.Labeled
		for k := 0; k < 10; k++ {
			examples = append(examples, clickd.Labeled{
				Example: clickd.Example{
					clickd.NS("user", clickd.Name(fmt.Sprintf("u%d", (i*7+k)%50))),
					clickd.NS("ad", clickd.Name(fmt.Sprintf("a%d", (i+k)%20)), clickd.IDValue(uint64(k), 0.5)),
				},
				Label: float32(map[bool]int{true: 1}[(i+k)%4 == 0]),
			})
		}
		r := must(c.Update(ctx, clickd.UpdateArgs{Model: model, Examples: examples,
			IdempotencyKey: fmt.Sprintf("go-embedded-%s-%d", model, i)}.Proto()))
		version = max(version, r.ModelVersion)
	}
	return version
}

// samePredict asks the embedded replica and the server the same Predict at
// min_model_version `version` and wants the same answer, margins bit for bit.
func samePredict(t *testing.T, r *clickd.EmbeddedReplica, c *clickd.Client, args clickd.PredictArgs) {
	t.Helper()
	mine := must(r.Predict(ctx, args.Proto()))
	theirs := must(c.Predict(ctx, args.Proto()))
	if mine.ModelVersion != theirs.ModelVersion || len(mine.Predictions) != len(args.Candidates) {
		t.Fatalf("model_version %d (embedded) vs %d (server), %d predictions",
			mine.ModelVersion, theirs.ModelVersion, len(mine.Predictions))
	}
	for i := range mine.Predictions {
		m, s := mine.Predictions[i].Margin, theirs.Predictions[i].Margin
		if math.Float64bits(m) != math.Float64bits(s) {
			t.Fatalf("candidate %d: margin %v (embedded) vs %v (server)", i, m, s)
		}
	}
	if !proto.Equal(mine, theirs) {
		t.Fatalf("responses differ:\nembedded %v\nserver   %v", mine, theirs)
	}
}

func TestEmbeddedReplica(t *testing.T) {
	url, monitor := natsServer(t)
	s := startServer(t, "--data_dir="+t.TempDir(), "--replication=jetstream", "--nats_url="+url,
		"--nats_replicas=1", "--replica_id=go0", "--snapshot_interval=1h", "--nats_min_server_version=")
	c := dial(t, s.Address)
	version := teach(t, c, "default", 0, 20)

	r := openEmbedded(t, url, "CLICKD")
	noErr(t, r.WaitForVersion(version, 30*time.Second))
	if got := r.AppliedVersion(); got < version {
		t.Fatalf("AppliedVersion %d after waiting for %d", got, version)
	}
	seed := must(c.GetModel(ctx, "default", false)).GetConfig().GetHashing().GetSeed()
	var cands []clickd.Example
	for a := 0; a < 40; a++ {
		cands = append(cands, clickd.Example{clickd.NS("ad", clickd.Name(fmt.Sprintf("a%d", a%25)), clickd.ID(uint64(a%10)))})
	}
	user := clickd.Example{clickd.NS("user", clickd.Name("u7"))}
	for _, wire := range []clickd.Wire{clickd.WireFeatures, clickd.WirePacked, clickd.WireKeys} {
		samePredict(t, r, c, clickd.PredictArgs{Model: "default", Context: user, Candidates: cands,
			Wire: wire, Seed: seed, MinModelVersion: version, RequestID: "go-embedded",
			Uncertainty: true, ExplainTopK: 3})
	}
	// A request of over 16 KiB (the library keeps its messages for the
	// next call only below that), then a small one without the extras.
	var many []clickd.Example
	for a := 0; a < 1000; a++ {
		many = append(many, clickd.Example{clickd.NS("ad", clickd.Name(fmt.Sprintf("a%d", a%25)),
			clickd.Name(fmt.Sprintf("campaign=%d", a)), clickd.ID(uint64(a)))})
	}
	if n := proto.Size(clickd.PredictArgs{Model: "default", Candidates: many}.Proto()); n <= 16<<10 {
		t.Fatalf("the large request has %d bytes", n)
	}
	samePredict(t, r, c, clickd.PredictArgs{Model: "default", Context: user, Candidates: many, Uncertainty: true})
	samePredict(t, r, c, clickd.PredictArgs{Model: "default", Candidates: cands[:3], MinModelVersion: version})
	if mine, theirs := must(r.StateDigest(ctx, "default")), must(c.StateDigest(ctx, "default")); mine != theirs || len(mine) != 16 {
		t.Fatalf("state digest %q (embedded) vs %q (server)", mine, theirs)
	}

	// It follows the log: a model created and taught while it runs.
	createModel(t, c, `{"name": "later", "ftrl": {"alpha": 0.1}}`)
	later := teach(t, c, "later", 0, 5)
	noErr(t, r.WaitForVersion(later, 10*time.Second))
	samePredict(t, r, c, clickd.PredictArgs{Model: "later", Context: user, Candidates: cands[:5],
		MinModelVersion: later})
	if mine, theirs := must(r.StateDigest(ctx, "later")), must(c.StateDigest(ctx, "later")); mine != theirs {
		t.Fatalf("state digest of later %q (embedded) vs %q (server)", mine, theirs)
	}
	stats := must(r.Stats())
	if stats.Bootstraps != 1 || stats.Models != 2 || !stats.NatsConnected || stats.AppliedVersion < later || stats.Broken != "" {
		t.Fatalf("stats: %+v", stats)
	}

	// WaitForVersion and min_model_version beyond what exists.
	start := time.Now()
	wantCode(t, r.WaitForVersion(r.AppliedVersion()+1000, 200*time.Millisecond), codes.DeadlineExceeded, "")
	if waited := time.Since(start); waited < 200*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("WaitForVersion(200ms) returned after %v", waited)
	}
	ahead := clickd.PredictArgs{Model: "default", Candidates: cands[:1], MinModelVersion: r.AppliedVersion() + 1000}.Proto()
	_, err := r.Predict(ctx, ahead, clickd.Timeout(100*time.Millisecond))
	wantCode(t, err, codes.DeadlineExceeded, "")
	_, err = r.Predict(ctx, ahead)
	wantCode(t, err, codes.Unavailable, "")

	// Refusals carry the server's codes.
	_, err = r.Predict(ctx, clickd.PredictArgs{Model: "default", Candidates: cands, LogImpressions: true}.Proto())
	wantCode(t, err, codes.FailedPrecondition, "log_impressions")
	_, err = r.Predict(ctx, clickd.PredictArgs{Model: "default"}.Proto())
	wantCode(t, err, codes.InvalidArgument, "candidates")
	_, err = r.Predict(ctx, clickd.PredictArgs{Model: "no-such-model", Candidates: cands}.Proto())
	wantCode(t, err, codes.NotFound, "no-such-model")
	_, err = r.StateDigest(ctx, "no-such-model")
	wantCode(t, err, codes.NotFound, "no-such-model")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.Predict(cancelled, clickd.PredictArgs{Model: "default", Candidates: cands}.Proto())
	wantCode(t, err, codes.Canceled, "")

	// Nothing it did reached the log.
	applied := r.AppliedVersion()
	time.Sleep(300 * time.Millisecond)
	if v := must(c.Predict(ctx, clickd.PredictArgs{Model: "default", Candidates: cands[:1]}.Proto())).ModelVersion; v != applied {
		t.Fatalf("the server is at %d, the embedded replica at %d", v, applied)
	}

	// Close while other goroutines predict: they finish or fail CANCELED,
	// and the replica's NATS connection is gone.
	if !embeddedConnected(t, monitor) {
		t.Fatalf("nats-server does not list clickd-embedded: %v", natsConnections(t, monitor))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	req := clickd.PredictArgs{Model: "default", Context: user, Candidates: cands}.Proto()
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1_000_000; i++ {
				if _, err := r.Predict(ctx, req); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	noErr(t, r.Close())
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v", took)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		wantCode(t, err, codes.Canceled, "closed")
	}
	noErr(t, r.Close())
	if v := r.AppliedVersion(); v != 0 {
		t.Fatalf("AppliedVersion after Close: %d", v)
	}
	_, err = r.StateDigest(ctx, "default")
	wantCode(t, err, codes.Canceled, "closed")
	wantCode(t, r.WaitForVersion(1, time.Second), codes.Canceled, "closed")
	deadline := time.Now().Add(5 * time.Second)
	for embeddedConnected(t, monitor) {
		if time.Now().After(deadline) {
			t.Fatalf("nats-server still lists clickd-embedded 5 s after Close: %v", natsConnections(t, monitor))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A deployment without a log is NOT_FOUND (and not created); a library
	// that cannot be loaded is named.
	_, err = clickd.NewEmbeddedReplica(url, "NOSUCH", clickd.WithCatchUpTimeout(5*time.Second))
	wantCode(t, err, codes.NotFound, "NOSUCH_LOG")
	_, err = clickd.NewEmbeddedReplica(url, "CLICKD", clickd.WithLibrary("/nonexistent/libclickd_embedded.so"))
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libclickd_embedded.so") {
		t.Fatalf("a missing library: %v", err)
	}
}
