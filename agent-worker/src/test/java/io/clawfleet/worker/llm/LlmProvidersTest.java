package io.clawfleet.worker.llm;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The router a worker builds from its configuration. */
class LlmProvidersTest {

    private static final LlmRequest HELLO = new LlmRequest(null, List.of(ChatMessage.user("hello")), List.of());

    private final Vertx vertx = Vertx.vertx();

    @AfterEach
    void stop() {
        result(vertx.close());
    }

    private ModelRouter router(Map<String, String> env) {
        ClawfleetConfig.Llm llm = ConfigLoader.load(null, env, Map.of()).llm();
        return LlmProviders.router(vertx, llm);
    }

    @Test
    void withoutAModelTheDefaultRoleAnswersThatNoneIsConfigured() {
        ModelRouter router = router(Map.of());
        LlmResponse response = result(router.complete("default", HELLO, null));
        assertThat(response.content()).isEqualTo(OfflineProvider.REPLY);
        assertThat(response.provider()).isEqualTo(LlmProviders.OFFLINE);
    }

    @Test
    void rolesReachProvidersOfBothApisAsConfigured() {
        // given an OpenAI-compatible default provider and a named Anthropic one on the mock / when each role is asked / then each answers
        MockLlmServer mock = new MockLlmServer(vertx, 0);
        result(mock.start("127.0.0.1", 0));
        String url = "http://127.0.0.1:" + mock.port();
        ModelRouter router = router(Map.of(
                "CLAWFLEET_LLM_BASE_URL", url + "/v1", "CLAWFLEET_LLM_MODEL", "mock",
                "CLAWFLEET_LLM_PROVIDERS_CLAUDE_TYPE", "anthropic", "CLAWFLEET_LLM_PROVIDERS_CLAUDE_BASE_URL", url,
                "CLAWFLEET_LLM_PROVIDERS_CLAUDE_MODEL", "claude-test", "CLAWFLEET_LLM_PROVIDERS_CLAUDE_API_KEY", "sk-ant-x",
                "CLAWFLEET_LLM_ROLES_ARCHITECT", "claude,default"));

        assertThat(router.roles()).containsExactlyInAnyOrder("default", "architect");
        LlmResponse plain = result(router.complete("default", HELLO, null));
        assertThat(plain.provider()).isEqualTo("default");
        assertThat(plain.model()).isEqualTo("mock");
        LlmResponse architect = result(router.complete("architect", HELLO, null));
        assertThat(architect.provider()).isEqualTo("claude");
        assertThat(architect.model()).isEqualTo("claude-test");
        assertThat(architect.content()).isEqualTo("echo: hello");
    }
}
