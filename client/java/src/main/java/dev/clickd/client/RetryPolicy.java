package dev.clickd.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How retried calls back off: the C++, Python and Go clients' policy. Failed
 * attempt k (k = 1, 2, ...) is followed by a sleep of min(initialBackoff *
 * multiplier^(k-1), maxBackoff) times a uniform factor in [1 - jitter, 1 +
 * jitter]. A call without an idempotency key has one deadline for all its
 * attempts: a sleep that would reach it is not slept, and the last
 * UNAVAILABLE is thrown at once. A keyed call gives each attempt a deadline of
 * its own.
 */
public record RetryPolicy(
    int maxAttempts, Duration initialBackoff, double multiplier, Duration maxBackoff, double jitter) {

  /** 3 attempts, 50 ms growing by 2 up to 1 s, +-20 %. */
  public static RetryPolicy defaults() {
    return new RetryPolicy(3, Duration.ofMillis(50), 2.0, Duration.ofSeconds(1), 0.2);
  }

  public RetryPolicy {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts is " + maxAttempts + "; must be >= 1");
    }
    if (initialBackoff.isNegative() || initialBackoff.isZero()
        || initialBackoff.compareTo(maxBackoff) > 0) {
      throw new IllegalArgumentException(
          "the retry policy needs 0 < initialBackoff <= maxBackoff");
    }
    if (!(multiplier >= 1) || Double.isInfinite(multiplier)) {
      throw new IllegalArgumentException("multiplier must be finite and >= 1");
    }
    if (!(jitter >= 0 && jitter <= 1)) {
      throw new IllegalArgumentException("jitter must be in [0, 1]");
    }
  }

  /** The sleep after failed attempt {@code attempt} (1-based), before jitter. */
  public Duration backoff(int attempt) {
    double base = initialBackoff.toNanos();
    double max = maxBackoff.toNanos();
    for (int i = 1; i < attempt && base < max; i++) {
      base *= multiplier;
    }
    return Duration.ofNanos((long) Math.min(base, max));
  }

  Duration jittered(int attempt) {
    double f = 1 + jitter * (2 * ThreadLocalRandom.current().nextDouble() - 1);
    return Duration.ofNanos((long) (backoff(attempt).toNanos() * f));
  }
}
