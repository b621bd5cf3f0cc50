// Command bench is the Go client's part of bench/clients/run.sh: Predict
// 1x40 (one candidate of 40 named features) latency and 100x40 throughput,
// one call in flight, and the client's own CPU per call (getrusage of this
// process). Every loop is bounded in calls and in time. Last stdout line:
// one JSON object.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"syscall"
	"time"

	clickd "github.com/clickd/clickd/client/go"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func candidates(n, features, offset int) []clickd.Example {
	out := make([]clickd.Example, n)
	for i := range out {
		fs := make([]clickd.Feature, features)
		for j := range fs {
			fs[j] = clickd.Name(fmt.Sprintf("f%d=%d", j, (offset+i*7+j*13)%1000))
		}
		out[i] = clickd.Example{clickd.NS("ad", fs...)}
	}
	return out
}

type result struct {
	calls   int
	p50     time.Duration
	seconds float64
	cpuUs   float64
}

// run makes up to calls calls (stopping at maxTime), after warmup calls.
func run(c *clickd.Client, model string, wire clickd.Wire, seed uint64, n, calls, warmup int, maxTime time.Duration) result {
	ctx := context.Background()
	// The candidates' features are made once (16 sets, used in turn); turning
	// them into the request (and hashing them, in the keys form) is part of
	// each call's cost, as it is in an ad server.
	sets := make([][]clickd.Example, 16)
	for i := range sets {
		sets[i] = candidates(n, 40, i*1000)
	}
	one := func(i int) {
		req := clickd.PredictArgs{Model: model, Candidates: sets[i%len(sets)], Wire: wire, Seed: seed}.Proto()
		if _, err := c.Predict(ctx, req); err != nil {
			log.Fatalf("predict: %v", err)
		}
	}
	for i := 0; i < warmup; i++ {
		one(i)
	}
	lat := make([]time.Duration, 0, calls)
	cpu0, start := cpu(), time.Now()
	for i := 0; i < calls && time.Since(start) < maxTime; i++ {
		t := time.Now()
		one(i)
		lat = append(lat, time.Since(t))
	}
	elapsed := time.Since(start)
	used := cpu() - cpu0
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return result{calls: len(lat), p50: lat[len(lat)/2], seconds: elapsed.Seconds(),
		cpuUs: float64(used.Microseconds()) / float64(len(lat))}
}

func main() {
	server := flag.String("server", "127.0.0.1:50051", "clickd's HOST:PORT")
	model := flag.String("model", "default", "the model")
	wireName := flag.String("wire", "features", "features | keys")
	calls1 := flag.Int("calls1", 3000, "measured 1x40 calls (at most)")
	calls100 := flag.Int("calls100", 300, "measured 100x40 calls (at most)")
	maxSeconds := flag.Float64("max_seconds", 10, "time bound of each measured loop")
	flag.Parse()
	wire := clickd.WireFeatures
	if *wireName == "keys" {
		wire = clickd.WireKeys
	}
	c, err := clickd.New(*server, clickd.WithTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	info, err := c.GetModel(context.Background(), *model, false)
	if err != nil {
		log.Fatal(err)
	}
	seed := info.GetConfig().GetHashing().GetSeed()
	maxTime := time.Duration(*maxSeconds * float64(time.Second))
	r1 := run(c, *model, wire, seed, 1, *calls1, 300, maxTime)
	r100 := run(c, *model, wire, seed, 100, *calls100, 30, maxTime)
	out, _ := json.Marshal(map[string]any{
		"client": "go", "wire": *wireName,
		"p50_us_1x40": float64(r1.p50.Nanoseconds()) / 1e3, "calls_1x40": r1.calls,
		"cpu_us_per_call_1x40":    r1.cpuUs,
		"candidates_per_s_100x40": float64(100*r100.calls) / r100.seconds, "calls_100x40": r100.calls,
		"cpu_us_per_call_100x40": r100.cpuUs,
	})
	fmt.Fprintln(os.Stdout, string(out))
}
