package dev.clickd.client;

import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Function;

/**
 * A stream where the server answers each request in order: UpdateStreamAcked
 * (an UpdateAck once applied and durable) or FeedbackStream (a
 * FeedbackResponse). {@link #send} returns the request's answer. Closing
 * without {@link #finish()} cancels it.
 */
public final class AckedStream<Req, Resp> implements AutoCloseable {
  // One item per server event: an answer, an error (ClickdException) or the end (END).
  private static final Object END = new Object();
  private final LinkedBlockingQueue<Object> events = new LinkedBlockingQueue<>();
  private final ClientCallStreamObserver<Req> requests;
  private boolean done;

  @SuppressWarnings("unchecked")
  AckedStream(Function<StreamObserver<Resp>, StreamObserver<Req>> open) {
    StreamObserver<Resp> responses =
        new StreamObserver<>() {
          @Override
          public void onNext(Resp value) {
            events.add(value);
          }

          @Override
          public void onError(Throwable t) {
            events.add(ClickdException.from(t));
          }

          @Override
          public void onCompleted() {
            events.add(END);
          }
        };
    this.requests = (ClientCallStreamObserver<Req>) open.apply(responses);
  }

  private Object next() {
    try {
      return events.take();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      cancel();
      throw new ClickdException(Status.Code.CANCELLED, "interrupted");
    }
  }

  /** Sends one request and waits for its answer. */
  @SuppressWarnings("unchecked")
  public Resp send(Req request) {
    if (done) {
      throw new ClickdException(Status.Code.FAILED_PRECONDITION, "the stream is already finished");
    }
    requests.onNext(request);
    Object e = next();
    if (e instanceof ClickdException) {
      done = true;
      throw (ClickdException) e;
    }
    if (e == END) {
      done = true;
      throw new ClickdException(Status.Code.INTERNAL, "the server closed the stream without an answer");
    }
    return (Resp) e;
  }

  /** Half-closes the stream and waits for the server to end it. */
  public void finish() {
    if (done) {
      throw new ClickdException(Status.Code.FAILED_PRECONDITION, "the stream is already finished");
    }
    done = true;
    requests.onCompleted();
    Object e = next();
    if (e instanceof ClickdException) {
      throw (ClickdException) e;
    }
    if (e != END) {
      throw new ClickdException(Status.Code.INTERNAL, "the server answered after the stream was closed");
    }
  }

  /** Abandons the stream. */
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
