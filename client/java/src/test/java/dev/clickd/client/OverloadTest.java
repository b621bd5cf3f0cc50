package dev.clickd.client;

import static org.junit.jupiter.api.Assertions.assertTrue;

import clickd.v1.ClickdOuterClass.PredictRequest;
import clickd.v1.ClickdOuterClass.PredictResponse;
import io.grpc.Status.Code;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A server with one worker and room for one queued call refuses part of a
 * bounded burst of heavy async Predicts with RESOURCE_EXHAUSTED "server
 * overloaded", which is not retried (only UNAVAILABLE is); the rest are scored.
 */
class OverloadTest {
  @Test
  void burstIsPartlyRefused() throws Exception {
    List<Example> heavy = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      List<Feature> fs = new ArrayList<>();
      for (int j = 0; j < 40; j++) {
        fs.add(Feature.name("f" + j + "=" + i));
      }
      heavy.add(Example.builder().add("ad", fs).build());
    }
    PredictRequest req = Requests.predict("default", null, heavy, Wire.FEATURES, 0).build();
    Map<Code, Integer> counts = new EnumMap<>(Code.class);
    String overloaded = "";
    // Counts attempts: the async path schedules its backoffs instead of
    // calling the sleeper, so the calls themselves are counted.
    java.util.concurrent.atomic.AtomicInteger attempts = new java.util.concurrent.atomic.AtomicInteger();
    io.grpc.ClientInterceptor counter =
        new io.grpc.ClientInterceptor() {
          @Override
          public <Q, R> io.grpc.ClientCall<Q, R> interceptCall(
              io.grpc.MethodDescriptor<Q, R> method, io.grpc.CallOptions options, io.grpc.Channel next) {
            attempts.incrementAndGet();
            return next.newCall(method, options);
          }
        };
    int sent = 0;
    try (ServerProcess s =
            new ServerProcess("--worker_threads=1", "--max_queued_calls=1", "--max_quiet_inline_predict_features=0", "--update_log_sync=none")
                .start();
        ClickdClient c = ClickdClient.builder(s.address()).timeout(Duration.ofSeconds(20)).intercept(counter).build()) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      for (int round = 0; round < 20 && !counts.containsKey(Code.RESOURCE_EXHAUSTED) && System.nanoTime() < deadline; round++) {
        List<CompletableFuture<PredictResponse>> burst = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
          burst.add(c.predictAsync(req));
          sent++;
        }
        for (CompletableFuture<PredictResponse> f : burst) {
          try {
            f.get(60, TimeUnit.SECONDS);
            counts.merge(Code.OK, 1, Integer::sum);
          } catch (ExecutionException e) {
            ClickdException x = (ClickdException) e.getCause();
            counts.merge(x.code(), 1, Integer::sum);
            if (x.code() == Code.RESOURCE_EXHAUSTED) {
              overloaded = x.serverMessage();
            }
          }
        }
      }
    }
    assertTrue(counts.containsKey(Code.RESOURCE_EXHAUSTED) && counts.containsKey(Code.OK), counts.toString());
    assertTrue(overloaded.contains("server overloaded"), overloaded);
    assertTrue(attempts.get() == sent, attempts.get() + " attempts for " + sent + " calls: RESOURCE_EXHAUSTED was retried");
  }
}
