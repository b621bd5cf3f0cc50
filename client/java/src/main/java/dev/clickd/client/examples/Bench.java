package dev.clickd.client.examples;

import clickd.v1.ClickdOuterClass.PredictRequest;
import dev.clickd.client.ClickdClient;
import dev.clickd.client.Example;
import dev.clickd.client.Feature;
import dev.clickd.client.Requests;
import dev.clickd.client.Wire;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The Java client's part of bench/clients/run.sh: Predict 1x40 (one candidate
 * of 40 named features) latency and 100x40 throughput, one call in flight,
 * and this process's CPU per call (every thread: JIT and GC included). Every
 * loop is bounded in calls and in time. Last stdout line: one JSON object.
 * Flags: --server=HOST:PORT --model=M --wire=features|keys --calls1=N
 * --calls100=N --max_seconds=S.
 */
public final class Bench {
  private Bench() {}

  record Result(int calls, double p50Us, double seconds, double cpuUsPerCall) {}

  static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  static List<Example> candidates(int n, int features, int offset) {
    List<Example> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      List<Feature> fs = new ArrayList<>();
      for (int j = 0; j < features; j++) {
        fs.add(Feature.name("f" + j + "=" + ((offset + i * 7 + j * 13) % 1000)));
      }
      out.add(Example.builder().add("ad", fs).build());
    }
    return out;
  }

  static Result run(ClickdClient c, String model, Wire wire, long seed, int n, int calls, int warmup, double maxSeconds) {
    // The candidates' features are made once (16 sets, used in turn); turning
    // them into the request (and hashing them, in the keys form) is part of
    // each call's cost, as it is in an ad server.
    List<List<Example>> sets = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      sets.add(candidates(n, 40, i * 1000));
    }
    for (int i = 0; i < warmup; i++) {
      c.predict(Requests.predict(model, null, sets.get(i % 16), wire, seed).build());
    }
    long[] lat = new long[calls];
    int done = 0;
    long cpu0 = cpuNanos();
    long start = System.nanoTime();
    long limit = start + (long) (maxSeconds * 1e9);
    for (int i = 0; i < calls && System.nanoTime() < limit; i++) {
      long t = System.nanoTime();
      PredictRequest req = Requests.predict(model, null, sets.get(i % 16), wire, seed).build();
      c.predict(req);
      lat[done++] = System.nanoTime() - t;
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    double cpuUs = (cpuNanos() - cpu0) / 1e3 / done;
    long[] sorted = Arrays.copyOf(lat, done);
    Arrays.sort(sorted);
    return new Result(done, sorted[done / 2] / 1e3, seconds, cpuUs);
  }

  public static void main(String[] args) {
    String server = "127.0.0.1:50051";
    String model = "default";
    Wire wire = Wire.FEATURES;
    int calls1 = 3000;
    int calls100 = 300;
    double maxSeconds = 10;
    for (String a : args) {
      String v = a.substring(a.indexOf('=') + 1);
      if (a.startsWith("--server=")) {
        server = v;
      } else if (a.startsWith("--model=")) {
        model = v;
      } else if (a.startsWith("--wire=")) {
        wire = v.equals("keys") ? Wire.KEYS : Wire.FEATURES;
      } else if (a.startsWith("--calls1=")) {
        calls1 = Integer.parseInt(v);
      } else if (a.startsWith("--calls100=")) {
        calls100 = Integer.parseInt(v);
      } else if (a.startsWith("--max_seconds=")) {
        maxSeconds = Double.parseDouble(v);
      } else {
        throw new IllegalArgumentException("unknown flag " + a);
      }
    }
    try (ClickdClient c = ClickdClient.builder(server).timeout(Duration.ofSeconds(10)).build()) {
      long seed = c.getModel(model, false).getConfig().getHashing().getSeed();
      // A JVM needs thousands of calls before the JIT has compiled the path:
      // the warmup is longer than the other clients'.
      Result r1 = run(c, model, wire, seed, 1, calls1, 3000, maxSeconds);
      Result r100 = run(c, model, wire, seed, 100, calls100, 200, maxSeconds);
      System.out.printf(
          "{\"client\": \"java\", \"wire\": \"%s\", \"p50_us_1x40\": %.1f, \"calls_1x40\": %d, \"cpu_us_per_call_1x40\": %.1f,"
              + " \"candidates_per_s_100x40\": %.0f, \"calls_100x40\": %d, \"cpu_us_per_call_100x40\": %.1f}%n",
          wire.name().toLowerCase(java.util.Locale.ROOT), r1.p50Us(), r1.calls(), r1.cpuUsPerCall(),
          100.0 * r100.calls() / r100.seconds(), r100.calls(), r100.cpuUsPerCall());
    }
  }
}
