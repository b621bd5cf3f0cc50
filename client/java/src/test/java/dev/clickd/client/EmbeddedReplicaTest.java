package dev.clickd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import clickd.v1.ClickdOuterClass.LabeledExample;
import clickd.v1.ClickdOuterClass.PredictRequest;
import clickd.v1.ClickdOuterClass.PredictResponse;
import io.grpc.Status.Code;
import java.io.File;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * EmbeddedReplica against a real deployment: one nats-server with JetStream
 * and one clickd replica (--replication=jetstream), started on loopback and
 * stopped by PID, as client/python/tests/test_embedded.py does. The library
 * is the system property clickd.embedded.lib (scripts/test_clients.sh sets
 * it to build/release/embedded/libclickd_embedded.so).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EmbeddedReplicaTest {
  static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  static String library() {
    String lib = System.getProperty("clickd.embedded.lib", "");
    if (lib.isEmpty()) {
      throw new IllegalStateException(
          "set -Dclickd.embedded.lib to build/release/embedded/libclickd_embedded.so"
              + " (scripts/test_clients.sh does)");
    }
    return lib;
  }

  static long teach(ClickdClient c, String model, int updates) {
    long version = 0;
    for (int i = 0; i < updates; i++) {
      List<LabeledExample> examples = new ArrayList<>();
      for (int k = 0; k < 10; k++) {
        Example e =
            Example.builder()
                .add("user", Feature.name("u" + (i * 7 + k) % 50))
                .add("ad", Feature.name("a" + (i + k) % 20), Feature.id(k, 0.5f))
                .build();
        examples.add(Requests.labeled(e, (i + k) % 4 == 0 ? 1 : 0, 0, Wire.FEATURES, 0));
      }
      version =
          Math.max(
              version,
              c.update(Requests.update(model, examples).setIdempotencyKey("java-embedded-" + i).build())
                  .getModelVersion());
    }
    return version;
  }

  @Test
  void answersAsTheServerDoes(@TempDir Path dir) throws Exception {
    int natsPort = freePort();
    Process nats =
        new ProcessBuilder(
                System.getProperty("clickd.nats_server", "/usr/local/bin/nats-server"),
                "-a", "127.0.0.1", "-p", String.valueOf(natsPort), "-js", "-sd",
                dir.resolve("nats").toString())
            .redirectErrorStream(true)
            .redirectOutput(new File("/dev/null"))
            .start();
    String url = "nats://127.0.0.1:" + natsPort;
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      for (boolean up = false; !up; ) {
        try (Socket s = new Socket("127.0.0.1", natsPort)) {
          up = true;
        } catch (java.io.IOException e) {
          assertTrue(System.nanoTime() < deadline && nats.isAlive(), "nats-server is not listening");
          Thread.sleep(50);
        }
      }
      try (ServerProcess s =
              new ServerProcess(
                      "--data_dir=" + dir.resolve("r0"), "--replication=jetstream",
                      "--nats_url=" + url, "--nats_replicas=1", "--replica_id=java0",
                      "--snapshot_interval=1h", "--nats_min_server_version=")
                  .start();
          ClickdClient c = ClickdClient.builder(s.address()).timeout(Duration.ofSeconds(10)).build()) {
        long version = teach(c, "default", 20);
        EmbeddedReplica r =
            EmbeddedReplica.builder(url).library(library()).catchUpTimeout(Duration.ofSeconds(30)).open();
        try {
          r.waitForVersion(version, Duration.ofSeconds(30));
          assertTrue(r.appliedVersion() >= version);
          long seed = c.getModel("default", false).getConfig().getHashing().getSeed();
          List<Example> cands = new ArrayList<>();
          for (int a = 0; a < 40; a++) {
            cands.add(Example.builder().add("ad", Feature.name("a" + a % 25), Feature.id(a % 10)).build());
          }
          Example user = Example.builder().add("user", Feature.name("u7")).build();
          for (Wire wire : Wire.values()) {
            PredictRequest req =
                Requests.predict("default", user, cands, wire, seed)
                    .setMinModelVersion(version)
                    .setUncertainty(true)
                    .setExplainTopK(3)
                    .setRequestId("java-embedded")
                    .build();
            PredictResponse mine = r.predict(req);
            PredictResponse theirs = c.predict(req);
            assertEquals(40, mine.getPredictionsCount());
            for (int i = 0; i < 40; i++) {
              assertEquals(
                  Double.doubleToRawLongBits(theirs.getPredictions(i).getMargin()),
                  Double.doubleToRawLongBits(mine.getPredictions(i).getMargin()),
                  "candidate " + i + " in " + wire);
            }
            assertEquals(theirs, mine, wire.toString());
          }
          assertEquals(c.stateDigest("default"), r.stateDigest("default"));

          // It follows the log: more Updates after it opened.
          long later = teach(c, "default", 25);
          r.waitForVersion(later, Duration.ofSeconds(10));
          PredictRequest plain = Requests.predict("default", null, cands.subList(0, 3), Wire.FEATURES, 0).build();
          assertEquals(c.predict(plain.toBuilder().setMinModelVersion(later).build()),
              r.predict(plain.toBuilder().setMinModelVersion(later).build()));
          assertEquals(c.stateDigest("default"), r.stateDigest("default"));
          EmbeddedReplica.Stats stats = r.stats();
          assertTrue(stats.bootstraps() == 1 && stats.models() == 1 && stats.natsConnected()
              && stats.appliedVersion() >= later && stats.broken().isEmpty(), stats.toString());
          // Its metrics for the host's /metrics: what it applied and served so far
          // (a Predict of 40 candidates per wire form, then one of 3).
          String metrics = r.metricsText();
          int wires = Wire.values().length;
          for (String line : List.of(
              "clickd_embedded_applied_sequence{stream=\"CLICKD\"} " + stats.appliedVersion(),
              "clickd_embedded_models{stream=\"CLICKD\"} 1",
              "clickd_embedded_bootstraps_total{stream=\"CLICKD\"} 1",
              "clickd_embedded_predictions_total{model=\"default\",stream=\"CLICKD\"} " + (40 * wires + 3),
              "clickd_embedded_predict_calls_total{code=\"OK\",stream=\"CLICKD\"} " + (wires + 1),
              "# TYPE clickd_embedded_records_applied_total counter")) {
            assertTrue(metrics.contains(line + "\n"), "no line " + line + " in\n" + metrics);
          }

          // predictKeys: flat keys, no protobuf; the keys wire form's answer bit for bit.
          long userNs = Hashing.namespaceHash("user", seed);
          long adNs = Hashing.namespaceHash("ad", seed);
          long[] candidateKeys = new long[80];
          int[] candidateNs = new int[80];
          long[] ends = new long[40];
          for (int a = 0; a < 40; a++) {
            candidateKeys[2 * a] = Hashing.namedKey(adNs, "a" + a % 25);
            candidateKeys[2 * a + 1] = Hashing.idKey(adNs, a % 10);
            candidateNs[2 * a] = 1;
            candidateNs[2 * a + 1] = 1;
            ends[a] = 2 * a + 2;
          }
          double[] predictions = new double[40];
          double[] margins = new double[40];
          long scoredAt = r.predictKeys("default", null, new String[] {"user", "ad"},
              new long[] {Hashing.namedKey(userNs, "u7")}, new int[] {0}, null, candidateKeys,
              candidateNs, null, ends, predictions, margins);
          PredictResponse keyed = r.predict(Requests.predict("default", user, cands, Wire.KEYS, seed).build());
          assertEquals(keyed.getModelVersion(), scoredAt);
          for (int i = 0; i < 40; i++) {
            assertEquals(Double.doubleToRawLongBits(keyed.getPredictions(i).getPrediction()),
                Double.doubleToRawLongBits(predictions[i]), "candidate " + i);
            assertEquals(Double.doubleToRawLongBits(keyed.getPredictions(i).getMargin()),
                Double.doubleToRawLongBits(margins[i]), "candidate " + i);
          }
          ClickdException bad = assertThrows(ClickdException.class, () -> r.predictKeys("default",
              null, new String[] {"user"}, new long[] {1}, new int[] {1}, null, candidateKeys,
              candidateNs, null, ends, predictions, null));
          assertEquals(Code.INVALID_ARGUMENT, bad.code(), bad.getMessage());
          assertTrue(bad.serverMessage().contains("context_namespaces[0] is 1"), bad.getMessage());

          // Waits and refusals carry the server's codes.
          ClickdException e = assertThrows(ClickdException.class,
              () -> r.waitForVersion(r.appliedVersion() + 1000, Duration.ofMillis(200)));
          assertEquals(Code.DEADLINE_EXCEEDED, e.code(), e.getMessage());
          PredictRequest ahead = plain.toBuilder().setMinModelVersion(r.appliedVersion() + 1000).build();
          e = assertThrows(ClickdException.class, () -> r.predict(ahead, Duration.ofMillis(100)));
          assertEquals(Code.DEADLINE_EXCEEDED, e.code(), e.getMessage());
          e = assertThrows(ClickdException.class, () -> r.predict(ahead));
          assertEquals(Code.UNAVAILABLE, e.code(), e.getMessage());
          e = assertThrows(ClickdException.class, () -> r.predict(plain.toBuilder().setLogImpressions(true).build()));
          assertEquals(Code.FAILED_PRECONDITION, e.code(), e.getMessage());
          assertTrue(e.serverMessage().contains("log_impressions"), e.getMessage());
          e = assertThrows(ClickdException.class, () -> r.predict(plain.toBuilder().setModel("no-such-model").build()));
          assertEquals(Code.NOT_FOUND, e.code(), e.getMessage());
          e = assertThrows(ClickdException.class, () -> r.stateDigest("no-such-model"));
          assertEquals(Code.NOT_FOUND, e.code(), e.getMessage());
        } finally {
          r.close();
        }
        r.close();
        assertThrows(IllegalStateException.class, r::appliedVersion);
        assertThrows(IllegalStateException.class, r::metricsText);
        assertThrows(IllegalStateException.class, () -> r.predict(PredictRequest.getDefaultInstance()));

        // Closed while four threads predict: each call completes or throws
        // IllegalStateException (closed); the JVM does not crash and no other
        // error appears.
        EmbeddedReplica racing = EmbeddedReplica.builder(url).library(library()).open();
        PredictRequest small = Requests.predict("default", null,
            List.of(Example.builder().add("ad", Feature.name("a1")).build()), Wire.FEATURES, 0).build();
        java.util.concurrent.atomic.AtomicLong served = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.ConcurrentLinkedQueue<Throwable> unexpected =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
        List<Thread> callers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
          Thread caller = new Thread(() -> {
            long stopAt = System.nanoTime() + 10_000_000_000L;  // bounded: 10 s at most
            while (System.nanoTime() < stopAt) {
              try {
                racing.predict(small);
                served.incrementAndGet();
              } catch (IllegalStateException closed) {
                return;
              } catch (Throwable other) {
                unexpected.add(other);
                return;
              }
            }
            unexpected.add(new AssertionError("still serving 10 s after close"));
          });
          caller.start();
          callers.add(caller);
        }
        while (served.get() < 1000) {
          Thread.sleep(1);
        }
        racing.close();
        for (Thread caller : callers) {
          caller.join(20_000);
          assertFalse(caller.isAlive());
        }
        assertTrue(unexpected.isEmpty(), unexpected.toString());
        assertThrows(IllegalStateException.class, () -> racing.predict(small));

        ClickdException e = assertThrows(ClickdException.class,
            () -> EmbeddedReplica.builder(url).library(library()).streamPrefix("NOSUCH")
                .catchUpTimeout(Duration.ofSeconds(5)).open());
        assertEquals(Code.NOT_FOUND, e.code(), e.getMessage());
        assertTrue(e.serverMessage().contains("NOSUCH_LOG"), e.getMessage());
        IllegalStateException missing = assertThrows(IllegalStateException.class,
            () -> EmbeddedReplica.builder(url).library("/nonexistent/libclickd_embedded.so").open());
        assertTrue(missing.getMessage().contains("/nonexistent/libclickd_embedded.so"), missing.getMessage());
      }
    } finally {
      nats.destroy();
      if (!nats.waitFor(15, TimeUnit.SECONDS)) {
        nats.destroyForcibly();
      }
    }
  }
}
