package dev.clickd.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One real clickd process on a loopback port, started by the test and stopped
 * by its PID. The binary is the system property clickd.binary (the pom passes
 * -Dclickd.binary=..., scripts/test_clients.sh sets it) or $CLICKD_BINARY.
 */
final class ServerProcess implements AutoCloseable {
  private static final Pattern READY =
      Pattern.compile("clickd: serving \\d+ model\\(s\\) on \\S+ \\(port (\\d+)\\)");
  private final List<String> flags;
  private final Path log;
  private Process process;
  int port;

  ServerProcess(String... flags) throws IOException {
    this.flags = List.of(flags);
    this.log = Files.createTempFile("clickd_java_", ".log");
  }

  static String binary() {
    String b = System.getProperty("clickd.binary", "");
    if (b.isEmpty()) {
      b = System.getenv().getOrDefault("CLICKD_BINARY", "");
    }
    if (b.isEmpty()) {
      throw new IllegalStateException("set -Dclickd.binary or CLICKD_BINARY to the clickd binary");
    }
    return b;
  }

  String address() {
    return "127.0.0.1:" + port;
  }

  ServerProcess start() throws IOException, InterruptedException {
    List<String> args = new ArrayList<>();
    args.add(binary());
    args.add("--address=127.0.0.1:" + port);
    args.add("--metrics_port=0");
    args.addAll(flags);
    process =
        new ProcessBuilder(args)
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      Matcher m = READY.matcher(output());
      if (m.find()) {
        port = Integer.parseInt(m.group(1));
        return this;
      }
      if (!process.isAlive()) {
        throw new IllegalStateException("clickd exited: " + output());
      }
      Thread.sleep(20);
    }
    process.destroyForcibly();
    throw new IllegalStateException("clickd was not ready within 30 s: " + output());
  }

  String output() throws IOException {
    return Files.readString(log, StandardCharsets.UTF_8);
  }

  /** kill -9 by PID: the server gets no chance to drain. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(15, TimeUnit.SECONDS);
  }

  /** SIGTERM by PID, then SIGKILL after 15 s. */
  void stop() throws InterruptedException {
    if (process == null || !process.isAlive()) {
      return;
    }
    process.destroy();
    if (!process.waitFor(15, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(15, TimeUnit.SECONDS);
    }
  }

  @Override
  public void close() throws Exception {
    stop();
    Files.deleteIfExists(log);
  }
}
