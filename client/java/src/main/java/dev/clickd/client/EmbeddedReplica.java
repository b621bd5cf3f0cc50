package dev.clickd.client;

import clickd.v1.ClickdOuterClass.PredictRequest;
import clickd.v1.ClickdOuterClass.PredictResponse;
import com.google.protobuf.InvalidProtocolBufferException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A read-only replica of a clickd deployment inside this JVM: Predict with no
 * RPC (docs/embedded.md). Its {@link #predict} and {@link #stateDigest} take
 * and return what {@link ClickdClient}'s do, so switching is a one-line
 * change.
 *
 * <p>It loads libclickd_embedded.so (the C ABI of embedded/clickd_embedded.h)
 * through JNA: from {@link Builder#library}, else $CLICKD_EMBEDDED_LIB, else
 * the system's library path. Errors are {@link ClickdException}s with the
 * library's code and message. Safe for concurrent use; {@link #close} waits
 * for calls under way, and later calls throw IllegalStateException.
 */
public final class EmbeddedReplica implements AutoCloseable {
  /** The C ABI; strings go as NUL-terminated UTF-8 bytes. */
  interface Abi extends Library {
    int clickd_embedded_open(
        byte[] natsUrl, byte[] streamPrefix, byte[] natsCreds, long catchUpTimeoutMs,
        PointerByReference replica, PointerByReference error);

    int clickd_embedded_predict(
        Pointer replica, byte[] request, long requestLen, PointerByReference response,
        LongByReference responseLen, PointerByReference error);

    int clickd_embedded_state_digest(
        Pointer replica, byte[] model, byte[] digest, PointerByReference error);

    long clickd_embedded_applied_version(Pointer replica);

    int clickd_embedded_wait_for_version(
        Pointer replica, long version, long timeoutMs, PointerByReference error);

    Pointer clickd_embedded_stats_json(Pointer replica);

    void clickd_embedded_close(Pointer replica);

    void clickd_embedded_free(Pointer buffer);

    Pointer clickd_embedded_metrics_text(Pointer replica);

    // size_t is a long here (LP64); NULL arrays are nulls.
    int clickd_embedded_predict_keys(
        Pointer replica, byte[] model, byte[] variant, String[] namespaces, long numNamespaces,
        long[] contextKeys, int[] contextNamespaces, float[] contextValues, long contextCount,
        long[] candidateKeys, int[] candidateNamespaces, float[] candidateValues,
        long[] candidateEnds, long numCandidates, double[] predictions, double[] margins,
        LongByReference modelVersion, PointerByReference error);
  }

  /** How long the library's Predict waits for its min_model_version (its max_version_wait). */
  static final Duration MAX_VERSION_WAIT = Duration.ofSeconds(1);

  private static final Map<String, Abi> LIBRARIES = new ConcurrentHashMap<>();

  private final Abi abi;
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private Pointer handle; // guarded by lock; null once closed

  /** What the replica reports of itself. */
  public record Stats(
      long appliedVersion,
      long streamSequence,
      double lagSeconds,
      boolean natsConnected,
      long models,
      long bootstraps,
      String broken) {}

  public static Builder builder(String natsUrl) {
    return new Builder(natsUrl);
  }

  /** Options of {@link #builder}; {@link #open} joins the deployment. */
  public static final class Builder {
    private final String natsUrl;
    private String streamPrefix = "CLICKD";
    private String natsCreds = "";
    private String library = "";
    private Duration catchUpTimeout = Duration.ofSeconds(60);

    private Builder(String natsUrl) {
      this.natsUrl = natsUrl;
    }

    /** The deployment's --nats_stream (CLICKD). */
    public Builder streamPrefix(String prefix) {
      this.streamPrefix = prefix;
      return this;
    }

    /** A NATS credentials file (JWT and NKey seed). */
    public Builder natsCreds(String path) {
      this.natsCreds = path;
      return this;
    }

    /** The path of libclickd_embedded.so. */
    public Builder library(String path) {
      this.library = path;
      return this;
    }

    /** How long open retries while NATS is unavailable, then applies the log (60 s). */
    public Builder catchUpTimeout(Duration d) {
      if (d.toMillis() < 1) {
        throw new IllegalArgumentException("catchUpTimeout is " + d + "; must be at least 1 ms");
      }
      this.catchUpTimeout = d;
      return this;
    }

    /**
     * Restores every model from the newest published snapshot and applies
     * the log (within the catch-up timeout). NOT_FOUND if the deployment's
     * log does not exist, UNAVAILABLE if NATS did not answer in time.
     */
    public EmbeddedReplica open() {
      if (natsUrl == null || natsUrl.isEmpty()) {
        throw new IllegalArgumentException("the NATS URL is empty; want nats://host:port[,...]");
      }
      String path = library;
      if (path.isEmpty()) {
        path = System.getenv().getOrDefault("CLICKD_EMBEDDED_LIB", "");
      }
      if (path.isEmpty()) {
        path = "clickd_embedded";
      }
      Abi abi = load(path);
      PointerByReference replica = new PointerByReference();
      PointerByReference error = new PointerByReference();
      int code =
          abi.clickd_embedded_open(
              cString(natsUrl), cString(streamPrefix), cString(natsCreds),
              catchUpTimeout.toMillis(), replica, error);
      check(abi, code, error);
      return new EmbeddedReplica(abi, replica.getValue());
    }
  }

  private static Abi load(String path) {
    if (Native.SIZE_T_SIZE != 8) {
      throw new UnsupportedOperationException("EmbeddedReplica needs a 64-bit size_t");
    }
    return LIBRARIES.computeIfAbsent(
        path,
        p -> {
          try {
            return Native.load(p, Abi.class);
          } catch (UnsatisfiedLinkError e) {
            throw new IllegalStateException(
                "cannot load the embedded replica's library " + p + ": " + e.getMessage()
                    + " (library(...) or $CLICKD_EMBEDDED_LIB names it; the CMake target"
                    + " clickd_embedded_shared builds it)",
                e);
          }
        });
  }

  private EmbeddedReplica(Abi abi, Pointer handle) {
    this.abi = abi;
    this.handle = handle;
  }

  private static byte[] cString(String s) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[utf8.length + 1];
    System.arraycopy(utf8, 0, out, 0, utf8.length);
    return out;
  }

  /** Throws the library's failure (code != 0) as a ClickdException; frees its message. */
  private static void check(Abi abi, int code, PointerByReference error) {
    Pointer message = error.getValue();
    String text = "";
    if (message != null) {
      text = message.getString(0, StandardCharsets.UTF_8.name());
      abi.clickd_embedded_free(message);
    }
    if (code != 0) {
      throw new ClickdException(Status.fromCodeValue(code).getCode(), text);
    }
  }

  private Pointer open() {
    if (handle == null) {
      throw new IllegalStateException("the embedded replica is closed");
    }
    return handle;
  }

  /**
   * Scores candidates as {@link ClickdClient#predict(PredictRequest)} does and
   * returns the same PredictResponse (model_version: the applied stream
   * sequence), on this thread. log_impressions is FAILED_PRECONDITION; a
   * min_model_version not applied yet is waited for up to 1 s (then
   * UNAVAILABLE, as a server's --max_version_wait).
   */
  public PredictResponse predict(PredictRequest request) {
    return predict(request, null);
  }

  /**
   * As {@link #predict(PredictRequest)}; a callTimeout shorter than the
   * library's 1 s bounds the min_model_version wait (then DEADLINE_EXCEEDED,
   * as a gRPC caller's deadline would).
   */
  public PredictResponse predict(PredictRequest request, Duration callTimeout) {
    byte[] data = request.toByteArray();
    lock.readLock().lock();
    try {
      Pointer h = open();
      long version = request.getMinModelVersion();
      if (callTimeout != null && version != 0 && callTimeout.compareTo(MAX_VERSION_WAIT) < 0
          && Long.compareUnsigned(abi.clickd_embedded_applied_version(h), version) < 0) {
        PointerByReference error = new PointerByReference();
        check(abi, abi.clickd_embedded_wait_for_version(
            h, version, Math.max(0, callTimeout.toMillis()), error), error);
      }
      PointerByReference response = new PointerByReference();
      LongByReference length = new LongByReference();
      PointerByReference error = new PointerByReference();
      check(abi, abi.clickd_embedded_predict(h, data, data.length, response, length, error), error);
      Pointer out = response.getValue();
      try {
        return PredictResponse.parseFrom(out.getByteBuffer(0, length.getValue()));
      } catch (InvalidProtocolBufferException e) {
        throw new ClickdException(Status.Code.INTERNAL, "the library's response: " + e.getMessage());
      } finally {
        abi.clickd_embedded_free(out);
      }
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * Predict without protobuf (the C ABI's clickd_embedded_predict_keys): the request's features
   * as keys the caller hashed ({@link Hashing#namedKey}, {@link Hashing#idKey} of {@link
   * Hashing#namespaceHash}; the keys wire form), in flat arrays. Context key i is contextKeys[i]
   * in namespaces[contextNamespaces[i]] with value contextValues[i] (null: every value 1);
   * candidate c's keys are candidateKeys[candidateEnds[c-1] .. candidateEnds[c]) (from 0 for c =
   * 0), namespaced and valued alike. Fills predictions (and margins, if not null) with one value
   * per candidate and returns the model version that scored: the answer {@link
   * #predict(PredictRequest)} gives for the same request in the keys wire form, bit for bit.
   * variant null or "": the champion. Errors are predict's; on one, nothing is written.
   */
  public long predictKeys(String model, String variant, String[] namespaces, long[] contextKeys,
      int[] contextNamespaces, float[] contextValues, long[] candidateKeys,
      int[] candidateNamespaces, float[] candidateValues, long[] candidateEnds,
      double[] predictions, double[] margins) {
    int n = candidateEnds.length;
    if (contextNamespaces.length != contextKeys.length
        || (contextValues != null && contextValues.length != contextKeys.length)
        || candidateNamespaces.length != candidateKeys.length
        || (candidateValues != null && candidateValues.length != candidateKeys.length)
        || (n > 0 && candidateEnds[n - 1] != candidateKeys.length)
        || predictions.length < n || (margins != null && margins.length < n)) {
      throw new ClickdException(Status.Code.INVALID_ARGUMENT,
          "predictKeys: namespaces and values must match their keys, the last candidate end must"
              + " be the candidate key count, and predictions (and margins) need room for " + n);
    }
    lock.readLock().lock();
    try {
      LongByReference version = new LongByReference();
      PointerByReference error = new PointerByReference();
      check(abi, abi.clickd_embedded_predict_keys(open(), cString(model),
          cString(variant == null ? "" : variant), namespaces, namespaces.length, contextKeys,
          contextNamespaces, contextValues, contextKeys.length, candidateKeys,
          candidateNamespaces, candidateValues, candidateEnds, n, predictions, margins, version,
          error), error);
      return version.getValue();
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The model's state digest: the same 16 hex digits as {@link ClickdClient#stateDigest}. */
  public String stateDigest(String model) {
    lock.readLock().lock();
    try {
      byte[] digest = new byte[17];
      PointerByReference error = new PointerByReference();
      check(abi, abi.clickd_embedded_state_digest(open(), cString(model), digest, error), error);
      return new String(digest, 0, 16, StandardCharsets.US_ASCII);
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The stream sequence applied: every Predict answered now reflects every record up to it. */
  public long appliedVersion() {
    lock.readLock().lock();
    try {
      return abi.clickd_embedded_applied_version(open());
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Waits until appliedVersion() >= version; DEADLINE_EXCEEDED naming both if not in time. */
  public void waitForVersion(long version, Duration timeout) {
    lock.readLock().lock();
    try {
      PointerByReference error = new PointerByReference();
      check(abi, abi.clickd_embedded_wait_for_version(
          open(), version, Math.max(0, timeout.toMillis()), error), error);
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Applied and newest sequence, lag, NATS connected, models, bootstraps, why applying stopped. */
  public Stats stats() {
    lock.readLock().lock();
    try {
      Pointer raw = abi.clickd_embedded_stats_json(open());
      if (raw == null) {
        throw new ClickdException(Status.Code.RESOURCE_EXHAUSTED, "out of memory for the statistics");
      }
      String json;
      try {
        json = raw.getString(0, StandardCharsets.UTF_8.name());
      } finally {
        abi.clickd_embedded_free(raw);
      }
      Matcher m = STATS.matcher(json);
      if (!m.matches()) {
        throw new ClickdException(Status.Code.INTERNAL, "the library's statistics: " + json);
      }
      return new Stats(
          Long.parseUnsignedLong(m.group(1)),
          Long.parseUnsignedLong(m.group(2)),
          Double.parseDouble(m.group(3)),
          Boolean.parseBoolean(m.group(4)),
          Long.parseUnsignedLong(m.group(5)),
          Long.parseUnsignedLong(m.group(6)),
          unescape(m.group(7)));
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The one JSON object clickd_embedded_stats_json writes, its keys in its order. */
  private static final Pattern STATS =
      Pattern.compile(
          "\\{\"applied_version\": (\\d+), \"stream_sequence\": (\\d+), \"lag_seconds\": ([-0-9.e+]+),"
              + " \"nats_connected\": (true|false), \"models\": (\\d+), \"bootstraps\": (\\d+),"
              + " \"broken\": \"((?:[^\"\\\\]|\\\\.)*)\"\\}");

  /** A JSON string's body as the library escapes it (quotes, backslashes, \\u00XX). */
  private static String unescape(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '\\' || i + 1 == s.length()) {
        out.append(c);
      } else if (s.charAt(i + 1) == 'u' && i + 5 < s.length()) {
        out.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
        i += 5;
      } else {
        out.append(s.charAt(++i));
      }
    }
    return out.toString();
  }

  /** Stops applying, disconnects and frees the models; a second close does nothing. */
  @Override
  public void close() {
    lock.writeLock().lock();
    try {
      if (handle != null) {
        abi.clickd_embedded_close(handle);
        handle = null;
      }
    } finally {
      lock.writeLock().unlock();
    }
  }

  /**
   * The replica's metrics (clickd_embedded_*, docs/embedded.md#metrics) in Prometheus' text
   * exposition format 0.0.4, for the host's own /metrics endpoint (serve it with Content-Type
   * "text/plain; version=0.0.4; charset=utf-8", or append it to what the host's registry writes).
   */
  public String metricsText() {
    lock.readLock().lock();
    try {
      Pointer raw = abi.clickd_embedded_metrics_text(open());
      if (raw == null) {
        throw new ClickdException(Status.Code.RESOURCE_EXHAUSTED, "out of memory for the metrics");
      }
      try {
        return raw.getString(0, StandardCharsets.UTF_8.name());
      } finally {
        abi.clickd_embedded_free(raw);
      }
    } finally {
      lock.readLock().unlock();
    }
  }
}
