//go:build cgo && clickd_embedded

// Command embedded_latency is the Go part of bench/embedded/run.sh: Predict
// of 1 context + --candidates candidates (the shape of embedded_bench's),
// one caller, closed loop, through the Go gRPC client and through the Go
// binding of the embedded replica (clickd.EmbeddedReplica), against a
// running deployment (--nats_url, --server: embedded_bench runs it with
// those appended). Every loop is bounded in calls and in time. Last stdout
// line: one JSON object.
//
//	go build -tags clickd_embedded -o embedded_latency ./examples/embedded_latency
//	CLICKD_EMBEDDED_LIB=build/release/embedded/libclickd_embedded.so \
//	  ./embedded_latency --nats_url=nats://127.0.0.1:4222 --server=127.0.0.1:50051
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	clickd "github.com/clickd/clickd/client/go"
	pb "github.com/clickd/clickd/client/go/clickdpb"
)

type latency struct{ P50, P99 float64 } // microseconds

// timed makes up to calls calls of one (after calls/10 warm-up calls),
// stopping at maxTime.
func timed(calls int, maxTime time.Duration, one func(i int)) latency {
	for i := 0; i < calls/10; i++ {
		one(i)
	}
	samples := make([]float64, 0, calls)
	start := time.Now()
	for i := 0; i < calls && time.Since(start) < maxTime; i++ {
		t := time.Now()
		one(i)
		samples = append(samples, float64(time.Since(t).Nanoseconds())/1e3)
	}
	sort.Float64s(samples)
	return latency{samples[len(samples)/2], samples[min(len(samples)-1, len(samples)*99/100)]}
}

func main() {
	natsURL := flag.String("nats_url", "", "the deployment's NATS servers")
	server := flag.String("server", "", "a clickd replica's host:port")
	stream := flag.String("stream", "CLICKD", "the deployment's --nats_stream")
	model := flag.String("model", "default", "the model to score with")
	candidates := flag.Int("candidates", 40, "candidates per Predict")
	calls := flag.Int("calls", 50000, "embedded Predicts per measurement")
	grpcCalls := flag.Int("grpc_calls", 5000, "gRPC Predicts per measurement")
	maxTime := flag.Duration("max_time", 20*time.Second, "bound of each measurement")
	flag.Parse()
	if *natsURL == "" || *server == "" {
		log.Fatal("embedded_latency: --nats_url and --server are required")
	}
	ctx := context.Background()
	client, err := clickd.New(*server, clickd.WithTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	replica, err := clickd.NewEmbeddedReplica(*natsURL, *stream)
	if err != nil {
		log.Fatal(err)
	}
	defer replica.Close()

	rng := rand.New(rand.NewPCG(2, 0))
	args := make([]clickd.PredictArgs, 64)
	for i := range args {
		a := clickd.PredictArgs{Model: *model, Context: clickd.Example{
			clickd.NS("user", clickd.Name(fmt.Sprintf("u%d", rng.IntN(100000)))),
			clickd.NS("site", clickd.Name(fmt.Sprintf("s%d", rng.IntN(100))))}}
		for c := 0; c < *candidates; c++ {
			a.Candidates = append(a.Candidates, clickd.Example{clickd.NS("ad", clickd.Name(fmt.Sprintf("a%d", rng.IntN(1000))))})
		}
		args[i] = a
	}
	info, err := client.GetModel(ctx, *model, false)
	if err != nil {
		log.Fatal(err)
	}
	reqs := make([]*pb.PredictRequest, len(args))
	keyed := make([]*pb.PredictRequest, len(args)) // hashed here: the keys wire form
	for i, a := range args {
		reqs[i] = a.Proto()
		a.Wire, a.Seed = clickd.WireKeys, info.GetConfig().GetHashing().GetSeed()
		keyed[i] = a.Proto()
	}
	// The same requests as flat keys (EmbeddedReplica.PredictKeys), taken
	// from the keys wire form hashed above.
	flat := make([]*clickd.KeysRequest, len(args))
	for i, a := range args {
		k := clickd.NewKeysRequest(*model, "", []string{"user", "site", "ad"})
		for _, ns := range keyed[i].GetContext().GetNamespaces() {
			for _, key := range ns.GetKeys() {
				k.ContextKeys = append(k.ContextKeys, key)
				k.ContextNamespaces = append(k.ContextNamespaces, map[string]uint32{"user": 0, "site": 1}[ns.GetName()])
			}
		}
		for range a.Candidates {
			k.CandidateEnds = append(k.CandidateEnds, 0)
		}
		for c, cand := range keyed[i].GetCandidates() {
			for _, ns := range cand.GetNamespaces() {
				for _, key := range ns.GetKeys() {
					k.CandidateKeys = append(k.CandidateKeys, key)
					k.CandidateNamespaces = append(k.CandidateNamespaces, 2)
				}
			}
			k.CandidateEnds[c] = uint64(len(k.CandidateKeys))
		}
		flat[i] = k
	}
	predictions := make([]float64, *candidates)
	first, err := client.Predict(ctx, reqs[0])
	if err != nil {
		log.Fatal(err)
	}
	if err := replica.WaitForVersion(first.ModelVersion, 60*time.Second); err != nil {
		log.Fatal(err)
	}
	check := func(_ *pb.PredictResponse, err error) {
		if err != nil {
			log.Fatalf("predict: %v", err)
		}
	}
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		var a, b1, c string
		fmt.Sscan(string(b), &a, &b1, &c)
		return a + " " + b1 + " " + c
	}
	grpcOnce := timed(*grpcCalls, *maxTime, func(i int) { check(client.Predict(ctx, reqs[i%len(reqs)])) })
	embeddedOnce := timed(*calls, *maxTime, func(i int) { check(replica.Predict(ctx, reqs[i%len(reqs)])) })
	embeddedKeys := timed(*calls, *maxTime, func(i int) { check(replica.Predict(ctx, keyed[i%len(keyed)])) })
	embeddedBuilt := timed(*calls, *maxTime, func(i int) { check(replica.Predict(ctx, args[i%len(args)].Proto())) })
	embeddedFlat := timed(*calls, *maxTime, func(i int) {
		if _, err := replica.PredictKeys(flat[i%len(flat)], predictions, nil); err != nil {
			log.Fatalf("predict keys: %v", err)
		}
	})
	fmt.Printf("Go, Predict 1 x %d, one caller (load %s):\n", *candidates, load())
	fmt.Printf("  gRPC Client.Predict, request built once      p50 %8.2f us  p99 %8.2f us\n", grpcOnce.P50, grpcOnce.P99)
	fmt.Printf("  EmbeddedReplica.Predict, request built once  p50 %8.2f us  p99 %8.2f us\n", embeddedOnce.P50, embeddedOnce.P99)
	fmt.Printf("  EmbeddedReplica.Predict, keys form, built once p50 %7.2f us  p99 %8.2f us\n", embeddedKeys.P50, embeddedKeys.P99)
	fmt.Printf("  EmbeddedReplica.Predict, built on each call  p50 %8.2f us  p99 %8.2f us\n", embeddedBuilt.P50, embeddedBuilt.P99)
	fmt.Printf("  EmbeddedReplica.PredictKeys (flat keys)      p50 %8.2f us  p99 %8.2f us\n", embeddedFlat.P50, embeddedFlat.P99)
	out, _ := json.Marshal(map[string]any{"candidates": *candidates,
		"go_grpc_p50_us": grpcOnce.P50, "go_grpc_p99_us": grpcOnce.P99,
		"go_embedded_p50_us": embeddedOnce.P50, "go_embedded_p99_us": embeddedOnce.P99,
		"go_embedded_keys_p50_us": embeddedKeys.P50, "go_embedded_keys_p99_us": embeddedKeys.P99,
		"go_embedded_built_p50_us": embeddedBuilt.P50, "go_embedded_built_p99_us": embeddedBuilt.P99,
		"go_embedded_flat_p50_us": embeddedFlat.P50, "go_embedded_flat_p99_us": embeddedFlat.P99})
	fmt.Println(string(out))
}
