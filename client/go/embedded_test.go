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

// natsNode is one nats-server of natsCluster, stopped by PID.
type natsNode struct {
	url, monitor string
	cmd          *exec.Cmd
	exited       chan struct{}
}

// kill9 kills the node by PID (SIGKILL) and waits for it.
func (n *natsNode) kill9() {
	_ = n.cmd.Process.Kill()
	<-n.exited
}

// natsCluster starts n nats-servers with JetStream on loopback
// ($CLICKD_NATS_SERVER, else /usr/local/bin/nats-server): one runs
// unclustered; more form one cluster (as tests/nats_cluster.cc configures
// them) whose JetStream meta group has a leader when this returns.
func natsCluster(t *testing.T, n int) []*natsNode {
	t.Helper()
	bin := os.Getenv("CLICKD_NATS_SERVER")
	if bin == "" {
		bin = "/usr/local/bin/nats-server"
	}
	dir := t.TempDir()
	type ports struct{ client, monitor, cluster int }
	all := make([]ports, n)
	for i := range all {
		all[i] = ports{freePort(t), freePort(t), freePort(t)}
	}
	nodes := make([]*natsNode, n)
	for i, p := range all {
		config := fmt.Sprintf("server_name: n%d\nlisten: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\n"+
			"jetstream {\n  store_dir: \"%s/n%d\"\n}\n", i, p.client, p.monitor, dir, i)
		if n > 1 {
			var routes []string
			for j, q := range all {
				if j != i {
					routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", q.cluster))
				}
			}
			config += fmt.Sprintf("cluster {\n  name: go-embedded\n  listen: 127.0.0.1:%d\n  routes: [%s]\n}\n",
				p.cluster, strings.Join(routes, ", "))
		}
		path := fmt.Sprintf("%s/n%d.conf", dir, i)
		noErr(t, os.WriteFile(path, []byte(config), 0o644))
		cmd := exec.Command(bin, "-c", path)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s (bash scripts/install_nats.sh installs it): %v", bin, err)
		}
		node := &natsNode{url: fmt.Sprintf("nats://127.0.0.1:%d", p.client),
			monitor: fmt.Sprintf("127.0.0.1:%d", p.monitor), cmd: cmd, exited: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(node.exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-node.exited:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-node.exited
			}
		})
		nodes[i] = node
	}
	// Ready: every node answers its monitoring port, and a clustered
	// JetStream has elected its meta leader.
	deadline := time.Now().Add(30 * time.Second)
	for _, node := range nodes {
		for {
			var jsz struct {
				Meta *struct {
					Leader string `json:"leader"`
				} `json:"meta_cluster"`
			}
			if resp, err := http.Get("http://" + node.monitor + "/jsz"); err == nil {
				err = json.NewDecoder(resp.Body).Decode(&jsz)
				resp.Body.Close()
				if err == nil && (n == 1 || (jsz.Meta != nil && jsz.Meta.Leader != "")) {
					break
				}
			}
			select {
			case <-node.exited:
				t.Fatalf("nats-server %s exited", node.url)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the NATS cluster was not ready within 30 s")
			}
		}
	}
	return nodes
}

func natsURLs(nodes []*natsNode) string {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.url)
	}
	return strings.Join(urls, ",")
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
	nodes := natsCluster(t, 1)
	url, monitor := nodes[0].url, nodes[0].monitor
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
	// Its metrics, for the host's /metrics: what it applied and served so
	// far (6 Predicts: 3 wire forms, the large one, 3 and 5 candidates).
	metrics := must(r.MetricsText())
	for _, line := range []string{
		fmt.Sprintf(`clickd_embedded_applied_sequence{stream="CLICKD"} %d`, stats.AppliedVersion),
		fmt.Sprintf(`clickd_embedded_model_version{model="later",stream="CLICKD"} %d`, later),
		`clickd_embedded_models{stream="CLICKD"} 2`,
		`clickd_embedded_bootstraps_total{stream="CLICKD"} 1`,
		`clickd_embedded_predictions_total{model="default",stream="CLICKD"} 1123`,
		`clickd_embedded_predictions_total{model="later",stream="CLICKD"} 5`,
		`clickd_embedded_predict_calls_total{code="OK",stream="CLICKD"} 6`,
		`# TYPE clickd_embedded_lag_records gauge`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Fatalf("MetricsText has no line %q:\n%s", line, metrics)
		}
	}

	// PredictKeys: flat keys, no protobuf; the answer Predict gives in
	// the keys wire form, bit for bit.
	userNS, adNS := clickd.NamespaceHash("user", seed), clickd.NamespaceHash("ad", seed)
	keys := clickd.NewKeysRequest("default", "", []string{"user", "ad"})
	keys.ContextKeys = []uint64{clickd.NamedKey(userNS, "u7")}
	keys.ContextNamespaces = []uint32{0}
	for a := 0; a < 40; a++ {
		keys.CandidateKeys = append(keys.CandidateKeys,
			clickd.NamedKey(adNS, fmt.Sprintf("a%d", a%25)), clickd.IDKey(adNS, uint64(a%10)))
		keys.CandidateNamespaces = append(keys.CandidateNamespaces, 1, 1)
		keys.CandidateEnds = append(keys.CandidateEnds, uint64(len(keys.CandidateKeys)))
	}
	predictions, margins := make([]float64, 40), make([]float64, 40)
	scoredAt := must(r.PredictKeys(keys, predictions, margins))
	want := must(r.Predict(ctx, clickd.PredictArgs{Model: "default", Context: user, Candidates: cands,
		Wire: clickd.WireKeys, Seed: seed}.Proto()))
	if scoredAt != want.GetModelVersion() {
		t.Fatalf("PredictKeys scored at %d, Predict at %d", scoredAt, want.GetModelVersion())
	}
	for i, p := range want.GetPredictions() {
		if predictions[i] != p.GetPrediction() || margins[i] != p.GetMargin() {
			t.Fatalf("candidate %d: PredictKeys %v/%v, Predict %v/%v", i, predictions[i], margins[i],
				p.GetPrediction(), p.GetMargin())
		}
	}
	keys.ContextNamespaces = []uint32{2}
	_, err := r.PredictKeys(keys, predictions, nil)
	wantCode(t, err, codes.InvalidArgument, "context_namespaces[0] is 2")
	keys.ContextNamespaces = []uint32{0}
	_, err = r.PredictKeys(keys, predictions[:3], nil)
	wantCode(t, err, codes.InvalidArgument, "room for 40")
	missing := clickd.NewKeysRequest("nope", "", []string{"ad"})
	missing.CandidateKeys, missing.CandidateNamespaces, missing.CandidateEnds = []uint64{1}, []uint32{0}, []uint64{1}
	_, err = r.PredictKeys(missing, predictions, nil)
	wantCode(t, err, codes.NotFound, "")

	// WaitForVersion and min_model_version beyond what exists.
	start := time.Now()
	wantCode(t, r.WaitForVersion(r.AppliedVersion()+1000, 200*time.Millisecond), codes.DeadlineExceeded, "")
	if waited := time.Since(start); waited < 200*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("WaitForVersion(200ms) returned after %v", waited)
	}
	ahead := clickd.PredictArgs{Model: "default", Candidates: cands[:1], MinModelVersion: r.AppliedVersion() + 1000}.Proto()
	_, err = r.Predict(ctx, ahead, clickd.Timeout(100*time.Millisecond))
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
	_, err = r.MetricsText()
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

// TestEmbeddedReplicaNatsCluster: through a 3-node NATS cluster, with the
// node it is connected to killed (-9) while it follows the log, the
// embedded replica moves to another node and catches up with the server.
func TestEmbeddedReplicaNatsCluster(t *testing.T) {
	nodes := natsCluster(t, 3)
	urls := natsURLs(nodes)
	s := startServer(t, "--data_dir="+t.TempDir(), "--replication=jetstream", "--nats_url="+urls,
		"--nats_replicas=3", "--replica_id=go0", "--snapshot_interval=1h", "--nats_min_server_version=")
	c := dial(t, s.Address)
	version := teach(t, c, "default", 0, 10)
	r := openEmbedded(t, urls, "CLICKD")
	noErr(t, r.WaitForVersion(version, 30*time.Second))
	cands := []clickd.Example{{clickd.NS("ad", clickd.Name("a1"))}, {clickd.NS("ad", clickd.Name("a2"), clickd.ID(3))}}
	samePredict(t, r, c, clickd.PredictArgs{Model: "default", Candidates: cands, MinModelVersion: version})

	// Kill the node the embedded replica is connected to.
	victim := -1
	for i, n := range nodes {
		if embeddedConnected(t, n.monitor) {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatal("no NATS node lists the embedded replica's connection")
	}
	nodes[victim].kill9()
	// Keyed Updates, sent again until the cluster (two nodes of three) takes them.
	var later uint64
	deadline := time.Now().Add(30 * time.Second)
	for i := 10; i < 20; i++ {
		for {
			var examples []clickd.Labeled
			for k := 0; k < 10; k++ {
				examples = append(examples, clickd.Labeled{Example: clickd.Example{
					clickd.NS("user", clickd.Name(fmt.Sprintf("u%d", (i*7+k)%50))),
					clickd.NS("ad", clickd.Name(fmt.Sprintf("a%d", (i+k)%20)))}, Label: float32((i + k) % 2)})
			}
			resp, err := c.Update(ctx, clickd.UpdateArgs{Model: "default", Examples: examples,
				IdempotencyKey: fmt.Sprintf("go-cluster-%d", i)}.Proto())
			if err == nil {
				later = max(later, resp.ModelVersion)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Update %d after killing a NATS node: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	noErr(t, r.WaitForVersion(later, 30*time.Second))
	samePredict(t, r, c, clickd.PredictArgs{Model: "default", Candidates: cands, MinModelVersion: later})
	if mine, theirs := must(r.StateDigest(ctx, "default")), must(c.StateDigest(ctx, "default")); mine != theirs {
		t.Fatalf("state digest %q (embedded) vs %q (server)", mine, theirs)
	}
	if st := must(r.Stats()); !st.NatsConnected || st.Bootstraps != 1 || st.Broken != "" {
		t.Fatalf("stats after a NATS node was killed: %+v", st)
	}
	noErr(t, r.Close())
}
