package dev.clickd.client;

import clickd.v1.ClickdGrpc;
import clickd.v1.ClickdOuterClass.UpdateRequest;
import clickd.v1.ClickdOuterClass.UpdateStreamResponse;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * An UpdateStream written message by message; {@link #finish()} returns the
 * server's summary. A rejected message ends the stream with its error; the
 * messages before it stay applied. Closing without finishing cancels it.
 */
public final class UpdateStreamWriter implements AutoCloseable {
  private final CompletableFuture<UpdateStreamResponse> result = new CompletableFuture<>();
  private final ClientCallStreamObserver<UpdateRequest> requests;
  private boolean done;

  UpdateStreamWriter(ClickdGrpc.ClickdStub stub) {
    StreamObserver<UpdateStreamResponse> responses =
        new StreamObserver<>() {
          @Override
          public void onNext(UpdateStreamResponse value) {
            result.complete(value);
          }

          @Override
          public void onError(Throwable t) {
            result.completeExceptionally(ClickdException.from(t));
          }

          @Override
          public void onCompleted() {
            result.completeExceptionally(
                new ClickdException(Status.Code.INTERNAL, "the stream ended without a summary"));
          }
        };
    this.requests = (ClientCallStreamObserver<UpdateRequest>) stub.updateStream(responses);
  }

  /** Sends one request; throws the stream's error if the server has ended it. */
  public void write(UpdateRequest request) {
    if (done) {
      throw new ClickdException(Status.Code.FAILED_PRECONDITION, "the stream is already finished");
    }
    if (result.isDone()) {
      done = true;
      join();
    }
    requests.onNext(request);
  }

  /** Half-closes the stream and waits for the summary. */
  public UpdateStreamResponse finish() {
    if (done) {
      throw new ClickdException(Status.Code.FAILED_PRECONDITION, "the stream is already finished");
    }
    done = true;
    requests.onCompleted();
    return join();
  }

  private UpdateStreamResponse join() {
    try {
      return result.get();
    } catch (ExecutionException e) {
      throw ClickdException.from(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      requests.cancel("interrupted", e);
      throw new ClickdException(Status.Code.CANCELLED, "interrupted");
    }
  }

  /** Abandons the stream; what the server applied stays applied. */
  public void cancel() {
    if (!done) {
      done = true;
      requests.cancel("cancelled by the client", null);
    }
  }

  @Override
  public void close() {
    cancel();
  }
}
