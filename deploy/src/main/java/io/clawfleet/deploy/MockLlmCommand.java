package io.clawfleet.deploy;

import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** A deterministic model server (OpenAI-compatible and Anthropic Messages API) for tests, demos and benchmarks. */
@Command(name = "mock-llm", mixinStandardHelpOptions = true,
        description = {"Serve a deterministic model, OpenAI-compatible at /v1/chat/completions and Anthropic-style at",
                "/v1/messages: replies 'echo: <message>'; 'call:<tool> {json}' in a message asks for that tool;",
                "'fail:<status>' answers with that status."})
final class MockLlmCommand implements Callable<Integer> {

    @Option(names = "--port", defaultValue = "8089", description = "Port (default ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to bind (default ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--latency-ms", defaultValue = "0", description = "Delay before every answer, in ms (default ${DEFAULT-VALUE}).")
    long latencyMs;

    @Override
    public Integer call() throws Exception {
        Vertx vertx = Vertx.vertx();
        MockLlmServer server = new MockLlmServer(vertx, latencyMs);
        int actual = server.start(host, port).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        System.out.println("mock model listening on http://" + host + ":" + actual + "/v1 (latency " + latencyMs + " ms)");
        Runtime.getRuntime().addShutdownHook(new Thread(vertx::close, "mock-llm-stop"));
        return 0;
    }
}
