package dev.clickd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HashingTest {
  static Path repoFile(String rel) {
    return Path.of(System.getProperty("user.dir")).resolve("../..").resolve(rel).normalize();
  }

  private static long partKey(JsonObject part, long seed) {
    long ns = Hashing.namespaceHash(part.get("namespace").getAsString(), seed);
    if (part.has("id")) {
      return Hashing.idKey(ns, part.get("id").getAsBigInteger().longValue());
    }
    return Hashing.namedKey(ns, part.get("name").getAsString());
  }

  /** tests/data/hashing_golden.json: the vectors the C++, Python and Go tests read too. */
  @Test
  void goldenVectors() throws Exception {
    String text = Files.readString(repoFile("tests/data/hashing_golden.json"), StandardCharsets.UTF_8);
    int checked = 0;
    for (JsonElement e : JsonParser.parseString(text).getAsJsonObject().getAsJsonArray("vectors")) {
      JsonObject row = e.getAsJsonObject();
      long seed = row.get("seed").getAsBigInteger().longValue();
      String kind = row.get("kind").getAsString();
      long got =
          switch (kind) {
            case "xxh3" -> Hashing.xxh3(row.get("input").getAsString().getBytes(StandardCharsets.UTF_8), seed);
            case "namespace" -> Hashing.namespaceHash(row.get("namespace").getAsString(), seed);
            case "feature" -> Hashing.fold(partKey(row, seed), row.has("bits") ? row.get("bits").getAsInt() : 0);
            case "bias" -> Hashing.biasKey(seed);
            case "cross" -> {
              var parts = row.getAsJsonArray("parts");
              long[] keys = new long[parts.size()];
              for (int i = 0; i < keys.length; i++) {
                keys[i] = partKey(parts.get(i).getAsJsonObject(), seed);
              }
              yield Hashing.crossKey(seed, keys);
            }
            default -> throw new AssertionError("unknown kind " + kind);
          };
      long want = Long.parseUnsignedLong(row.get("key").getAsString(), 16);
      assertEquals(Long.toHexString(want), Long.toHexString(got), row.toString());
      checked++;
    }
    assertTrue(checked >= 15);
  }

  @Test
  void hasherRules() {
    Hashing h = new Hashing(0, 0, true, List.of(List.of("user", "ad")));
    Map<Long, Float> keys =
        h.hash(
            Example.builder().add("user", Feature.name("country=FR")).build(),
            Example.builder().add("ad", Feature.name("campaign=7")).build());
    assertEquals(
        Map.of(0x4E7766629EAD153DL, 1f, 0xD5A62F69DD533E23L, 1f, 0xEC2EA4DE06D3DA4EL, 1f, 0x0D3C7B1005D35E2EL, 1f),
        keys);
    Map<Long, Float> folded =
        new Hashing(0, 18, false, List.of()).hash(Example.builder().add("user", Feature.name("country=FR")).build(), null);
    assertEquals(Map.of(0x1153DL, 1f), folded);
    Map<Long, Float> vals =
        new Hashing(0, 0, false, List.of(List.of("a", "b")))
            .hash(
                Example.builder()
                    .add("a", Feature.name("x", 0.5f), Feature.name("zero", 0f), Feature.name("big", 3e38f), Feature.name("big", 3e38f))
                    .add("b", Feature.name("y", 3f))
                    .build(),
                null);
    long x = Hashing.namedKey(Hashing.namespaceHash("a", 0), "x");
    long y = Hashing.namedKey(Hashing.namespaceHash("b", 0), "y");
    assertEquals(1.5f, vals.get(Hashing.crossKey(0, x, y)));
    assertFalse(vals.containsKey(Hashing.namedKey(Hashing.namespaceHash("a", 0), "zero")));
    assertEquals(Float.MAX_VALUE, vals.get(Hashing.namedKey(Hashing.namespaceHash("a", 0), "big")));
  }
}
