package clickd_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	clickd "github.com/clickd/clickd/client/go"
)

// TestOverload fills a server that has one worker and room for one queued
// call with a bounded burst of heavy Predicts: some are refused with
// RESOURCE_EXHAUSTED "server overloaded", which is returned at once (not
// retried: only UNAVAILABLE is), and the rest are scored.
func TestOverload(t *testing.T) {
	s := startServer(t, "--worker_threads=1", "--max_queued_calls=1", "--max_quiet_inline_predict_features=0",
		"--update_log_sync=none")
	rec := &recorder{}
	c := dial(t, s.Address, clickd.WithSleep(rec.sleep))
	heavy := make([]clickd.Example, 500)
	for i := range heavy {
		fs := make([]clickd.Feature, 40)
		for j := range fs {
			fs[j] = clickd.Name(fmt.Sprintf("f%d=%d", j, i))
		}
		heavy[i] = clickd.Example{clickd.NS("ad", fs...)}
	}
	req := clickd.PredictArgs{Model: "default", Candidates: heavy}.Proto()
	var mu sync.Mutex
	counts := map[codes.Code]int{}
	var overloaded string
	deadline := time.Now().Add(60 * time.Second)
	for round := 0; round < 20 && counts[codes.ResourceExhausted] == 0 && time.Now().Before(deadline); round++ {
		var wg sync.WaitGroup
		for i := 0; i < 32; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.Predict(context.Background(), req)
				mu.Lock()
				defer mu.Unlock()
				counts[clickd.Code(err)]++
				if clickd.Code(err) == codes.ResourceExhausted {
					overloaded = err.Error()
				}
			}()
		}
		wg.Wait()
	}
	if counts[codes.ResourceExhausted] == 0 || counts[codes.OK] == 0 {
		t.Fatalf("no overload in 20 bursts of 32: %v", counts)
	}
	if !strings.Contains(overloaded, "server overloaded") {
		t.Fatalf("overload error %q", overloaded)
	}
	if rec.count() != 0 {
		t.Fatalf("%d retries; RESOURCE_EXHAUSTED is not retried", rec.count())
	}
	t.Logf("codes: %v", counts)
}
