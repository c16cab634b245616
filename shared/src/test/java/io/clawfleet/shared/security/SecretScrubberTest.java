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
    void redactsAssignmentsAndBearerTokensInAnyLetterCase() {
        // the quick look for key words before the expressions must not miss upper or mixed case
        assertThat(scrubber.scrub("API_KEY=abc123xyz PassWord: hunter2 SECRET_KEY = s3cr3t"))
                .isEqualTo("API_KEY=[REDACTED] PassWord: [REDACTED] SECRET_KEY = [REDACTED]");
        assertThat(scrubber.scrub("header BEARER eyJhbGciOiJIUzI1NiJ9.payload sent"))
                .isEqualTo("header BEARER [REDACTED] sent");
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

    @Test
    void aStreamCutWhereSafeCutSaysLeaksNoSecretWhateverTheDeltas() {
        // given a text with every kind of secret, streamed in deltas of every size from 1 to 40
        String text = "Sure. Your key is sk-proj-abcdefghijklmnopqrstuv and password: \"hunter2 two three\" and "
                + "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload; canary-9f8e7d6c5b4a at the end of a long line "
                + "of words that goes on and on so that pieces get shown before the end.\n"
                + "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK" + "x".repeat(300) + "\n-----END RSA PRIVATE KEY-----\n"
                + "done " + "word ".repeat(60);
        for (int size = 1; size <= 40; size++) {
            StringBuilder shown = new StringBuilder();
            StringBuilder pending = new StringBuilder();
            for (int i = 0; i < text.length(); i += size) {
                pending.append(text, i, Math.min(text.length(), i + size));
                int cut = scrubber.safeCut(pending.toString());
                shown.append(scrubber.scrub(pending.substring(0, cut)));
                pending.delete(0, cut);
            }
            shown.append(scrubber.scrub(pending.toString()));
            // then what was shown holds no secret, and is what scrubbing the whole text gives
            assertThat(shown.toString()).doesNotContain("abcdefghijklmnop", "hunter2", "two three", "eyJhbGci",
                    "canary-9f8e", "MIIBOg").isEqualTo(scrubber.scrub(text));
        }
    }
}
