// Command adserver is the ad-server loop of docs/client_go.md against a
// running clickd: it creates the model with the impression-to-click loop if
// it does not exist, ranks candidates with Predict, logs the impression of
// the ad it shows (LogImpressions), sends the clicks with Feedback under an
// idempotency key, twice (the second is answered duplicate), and prints a
// JSON summary as its last line.
//
//	go run ./examples/adserver --server=127.0.0.1:50051 --model=ctr
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"google.golang.org/grpc/codes"

	clickd "github.com/clickd/clickd/client/go"
	pb "github.com/clickd/clickd/client/go/clickdpb"
)

type ad struct {
	id       uint64
	campaign int
	bid      float64
}

type page struct {
	country string
	age     float32
	section string
}

func main() {
	server := flag.String("server", "127.0.0.1:50051", "clickd's HOST:PORT")
	model := flag.String("model", "ctr", "the model; created with the impression-to-click loop if it does not exist")
	pages := flag.Int("pages", 60, "page views to serve (bounded: this is an example)")
	token := flag.String("token", "", "bearer token (role learn; admin to create the model)")
	flag.Parse()
	if *pages < 1 || *pages > 100000 {
		log.Fatalf("--pages is %d; must be in [1, 100000]", *pages)
	}
	opts := []clickd.Option{clickd.WithTimeout(2 * time.Second)}
	if *token != "" {
		opts = append(opts, clickd.WithToken(*token))
	}
	client, err := clickd.New(*server, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	// Once: impressions wait an hour for their click; unclicked, they are
	// learned as negatives at the hour (wait_negative, the default policy).
	config, err := clickd.ParseModelConfig(fmt.Sprintf(
		`{"name": %q, "ftrl": {"alpha": 0.05}, "feedback": {"ttl_seconds": 3600}}`, *model))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.CreateModel(ctx, config); err != nil && clickd.Code(err) != codes.AlreadyExists {
		log.Fatalf("create model: %v", err)
	}

	inventory := make([]ad, 8)
	for i := range inventory {
		inventory[i] = ad{id: uint64(1000 + i), campaign: i % 3, bid: 1 + 0.1*float64(i)}
	}
	var shown []uint64 // impression ids of the ads shown, for the clicks
	for i := 0; i < *pages; i++ {
		p := page{country: []string{"FR", "DE", "US"}[i%3], age: float32(20+i%40) / 100, section: fmt.Sprintf("s%d", i%4)}
		id, ok := serve(ctx, client, *model, p, inventory)
		if ok {
			shown = append(shown, id)
		}
	}

	// Clicks come later: every third shown ad was clicked. Each is sent
	// with an idempotency key, and sent twice, as a retrying click pipeline
	// would; the second answer says duplicate and learns nothing.
	joined, duplicate := 0, 0
	for i, id := range shown {
		if i%3 != 0 {
			continue
		}
		for attempt := 0; attempt < 2; attempt++ {
			answer, err := onClick(ctx, client, *model, id)
			if err != nil {
				log.Printf("clickd: %v", err) // a real ad server requeues it with the same key
				continue
			}
			joined += int(answer.Joined)
			if answer.Duplicate {
				duplicate++
			}
		}
	}
	info, err := client.GetModel(ctx, *model, false)
	if err != nil {
		log.Fatalf("get model: %v", err)
	}
	out, _ := json.Marshal(map[string]any{"updates": info.Updates, "joined": joined, "duplicate": duplicate,
		"pages": *pages, "shown": len(shown), "model": *model})
	fmt.Fprintln(os.Stdout, string(out))
}

// serve ranks the candidates with a plain Predict (retried, logs nothing),
// then logs the impression of the one it shows (one attempt, never retried).
// It returns the shown ad's impression id, or false when nothing can be
// labelled (the page is still served).
func serve(ctx context.Context, client *clickd.Client, model string, p page, inventory []ad) (uint64, bool) {
	shared := clickd.Example{ // the page's features, shared by every candidate
		clickd.NS("user", clickd.Name("country="+p.country), clickd.NameValue("age", p.age)),
		clickd.NS("page", clickd.Name(p.section)),
	}
	candidates := make([]clickd.Example, len(inventory))
	for i, a := range inventory {
		candidates[i] = clickd.Example{clickd.NS("ad", clickd.ID(a.id), clickd.Name(fmt.Sprintf("campaign=%d", a.campaign)))}
	}
	scores, err := client.Predict(ctx, clickd.PredictArgs{Model: model, Context: shared, Candidates: candidates}.Proto())
	if err != nil {
		log.Printf("clickd: %v", err) // UNAVAILABLE after retries, DEADLINE_EXCEEDED, ...
		return 0, false
	}
	best := 0
	for i, pr := range scores.Predictions {
		if pr.Prediction*inventory[i].bid > scores.Predictions[best].Prediction*inventory[best].bid {
			best = i
		}
	}
	shown, err := client.Predict(ctx, clickd.PredictArgs{Model: model, Context: shared,
		Candidates: candidates[best : best+1], LogImpressions: true}.Proto())
	if err != nil {
		log.Printf("clickd: %v", err) // also RESOURCE_EXHAUSTED: the join buffer is full
		return 0, false
	}
	return shown.Predictions[0].ImpressionId, true
}

func onClick(ctx context.Context, client *clickd.Client, model string, impressionID uint64) (*pb.FeedbackResponse, error) {
	return client.Feedback(ctx, clickd.FeedbackArgs{
		Model:          model,
		IdempotencyKey: fmt.Sprintf("click-%s-%d", model, impressionID),
		Items:          []clickd.Click{{ImpressionID: impressionID, Label: 1, EventTimeMicros: time.Now().UnixMicro()}},
	}.Proto())
}
