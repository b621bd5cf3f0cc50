package dev.clickd.client.examples;

import clickd.v1.ClickdOuterClass.PredictRequest;
import dev.clickd.client.ClickdClient;
import dev.clickd.client.EmbeddedReplica;
import dev.clickd.client.Example;
import dev.clickd.client.Feature;
import dev.clickd.client.Hashing;
import dev.clickd.client.Requests;
import dev.clickd.client.Wire;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.IntConsumer;

/**
 * The Java part of bench/embedded/run.sh: Predict of 1 context + 40
 * candidates (embedded_bench's shape), one caller, closed loop, through
 * ClickdClient and through EmbeddedReplica, against a running deployment
 * (embedded_bench --then_run appends --nats_url=URLS --server=HOST:PORT).
 * The library is $CLICKD_EMBEDDED_LIB. Every loop is bounded in calls and
 * in time (20 s); each measurement follows as many warm-up calls (the JIT).
 * Flags: --nats_url=URLS --server=HOST:PORT --calls=N (50000)
 * --grpc_calls=N (5000). Last stdout line: one JSON object.
 */
public final class EmbeddedLatency {
  private EmbeddedLatency() {}

  /** p50 and p99 in microseconds of up to calls calls of one, after as many warm-up calls. */
  static double[] timed(int calls, IntConsumer one) {
    for (int i = 0; i < calls; i++) {
      one.accept(i);
    }
    long[] lat = new long[calls];
    int done = 0;
    long limit = System.nanoTime() + 20_000_000_000L;
    for (int i = 0; i < calls && System.nanoTime() < limit; i++, done++) {
      long t = System.nanoTime();
      one.accept(i);
      lat[i] = System.nanoTime() - t;
    }
    long[] d = Arrays.copyOf(lat, done);
    Arrays.sort(d);
    return new double[] {d[done / 2] / 1e3, d[Math.min(done - 1, done * 99 / 100)] / 1e3};
  }

  public static void main(String[] args) {
    String natsUrl = "";
    String server = "";
    int calls = 50_000;
    int grpcCalls = 5_000;
    for (String a : args) {
      String[] kv = a.replaceFirst("^--", "").split("=", 2);
      switch (kv[0]) {
        case "nats_url" -> natsUrl = kv[1];
        case "server" -> server = kv[1];
        case "calls" -> calls = Integer.parseInt(kv[1]);
        case "grpc_calls" -> grpcCalls = Integer.parseInt(kv[1]);
        default -> throw new IllegalArgumentException("unknown flag " + a);
      }
    }
    Random rng = new Random(3);
    List<PredictRequest> reqs = new ArrayList<>();
    // The same requests as flat keys for predictKeys (the default model's seed 0).
    String[] namespaces = {"user", "site", "ad"};
    long[][] contextKeys = new long[64][];
    long[][] candidateKeys = new long[64][];
    int[] contextNs = {0, 1};
    int[] candidateNs = new int[40];
    Arrays.fill(candidateNs, 2);
    long[] ends = new long[40];
    for (int c = 0; c < 40; c++) {
      ends[c] = c + 1;
    }
    long userNs = Hashing.namespaceHash("user", 0), siteNs = Hashing.namespaceHash("site", 0);
    long adNs = Hashing.namespaceHash("ad", 0);
    for (int i = 0; i < 64; i++) {
      String user = "u" + rng.nextInt(100000), site = "s" + rng.nextInt(100);
      Example context =
          Example.builder().add("user", Feature.name(user)).add("site", Feature.name(site)).build();
      contextKeys[i] = new long[] {Hashing.namedKey(userNs, user), Hashing.namedKey(siteNs, site)};
      candidateKeys[i] = new long[40];
      List<Example> cands = new ArrayList<>();
      for (int c = 0; c < 40; c++) {
        String ad = "a" + rng.nextInt(1000);
        cands.add(Example.builder().add("ad", Feature.name(ad)).build());
        candidateKeys[i][c] = Hashing.namedKey(adNs, ad);
      }
      reqs.add(Requests.predict("default", context, cands, Wire.FEATURES, 0).build());
    }
    try (ClickdClient client = ClickdClient.builder(server).timeout(Duration.ofSeconds(10)).build();
        EmbeddedReplica replica = EmbeddedReplica.builder(natsUrl).open()) {
      replica.waitForVersion(client.predict(reqs.get(0)).getModelVersion(), Duration.ofSeconds(60));
      double[] grpc = timed(grpcCalls, i -> client.predict(reqs.get(i % 64)));
      double[] embedded = timed(calls, i -> replica.predict(reqs.get(i % 64)));
      double[] predictions = new double[40];
      double[] flat = timed(calls, i -> replica.predictKeys("default", null, namespaces,
          contextKeys[i % 64], contextNs, null, candidateKeys[i % 64], candidateNs, null, ends,
          predictions, null));
      System.out.printf("Java, Predict 1 x 40, one caller:%n");
      System.out.printf("  gRPC ClickdClient.predict, request built once  p50 %8.2f us  p99 %8.2f us%n", grpc[0], grpc[1]);
      System.out.printf("  EmbeddedReplica.predict, request built once    p50 %8.2f us  p99 %8.2f us%n", embedded[0], embedded[1]);
      System.out.printf("  EmbeddedReplica.predictKeys (flat keys)        p50 %8.2f us  p99 %8.2f us%n", flat[0], flat[1]);
      System.out.printf(
          "{\"java_grpc_p50_us\": %.2f, \"java_grpc_p99_us\": %.2f, \"java_embedded_p50_us\": %.2f, \"java_embedded_p99_us\": %.2f, \"java_embedded_flat_p50_us\": %.2f, \"java_embedded_flat_p99_us\": %.2f}%n",
          grpc[0], grpc[1], embedded[0], embedded[1], flat[0], flat[1]);
    }
  }
}
