package dev.clickd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import clickd.v1.ClickdOuterClass.FeedbackRequest;
import clickd.v1.ClickdOuterClass.FeedbackResponse;
import clickd.v1.ClickdOuterClass.FeedbackStatus;
import clickd.v1.ClickdOuterClass.ModelConfig;
import clickd.v1.ClickdOuterClass.ModelInfo;
import clickd.v1.ClickdOuterClass.PredictRequest;
import clickd.v1.ClickdOuterClass.PredictResponse;
import clickd.v1.ClickdOuterClass.UpdateAck;
import clickd.v1.ClickdOuterClass.UpdateRequest;
import clickd.v1.ClickdOuterClass.UpdateResponse;
import clickd.v1.ClickdOuterClass.UpdateStreamResponse;
import io.grpc.Status.Code;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClientTest {
  static final Example PAGE =
      Example.builder().add("user", Feature.name("country=FR"), Feature.name("age", 0.3f)).build();
  static final List<Example> ADS =
      List.of(
          Example.builder().add("ad", Feature.id(7), Feature.name("campaign=3")).build(),
          Example.builder().add("ad", Feature.id(8)).build());

  static ClickdClient client(ServerProcess s) {
    return ClickdClient.builder(s.address()).timeout(Duration.ofSeconds(10)).build();
  }

  static ClickdException expect(Code code, String substr, Runnable call) {
    ClickdException e = assertThrows(ClickdException.class, call::run);
    assertEquals(code, e.code(), e.getMessage());
    assertTrue(e.serverMessage().contains(substr), e.getMessage());
    return e;
  }

  static UpdateRequest update(String model, Example ex, float label) {
    return Requests.update(model, List.of(Requests.labeled(ex, label, 0, Wire.FEATURES, 0))).build();
  }

  @Test
  void everyCall(@TempDir Path data) throws Exception {
    try (ServerProcess s = new ServerProcess("--data_dir=" + data, "--update_log_sync=none").start();
        ClickdClient c = client(s)) {
      String name = c.createModel(ClickdClient.parseModelConfig("{\"name\": \"calls\", \"ftrl\": {\"alpha\": 0.1}}")).getConfig().getName();
      expect(Code.ALREADY_EXISTS, "", () -> c.createModel(ModelConfig.newBuilder().setName(name).build()));
      UpdateResponse up =
          c.update(
              UpdateRequest.newBuilder()
                  .setModel(name)
                  .setReturnMargins(true)
                  .addImpressions(Requests.impression(PAGE, ADS, List.of(1f, 0f), Wire.FEATURES, 0))
                  .build());
      assertEquals(2, up.getApplied());
      assertEquals(2, up.getMarginsCount());
      List<Double> first = new ArrayList<>();
      for (Wire wire : Wire.values()) {
        PredictRequest req =
            Requests.predict(name, PAGE, ADS, wire, 0)
                .setUncertainty(true)
                .setExplainTopK(2)
                .setMinModelVersion(up.getModelVersion())
                .build();
        PredictResponse resp = c.predict(req);
        for (int i = 0; i < 2; i++) {
          var p = resp.getPredictions(i);
          if (first.size() < 2) {
            first.add(p.getPrediction());
          } else {
            assertEquals(first.get(i), p.getPrediction(), 1e-12, wire.toString());
          }
          assertTrue(p.hasUncertainty());
          assertEquals(2, p.getExplanationCount());
        }
      }
      assertTrue(first.get(0) > 0.5 && first.get(1) < 0.5, first.toString());
      // The async stub follows the same rules.
      CompletableFuture<PredictResponse> f = c.predictAsync(Requests.predict(name, PAGE, ADS, Wire.KEYS, 0).build());
      assertEquals(first.get(0), f.get(10, TimeUnit.SECONDS).getPredictions(0).getPrediction(), 1e-12);

      UpdateRequest keyed = update(name, ADS.get(0), 1).toBuilder().setIdempotencyKey("java-key-1").build();
      assertEquals(1, c.update(keyed).getApplied());
      assertTrue(c.update(keyed).getDuplicate());
      assertTrue(c.updateAsync(keyed).get(10, TimeUnit.SECONDS).getDuplicate());

      List<UpdateRequest> reqs = List.of(update(name, ADS.get(0), 1), update(name, ADS.get(1), 0));
      UpdateStreamResponse sum = c.updateStream(reqs.iterator());
      assertEquals(2, sum.getRequests());
      assertEquals(2, sum.getMetrics().getExamples());
      try (AckedStream<UpdateRequest, UpdateAck> acked = c.openAckedUpdateStream()) {
        assertEquals(1, acked.send(reqs.get(0)).getAcknowledged());
        assertEquals(2, acked.send(reqs.get(1)).getAcknowledged());
        acked.finish();
        expect(Code.FAILED_PRECONDITION, "already finished", () -> acked.send(reqs.get(0)));
      }
      try (UpdateStreamWriter w = c.openUpdateStream()) {
        w.write(reqs.get(0));
        w.write(update("other", ADS.get(0), 1));
        expect(Code.INVALID_ARGUMENT, "message 1 (1 examples applied before it)", w::finish);
      }
      ModelInfo info = c.getModel(name, true);
      assertEquals(8, info.getUpdates());
      assertEquals(16, info.getStateDigest().length());
      List<ModelInfo> models = c.listModels();
      assertEquals(List.of(name, "default"), models.stream().map(m -> m.getConfig().getName()).toList());
      assertTrue(c.snapshotModel(name).getCoordinates() > 0);
      c.deleteModel(name);
      expect(Code.NOT_FOUND, name, () -> c.getModel(name, false));
    }
  }

  @Test
  void feedbackLoop() throws Exception {
    try (ServerProcess s = new ServerProcess("--update_log_sync=none").start();
        ClickdClient c = client(s)) {
      String name = c.createModel(ClickdClient.parseModelConfig("{\"name\": \"loop\", \"feedback\": {\"ttl_seconds\": 3600}}")).getConfig().getName();
      PredictResponse shown = c.predict(Requests.predict(name, PAGE, ADS, Wire.FEATURES, 0).setLogImpressions(true).build());
      long id0 = shown.getPredictions(0).getImpressionId();
      long id1 = shown.getPredictions(1).getImpressionId();
      assertEquals(id0 + 1, id1);
      FeedbackRequest click =
          Requests.feedback(name, List.of(Requests.click(id0, 1, 0))).setIdempotencyKey("click-" + id0).build();
      FeedbackResponse fb = c.feedback(click);
      assertEquals(1, fb.getJoined());
      assertEquals(FeedbackStatus.FEEDBACK_JOINED, fb.getStatuses(0));
      assertTrue(c.feedback(click).getDuplicate());
      try (AckedStream<FeedbackRequest, FeedbackResponse> stream = c.openFeedbackStream()) {
        FeedbackResponse r =
            stream.send(
                Requests.feedback(name, List.of(Requests.click(id0, 1, 0), Requests.click(id1, 0, 0), Requests.click(id1 + 1000, 1, 0)))
                    .build());
        assertEquals(
            List.of(FeedbackStatus.FEEDBACK_ALREADY_LABELLED, FeedbackStatus.FEEDBACK_JOINED, FeedbackStatus.FEEDBACK_UNKNOWN),
            r.getStatusesList());
        stream.finish();
      }
      expect(Code.INVALID_ARGUMENT, "items is empty", () -> c.feedback(FeedbackRequest.newBuilder().setModel(name).build()));
      expect(
          Code.FAILED_PRECONDITION,
          "has no impression-to-click loop",
          () -> c.predict(Requests.predict("default", null, ADS, Wire.FEATURES, 0).setLogImpressions(true).build()));
      String small =
          c.createModel(ClickdClient.parseModelConfig("{\"name\": \"small\", \"feedback\": {\"ttl_seconds\": 3600, \"max_buffer_bytes\": 1024}}"))
              .getConfig()
              .getName();
      List<Example> many = Collections.nCopies(200, ADS.get(0));
      expect(Code.RESOURCE_EXHAUSTED, "", () -> c.predict(Requests.predict(small, null, many, Wire.FEATURES, 0).setLogImpressions(true).build()));
    }
  }

  @Test
  void errorPaths() throws Exception {
    try (ServerProcess s = new ServerProcess("--max_candidates=5", "--update_log_sync=none").start();
        ClickdClient c = client(s)) {
      Example nan = Example.builder().add("ad", Feature.name("x", Float.NaN)).build();
      ClickdException e =
          expect(
              Code.INVALID_ARGUMENT,
              "candidates[0].namespaces[0].features[0].value is nan",
              () -> c.predict(Requests.predict("default", null, List.of(nan), Wire.FEATURES, 0).build()));
      assertTrue(e.getMessage().startsWith("INVALID_ARGUMENT: "), e.getMessage());
      expect(Code.NOT_FOUND, "nope", () -> c.predict(Requests.predict("nope", null, ADS, Wire.FEATURES, 0).build()));
      expect(Code.NOT_FOUND, "nope", () -> c.update(update("nope", ADS.get(0), 1)));
      expect(
          Code.RESOURCE_EXHAUSTED,
          "candidates has 6 entries; the limit is 5",
          () -> c.predict(Requests.predict("default", null, Collections.nCopies(6, ADS.get(0)), Wire.FEATURES, 0).build()));
      expect(
          Code.DEADLINE_EXCEEDED,
          "",
          () -> c.predict(Requests.predict("default", null, ADS, Wire.FEATURES, 0).build(), Duration.ofNanos(1)));
      assertThrows(IllegalArgumentException.class, () -> ClickdClient.parseModelConfig("{\"name\": \"x\", \"nonsense\": 1}"));
    }
  }

  static void openssl(Path dir, String command) throws Exception {
    Process p = new ProcessBuilder("sh", "-c", command).directory(dir.toFile()).redirectErrorStream(true).start();
    p.getInputStream().readAllBytes();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, command);
  }

  @Test
  void tlsTokensAndMtls(@TempDir Path d) throws Exception {
    openssl(d, "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=clickd-java-test-ca");
    String[][] certs = {
      {"server", "clickd", "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:clickd.test\n"},
      {"adserver", "adserver", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"},
    };
    for (String[] c : certs) {
      Files.writeString(d.resolve(c[0] + ".ext"), c[2]);
      openssl(d, String.format("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout %1$s.key -out %1$s.csr -subj /CN=%2$s && openssl x509 -req -in %1$s.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out %1$s.crt -extfile %1$s.ext", c[0], c[1]));
    }
    // The server reads PKCS#8 or SEC1 keys; grpc-java's key manager wants PKCS#8.
    openssl(d, "openssl pkcs8 -topk8 -nocrypt -in adserver.key -out adserver.pk8");
    String predictToken = "java-predict-token-0123456789";
    String learnToken = "java-learn-token-0123456789ab";
    String adminToken = "java-admin-token-0123456789abc";
    Files.writeString(d.resolve("tokens"), "predict " + predictToken + "\nlearn " + learnToken + "\nadmin " + adminToken + "\n");
    Files.writeString(d.resolve("cert_roles"), "predict adserver\n");
    byte[] ca = Files.readAllBytes(d.resolve("ca.crt"));
    PredictRequest predict = Requests.predict("default", null, ADS, Wire.FEATURES, 0).build();
    UpdateRequest learn = update("default", ADS.get(0), 1);
    try (ServerProcess s =
        new ServerProcess("--tls_cert_file=" + d.resolve("server.crt"), "--tls_key_file=" + d.resolve("server.key"), "--auth_tokens_file=" + d.resolve("tokens")).start()) {
      try (ClickdClient c = ClickdClient.builder(s.address()).tls(ca).token(predictToken).build()) {
        assertEquals(2, c.predict(predict).getPredictionsCount());
        expect(Code.PERMISSION_DENIED, "Update needs role learn", () -> c.update(learn));
      }
      try (ClickdClient c = ClickdClient.builder(s.address()).tls(ca).token(learnToken).build()) {
        assertEquals(1, c.update(learn).getApplied());
        expect(Code.PERMISSION_DENIED, "CreateModel needs role admin", () -> c.createModel(ModelConfig.newBuilder().setName("secure").build()));
        try (AckedStream<UpdateRequest, UpdateAck> stream = c.openAckedUpdateStream()) {
          assertEquals(1, stream.send(learn).getApplied());
          stream.finish();
        }
      }
      try (ClickdClient c = ClickdClient.builder(s.address()).tls(ca).token(adminToken).serverName("clickd.test").build()) {
        c.createModel(ModelConfig.newBuilder().setName("secure").build());
        c.deleteModel("secure");
      }
      try (ClickdClient c = ClickdClient.builder(s.address()).tls(ca).build()) {
        expect(Code.UNAUTHENTICATED, "Predict needs credentials", () -> c.predict(predict));
      }
      try (ClickdClient c = ClickdClient.builder(s.address()).tls(ca).token("not-a-known-token-000000").build()) {
        expect(Code.UNAUTHENTICATED, "not valid", () -> c.predict(predict));
      }
    }
    try (ServerProcess s =
            new ServerProcess(
                    "--tls_cert_file=" + d.resolve("server.crt"),
                    "--tls_key_file=" + d.resolve("server.key"),
                    "--tls_client_ca_file=" + d.resolve("ca.crt"),
                    "--auth_cert_roles_file=" + d.resolve("cert_roles"))
                .start();
        ClickdClient c =
            ClickdClient.builder(s.address())
                .tls(ca)
                .clientCertificate(Files.readAllBytes(d.resolve("adserver.crt")), Files.readAllBytes(d.resolve("adserver.pk8")))
                .build()) {
      assertEquals(2, c.predict(predict).getPredictionsCount());
      expect(Code.PERMISSION_DENIED, "Update needs role learn", () -> c.update(learn));
    }
  }

  @Test
  void retriesAcrossKillAndRestart(@TempDir Path data) throws Exception {
    List<Duration> sleeps = Collections.synchronizedList(new ArrayList<>());
    RetryPolicy policy = new RetryPolicy(4, Duration.ofMillis(20), 2, Duration.ofMillis(200), 0.2);
    try (ServerProcess s = new ServerProcess("--data_dir=" + data, "--update_log_sync=every_request").start()) {
      ClickdClient c =
          ClickdClient.builder(s.address())
              .timeout(Duration.ofSeconds(10))
              .retryPolicy(policy)
              .sleeper(
                  d -> {
                    sleeps.add(d);
                    Thread.sleep(d.toMillis());
                  })
              .build();
      try (c) {
        String name = c.createModel(ClickdClient.parseModelConfig("{\"name\": \"restart\", \"feedback\": {\"ttl_seconds\": 3600}}")).getConfig().getName();
        UpdateRequest keyed = update(name, ADS.get(0), 1).toBuilder().setIdempotencyKey("restart-1").build();
        c.update(keyed);
        s.kill();
        // Against a dead server: retried calls make maxAttempts attempts;
        // an unkeyed Update, a logging Predict and a model call make one.
        Object[][] cases = {
          {(Runnable) () -> c.predict(Requests.predict(name, null, ADS, Wire.FEATURES, 0).build()), 4},
          {(Runnable) () -> c.update(keyed), 4},
          {(Runnable) () -> c.feedback(Requests.feedback(name, List.of(Requests.click(1, 1, 0))).build()), 4},
          {(Runnable) () -> c.update(update(name, ADS.get(0), 1)), 1},
          {(Runnable) () -> c.predict(Requests.predict(name, null, ADS, Wire.FEATURES, 0).setLogImpressions(true).build()), 1},
          {(Runnable) c::listModels, 1},
        };
        for (Object[] tc : cases) {
          int before = sleeps.size();
          expect(Code.UNAVAILABLE, "", (Runnable) tc[0]);
          assertEquals((int) tc[1], sleeps.size() - before + 1);
        }
        for (Duration d : sleeps.subList(0, 3)) {
          assertTrue(d.toMillis() >= 16 && d.toMillis() <= 240, d.toString());
        }
        // The async path counts the same way.
        int before = sleeps.size();
        CompletableFuture<UpdateResponse> f = c.updateAsync(keyed);
        ClickdException e = assertThrows(ClickdException.class, () -> {
          try {
            f.get(30, TimeUnit.SECONDS);
          } catch (java.util.concurrent.ExecutionException x) {
            throw x.getCause();
          }
        });
        assertEquals(Code.UNAVAILABLE, e.code());
        assertEquals(before, sleeps.size()); // async backoffs are scheduled, not slept
      }
      // Keyed Updates sent while the server is down succeed once it is back
      // on the same port; the key applied before the kill is a duplicate.
      try (ClickdClient slow =
          ClickdClient.builder(s.address())
              .timeout(Duration.ofSeconds(5))
              .retryPolicy(new RetryPolicy(40, Duration.ofMillis(50), 1.5, Duration.ofMillis(250), 0.2))
              .build()) {
        UpdateRequest keyed = update("restart", ADS.get(0), 1).toBuilder().setIdempotencyKey("restart-1").build();
        UpdateRequest second = update("restart", ADS.get(1), 0).toBuilder().setIdempotencyKey("restart-2").build();
        CompletableFuture<UpdateResponse> a = CompletableFuture.supplyAsync(() -> slow.update(keyed));
        CompletableFuture<UpdateResponse> b = CompletableFuture.supplyAsync(() -> slow.update(second));
        Thread.sleep(300);
        s.start();
        int dups = (a.get(60, TimeUnit.SECONDS).getDuplicate() ? 1 : 0) + (b.get(60, TimeUnit.SECONDS).getDuplicate() ? 1 : 0);
        assertEquals(1, dups);
        assertEquals(2, slow.getModel("restart", false).getUpdates());
      }
    }
  }

  @Test
  void variant() throws Exception {
    try (ServerProcess s = new ServerProcess("--update_log_sync=none").start();
        ClickdClient c = client(s)) {
      String name =
          c.createModel(ClickdClient.parseModelConfig("{\"name\": \"variants\", \"variants\": [{\"name\": \"ada\", \"optimizer\": \"adagrad\"}]}"))
              .getConfig()
              .getName();
      for (String v : List.of("ada", "primary")) {
        assertEquals(v, c.predict(Requests.predict(name, null, ADS, Wire.FEATURES, 0).setVariant(v).build()).getVariant());
      }
      assertThrows(ClickdException.class, () -> c.predict(Requests.predict(name, null, ADS, Wire.FEATURES, 0).setVariant("nope").build()));
    }
  }
}
