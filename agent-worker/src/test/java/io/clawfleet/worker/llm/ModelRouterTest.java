package io.clawfleet.worker.llm;

import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ModelRouterTest {

    private static final LlmRequest REQUEST = new LlmRequest(null, List.of(ChatMessage.user("hi")), List.of());

    private final AtomicLong now = new AtomicLong(0);
    private final ScriptedProvider primary = new ScriptedProvider("primary");
    private final ScriptedProvider backup = new ScriptedProvider("backup");
    private final ModelRouter router = new ModelRouter(Map.of("primary", primary, "backup", backup),
            Map.of("default", List.of("primary", "backup"), "architect", List.of("backup", "primary")), 3, 30_000, now::get);

    @Test
    void fallsBackToTheSecondProviderWhenTheFirstFailsForReal() {
        // given an OpenAI-compatible primary in an outage and an Anthropic backup / when routed / then the backup answers
        Vertx vertx = Vertx.vertx();
        try {
            MockLlmServer down = new MockLlmServer(vertx, 0);
            MockLlmServer up = new MockLlmServer(vertx, 0);
            result(down.start("127.0.0.1", 0));
            result(up.start("127.0.0.1", 0));
            down.outage(503);
            LlmProvider deepseek = new OpenAiCompatibleProvider(vertx, new LlmEndpoint("deepseek",
                    "http://127.0.0.1:" + down.port() + "/v1", "sk-a", "deepseek-chat", 5_000, 1, 10, 0));
            LlmProvider claude = new AnthropicProvider(vertx, new LlmEndpoint("claude",
                    "http://127.0.0.1:" + up.port(), "sk-b", "claude-test", 5_000, 1, 10, 1_024));
            ModelRouter real = new ModelRouter(Map.of("deepseek", deepseek, "claude", claude),
                    Map.of("default", List.of("deepseek", "claude")), 5, 30_000, System::currentTimeMillis);

            LlmResponse response = result(real.complete("default", REQUEST, null));

            assertThat(response.content()).isEqualTo("echo: hi");
            assertThat(response.provider()).isEqualTo("claude");
            assertThat(response.model()).isEqualTo("claude-test");
            assertThat(down.requestCount()).isEqualTo(2);
        } finally {
            result(vertx.close());
        }
    }

    @Test
    void answersFromTheFirstProviderAndSaysWhichOne() {
        LlmResponse response = result(router.complete("default", REQUEST, null));
        assertThat(response.provider()).isEqualTo("primary");
        assertThat(response.model()).isEqualTo("model-x");
        assertThat(backup.calls()).isZero();
    }

    @Test
    void failsNamingEachProvidersErrorWhenAllFail() {
        primary.failing(new LlmException("model endpoint answered 503: busy", 503, true, -1, null));
        backup.failing(new LlmException("model endpoint answered 401: bad key", 401, false, -1, null));
        Throwable error = failure(router.complete("default", REQUEST, null));
        assertThat(error).isInstanceOf(LlmException.class)
                .hasMessageContaining("primary: model endpoint answered 503: busy")
                .hasMessageContaining("backup: model endpoint answered 401: bad key");
        assertThat(((LlmException) error).status()).isEqualTo(401);
    }

    @Test
    void anOpenCircuitSkipsTheFailingProviderUntilTheCooldownEnds() {
        // given a primary that fails three times / then its circuit is open and it is no longer called
        primary.failing(new LlmException("down", 503, true, -1, null));
        for (int i = 0; i < 3; i++) {
            assertThat(result(router.complete("default", REQUEST, null)).provider()).isEqualTo("backup");
        }
        assertThat(router.circuit("primary")).isEqualTo(CircuitBreaker.State.OPEN);
        result(router.complete("default", REQUEST, null));
        now.addAndGet(29_999);
        result(router.complete("default", REQUEST, null));
        assertThat(primary.calls()).isEqualTo(3);

        // when the cooldown is over and the primary has recovered / then one trial call closes the circuit
        primary.failing(null);
        now.addAndGet(1);
        assertThat(result(router.complete("default", REQUEST, null)).provider()).isEqualTo("primary");
        assertThat(primary.calls()).isEqualTo(4);
        assertThat(router.circuit("primary")).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    @Test
    void aFailedTrialOpensTheCircuitAgain() {
        primary.failing(new LlmException("down", 503, true, -1, null));
        for (int i = 0; i < 3; i++) {
            result(router.complete("default", REQUEST, null));
        }
        now.addAndGet(30_000);
        result(router.complete("default", REQUEST, null));
        assertThat(primary.calls()).isEqualTo(4);
        assertThat(router.circuit("primary")).isEqualTo(CircuitBreaker.State.OPEN);
        result(router.complete("default", REQUEST, null));
        assertThat(primary.calls()).isEqualTo(4);
    }

    @Test
    void whileTheTrialIsPendingOtherCallsSkipTheProvider() {
        primary.failing(new LlmException("down", 503, true, -1, null));
        for (int i = 0; i < 3; i++) {
            result(router.complete("default", REQUEST, null));
        }
        now.addAndGet(30_000);
        primary.failing(null);
        Promise<LlmResponse> trial = primary.hangNext();
        Future<LlmResponse> first = router.complete("default", REQUEST, null);
        assertThat(result(router.complete("default", REQUEST, null)).provider()).isEqualTo("backup");
        trial.complete(ScriptedProvider.answer("late but fine"));
        assertThat(result(first).provider()).isEqualTo("primary");
        assertThat(router.circuit("primary")).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    @Test
    void badRequestsDoNotOpenTheCircuit() {
        primary.failing(new LlmException("model endpoint answered 400: too long", 400, false, -1, null));
        for (int i = 0; i < 5; i++) {
            result(router.complete("default", REQUEST, null));
        }
        assertThat(router.circuit("primary")).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    @Test
    void eachRoleHasItsOwnOrderAndAnUnknownRoleGetsTheDefault() {
        assertThat(router.roles()).containsExactlyInAnyOrder("default", "architect");
        assertThat(result(router.complete("architect", REQUEST, null)).provider()).isEqualTo("backup");
        assertThat(result(router.complete("no-such-role", REQUEST, null)).provider()).isEqualTo("primary");
        assertThat(result(router.complete(null, REQUEST, null)).provider()).isEqualTo("primary");
    }

    @Test
    void streamsThroughTheProviderThatAnswers() {
        primary.failing(new LlmException("down", 503, true, -1, null));
        List<String> deltas = new CopyOnWriteArrayList<>();
        LlmResponse response = result(router.complete("default", REQUEST, deltas::add));
        assertThat(deltas).containsExactly("answer from backup");
        assertThat(response.provider()).isEqualTo("backup");
    }

    @Test
    void doesNotFallBackOnceAProviderHasStreamedPartOfAnAnswer() {
        primary.breakingAfter("Hel");
        List<String> deltas = new CopyOnWriteArrayList<>();
        Throwable error = failure(router.complete("default", REQUEST, deltas::add));
        assertThat(error).hasMessageContaining("primary failed after it had started to answer");
        assertThat(deltas).containsExactly("Hel");
        assertThat(backup.calls()).isZero();
    }

    @Test
    void aRoleAsAProviderRoutesThroughTheRouter() {
        primary.failing(new LlmException("down", 503, true, -1, null));
        LlmProvider architect = router.provider("default");
        assertThat(result(architect.complete(REQUEST)).provider()).isEqualTo("backup");
        assertThat(architect.name()).isEqualTo("default");
    }

    @Test
    void refusesRolesThatNameUnknownProvidersOrLackTheDefault() {
        assertThatThrownBy(() -> new ModelRouter(Map.of("a", primary), Map.of("default", List.of("a", "b")), 5, 1, now::get))
                .hasMessageContaining("role 'default' names unknown provider 'b'");
        assertThatThrownBy(() -> new ModelRouter(Map.of("a", primary), Map.of("x", List.of("a")), 5, 1, now::get))
                .hasMessageContaining("roles must include 'default'");
    }
}
