package clickd_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	clickd "github.com/clickd/clickd/client/go"
	pb "github.com/clickd/clickd/client/go/clickdpb"
)

// TestEveryCallHasADeadline records, with interceptors, the deadline each
// call leaves with: every unary call and every stream gets one, the
// client's timeout or a per-call Timeout, even with a context that has none.
func TestEveryCallHasADeadline(t *testing.T) {
	s := startServer(t, "--data_dir="+t.TempDir(), "--update_log_sync=none")
	var mu sync.Mutex
	left := map[string]time.Duration{}
	record := func(ctx context.Context, method string) {
		d, ok := ctx.Deadline()
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			left[method] = -1
			return
		}
		left[method] = time.Until(d)
	}
	c := dial(t, s.Address, clickd.WithTimeout(7*time.Second), clickd.WithDialOptions(
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			record(ctx, method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			record(ctx, method)
			return streamer(ctx, desc, cc, method, opts...)
		})))
	ctx := context.Background() // no deadline of its own
	name := createModel(t, c, `{"name": "deadlines", "feedback": {"ttl_seconds": 3600}}`)
	up := clickd.UpdateArgs{Model: name, Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto()
	must(c.Update(ctx, up))
	must(c.Update(ctx, clickd.UpdateArgs{Model: name, IdempotencyKey: "d1", Examples: []clickd.Labeled{{Example: ads[0], Label: 1}}}.Proto()))
	resp := must(c.Predict(ctx, clickd.PredictArgs{Model: name, Candidates: ads, LogImpressions: true}.Proto()))
	must(c.Feedback(ctx, clickd.FeedbackArgs{Model: name, Items: []clickd.Click{{ImpressionID: resp.Predictions[0].ImpressionId, Label: 1}}}.Proto()))
	must(c.GetModel(ctx, name, true))
	must(c.ListModels(ctx))
	must(c.SnapshotModel(ctx, name))
	must(c.UpdateStream(ctx, []*pb.UpdateRequest{up}))
	acked := must(c.OpenAckedUpdateStream(ctx))
	must(acked.Send(up))
	noErr(t, acked.Finish())
	fs := must(c.OpenFeedbackStream(ctx))
	must(fs.Send(clickd.FeedbackArgs{Model: name, Items: []clickd.Click{{ImpressionID: resp.Predictions[1].ImpressionId, Label: 0}}}.Proto()))
	noErr(t, fs.Finish())
	noErr(t, c.DeleteModel(ctx, name, clickd.Timeout(3*time.Second)))
	must(c.CreateModel(ctx, &pb.ModelConfig{Name: "again"}, clickd.Timeout(3*time.Second)))

	methods := []string{"Update", "Predict", "Feedback", "GetModel", "ListModels", "SnapshotModel",
		"UpdateStream", "UpdateStreamAcked", "FeedbackStream", "DeleteModel", "CreateModel"}
	for _, m := range methods {
		got, ok := left["/clickd.v1.Clickd/"+m]
		want := 7 * time.Second
		if m == "DeleteModel" || m == "CreateModel" { // the last call of each: Timeout(3 s)
			want = 3 * time.Second
		}
		if !ok || got <= 0 || got > want || got < want-2*time.Second {
			t.Errorf("%s left with %v to its deadline, want about %v", m, got, want)
		}
	}
}
