package dev.clickd.client;

import clickd.v1.ClickdOuterClass.HashingConfig;
import clickd.v1.ClickdOuterClass.ModelConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.openhft.hashing.LongHashFunction;

/**
 * Client-side feature hashing, bit for bit the server's (docs/hashing.md,
 * core/features/hasher.cc), with XXH3-64:
 *
 * <pre>
 *   namespace hash     ns  = XXH3_64(namespace name, seed)
 *   named feature      key = XXH3_64(feature name, ns)
 *   pre-hashed id      key = XXH3_64(LE64(id), ns)
 *   bias               key = XXH3_64("clickd.bias", seed), value 1
 *   cross of 2 or 3    key = XXH3_64(LE64(k1) || LE64(k2) [|| LE64(k3)], seed)
 *   folding (bits b)   key &amp; (2^b - 1), last, to every key
 * </pre>
 *
 * Keys are unsigned 64-bit values held in a {@code long}. The golden vectors of
 * tests/data/hashing_golden.json are checked in HashingTest. Immutable, so an
 * instance is safe to share between threads.
 */
public final class Hashing {
  private static final byte[] BIAS = "clickd.bias".getBytes(StandardCharsets.UTF_8);

  private final long seed;
  private final int bits;
  private final boolean bias;
  private final List<List<String>> interactions;

  /** The hasher of a model's hashing config: seed, bits, bias, interactions. */
  public Hashing(long seed, int bits, boolean bias, List<List<String>> interactions) {
    if (bits < 0 || bits > 62) {
      throw new IllegalArgumentException("bits is " + bits + "; must be 0 (no folding) or 1..62");
    }
    for (List<String> names : interactions) {
      if (names.size() < 2 || names.size() > 3) {
        throw new IllegalArgumentException("an interaction names 2 or 3 namespaces");
      }
    }
    this.seed = seed;
    this.bits = bits;
    this.bias = bias;
    this.interactions = List.copyOf(interactions);
  }

  /** The hasher of a model's config (GetModel's ModelInfo.getConfig()). */
  public static Hashing fromConfig(ModelConfig config) {
    HashingConfig h = config.getHashing();
    List<List<String>> interactions = new ArrayList<>();
    h.getInteractionsList().forEach(i -> interactions.add(List.copyOf(i.getNamespacesList())));
    return new Hashing(h.getSeed(), h.getBits(), !h.hasBias() || h.getBias(), interactions);
  }

  /** XXH3-64 of {@code data} with a 64-bit seed. */
  public static long xxh3(byte[] data, long seed) {
    return LongHashFunction.xx3(seed).hashBytes(data);
  }

  public static long namespaceHash(String name, long seed) {
    return xxh3(name.getBytes(StandardCharsets.UTF_8), seed);
  }

  public static long namedKey(long ns, String name) {
    return xxh3(name.getBytes(StandardCharsets.UTF_8), ns);
  }

  public static long idKey(long ns, long id) {
    return xxh3(le64(id), ns);
  }

  public static long biasKey(long seed) {
    return xxh3(BIAS, seed);
  }

  public static long crossKey(long seed, long... keys) {
    if (keys.length < 2 || keys.length > 3) {
      throw new IllegalArgumentException("a cross has 2 or 3 keys, not " + keys.length);
    }
    return xxh3(le64(keys), seed);
  }

  public static long fold(long key, int bits) {
    return bits == 0 ? key : key & ((1L << bits) - 1);
  }

  private static byte[] le64(long... keys) {
    ByteBuffer b = ByteBuffer.allocate(8 * keys.length).order(ByteOrder.LITTLE_ENDIAN);
    for (long k : keys) {
      b.putLong(k);
    }
    return b.array();
  }

  private static float saturate(float x) {
    if (x > Float.MAX_VALUE) {
      return Float.MAX_VALUE;
    }
    if (x < -Float.MAX_VALUE) {
      return -Float.MAX_VALUE;
    }
    return x;
  }

  private record KeyValue(long key, float value) {}

  /**
   * The example's keys and values (a context and a candidate; either may be
   * null): exactly the coordinates the server learns or scores, in order of
   * first appearance. Zero values drop; crosses cross the unfolded keys of
   * the namespaces each interaction names (pooled in order of appearance;
   * adjacent equal names cross strictly increasing positions); the bias is
   * added; keys fold; repeated keys merge by float addition, saturating.
   */
  public Map<Long, Float> hash(Example context, Example candidate) {
    List<KeyValue> plain = new ArrayList<>();
    Map<String, List<KeyValue>> pooled = new HashMap<>();
    for (Example e : new Example[] {context, candidate}) {
      if (e == null) {
        continue;
      }
      for (Example.Namespace ns : e.namespaces()) {
        long nsHash = namespaceHash(ns.name(), seed);
        List<KeyValue> pool = pooled.computeIfAbsent(ns.name(), k -> new ArrayList<>());
        for (Feature f : ns.features()) {
          if (f.value() == 0) {
            continue;
          }
          long k = f.isId() ? idKey(nsHash, f.id()) : namedKey(nsHash, f.name());
          plain.add(new KeyValue(k, f.value()));
          pool.add(new KeyValue(k, f.value()));
        }
      }
    }
    for (List<String> names : interactions) {
      crosses(names, pooled, plain);
    }
    if (bias) {
      plain.add(new KeyValue(biasKey(seed), 1f));
    }
    Map<Long, Float> out = new LinkedHashMap<>();
    for (KeyValue kv : plain) {
      out.merge(fold(kv.key(), bits), kv.value(), (a, b) -> saturate(a + b));
    }
    return out;
  }

  private void crosses(List<String> names, Map<String, List<KeyValue>> pooled, List<KeyValue> out) {
    List<List<KeyValue>> terms = new ArrayList<>();
    for (String n : names) {
      terms.add(pooled.getOrDefault(n, List.of()));
    }
    boolean same1 = names.get(1).equals(names.get(0));
    boolean same2 = names.size() == 3 && names.get(2).equals(names.get(1));
    for (int a = 0; a < terms.get(0).size(); a++) {
      KeyValue ta = terms.get(0).get(a);
      for (int b = same1 ? a + 1 : 0; b < terms.get(1).size(); b++) {
        KeyValue tb = terms.get(1).get(b);
        float ab = saturate(ta.value() * tb.value());
        if (names.size() == 2) {
          out.add(new KeyValue(crossKey(seed, ta.key(), tb.key()), ab));
          continue;
        }
        for (int c = same2 ? b + 1 : 0; c < terms.get(2).size(); c++) {
          KeyValue tc = terms.get(2).get(c);
          out.add(new KeyValue(crossKey(seed, ta.key(), tb.key(), tc.key()), saturate(ab * tc.value())));
        }
      }
    }
  }
}
