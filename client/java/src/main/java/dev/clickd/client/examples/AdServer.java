package dev.clickd.client.examples;

import clickd.v1.ClickdOuterClass.FeedbackResponse;
import clickd.v1.ClickdOuterClass.ModelConfig;
import clickd.v1.ClickdOuterClass.PredictResponse;
import dev.clickd.client.ClickdClient;
import dev.clickd.client.ClickdException;
import dev.clickd.client.Example;
import dev.clickd.client.Feature;
import dev.clickd.client.Requests;
import dev.clickd.client.Wire;
import io.grpc.Status;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * The ad-server loop of docs/client_java.md against a running clickd: creates
 * the model with the impression-to-click loop if it does not exist, ranks
 * candidates with Predict, logs the impression of the ad it shows
 * (log_impressions), sends the clicks with Feedback under an idempotency key,
 * twice (the second is answered duplicate), and prints a JSON summary as its
 * last line. Flags: --server=HOST:PORT --model=M [--pages=N] [--token=T].
 */
public final class AdServer {
  private AdServer() {}

  record Ad(long id, int campaign, double bid) {}

  public static void main(String[] args) {
    String server = "127.0.0.1:50051";
    String model = "ctr";
    String token = "";
    int pages = 60;
    for (String a : args) {
      if (a.startsWith("--server=")) {
        server = a.substring(9);
      } else if (a.startsWith("--model=")) {
        model = a.substring(8);
      } else if (a.startsWith("--pages=")) {
        pages = Integer.parseInt(a.substring(8));
      } else if (a.startsWith("--token=")) {
        token = a.substring(8);
      } else {
        System.err.println("unknown flag " + a + "; want --server=HOST:PORT --model=M [--pages=N] [--token=T]");
        System.exit(2);
      }
    }
    if (pages < 1 || pages > 100000) {
      System.err.println("--pages is " + pages + "; must be in [1, 100000]");
      System.exit(2);
    }
    ClickdClient.Builder builder = ClickdClient.builder(server).timeout(Duration.ofSeconds(2));
    if (!token.isEmpty()) {
      builder.token(token);
    }
    try (ClickdClient client = builder.build()) {
      // Once: impressions wait an hour for their click; unclicked, they are
      // learned as negatives at the hour (wait_negative, the default policy).
      ModelConfig config =
          ClickdClient.parseModelConfig(
              "{\"name\": \"" + model + "\", \"ftrl\": {\"alpha\": 0.05}, \"feedback\": {\"ttl_seconds\": 3600}}");
      try {
        client.createModel(config);
      } catch (ClickdException e) {
        if (e.code() != Status.Code.ALREADY_EXISTS) {
          throw e;
        }
      }
      List<Ad> inventory = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        inventory.add(new Ad(1000 + i, i % 3, 1 + 0.1 * i));
      }
      List<Long> shown = new ArrayList<>();
      String[] countries = {"FR", "DE", "US"};
      for (int i = 0; i < pages; i++) {
        Example context =
            Example.builder()
                .add("user", Feature.name("country=" + countries[i % 3]), Feature.name("age", (20 + i % 40) / 100f))
                .add("page", Feature.name("s" + (i % 4)))
                .build();
        Long id = serve(client, model, context, inventory);
        if (id != null) {
          shown.add(id);
        }
      }
      // Clicks come later: every third shown ad was clicked. Each is sent
      // with an idempotency key, and sent twice, as a retrying click pipeline
      // would; the second answer says duplicate and learns nothing.
      long joined = 0;
      int duplicate = 0;
      for (int i = 0; i < shown.size(); i += 3) {
        for (int attempt = 0; attempt < 2; attempt++) {
          try {
            FeedbackResponse answer = onClick(client, model, shown.get(i));
            joined += answer.getJoined();
            duplicate += answer.getDuplicate() ? 1 : 0;
          } catch (ClickdException e) {
            System.err.println("clickd: " + e.getMessage()); // a real ad server requeues it
          }
        }
      }
      long updates = client.getModel(model, false).getUpdates();
      System.out.printf(
          "{\"updates\": %d, \"joined\": %d, \"duplicate\": %d, \"pages\": %d, \"shown\": %d, \"model\": \"%s\"}%n",
          updates, joined, duplicate, pages, shown.size(), model);
    }
  }

  /**
   * Ranks with a plain Predict (retried, logs nothing), then logs the
   * impression of the ad shown (one attempt, never retried). Returns its
   * impression id, or null when nothing can be labelled.
   */
  static Long serve(ClickdClient client, String model, Example context, List<Ad> inventory) {
    List<Example> candidates = new ArrayList<>();
    for (Ad ad : inventory) {
      candidates.add(Example.builder().add("ad", Feature.id(ad.id()), Feature.name("campaign=" + ad.campaign())).build());
    }
    try {
      PredictResponse scores = client.predict(Requests.predict(model, context, candidates, Wire.FEATURES, 0).build());
      int best = 0;
      for (int i = 0; i < candidates.size(); i++) {
        if (scores.getPredictions(i).getPrediction() * inventory.get(i).bid()
            > scores.getPredictions(best).getPrediction() * inventory.get(best).bid()) {
          best = i;
        }
      }
      PredictResponse logged =
          client.predict(
              Requests.predict(model, context, candidates.subList(best, best + 1), Wire.FEATURES, 0)
                  .setLogImpressions(true)
                  .build());
      return logged.getPredictions(0).getImpressionId();
    } catch (ClickdException e) { // UNAVAILABLE after retries, RESOURCE_EXHAUSTED, ...
      System.err.println("clickd: " + e.getMessage());
      return null;
    }
  }

  static FeedbackResponse onClick(ClickdClient client, String model, long impressionId) {
    long now = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    return client.feedback(
        Requests.feedback(model, List.of(Requests.click(impressionId, 1, now)))
            .setIdempotencyKey("click-" + model + "-" + Long.toUnsignedString(impressionId))
            .build());
  }
}
