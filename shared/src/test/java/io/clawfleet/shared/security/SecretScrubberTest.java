package io.clawfleet.shared.security;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class SecretScrubberTest {

    private final SecretScrubber scrubber = new SecretScrubber(List.of("canary-9f8e7d6c5b4a", "short"));

    @Test
    void redactsKnownKeyShapes() {
        String text = "keys: sk-proj-abcdefghijklmnopqrstuv sk-ant-api03-abcdefghijklmnop ghp_abcdefghijklmnopqrstuvwxyz012345 "
                + "AKIAABCDEFGHIJKLMNOP xoxb-1234567890-abcdef 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1";
        String out = scrubber.scrub(text);
        assertThat(out).doesNotContain("sk-proj-abc", "sk-ant-api03", "ghp_abc", "AKIAABCD", "xoxb-123", "AAHdqTcv");
        assertThat(out).contains("keys: [REDACTED]");
    }

    @Test
    void redactsAssignmentsButKeepsTheirNames() {
        assertThat(scrubber.scrub("api_key=abc123xyz and password: \"hunter2 two\" token='t0k'"))
                .isEqualTo("api_key=[REDACTED] and password: [REDACTED] token=[REDACTED]");
        assertThat(scrubber.scrub("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload"))
                .isEqualTo("Authorization: [REDACTED]");
    }

    @Test
    void redactsTheLiteralSecretsItKnowsWherever() {
        assertThat(scrubber.scrub("the canary is canary-9f8e7d6c5b4a!")).isEqualTo("the canary is [REDACTED]!");
        assertThat(scrubber.scrub("short is not treated as a secret")).contains("short");
    }

    @Test
    void redactsPrivateKeyBlocks() {
        String pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----";
        assertThat(scrubber.scrub("here: " + pem)).isEqualTo("here: [REDACTED]");
    }

    @Test
    void leavesOrdinaryTextAlone() {
        String text = "The tokenizer splits words; my password manager is great. sk is a prefix.";
        assertThat(scrubber.scrub(text)).isEqualTo(text);
    }
}
