package io.clawfleet.worker.llm;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Picks the model for a call by role (seed 003 "task-based model selection"): each role is a
 * fallback chain of named providers, tried in order. A provider whose circuit is open is skipped; a
 * provider that fails (after its own retries and timeouts) hands the call to the next one. An
 * unknown role gets the {@value #DEFAULT_ROLE} role's chain. Meant to be used from one event loop.
 */
public final class ModelRouter {

    /** The role every request without a more specific one uses; always configured. */
    public static final String DEFAULT_ROLE = "default";

    private static final Logger LOG = LoggerFactory.getLogger(ModelRouter.class);

    private final Map<String, LlmProvider> providers;
    private final Map<String, List<String>> roles;
    private final Map<String, CircuitBreaker> breakers = new LinkedHashMap<>();

    /**
     * @param providers        providers by name
     * @param roles            each role's chain of provider names; must hold {@value #DEFAULT_ROLE}
     * @param failureThreshold consecutive failures that open a provider's circuit
     * @param cooldownMs       how long an open circuit stays open before a trial call
     * @param clockMs          the time in ms, for the circuit breakers
     */
    public ModelRouter(Map<String, LlmProvider> providers, Map<String, List<String>> roles, int failureThreshold,
                       long cooldownMs, LongSupplier clockMs) {
        this.providers = Map.copyOf(providers);
        Map<String, List<String>> copy = new LinkedHashMap<>();
        roles.forEach((role, chain) -> copy.put(role, List.copyOf(chain)));
        this.roles = java.util.Collections.unmodifiableMap(copy);
        if (!this.roles.containsKey(DEFAULT_ROLE)) {
            throw new IllegalArgumentException("roles must include '" + DEFAULT_ROLE + "', got " + this.roles.keySet());
        }
        this.roles.forEach((role, chain) -> {
            if (chain.isEmpty()) {
                throw new IllegalArgumentException("role '" + role + "' names no provider");
            }
            for (String name : chain) {
                if (!this.providers.containsKey(name)) {
                    throw new IllegalArgumentException("role '" + role + "' names unknown provider '" + name + "'");
                }
            }
        });
        Objects.requireNonNull(clockMs);
        this.providers.keySet().forEach(name -> breakers.put(name, new CircuitBreaker(failureThreshold, cooldownMs, clockMs)));
    }

    /** The configured roles. */
    public Set<String> roles() {
        return roles.keySet();
    }

    /** The chain a role uses: its own, or the default role's when it has none. */
    public List<String> chain(String role) {
        return roles.getOrDefault(role, roles.get(DEFAULT_ROLE));
    }

    /**
     * Completes a chat with the first provider of the role's chain that answers. The response names
     * the provider that answered. Fails with an {@link LlmException} naming each provider's error
     * when none could. With a sink, once a provider has streamed part of an answer its failure ends
     * the call: another provider's answer would be spliced onto text the receiver already has.
     *
     * @param role a configured role; anything else (null included) means {@value #DEFAULT_ROLE}
     * @param sink receives the answer text as it arrives; null for no streaming
     */
    public Future<LlmResponse> complete(String role, LlmRequest request, StreamSink sink) {
        String resolved = role != null && roles.containsKey(role) ? role : DEFAULT_ROLE;
        Call call = new Call(resolved, roles.get(resolved), request, sink == null ? null : new TrackingSink(sink));
        attempt(call, 0);
        return call.result.future();
    }

    /** One routed call going down its chain. */
    private static final class Call {
        final String role;
        final List<String> chain;
        final LlmRequest request;
        final TrackingSink sink;
        final List<Failure> failures = new ArrayList<>();
        final Promise<LlmResponse> result = Promise.promise();

        Call(String role, List<String> chain, LlmRequest request, TrackingSink sink) {
            this.role = role;
            this.chain = chain;
            this.request = request;
            this.sink = sink;
        }
    }

    private void attempt(Call call, int index) {
        if (index >= call.chain.size()) {
            call.result.fail(allFailed(call));
            return;
        }
        String name = call.chain.get(index);
        CircuitBreaker breaker = breakers.get(name);
        if (!breaker.tryAcquire()) {
            call.failures.add(new Failure(name, "circuit open for another " + breaker.remainingCooldownMs() + " ms", 503, true));
            attempt(call, index + 1);
            return;
        }
        Future<LlmResponse> response;
        try {
            response = providers.get(name).complete(call.request, call.sink);
        } catch (RuntimeException e) {
            response = Future.failedFuture(e);
        }
        response.onComplete(outcome -> {
            if (outcome.succeeded()) {
                breaker.onSuccess();
                call.result.complete(outcome.result().withProvider(name));
                return;
            }
            Failure failure = Failure.of(name, outcome.cause());
            record(breaker, name, outcome.cause());
            call.failures.add(failure);
            if (call.sink != null && call.sink.emitted()) {
                call.result.fail(new LlmException("model provider " + name + " failed after it had started to answer [role: "
                        + call.role + "]: " + failure.message(), failure.status(), false, -1, outcome.cause()));
                return;
            }
            if (index + 1 < call.chain.size()) {
                LOG.warn("model provider failed, trying the next [role: {}, provider: {}, next: {}]: {}", call.role, name,
                        call.chain.get(index + 1), failure.message());
            }
            attempt(call, index + 1);
        });
    }

    /** A failure the request caused (bad input, too long) says nothing about the provider's health. */
    private static void record(CircuitBreaker breaker, String name, Throwable cause) {
        boolean requestsFault = cause instanceof LlmException e && (e.status() == 400 || e.status() == 413 || e.status() == 422);
        if (requestsFault) {
            breaker.onSuccess();
        } else if (breaker.onFailure()) {
            LOG.warn("model provider circuit opened: calls skip it until a trial succeeds [provider: {}]", name);
        }
    }

    private static LlmException allFailed(Call call) {
        Failure last = call.failures.getLast();
        List<String> texts = call.failures.stream().map(Failure::text).toList();
        boolean retryable = call.failures.stream().anyMatch(Failure::retryable);
        return new LlmException("no model provider could answer [role: " + call.role + "]: " + String.join("; ", texts),
                last.status(), retryable, -1, null);
    }

    /** One provider's failure, for the combined error. */
    private record Failure(String provider, String message, int status, boolean retryable) {

        static Failure of(String provider, Throwable cause) {
            if (cause instanceof LlmException e) {
                return new Failure(provider, e.getMessage(), e.status(), e.retryable());
            }
            return new Failure(provider, String.valueOf(cause.getMessage()), 0, true);
        }

        String text() {
            return provider + ": " + message;
        }
    }

    /** The circuit state of a provider, for status pages and tests. */
    public CircuitBreaker.State circuit(String provider) {
        CircuitBreaker breaker = breakers.get(provider);
        if (breaker == null) {
            throw new IllegalArgumentException("no provider named '" + provider + "'");
        }
        return breaker.state();
    }

    /** One role as a single {@link LlmProvider}, for code written against one provider. */
    public LlmProvider provider(String role) {
        ModelRouter router = this;
        return new LlmProvider() {
            @Override
            public Future<LlmResponse> complete(LlmRequest request, StreamSink sink) {
                return router.complete(role, request, sink);
            }

            @Override
            public String name() {
                return role;
            }
        };
    }

    /** Closes every provider. */
    public Future<Void> close() {
        List<Future<Void>> closing = new ArrayList<>();
        providers.values().forEach(provider -> closing.add(provider.close()));
        return Future.join(closing).mapEmpty();
    }
}
