package clickd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	clickd "github.com/clickd/clickd/client/go"
	pb "github.com/clickd/clickd/client/go/clickdpb"
)

var ctx = context.Background()

func dial(t *testing.T, address string, opts ...clickd.Option) *clickd.Client {
	t.Helper()
	c, err := clickd.New(address, append([]clickd.Option{clickd.WithTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// must returns v, or panics on an error: Go cannot pass a call's two
// results and a *testing.T to one function, and a panicking test still runs
// its cleanups (the servers are stopped) and fails with the stack.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code codes.Code, substr string) {
	t.Helper()
	var e *clickd.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *clickd.Error %v, got %v", code, err)
	}
	if e.Code != code || !strings.Contains(e.Message, substr) {
		t.Fatalf("want %v containing %q, got %v", code, substr, err)
	}
}

func createModel(t *testing.T, c *clickd.Client, json string) string {
	t.Helper()
	config := must(clickd.ParseModelConfig(json))
	return must(c.CreateModel(ctx, config)).GetConfig().GetName()
}

var (
	page = clickd.Example{clickd.NS("user", clickd.Name("country=FR"), clickd.NameValue("age", 0.3))}
	ads  = []clickd.Example{
		{clickd.NS("ad", clickd.ID(7), clickd.Name("campaign=3"))},
		{clickd.NS("ad", clickd.ID(8))},
	}
)

func TestEveryCall(t *testing.T) {
	s := startServer(t, "--data_dir="+t.TempDir(), "--update_log_sync=none")
	c := dial(t, s.Address)
	name := createModel(t, c, `{"name": "calls", "ftrl": {"alpha": 0.1}}`)
	if _, err := c.CreateModel(ctx, &pb.ModelConfig{Name: name}); clickd.Code(err) != codes.AlreadyExists {
		t.Fatalf("second CreateModel: %v", err)
	}

	up := must(c.Update(ctx, clickd.UpdateArgs{Model: name, ReturnMargins: true, RequestID: "u1",
		Impressions: []clickd.Impression{{Context: page, Candidates: []clickd.Labeled{{Example: ads[0], Label: 1}, {Example: ads[1], Label: 0}}}},
	}.Proto()))
	if up.Applied != 2 || len(up.Margins) != 2 || up.RequestId != "u1" {
		t.Fatalf("update: %v", up)
	}
	// Every wire form scores alike.
	var first []float64
	for _, wire := range []clickd.Wire{clickd.WireFeatures, clickd.WirePacked, clickd.WireKeys} {
		resp := must(c.Predict(ctx, clickd.PredictArgs{Model: name, Context: page, Candidates: ads, Wire: wire,
			Uncertainty: true, ExplainTopK: 2, MinModelVersion: up.ModelVersion}.Proto()))
		if len(resp.Predictions) != 2 {
			t.Fatalf("predict: %v", resp)
		}
		for i, p := range resp.Predictions {
			if first == nil || len(first) < 2 {
				first = append(first, p.Prediction)
			} else if math.Abs(first[i]-p.Prediction) > 1e-12 {
				t.Fatalf("wire %d candidate %d: %v, features form %v", wire, i, p.Prediction, first[i])
			}
			if p.Uncertainty == nil || len(p.Explanation) != 2 {
				t.Fatalf("extras missing: %v", p)
			}
		}
	}
	if first[0] <= 0.5 || first[1] >= 0.5 {
		t.Fatalf("the model did not learn the labels: %v", first)
	}

	// A keyed Update is learned once.
	keyed := clickd.UpdateArgs{Model: name, IdempotencyKey: "go-key-1",
		Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto()
	if r := must(c.Update(ctx, keyed)); r.Applied != 1 || r.Duplicate {
		t.Fatalf("keyed: %v", r)
	}
	if r := must(c.Update(ctx, keyed)); r.Applied != 0 || !r.Duplicate {
		t.Fatalf("keyed again: %v", r)
	}

	// Streams.
	reqs := []*pb.UpdateRequest{
		clickd.UpdateArgs{Model: name, Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto(),
		clickd.UpdateArgs{Model: name, Examples: []clickd.Labeled{{Example: ads[1], Label: 0}}}.Proto(),
	}
	sum := must(c.UpdateStream(ctx, reqs))
	if sum.Requests != 2 || sum.Applied != 2 || sum.Metrics.GetExamples() != 2 {
		t.Fatalf("update stream: %v", sum)
	}
	acked := must(c.OpenAckedUpdateStream(ctx))
	for i, r := range reqs {
		ack := must(acked.Send(r))
		if ack.Applied != 1 || ack.Acknowledged != uint64(i+1) {
			t.Fatalf("ack %d: %v", i, ack)
		}
	}
	if err := acked.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := acked.Send(reqs[0]); clickd.Code(err) != codes.FailedPrecondition {
		t.Fatalf("send after finish: %v", err)
	}
	// A rejected stream message ends the stream with its error.
	w := must(c.OpenUpdateStream(ctx))
	_ = w.Write(reqs[0])
	_ = w.Write(&pb.UpdateRequest{Model: "no-such-model", Examples: reqs[0].Examples})
	_, err := w.Finish()
	wantCode(t, err, codes.InvalidArgument, "message 1 (1 examples applied before it)")

	info := must(c.GetModel(ctx, name, true))
	if info.Updates != 8 || len(info.StateDigest) != 16 {
		t.Fatalf("get model: updates %d digest %q", info.Updates, info.StateDigest)
	}
	models := must(c.ListModels(ctx))
	if len(models) != 2 || models[0].GetConfig().GetName() != name || models[1].GetConfig().GetName() != "default" {
		t.Fatalf("list models: %v", models)
	}
	snap := must(c.SnapshotModel(ctx, name))
	if snap.Coordinates == 0 {
		t.Fatalf("snapshot: %v", snap)
	}
	if err := c.DeleteModel(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetModel(ctx, name, false); clickd.Code(err) != codes.NotFound {
		t.Fatalf("after delete: %v", err)
	}
}

func TestFeedbackLoop(t *testing.T) {
	s := startServer(t, "--update_log_sync=none")
	c := dial(t, s.Address)
	name := createModel(t, c, `{"name": "loop", "feedback": {"ttl_seconds": 3600}}`)
	resp := must(c.Predict(ctx, clickd.PredictArgs{Model: name, Context: page, Candidates: ads, LogImpressions: true}.Proto()))
	id0, id1 := resp.Predictions[0].ImpressionId, resp.Predictions[1].ImpressionId
	if id1 != id0+1 {
		t.Fatalf("impression ids %d %d", id0, id1)
	}
	click := clickd.FeedbackArgs{Model: name, IdempotencyKey: fmt.Sprintf("click-%d", id0),
		Items: []clickd.Click{{ImpressionID: id0, Label: 1}}}.Proto()
	fb := must(c.Feedback(ctx, click))
	if fb.Joined != 1 || fb.Statuses[0] != pb.FeedbackStatus_FEEDBACK_JOINED {
		t.Fatalf("feedback: %v", fb)
	}
	if again := must(c.Feedback(ctx, click)); !again.Duplicate {
		t.Fatalf("feedback again: %v", again)
	}
	stream := must(c.OpenFeedbackStream(ctx))
	answer := must(stream.Send(clickd.FeedbackArgs{Model: name, Items: []clickd.Click{{ImpressionID: id0, Label: 1}, {ImpressionID: id1, Label: 0}, {ImpressionID: id1 + 1000, Label: 1}}}.Proto()))
	want := []pb.FeedbackStatus{pb.FeedbackStatus_FEEDBACK_ALREADY_LABELLED, pb.FeedbackStatus_FEEDBACK_JOINED, pb.FeedbackStatus_FEEDBACK_UNKNOWN}
	for i, st := range answer.Statuses {
		if st != want[i] {
			t.Fatalf("stream statuses %v, want %v", answer.Statuses, want)
		}
	}
	if err := stream.Finish(); err != nil {
		t.Fatal(err)
	}
	_, err := c.Feedback(ctx, &pb.FeedbackRequest{Model: name})
	wantCode(t, err, codes.InvalidArgument, "items is empty")
	// The loop on a model without it, and a full join buffer.
	if _, err := c.Predict(ctx, clickd.PredictArgs{Model: "default", Candidates: ads, LogImpressions: true}.Proto()); clickd.Code(err) != codes.FailedPrecondition {
		t.Fatalf("log_impressions without the loop: %v", err)
	}
	small := createModel(t, c, `{"name": "small", "feedback": {"ttl_seconds": 3600, "max_buffer_bytes": 1024}}`)
	many := make([]clickd.Example, 200)
	for i := range many {
		many[i] = ads[i%2]
	}
	_, err = c.Predict(ctx, clickd.PredictArgs{Model: small, Candidates: many, LogImpressions: true}.Proto())
	wantCode(t, err, codes.ResourceExhausted, "")
}

func TestErrorPaths(t *testing.T) {
	s := startServer(t, "--max_candidates=5", "--update_log_sync=none")
	c := dial(t, s.Address)
	bad := clickd.PredictArgs{Model: "default", Candidates: []clickd.Example{{clickd.NS("ad", clickd.NameValue("x", float32(math.NaN())))}}}.Proto()
	_, err := c.Predict(ctx, bad)
	wantCode(t, err, codes.InvalidArgument, "candidates[0].namespaces[0].features[0].value is nan")
	if !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT: ") {
		t.Fatalf("error text %q", err.Error())
	}
	_, err = c.Predict(ctx, clickd.PredictArgs{Model: "nope", Candidates: ads}.Proto())
	wantCode(t, err, codes.NotFound, "nope")
	_, err = c.Update(ctx, clickd.UpdateArgs{Model: "nope", Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto())
	wantCode(t, err, codes.NotFound, "nope")
	// Overload: more candidates than --max_candidates.
	six := []clickd.Example{ads[0], ads[0], ads[0], ads[0], ads[0], ads[0]}
	_, err = c.Predict(ctx, clickd.PredictArgs{Model: "default", Candidates: six}.Proto())
	wantCode(t, err, codes.ResourceExhausted, "candidates has 6 entries; the limit is 5")
	_, err = c.Feedback(ctx, clickd.FeedbackArgs{Model: "default", Items: []clickd.Click{{ImpressionID: 1, Label: 1}}}.Proto())
	wantCode(t, err, codes.FailedPrecondition, "has no impression-to-click loop")
	// A deadline that cannot be met.
	_, err = c.Predict(ctx, clickd.PredictArgs{Model: "default", Candidates: ads}.Proto(), clickd.Timeout(time.Nanosecond))
	wantCode(t, err, codes.DeadlineExceeded, "")
	if _, err := clickd.ParseModelConfig(`{"name": "x", "nonsense": 1}`); err == nil {
		t.Fatal("an unknown config field was accepted")
	}
}

func openssl(t *testing.T, dir, command string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

func TestTLSTokensAndMTLS(t *testing.T) {
	d := t.TempDir()
	openssl(t, d, "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=clickd-go-test-ca")
	issue := func(name, cn, ext string) {
		noErr(t, os.WriteFile(filepath.Join(d, name+".ext"), []byte(ext), 0o600))
		openssl(t, d, fmt.Sprintf("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout %[1]s.key -out %[1]s.csr -subj /CN=%[2]s && openssl x509 -req -in %[1]s.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out %[1]s.crt -extfile %[1]s.ext", name, cn))
	}
	issue("server", "clickd", "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:clickd.test\n")
	issue("adserver", "adserver", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
	tokens := map[string]string{"predict": "go-predict-token-0123456789", "learn": "go-learn-token-0123456789ab", "admin": "go-admin-token-0123456789abc"}
	var lines string
	for role, tok := range tokens {
		lines += role + " " + tok + "\n"
	}
	noErr(t, os.WriteFile(filepath.Join(d, "tokens"), []byte(lines), 0o600))
	noErr(t, os.WriteFile(filepath.Join(d, "cert_roles"), []byte("predict adserver\n"), 0o600))
	read := func(name string) []byte { return must(os.ReadFile(filepath.Join(d, name))) }
	s := startServer(t, "--tls_cert_file="+filepath.Join(d, "server.crt"), "--tls_key_file="+filepath.Join(d, "server.key"),
		"--auth_tokens_file="+filepath.Join(d, "tokens"))
	ca := read("ca.crt")
	predict := clickd.PredictArgs{Model: "default", Candidates: ads}.Proto()
	update := clickd.UpdateArgs{Model: "default", Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto()

	pc := dial(t, s.Address, clickd.WithTLS(ca), clickd.WithToken(tokens["predict"]))
	must(pc.Predict(ctx, predict))
	_, err := pc.Update(ctx, update)
	wantCode(t, err, codes.PermissionDenied, "Update needs role learn")
	lc := dial(t, s.Address, clickd.WithTLS(ca), clickd.WithToken(tokens["learn"]))
	must(lc.Update(ctx, update))
	_, err = lc.CreateModel(ctx, &pb.ModelConfig{Name: "secure"})
	wantCode(t, err, codes.PermissionDenied, "CreateModel needs role admin")
	acked := must(lc.OpenAckedUpdateStream(ctx)) // streams carry the token too
	must(acked.Send(update))
	noErr(t, acked.Finish())
	ac := dial(t, s.Address, clickd.WithTLS(ca), clickd.WithToken(tokens["admin"]), clickd.WithServerName("clickd.test"))
	must(ac.CreateModel(ctx, &pb.ModelConfig{Name: "secure"}))
	noErr(t, ac.DeleteModel(ctx, "secure"))
	nc := dial(t, s.Address, clickd.WithTLS(ca))
	_, err = nc.Predict(ctx, predict)
	wantCode(t, err, codes.Unauthenticated, "Predict needs credentials")
	wc := dial(t, s.Address, clickd.WithTLS(ca), clickd.WithToken("not-a-known-token-000000"))
	_, err = wc.Predict(ctx, predict)
	wantCode(t, err, codes.Unauthenticated, "not valid")
	// Without the CA the server's certificate is not trusted.
	uc := dial(t, s.Address, clickd.WithTLS(nil), clickd.WithToken(tokens["predict"]), clickd.WithRetry(clickd.RetryPolicy{MaxAttempts: 1, InitialBackoff: time.Millisecond, Multiplier: 2, MaxBackoff: time.Millisecond}))
	_, err = uc.Predict(ctx, predict, clickd.Timeout(3*time.Second))
	wantCode(t, err, codes.Unavailable, "")

	// mTLS: a client certificate whose name has the predict role.
	m := startServer(t, "--tls_cert_file="+filepath.Join(d, "server.crt"), "--tls_key_file="+filepath.Join(d, "server.key"),
		"--tls_client_ca_file="+filepath.Join(d, "ca.crt"), "--auth_cert_roles_file="+filepath.Join(d, "cert_roles"))
	mc := dial(t, m.Address, clickd.WithTLS(ca), clickd.WithClientCertificate(read("adserver.crt"), read("adserver.key")))
	must(mc.Predict(ctx, predict))
	_, err = mc.Update(ctx, update)
	wantCode(t, err, codes.PermissionDenied, "Update needs role learn")
}

// recorder counts the sleeps between attempts.
type recorder struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.sleeps = append(r.sleeps, d)
	r.mu.Unlock()
	time.Sleep(d)
	return ctx.Err()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sleeps)
}

func TestRetriesAcrossKillAndRestart(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, "--data_dir="+data, "--update_log_sync=every_request")
	rec := &recorder{}
	policy := clickd.RetryPolicy{MaxAttempts: 4, InitialBackoff: 20 * time.Millisecond, Multiplier: 2, MaxBackoff: 200 * time.Millisecond, Jitter: 0.2}
	c := dial(t, s.Address, clickd.WithRetry(policy), clickd.WithSleep(rec.sleep))
	name := createModel(t, c, `{"name": "restart", "feedback": {"ttl_seconds": 3600}}`)
	keyed := clickd.UpdateArgs{Model: name, IdempotencyKey: "restart-1", Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto()
	must(c.Update(ctx, keyed))

	s.stop(syscall.SIGKILL)
	// Against a dead server: every retried call makes MaxAttempts attempts;
	// unkeyed Update and a Predict that logs impressions make one.
	for _, tc := range []struct {
		name  string
		call  func() error
		tries int
	}{
		{"predict", func() error {
			_, err := c.Predict(ctx, clickd.PredictArgs{Model: name, Candidates: ads}.Proto())
			return err
		}, 4},
		{"keyed update", func() error { _, err := c.Update(ctx, keyed); return err }, 4},
		{"feedback", func() error {
			_, err := c.Feedback(ctx, clickd.FeedbackArgs{Model: name, Items: []clickd.Click{{ImpressionID: 1, Label: 1}}}.Proto())
			return err
		}, 4},
		{"unkeyed update", func() error {
			_, err := c.Update(ctx, clickd.UpdateArgs{Model: name, Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto())
			return err
		}, 1},
		{"log impressions", func() error {
			_, err := c.Predict(ctx, clickd.PredictArgs{Model: name, Candidates: ads, LogImpressions: true}.Proto())
			return err
		}, 1},
		{"model call", func() error { _, err := c.ListModels(ctx); return err }, 1},
	} {
		before := rec.count()
		err := tc.call()
		if clickd.Code(err) != codes.Unavailable {
			t.Fatalf("%s against a dead server: %v", tc.name, err)
		}
		if got := rec.count() - before + 1; got != tc.tries {
			t.Fatalf("%s: %d attempts, want %d", tc.name, got, tc.tries)
		}
	}
	for _, d := range rec.sleeps[:3] {
		if d < 16*time.Millisecond || d > 200*time.Millisecond*12/10 {
			t.Fatalf("backoff %v outside the policy", d)
		}
	}

	// A keyed Update sent while the server is down succeeds once it is back
	// on the same port; the key already applied before the kill is a duplicate.
	slow := dial(t, s.Address, clickd.WithRetry(clickd.RetryPolicy{MaxAttempts: 40, InitialBackoff: 50 * time.Millisecond, Multiplier: 1.5, MaxBackoff: 250 * time.Millisecond, Jitter: 0.2}),
		clickd.WithTimeout(5*time.Second))
	type result struct {
		resp *pb.UpdateResponse
		err  error
	}
	done := make(chan result, 2)
	second := clickd.UpdateArgs{Model: name, IdempotencyKey: "restart-2", Examples: []clickd.Labeled{{Example: ads[1], Label: 0}}}.Proto()
	go func() { r, err := slow.Update(ctx, keyed); done <- result{r, err} }()
	go func() { r, err := slow.Update(ctx, second); done <- result{r, err} }()
	time.Sleep(300 * time.Millisecond)
	s.start()
	dups := 0
	for i := 0; i < 2; i++ {
		r := <-done
		if r.err != nil {
			t.Fatalf("keyed update across the restart: %v", r.err)
		}
		if r.resp.Duplicate {
			dups++
		}
	}
	if dups != 1 {
		t.Fatalf("%d duplicates, want 1 (the key learned before the kill)", dups)
	}
	info := must(slow.GetModel(ctx, name, false))
	if info.Updates != 2 {
		t.Fatalf("updates %d after the restart, want 2", info.Updates)
	}
	must(slow.Predict(ctx, clickd.PredictArgs{Model: name, Candidates: ads}.Proto()))
}

// digestFeatures reads one example of tests/data/client_digest_examples.json.
func digestExample(t *testing.T, raw map[string][]any) clickd.Example {
	var out clickd.Example
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	// JSON objects are unordered: every language sorts the namespaces.
	sortStrings(names)
	for _, n := range names {
		ns := clickd.Namespace{Name: n}
		for _, f := range raw[n] {
			ns.Features = append(ns.Features, digestFeature(t, f, 1))
		}
		out = append(out, ns)
	}
	return out
}

func digestFeature(t *testing.T, f any, value float32) clickd.Feature {
	switch v := f.(type) {
	case string:
		return clickd.NameValue(v, value)
	case json.Number:
		id := must(strconv.ParseUint(v.String(), 10, 64))
		return clickd.IDValue(id, value)
	case []any:
		x := must(v[1].(json.Number).Float64())
		return digestFeature(t, v[0], float32(x))
	}
	t.Fatalf("bad feature %v", f)
	return clickd.Feature{}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestCrossLanguageDigest learns the shared examples in the features and
// the keys form on two models; both must end in the same state digest, and
// it is written to $CLICKD_DIGEST_DIR/go for scripts/test_clients.sh to
// compare with the Java and Python clients'.
func TestCrossLanguageDigest(t *testing.T) {
	var doc struct {
		Model       json.RawMessage `json:"model"`
		Impressions []struct {
			Context    map[string][]any `json:"context"`
			Candidates [][]any          `json:"candidates"`
		} `json:"impressions"`
	}
	raw := must(os.ReadFile("../../tests/data/client_digest_examples.json"))
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	noErr(t, dec.Decode(&doc))
	s := startServer(t, "--update_log_sync=none")
	c := dial(t, s.Address)
	digests := map[clickd.Wire]string{}
	for _, wire := range []clickd.Wire{clickd.WireFeatures, clickd.WireKeys} {
		config := must(clickd.ParseModelConfig(string(doc.Model)))
		config.Name = fmt.Sprintf("digest-%d", wire)
		info := must(c.CreateModel(ctx, config))
		seed := info.GetConfig().GetHashing().GetSeed()
		for _, imp := range doc.Impressions {
			args := clickd.UpdateArgs{Model: config.Name, Wire: wire, Seed: seed}
			im := clickd.Impression{Context: digestExample(t, imp.Context)}
			for _, cand := range imp.Candidates {
				ex := map[string][]any{}
				for k, v := range cand[0].(map[string]any) {
					ex[k] = v.([]any)
				}
				label := must(cand[1].(json.Number).Float64())
				im.Candidates = append(im.Candidates, clickd.Labeled{Example: digestExample(t, ex), Label: float32(label)})
			}
			args.Impressions = []clickd.Impression{im}
			must(c.Update(ctx, args.Proto()))
		}
		digests[wire] = must(c.StateDigest(ctx, config.Name))
	}
	if digests[clickd.WireFeatures] != digests[clickd.WireKeys] {
		t.Fatalf("features form %s, keys form %s", digests[clickd.WireFeatures], digests[clickd.WireKeys])
	}
	if dir := os.Getenv("CLICKD_DIGEST_DIR"); dir != "" {
		noErr(t, os.WriteFile(filepath.Join(dir, "go"), []byte(digests[clickd.WireFeatures]+"\n"), 0o644))
	}
	t.Logf("state digest %s", digests[clickd.WireFeatures])
}

func TestVariant(t *testing.T) {
	s := startServer(t, "--update_log_sync=none")
	c := dial(t, s.Address)
	name := createModel(t, c, `{"name": "variants", "variants": [{"name": "ada", "optimizer": "adagrad"}]}`)
	for _, v := range []string{"ada", "primary"} {
		resp := must(c.Predict(ctx, clickd.PredictArgs{Model: name, Candidates: ads, Variant: v}.Proto()))
		if resp.Variant != v {
			t.Fatalf("variant %q answered by %q", v, resp.Variant)
		}
	}
	_, err := c.Predict(ctx, clickd.PredictArgs{Model: name, Candidates: ads, Variant: "nope"}.Proto())
	if clickd.Code(err) == codes.OK {
		t.Fatal("an unknown variant was accepted")
	}
}
