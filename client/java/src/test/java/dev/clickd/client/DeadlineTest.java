package dev.clickd.client;

import static org.junit.jupiter.api.Assertions.assertTrue;

import clickd.v1.ClickdOuterClass.FeedbackRequest;
import clickd.v1.ClickdOuterClass.FeedbackResponse;
import clickd.v1.ClickdOuterClass.ModelConfig;
import clickd.v1.ClickdOuterClass.PredictResponse;
import clickd.v1.ClickdOuterClass.UpdateAck;
import clickd.v1.ClickdOuterClass.UpdateRequest;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every call and stream leaves with a deadline: the client's timeout, or the call's own. */
class DeadlineTest {
  @Test
  void everyCallHasADeadline(@TempDir Path data) throws Exception {
    Map<String, Long> leftMs = new ConcurrentHashMap<>();
    ClientInterceptor recorder =
        new ClientInterceptor() {
          @Override
          public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
            leftMs.put(
                method.getBareMethodName(),
                options.getDeadline() == null ? -1 : options.getDeadline().timeRemaining(TimeUnit.MILLISECONDS));
            return next.newCall(method, options);
          }
        };
    try (ServerProcess s = new ServerProcess("--data_dir=" + data, "--update_log_sync=none").start();
        ClickdClient c = ClickdClient.builder(s.address()).timeout(Duration.ofSeconds(7)).intercept(recorder).build()) {
      String name = c.createModel(ClickdClient.parseModelConfig("{\"name\": \"deadlines\", \"feedback\": {\"ttl_seconds\": 3600}}")).getConfig().getName();
      UpdateRequest up = ClientTest.update(name, ClientTest.ADS.get(0), 1);
      c.update(up);
      c.update(up.toBuilder().setIdempotencyKey("d1").build());
      PredictResponse shown = c.predict(Requests.predict(name, null, ClientTest.ADS, Wire.FEATURES, 0).setLogImpressions(true).build());
      c.feedback(Requests.feedback(name, List.of(Requests.click(shown.getPredictions(0).getImpressionId(), 1, 0))).build());
      c.getModel(name, true);
      c.listModels();
      c.snapshotModel(name);
      c.updateStream(List.of(up).iterator());
      try (AckedStream<UpdateRequest, UpdateAck> acked = c.openAckedUpdateStream()) {
        acked.send(up);
        acked.finish();
      }
      try (AckedStream<FeedbackRequest, FeedbackResponse> fs = c.openFeedbackStream()) {
        fs.send(Requests.feedback(name, List.of(Requests.click(shown.getPredictions(1).getImpressionId(), 0, 0))).build());
        fs.finish();
      }
      c.deleteModel(name);
      c.createModel(ModelConfig.newBuilder().setName("again").build());
      c.predict(Requests.predict("again", null, ClientTest.ADS, Wire.FEATURES, 0).build(), Duration.ofSeconds(3));
    }
    for (String m :
        List.of("Update", "Feedback", "GetModel", "ListModels", "SnapshotModel", "UpdateStream", "UpdateStreamAcked",
            "FeedbackStream", "DeleteModel", "CreateModel")) {
      Long left = leftMs.get(m);
      assertTrue(left != null && left > 5000 && left <= 7000, m + " left with " + left + " ms");
    }
    long predict = leftMs.get("Predict"); // the last Predict: its own 3 s
    assertTrue(predict > 1000 && predict <= 3000, "Predict left with " + predict + " ms");
  }
}
