package dev.clickd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import clickd.v1.ClickdOuterClass.ModelConfig;
import clickd.v1.ClickdOuterClass.UpdateRequest;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The cross-language digest check: tests/data/client_digest_examples.json
 * learned in the FEATURES and the KEYS form on two models must end in equal
 * state digests; the digest is written to $CLICKD_DIGEST_DIR/java for
 * scripts/test_clients.sh to compare with the Go and Python clients'.
 */
class DigestTest {
  static Feature feature(JsonElement f, float value) {
    if (f.isJsonArray()) {
      JsonArray pair = f.getAsJsonArray();
      return feature(pair.get(0), pair.get(1).getAsFloat());
    }
    if (f.getAsJsonPrimitive().isNumber()) {
      return Feature.id(f.getAsBigInteger().longValue(), value);
    }
    return Feature.name(f.getAsString(), value);
  }

  static Example example(JsonObject o) {
    Example.Builder b = Example.builder();
    // JSON objects are unordered: every language sorts the namespaces.
    TreeMap<String, JsonElement> sorted = new TreeMap<>();
    o.entrySet().forEach(e -> sorted.put(e.getKey(), e.getValue()));
    sorted.forEach(
        (ns, features) -> {
          List<Feature> fs = new ArrayList<>();
          features.getAsJsonArray().forEach(f -> fs.add(feature(f, 1f)));
          b.add(ns, fs);
        });
    return b.build();
  }

  @Test
  void featuresAndKeysFormsLeaveTheSameDigest() throws Exception {
    JsonObject doc =
        JsonParser.parseString(
                Files.readString(HashingTest.repoFile("tests/data/client_digest_examples.json"), StandardCharsets.UTF_8))
            .getAsJsonObject();
    try (ServerProcess s = new ServerProcess("--update_log_sync=none").start();
        ClickdClient c = ClickdClient.builder(s.address()).build()) {
      List<String> digests = new ArrayList<>();
      for (Wire wire : List.of(Wire.FEATURES, Wire.KEYS)) {
        ModelConfig config =
            ClickdClient.parseModelConfig(doc.get("model").toString()).toBuilder().setName("digest-" + wire).build();
        long seed = c.createModel(config).getConfig().getHashing().getSeed();
        for (JsonElement e : doc.getAsJsonArray("impressions")) {
          JsonObject imp = e.getAsJsonObject();
          List<Example> candidates = new ArrayList<>();
          List<Float> labels = new ArrayList<>();
          for (JsonElement cand : imp.getAsJsonArray("candidates")) {
            candidates.add(example(cand.getAsJsonArray().get(0).getAsJsonObject()));
            labels.add(cand.getAsJsonArray().get(1).getAsFloat());
          }
          c.update(
              UpdateRequest.newBuilder()
                  .setModel(config.getName())
                  .addImpressions(Requests.impression(example(imp.getAsJsonObject("context")), candidates, labels, wire, seed))
                  .build());
        }
        digests.add(c.stateDigest(config.getName()));
      }
      assertEquals(digests.get(0), digests.get(1), "features form vs keys form");
      String dir = System.getenv().getOrDefault("CLICKD_DIGEST_DIR", "");
      if (!dir.isEmpty()) {
        Files.writeString(Path.of(dir, "java"), digests.get(0) + "\n");
      }
    }
  }
}
