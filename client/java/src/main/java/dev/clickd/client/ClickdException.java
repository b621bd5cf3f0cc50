package dev.clickd.client;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * A failed call: the gRPC code and the server's message, unchanged. Unchecked,
 * so callers catch it where they handle it and switch on {@link #code()}.
 */
public final class ClickdException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status.Code code;
  private final String serverMessage;

  public ClickdException(Status.Code code, String serverMessage) {
    super(code + ": " + serverMessage);
    this.code = code;
    this.serverMessage = serverMessage;
  }

  ClickdException(Status.Code code, String serverMessage, Throwable cause) {
    super(code + ": " + serverMessage, cause);
    this.code = code;
    this.serverMessage = serverMessage;
  }

  /** The gRPC status code, e.g. INVALID_ARGUMENT or UNAVAILABLE. */
  public Status.Code code() {
    return code;
  }

  /** The server's message, without the code. */
  public String serverMessage() {
    return serverMessage;
  }

  private static boolean closedTransport(Throwable cause) {
    for (Throwable c = cause; c != null; c = c.getCause()) {
      if (c instanceof java.nio.channels.ClosedChannelException) {
        return true;
      }
    }
    return false;
  }

  static ClickdException from(Throwable t) {
    if (t instanceof ClickdException) {
      return (ClickdException) t;
    }
    Status s = Status.fromThrowable(t);
    String message = s.getDescription() != null ? s.getDescription() : "";
    if (s.getCode() == Status.Code.UNKNOWN && closedTransport(s.getCause())) {
      // grpc-java reports a call that meets a connection the server just
      // closed (killed, restarting) as UNKNOWN "channel closed"; the C++,
      // Python and Go clients see UNAVAILABLE, and so does this one, so that
      // the same calls are retried.
      return new ClickdException(Status.Code.UNAVAILABLE, message, t);
    }
    if (t instanceof StatusRuntimeException) {
      return new ClickdException(s.getCode(), message, t);
    }
    return new ClickdException(s.getCode(), message.isEmpty() ? String.valueOf(t) : message, t);
  }
}
