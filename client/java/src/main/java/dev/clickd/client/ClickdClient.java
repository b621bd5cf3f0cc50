package dev.clickd.client;

import clickd.v1.ClickdGrpc;
import clickd.v1.ClickdOuterClass.CreateModelRequest;
import clickd.v1.ClickdOuterClass.DeleteModelRequest;
import clickd.v1.ClickdOuterClass.FeedbackRequest;
import clickd.v1.ClickdOuterClass.FeedbackResponse;
import clickd.v1.ClickdOuterClass.GetModelRequest;
import clickd.v1.ClickdOuterClass.ListModelsRequest;
import clickd.v1.ClickdOuterClass.ModelConfig;
import clickd.v1.ClickdOuterClass.ModelInfo;
import clickd.v1.ClickdOuterClass.PredictRequest;
import clickd.v1.ClickdOuterClass.PredictResponse;
import clickd.v1.ClickdOuterClass.SnapshotModelRequest;
import clickd.v1.ClickdOuterClass.SnapshotModelResponse;
import clickd.v1.ClickdOuterClass.UpdateRequest;
import clickd.v1.ClickdOuterClass.UpdateResponse;
import clickd.v1.ClickdOuterClass.UpdateStreamResponse;
import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptor;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.AbstractStub;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A clickd client over one gRPC channel (grpc-java, Netty shaded). It puts a
 * deadline on every call, retries the calls that are safe to send twice,
 * throws {@link ClickdException} with the gRPC code and message, and sends a
 * bearer token and TLS credentials when given. Its retry rules are the C++,
 * Python and Go clients' (docs/client_python.md, "Deadlines and retries"):
 *
 * <pre>
 *   Predict                  UNAVAILABLE, one deadline for every attempt;
 *                            never with log_impressions (a lost reply's ids
 *                            could never be labelled)
 *   Feedback                 UNAVAILABLE; with an idempotency key also
 *                            DEADLINE_EXCEEDED, each attempt with its own deadline
 *   Update with a key        UNAVAILABLE and DEADLINE_EXCEEDED, each attempt
 *                            with its own deadline
 *   Update without a key,    never
 *   streams, model calls
 * </pre>
 *
 * Thread safety: a client is safe for concurrent use by any number of
 * threads; a stream object belongs to one thread. Close it (try-with-resources)
 * to release the channel.
 */
public final class ClickdClient implements AutoCloseable {
  private final ManagedChannel channel;
  private final Duration timeout;
  private final RetryPolicy retry;
  private final CallCredentials credentials;
  private final Sleeper sleeper;
  private final ScheduledExecutorService scheduler;
  private final ClickdGrpc.ClickdBlockingStub blocking;
  private final ClickdGrpc.ClickdFutureStub future;
  private final ClickdGrpc.ClickdStub async;

  /** Sleeps between attempts; tests replace it to count and record the sleeps. */
  @FunctionalInterface
  public interface Sleeper {
    void sleep(Duration d) throws InterruptedException;
  }

  private ClickdClient(Builder b) {
    this.timeout = b.timeout;
    this.retry = b.retry;
    this.sleeper = b.sleeper;
    this.credentials = b.token == null ? null : new BearerCredentials(b.token);
    ChannelCredentials creds;
    if (b.tls) {
      TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
      try {
        if (b.rootPem != null) {
          tls.trustManager(new ByteArrayInputStream(b.rootPem));
        }
        if (b.certPem != null) {
          tls.keyManager(new ByteArrayInputStream(b.certPem), new ByteArrayInputStream(b.keyPem));
        }
      } catch (IOException e) {
        throw new IllegalArgumentException("bad PEM: " + e.getMessage(), e);
      }
      creds = tls.build();
    } else {
      if (b.serverName != null) {
        throw new IllegalArgumentException("serverName needs TLS");
      }
      creds = InsecureChannelCredentials.create();
    }
    var cb = Grpc.newChannelBuilder(b.target, creds);
    if (b.serverName != null) {
      cb.overrideAuthority(b.serverName);
    }
    cb.intercept(b.interceptors);
    this.channel = cb.build();
    // One daemon thread schedules the async calls' backoffs; it never blocks.
    this.scheduler =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "clickd-retry");
              t.setDaemon(true);
              return t;
            });
    this.blocking = withCredentials(ClickdGrpc.newBlockingStub(channel));
    this.future = withCredentials(ClickdGrpc.newFutureStub(channel));
    this.async = withCredentials(ClickdGrpc.newStub(channel));
  }

  private <S extends AbstractStub<S>> S withCredentials(S stub) {
    return credentials == null ? stub : stub.withCallCredentials(credentials);
  }

  public static Builder builder(String target) {
    return new Builder(target);
  }

  /** Configures a client; every option is optional but the target. */
  public static final class Builder {
    private final String target;
    private Duration timeout = Duration.ofSeconds(5);
    private RetryPolicy retry = RetryPolicy.defaults();
    private String token;
    private boolean tls;
    private byte[] rootPem;
    private byte[] certPem;
    private byte[] keyPem;
    private String serverName;
    private Sleeper sleeper = d -> Thread.sleep(d.toMillis(), d.toNanosPart() % 1_000_000);
    private final List<ClientInterceptor> interceptors = new ArrayList<>();

    private Builder(String target) {
      if (target == null || target.isEmpty()) {
        throw new IllegalArgumentException("target is empty; want host:port");
      }
      this.target = target;
    }

    /**
     * Every call's deadline (5 s by default): for Predict and an unkeyed
     * Feedback it covers every attempt and backoff, for a keyed Update or
     * Feedback it is each attempt's, for a stream the whole stream.
     */
    public Builder timeout(Duration d) {
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException("timeout is " + d + "; must be positive");
      }
      timeout = d;
      return this;
    }

    public Builder retryPolicy(RetryPolicy p) {
      retry = p;
      return this;
    }

    /** Sends {@code authorization: Bearer TOKEN} on every call, streams included. */
    public Builder token(String t) {
      if (t.isEmpty() || t.chars().anyMatch(Character::isWhitespace)) {
        throw new IllegalArgumentException("token must be non-empty and have no spaces");
      }
      token = t;
      return this;
    }

    /** Uses TLS, trusting the CA in rootPem (null: the system's roots). */
    public Builder tls(byte[] rootPem) {
      tls = true;
      this.rootPem = rootPem;
      return this;
    }

    /** Presents a client certificate (mTLS); implies TLS. */
    public Builder clientCertificate(byte[] certPem, byte[] keyPem) {
      tls = true;
      this.certPem = certPem;
      this.keyPem = keyPem;
      return this;
    }

    /** Verifies the server's certificate against this name instead of the target's host. */
    public Builder serverName(String name) {
      serverName = name;
      return this;
    }

    /** Adds gRPC client interceptors to the channel (metrics, tracing, the tests' recorders). */
    public Builder intercept(ClientInterceptor... more) {
      interceptors.addAll(List.of(more));
      return this;
    }

    public Builder sleeper(Sleeper s) {
      sleeper = s;
      return this;
    }

    public ClickdClient build() {
      return new ClickdClient(this);
    }
  }

  private static final class BearerCredentials extends CallCredentials {
    private static final Metadata.Key<String> AUTHORIZATION =
        Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    private final String bearer;

    BearerCredentials(String token) {
      this.bearer = "Bearer " + token;
    }

    @Override
    public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
      Metadata m = new Metadata();
      m.put(AUTHORIZATION, bearer);
      applier.apply(m);
    }
  }

  /** Closes the channel; calls under way are cancelled. */
  @Override
  public void close() {
    scheduler.shutdownNow();
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The generated blocking stub, with the token but without deadlines or retries. */
  public ClickdGrpc.ClickdBlockingStub blockingStub() {
    return blocking;
  }

  private ClickdGrpc.ClickdBlockingStub blockingFor(Duration d) {
    return blocking.withDeadlineAfter(d.toNanos(), TimeUnit.NANOSECONDS);
  }

  private <T> T once(Function<ClickdGrpc.ClickdBlockingStub, T> call, Duration d) {
    try {
      return call.apply(blockingFor(d));
    } catch (RuntimeException e) {
      throw ClickdException.from(e);
    }
  }

  /**
   * Runs a unary call, retrying UNAVAILABLE per the policy. Without keyed one
   * deadline covers every attempt and backoff. A keyed call (an Update or
   * Feedback with an idempotency key) is also retried on DEADLINE_EXCEEDED,
   * each attempt with a deadline of its own: the server may have applied an
   * attempt whose deadline passed, and the key makes sending it again safe.
   */
  private <T> T retried(Function<ClickdGrpc.ClickdBlockingStub, T> call, boolean keyed, Duration d) {
    long deadline = System.nanoTime() + d.toNanos();
    for (int attempt = 1; ; attempt++) {
      if (keyed && attempt > 1) {
        deadline = System.nanoTime() + d.toNanos();
      }
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        throw new ClickdException(Status.Code.DEADLINE_EXCEEDED, "the deadline passed between attempts");
      }
      ClickdException error;
      try {
        return call.apply(blocking.withDeadlineAfter(remaining, TimeUnit.NANOSECONDS));
      } catch (RuntimeException e) {
        error = ClickdException.from(e);
      }
      boolean retriable =
          error.code() == Status.Code.UNAVAILABLE
              || (keyed && error.code() == Status.Code.DEADLINE_EXCEEDED);
      if (!retriable || attempt >= retry.maxAttempts()) {
        throw error;
      }
      Duration backoff = retry.jittered(attempt);
      if (!keyed && System.nanoTime() + backoff.toNanos() >= deadline) {
        throw error;
      }
      try {
        sleeper.sleep(backoff);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw error;
      }
    }
  }

  // --- blocking calls -----------------------------------------------------

  /**
   * Scores candidates; retried on UNAVAILABLE unless it logs impressions. A
   * Predict with log_impressions is never retried: an attempt whose reply was
   * lost may have logged them, and their ids, lost with it, could never be
   * labelled; a retry would log every candidate again under new ids.
   */
  public PredictResponse predict(PredictRequest request) {
    return predict(request, timeout);
  }

  public PredictResponse predict(PredictRequest request, Duration callTimeout) {
    if (request.getLogImpressions()) {
      return once(s -> s.predict(request), callTimeout);
    }
    return retried(s -> s.predict(request), false, callTimeout);
  }

  /** Learns examples then impressions; retried only with an idempotency key. */
  public UpdateResponse update(UpdateRequest request) {
    return update(request, timeout);
  }

  public UpdateResponse update(UpdateRequest request, Duration callTimeout) {
    if (request.getIdempotencyKey().isEmpty()) {
      return once(s -> s.update(request), callTimeout);
    }
    return retried(s -> s.update(request), true, callTimeout);
  }

  /**
   * Labels logged impressions. Retried on UNAVAILABLE (the server joins one
   * label per impression); with an idempotency key also on DEADLINE_EXCEEDED.
   */
  public FeedbackResponse feedback(FeedbackRequest request) {
    return feedback(request, timeout);
  }

  public FeedbackResponse feedback(FeedbackRequest request, Duration callTimeout) {
    return retried(s -> s.feedback(request), !request.getIdempotencyKey().isEmpty(), callTimeout);
  }

  /** Creates a model; never retried. */
  public ModelInfo createModel(ModelConfig config) {
    return once(s -> s.createModel(CreateModelRequest.newBuilder().setConfig(config).build()), timeout)
        .getModel();
  }

  /** Parses a ModelConfig from protobuf JSON; unknown fields are errors. */
  public static ModelConfig parseModelConfig(String json) {
    ModelConfig.Builder b = ModelConfig.newBuilder();
    try {
      JsonFormat.parser().merge(json, b);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("model config: " + e.getMessage(), e);
    }
    return b.build();
  }

  public ModelInfo getModel(String name, boolean stateDigest) {
    GetModelRequest r = GetModelRequest.newBuilder().setModel(name).setStateDigest(stateDigest).build();
    return once(s -> s.getModel(r), timeout).getModel();
  }

  /** The model's state digest (16 hex digits); reads the whole model. */
  public String stateDigest(String name) {
    return getModel(name, true).getStateDigest();
  }

  public List<ModelInfo> listModels() {
    return once(s -> s.listModels(ListModelsRequest.getDefaultInstance()), timeout).getModelsList();
  }

  public void deleteModel(String name) {
    once(s -> s.deleteModel(DeleteModelRequest.newBuilder().setModel(name).build()), timeout);
  }

  /** Writes a snapshot now (the server needs --data_dir). */
  public SnapshotModelResponse snapshotModel(String name) {
    return once(s -> s.snapshotModel(SnapshotModelRequest.newBuilder().setModel(name).build()), timeout);
  }

  // --- async calls: the same rules, without blocking a thread -------------

  public CompletableFuture<PredictResponse> predictAsync(PredictRequest request) {
    if (request.getLogImpressions()) {
      return asyncRetried(s -> s.predict(request), false, 1);
    }
    return asyncRetried(s -> s.predict(request), false, retry.maxAttempts());
  }

  public CompletableFuture<UpdateResponse> updateAsync(UpdateRequest request) {
    boolean keyed = !request.getIdempotencyKey().isEmpty();
    return asyncRetried(s -> s.update(request), keyed, keyed ? retry.maxAttempts() : 1);
  }

  public CompletableFuture<FeedbackResponse> feedbackAsync(FeedbackRequest request) {
    return asyncRetried(
        s -> s.feedback(request), !request.getIdempotencyKey().isEmpty(), retry.maxAttempts());
  }

  private <T> CompletableFuture<T> asyncRetried(
      Function<ClickdGrpc.ClickdFutureStub, ListenableFuture<T>> call, boolean keyed, int attempts) {
    CompletableFuture<T> result = new CompletableFuture<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    attemptAsync(call, keyed, attempts, 1, deadline, result);
    return result;
  }

  private <T> void attemptAsync(
      Function<ClickdGrpc.ClickdFutureStub, ListenableFuture<T>> call,
      boolean keyed,
      int attempts,
      int attempt,
      long overallDeadline,
      CompletableFuture<T> result) {
    long deadline = keyed ? System.nanoTime() + timeout.toNanos() : overallDeadline;
    long remaining = deadline - System.nanoTime();
    if (remaining <= 0) {
      result.completeExceptionally(
          new ClickdException(Status.Code.DEADLINE_EXCEEDED, "the deadline passed between attempts"));
      return;
    }
    ListenableFuture<T> f = call.apply(future.withDeadlineAfter(remaining, TimeUnit.NANOSECONDS));
    Futures.addCallback(
        f,
        new FutureCallback<T>() {
          @Override
          public void onSuccess(T value) {
            result.complete(value);
          }

          @Override
          public void onFailure(Throwable t) {
            ClickdException error = ClickdException.from(t);
            boolean retriable =
                error.code() == Status.Code.UNAVAILABLE
                    || (keyed && error.code() == Status.Code.DEADLINE_EXCEEDED);
            Duration backoff = retry.jittered(attempt);
            if (!retriable
                || attempt >= attempts
                || (!keyed && System.nanoTime() + backoff.toNanos() >= overallDeadline)) {
              result.completeExceptionally(error);
              return;
            }
            scheduler.schedule(
                () -> attemptAsync(call, keyed, attempts, attempt + 1, overallDeadline, result),
                backoff.toNanos(),
                TimeUnit.NANOSECONDS);
          }
        },
        MoreExecutors.directExecutor());
  }

  // --- streams: never retried; the timeout bounds the whole stream --------

  /** Sends every request on one UpdateStream and returns the server's summary. */
  public UpdateStreamResponse updateStream(Iterator<UpdateRequest> requests) {
    try (UpdateStreamWriter w = openUpdateStream()) {
      while (requests.hasNext()) {
        w.write(requests.next());
      }
      return w.finish();
    }
  }

  public UpdateStreamWriter openUpdateStream() {
    return new UpdateStreamWriter(async.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS));
  }

  public UpdateStreamWriter openUpdateStream(Duration streamTimeout) {
    return new UpdateStreamWriter(async.withDeadlineAfter(streamTimeout.toNanos(), TimeUnit.NANOSECONDS));
  }

  public AckedStream<UpdateRequest, clickd.v1.ClickdOuterClass.UpdateAck> openAckedUpdateStream() {
    return openAckedUpdateStream(timeout);
  }

  public AckedStream<UpdateRequest, clickd.v1.ClickdOuterClass.UpdateAck> openAckedUpdateStream(
      Duration streamTimeout) {
    ClickdGrpc.ClickdStub s = async.withDeadlineAfter(streamTimeout.toNanos(), TimeUnit.NANOSECONDS);
    return new AckedStream<>(s::updateStreamAcked);
  }

  public AckedStream<FeedbackRequest, FeedbackResponse> openFeedbackStream() {
    return openFeedbackStream(timeout);
  }

  public AckedStream<FeedbackRequest, FeedbackResponse> openFeedbackStream(Duration streamTimeout) {
    ClickdGrpc.ClickdStub s = async.withDeadlineAfter(streamTimeout.toNanos(), TimeUnit.NANOSECONDS);
    return new AckedStream<>(s::feedbackStream);
  }
}
